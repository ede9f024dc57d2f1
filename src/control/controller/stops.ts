// The stop chain (seed: Choices, Interrupt and Force stop; H10, H17): Interrupt fences
// admission, clears the queue, checks for an overlap again, then aborts; it lifts only its own
// fence. A force stop supersedes a running Interrupt (one chain); one escalation runs at a time.
// Only a stop the verifier accepts ends the claim; anything else leaves it `uncertain`.
import { randomUUID } from "node:crypto";
import type { Launched, StopOutcome } from "../cohort/launcher.ts";
import type { AnyEngineLink } from "../engine/engine.ts";
import type { EngineSession } from "../engine/harness.ts";
import type { StopRecord, StopResult, StopTrigger, Verifier } from "./records.ts";
import type { Tracker } from "./turns.ts";

/** Why admission is closed; admission is open only when no closer remains. */
export type Closer =
  | "interrupt"
  | "force-stop"
  | "overlap"
  | "revocation"
  | "uncertain"
  | "stopped";

export type StopHost = {
  readonly execution: string;
  readonly incarnation: string;
  /** The engine's process (its pid for the verifier). */
  readonly link: AnyEngineLink;
  /** Its protocol: the interrupt's clear and abort. */
  readonly engine: EngineSession;
  readonly launched: Pick<Launched, "forceStop">;
  readonly tracker: Tracker;
  readonly verifier: Verifier;
  close(closer: Closer): void;
  lift(closer: Closer): void;
  dialogSeen(): boolean;
  /** Ends the open approvals: `denied` (an interrupt's first step) or `closed` (a stop). */
  endApprovals(state: "denied" | "closed", why: string): void;
  /** Claim transitions; each may refuse (a ControlRefusal), which the chain records. */
  claimStopping(): Promise<void>;
  claimUncertain(why: string): Promise<void>;
  claimProven(proofDigest: string): Promise<void>;
  record(stop: StopRecord): void;
};

type Running = {
  id: string;
  trigger: StopTrigger;
  supersedes: string | null;
  startedAt: string;
  superseded: boolean;
  abortWritten: boolean;
  nativeQueue: StopRecord["nativeQueue"];
};

export class StopChain {
  readonly #host: StopHost;
  #interrupt: Running | null = null;
  #escalation: Running | null = null;
  #latest: StopRecord | null = null;
  #proven: StopRecord | null = null;

  constructor(host: StopHost) {
    this.#host = host;
  }

  /** The latest stop that ended (confirmations bind to its id). */
  get latest(): StopRecord | null {
    return this.#latest;
  }

  /** The latest stop the verifier accepted, if the engine is proven gone. */
  get proven(): StopRecord | null {
    return this.#proven;
  }

  get escalationRunning(): boolean {
    return this.#escalation !== null;
  }

  /** The id of the stop in progress, for confirmations issued meanwhile. */
  get currentId(): string | null {
    return this.#escalation?.id ?? this.#interrupt?.id ?? this.#latest?.id ?? null;
  }

  /** Interrupt: fence, clear the engine's queue, re-check overlap, abort, lift its own fence. */
  async interrupt(): Promise<StopRecord> {
    const h = this.#host;
    const run = this.#begin("interrupt", null);
    this.#interrupt = run;
    h.close("interrupt");
    // An approval the engine waits on is denied first: the interrupt must not race an answer.
    h.endApprovals("denied", "denied by an interrupt");
    const overlapsBefore = h.tracker.overlaps.length;
    let why = "the abort completed";
    let result: StopResult = "interrupted";
    try {
      run.nativeQueue = "unknown";
      const q = await h.engine.clearQueue();
      if (q) h.tracker.queueCleared(q.steering, q.followUp);
      run.nativeQueue = q ? "cleared" : "not-cleared";
      // H10: an overlap read during the pause means no abort, which would run what was queued.
      if (run.superseded) {
        result = "superseded";
        why = "a force stop took over";
      } else if (h.tracker.overlaps.length > overlapsBefore) {
        result = "not-aborted";
        why = "an overlap signal arrived before the abort";
      } else {
        run.abortWritten = true;
        h.tracker.abortWritten();
        await h.engine.abort();
        if (run.superseded) {
          result = "superseded";
          why = "a force stop took over";
        }
      }
    } catch (e) {
      result = run.superseded ? "superseded" : "uncertain";
      why = run.superseded ? "a force stop took over" : `the engine went away: ${String(e)}`;
    }
    this.#interrupt = null;
    if (!run.superseded) h.tracker.stopEnded();
    h.lift("interrupt");
    return this.#end(run, result, why, null, null);
  }

