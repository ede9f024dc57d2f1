// The turn tracker (seed: Pieces, turns; Choices, Seal and attribution, Overlap, Run order):
// runs, the one dispatch slot, and the overlap signals O1-O6. It reads the engine's turn signals
// (engine/harness.ts; each engine derives them from its own stream) in order and never sends
// anything; the controller acts on what it reports.
// docs/controller.md defines each signal. An `aborted` with no stop that wrote an abort in its
// chain is an overlap (O6), never a stop link.

import type { PromptDisposition, TurnSignal } from "../engine/harness.ts";
import type { ReceiptReason } from "../protocol.ts";

export type OverlapCode = "O1" | "O2" | "O3" | "O4" | "O5" | "O6";
export type OverlapSignal = { code: OverlapCode; detail: string };

type SlotPhase = "dispatched" | "acked" | "running";
type Slot = { receipt: string; text: string; phase: SlotPhase };
type Run = { ours: boolean; userMessages: number; abortedByStop: boolean };

/** What the prompt's response said beyond success: Pi's reason on a failure, 1.6.0's disposition. */
export type PromptResponse = { error?: string; disposition?: PromptDisposition | null };

export type TrackerHooks = {
  /** The slot's prompt settled; the slot is free again. `detail` is Pi's reason, if it gave one. */
  settle(receipt: string, reason: ReceiptReason, detail?: string): void;
  /** An overlap signal; the first one of an execution is the one that counts. */
  overlap(signal: OverlapSignal): void;
};

export class Tracker {
  readonly #hooks: TrackerHooks;
  #slot: Slot | null = null;
  #run: Run | null = null;
  #stop: { id: string; abortWritten: boolean } | null = null;
  #overlaps: OverlapSignal[] = [];

  constructor(hooks: TrackerHooks) {
    this.#hooks = hooks;
  }

  get overlaps(): readonly OverlapSignal[] {
    return this.#overlaps;
  }

  /** A prompt holds the slot, or a run is visible. */
  hasTurn(): boolean {
    return this.#slot !== null || this.#run !== null;
  }

  /** No run visible and no prompt holding the slot (the seam's `quiet`). */
  isQuiet(): boolean {
    return !this.hasTurn();
  }

  slotReceipt(): string | null {
    return this.#slot?.receipt ?? null;
  }

  /** Takes the slot for an admitted prompt, before it is written to the engine. */
  dispatch(receipt: string, text: string): void {
    if (this.#slot) throw new Error("the dispatch slot is taken");
    this.#slot = { receipt, text, phase: "dispatched" };
  }

  /**
   * The prompt's response. A failure means Pi handled it without a run (preflight); `error` is
   * the response's own reason (no model, no credentials), passed on with the receipt. 1.6.0 also
   * says so outright on a success when no run will start (`disposition: "handled"`, a command
   * ran): settle now rather than hold the slot until the engine goes (`ack-without-start`,
   * 0.85.1's only signal).
   */
  ack(receipt: string, success: boolean, response: PromptResponse = {}): void {
    const slot = this.#slot;
    if (slot?.receipt !== receipt || slot.phase !== "dispatched") return;
    if (!success || response.disposition === "handled") {
      this.#settle("handled-without-run", success ? undefined : response.error);
      return;
    }
    slot.phase = "acked";
  }

  /** The engine is gone, or the prompt's outcome can't be known. */
  engineGone(): void {
    const slot = this.#slot;
    if (slot) {
      if (slot.phase === "dispatched") this.#settle("transport-unknown");
      else if (slot.phase === "acked") this.#settle("ack-without-start");
      else this.#settle(this.#stop?.abortWritten ? "interrupted" : "transport-unknown");
    }
    this.#run = null;
  }

  /** A stop chain began (or a force stop took one over, keeping what it wrote). */
  stopBegan(id: string): void {
    this.#stop = { id, abortWritten: this.#stop?.abortWritten ?? false };
  }

  /** The chain wrote an abort: from now an `aborted` links to the stop. */
  abortWritten(): void {
    if (this.#stop) this.#stop.abortWritten = true;
  }

  stopEnded(): void {
    this.#stop = null;
  }

  /** What `clear_queue` returned: anything queued was not the controller's (O5). */
  queueCleared(steering: number, followUp: number): void {
    if (steering + followUp > 0) {
      this.#signal("O5", `clear_queue removed ${steering} steering and ${followUp} follow-up`);
    }
  }

  onSignal(s: TurnSignal): void {
    switch (s.type) {
      case "run-started":
        this.#runStarted();
        return;
      case "user-message":
        this.#userMessage(s.text);
        return;
      case "aborted":
        this.#aborted();
        return;
      case "queue":
        if (s.steering + s.followUp > 0) {
          this.#signal("O5", `a queue the controller never filled: ${s.steering}+${s.followUp}`);
        }
        return;
      case "run-settled":
        this.#runSettled();
        return;
      default: {
        const never: never = s;
        throw new Error(`unknown turn signal ${JSON.stringify(never)}`);
      }
    }
  }

  #runStarted(): void {
    const slot = this.#slot;
    if (this.#run) {
      this.#signal("O1", "a run started while another was visible");
    } else if (slot === null) {
      this.#signal("O1", "a run started with no prompt in the slot");
    } else if (slot.phase === "dispatched") {
      this.#signal("O4", "a run started before the prompt's response");
    } else if (slot.phase === "running") {
      this.#signal("O1", "a second run started for one prompt");
    }
    this.#run = { ours: false, userMessages: 0, abortedByStop: false };
  }

  #userMessage(text: string | null): void {
    const run = this.#run;
    if (!run) {
      this.#signal("O2", "a user message outside any run");
      return;
    }
    run.userMessages++;
    if (run.userMessages > 1) {
      this.#signal("O2", "a user message the controller never sent (a queued message ran)");
      return;
    }
    const slot = this.#slot;
    if (slot?.phase !== "acked") return;
    if (text !== slot.text) {
      this.#signal("O3", "the run after the ack carries another input's message");
      return;
    }
    slot.phase = "running";
    run.ours = true;
  }

  #aborted(): void {
    if (this.#stop?.abortWritten) {
      if (this.#run) this.#run.abortedByStop = true;
      return;
    }
    this.#signal("O6", "an aborted message with no abort written by a stop");
  }

  #runSettled(): void {
    const run = this.#run;
    this.#run = null;
    const slot = this.#slot;
    if (run?.ours && slot?.phase === "running") {
      // A stop's abort written before the run ended ended it, whether or not a reply was cut:
      // Pi aborted between two replies (while a tool ran) ends the run with no aborted message.
      const stopped = run.abortedByStop || this.#stop?.abortWritten === true;
      this.#settle(stopped ? "interrupted" : "completed");
    }
  }

  #signal(code: OverlapCode, detail: string): void {
    const signal = { code, detail };
    this.#overlaps.push(signal);
    if (this.#slot) this.#settle("run-overlap");
    this.#hooks.overlap(signal);
  }

  #settle(reason: ReceiptReason, detail?: string): void {
    const slot = this.#slot;
    if (!slot) return;
    this.#slot = null;
    if (detail === undefined) this.#hooks.settle(slot.receipt, reason);
    else this.#hooks.settle(slot.receipt, reason, detail);
  }
}
