// CHAT-01 stream events (seed: Pieces, events): each engine maps its native events into them
// (Pi's in engine/pi/pi-events.ts). Each execution has its own stream epoch; sequences count
// from 1 within it, and an event's id is `<epoch>.<sequence>`, so the same event repeated has
// the same id and the same bytes. Blocking dialogs are not stream events: the controller pushes
// them as `dialog` messages.
import { randomUUID } from "node:crypto";
import { encodeLine } from "../engine/framing.ts";
import type { ReplayReason, StreamEvent } from "../protocol.ts";

export type ChatEvent = StreamEvent["event"];

/**
 * How much of the current epoch the controller keeps for `resume` (docs/control-protocol.md,
 * Replay). A count bounds the bookkeeping, bytes bound the memory: the oldest events go first
 * once either is passed. A long answer streams a few thousand deltas of ~120 bytes each; a
 * `message-ended` carries the whole message, tool output included, so bytes are the bound that
 * usually binds. The bytes stay at half the socket's MAX_QUEUED_BYTES (8 MiB): a whole replay
 * is queued at once, and must never look like a client that stopped reading (the controller
 * caps them below a lowered maxQueuedBytes too). bench/replay-memory.ts measures the heap.
 */
export const REPLAY_MAX_EVENTS = 10_000;
export const REPLAY_MAX_BYTES = 4 * 1024 * 1024;

export type ReplayPlan =
  | {
      ok: true;
      streamEpoch: string;
      /** afterSequence + 1; toSequence is fromSequence - 1 when nothing is owed. */
      fromSequence: number;
      toSequence: number;
      /** The encoded lines, exactly as they were broadcast. */
      lines: readonly string[];
    }
  | { ok: false; reason: ReplayReason; message: string };

/**
 * One execution's stream: a fresh epoch, a sequence counter, and the most recent events as the
 * encoded lines every client was sent (so a replayed event has the same bytes, not merely an
 * equal value).
 */
export class EventStream {
  readonly epoch: string;
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  #sequence = 0;
  /** Kept lines from #keptHead on, oldest first: #kept[#keptHead + i] has sequence
   * #firstKept + i. Dropping moves the head; the array is compacted now and then. */
  #kept: string[] = [];
  #keptHead = 0;
  #firstKept = 1;
  #keptBytes = 0;

  constructor(
    epoch: string = `se-${randomUUID()}`,
    bounds: { maxEvents?: number; maxBytes?: number } = {},
  ) {
    this.epoch = epoch;
    this.#maxEvents = bounds.maxEvents ?? REPLAY_MAX_EVENTS;
    this.#maxBytes = bounds.maxBytes ?? REPLAY_MAX_BYTES;
  }

  /** The sequence the next event will carry. */
  get nextSequence(): number {
    return this.#sequence + 1;
  }

  /** The oldest sequence still kept (nextSequence when nothing is). */
  get firstKept(): number {
    return this.#firstKept;
  }

  /** What the replay buffer holds now: events and their encoded bytes. */
  get kept(): { events: number; bytes: number } {
    return { events: this.#kept.length - this.#keptHead, bytes: this.#keptBytes };
  }

  /** The next event and its line; the line is kept for replay. */
  next(event: ChatEvent): { message: StreamEvent; line: string } {
    const sequence = ++this.#sequence;
    const message: StreamEvent = {
      type: "event",
      streamEpoch: this.epoch,
      sequence,
      id: `${this.epoch}.${sequence}`,
      event,
    };
    const line = encodeLine(message);
    this.#keep(line);
    return { message, line };
  }

  /** Whether a client that saw every event up to `afterSequence` of `epoch` can be replayed. */
  covers(epoch: string, afterSequence: number): boolean {
    return this.plan(epoch, afterSequence).ok;
  }

  /** The lines owed to a client that saw `epoch` up to `afterSequence`, or why there are none. */
  plan(epoch: string, afterSequence: number): ReplayPlan {
    if (epoch !== this.epoch) {
      return {
        ok: false,
        reason: "another-epoch",
        message: `the stream is now epoch ${this.epoch}; ${epoch} ended with its execution`,
      };
    }
    if (afterSequence > this.#sequence) {
      return {
        ok: false,
        reason: "ahead-of-stream",
        message: `the stream has reached sequence ${this.#sequence}, not ${afterSequence}`,
      };
    }
    if (afterSequence + 1 < this.#firstKept) {
      return {
        ok: false,
        reason: "older-than-kept",
        message: `the oldest event kept is ${this.#firstKept}; ${afterSequence + 1} was dropped`,
      };
    }
    const start = this.#keptHead + (afterSequence + 1 - this.#firstKept);
    return {
      ok: true,
      streamEpoch: this.epoch,
      fromSequence: afterSequence + 1,
      toSequence: this.#sequence,
      lines: this.#kept.slice(start),
    };
  }

  #keep(line: string): void {
    const bytes = Buffer.byteLength(line);
    this.#kept.push(line);
    this.#keptBytes += bytes;
    while (
      this.#kept.length - this.#keptHead > this.#maxEvents ||
      (this.#keptBytes > this.#maxBytes && this.#kept.length - this.#keptHead > 0)
    ) {
      const dropped = this.#kept[this.#keptHead] as string;
      // Freed now, not at the next compaction: a few large lines would otherwise stay.
      this.#kept[this.#keptHead] = "";
      this.#keptHead++;
      this.#firstKept++;
      this.#keptBytes -= Buffer.byteLength(dropped);
    }
    // Compact now and then so dropped lines are freed, not merely skipped.
    if (this.#keptHead > 1024 && this.#keptHead * 2 > this.#kept.length) {
      this.#kept = this.#kept.slice(this.#keptHead);
      this.#keptHead = 0;
    }
  }
}