  /** Force stop: supersedes a running Interrupt; the caller refused `fenced` if one runs. */
  async forceStop(trigger: StopTrigger = "force-stop"): Promise<StopRecord> {
    const h = this.#host;
    if (this.#escalation) throw new Error("one escalation at a time");
    const interrupted = this.#interrupt;
    if (interrupted) interrupted.superseded = true;
    const run = this.#begin(trigger, interrupted?.id ?? this.#retryOf());
    run.abortWritten = interrupted?.abortWritten ?? false;
    this.#escalation = run;
    h.close("force-stop");
    h.endApprovals("closed", "closed by a force stop");
    let claimNote = "";
    try {
      await h.claimStopping();
    } catch (e) {
      claimNote = `; the claim refused stopping: ${String(e)}`;
    }
    const outcome: StopOutcome = await h.launched.forceStop();
    h.tracker.engineGone();
    const verdict = h.verifier.verifyStop(outcome, { pid: h.link.pid });
    let result: StopResult;
    let why: string;
    let proofDigest: string | null = null;
    if (verdict.verified) {
      try {
        await h.claimProven(verdict.proofDigest);
        result = "stopped";
        why = `proven${claimNote}`;
        proofDigest = verdict.proofDigest;
      } catch (e) {
        result = "uncertain";
        why = `the claim refused the proof: ${String(e)}`;
      }
    } else {
      result = "uncertain";
      why = `${verdict.why}${claimNote}`;
      await h
        .claimUncertain(trigger === "shutdown" ? "shutdown-uncertain" : "stop-uncertain")
        .catch((e: unknown) => {
          why += `; the claim refused uncertain: ${String(e)}`;
        });
    }
    h.close(result === "stopped" ? "stopped" : "uncertain");
    h.lift("force-stop");
    this.#escalation = null;
    h.tracker.stopEnded();
    const record = this.#end(run, result, why, outcome, proofDigest);
    if (result === "stopped") this.#proven = record;
    return record;
  }

  // A retry after an uncertain escalation continues that chain.
  #retryOf(): string | null {
    const latest = this.#latest;
    return latest && latest.result === "uncertain" && latest.trigger !== "interrupt"
      ? latest.id
      : null;
  }

  #begin(trigger: StopTrigger, supersedes: string | null): Running {
    const run: Running = {
      id: `st-${randomUUID()}`,
      trigger,
      supersedes,
      startedAt: new Date().toISOString(),
      superseded: false,
      abortWritten: false,
      nativeQueue: "not-cleared",
    };
    this.#host.tracker.stopBegan(run.id);
    return run;
  }

  #end(
    run: Running,
    result: StopResult,
    why: string,
    outcome: StopOutcome | null,
    proofDigest: string | null,
  ): StopRecord {
    const record: StopRecord = {
      version: 2,
      kind: "stop",
      id: run.id,
      execution: this.#host.execution,
      incarnation: this.#host.incarnation,
      trigger: run.trigger,
      supersedes: run.supersedes,
      result,
      abortWritten: run.abortWritten,
      nativeQueue: run.nativeQueue,
      approvalDisposition: this.#host.dialogSeen() ? "uncertain" : "resolved",
      proof: outcome?.proof ?? null,
      proofDigest,
      observations: outcome?.observations.length ?? 0,
      members: outcome?.members ?? [],
      why: why.slice(0, 2000),
      startedAt: run.startedAt,
      endedAt: new Date().toISOString(),
    };
    this.#latest = record;
    this.#host.record(record);
    return record;
  }
}
