// The replies one connection may be sent again (issue 18 item 2; docs/control-protocol.md,
// Request ids). An identical repeat of a request gets its reply again, so replies are kept;
// kept for the life of a connection they grew without bound (80,000 observes: 344 → 551 MB).
// Two bounded memories instead:
//   - the window: the last REPLY_WINDOW_IDS requests with their canonical content and reply,
//     at most REPLY_WINDOW_BYTES of both together (the newest one always stays, whatever its
//     size, so an immediate repeat is answered);
//   - the ledger: a 48-bit digest of each of the last ID_LEDGER_SIZE request ids, without
//     content, so that a repeat older than the window is recognised and refused, never run again.
// An id older than the ledger is no longer known; docs/control-protocol.md says so.
import { createHash } from "node:crypto";
import type { Reply } from "../protocol.ts";

/** The replies sent again to an identical repeat: the same answer to the same act. */
const REPLAYS = new WeakSet<Reply>();

/**
 * The reply an identical repeat is sent: a copy of the first, marked as a replay, so the hooks
 * that see replies on their way out (the audit ledger, the `act` announcements) count the act
 * once: a retry is not a new act.
 */
export function replayOf(reply: Reply): Reply {
  const again = { ...reply };
  REPLAYS.add(again);
  return again;
}

/** Whether `reply` answers an identical repeat of a request already answered. */
export function isReplay(reply: Reply): boolean {
  return REPLAYS.has(reply);
}

export const REPLY_WINDOW_IDS = 256;
export const REPLY_WINDOW_BYTES = 1024 * 1024;
export const ID_LEDGER_SIZE = 65_536;

export type ReplyWindowLimits = { ids: number; bytes: number; ledger: number };

export type Lookup =
  /** Never seen on this connection (as far as the ledger reaches). */
  | { kind: "new" }
  /** In the window: the earlier request's canonical content and its reply. */
  | { kind: "held"; canonical: string; reply: Promise<Reply> }
  /** Used before, but its reply and content left the window. */
  | { kind: "forgotten" };

type Entry = {
  canonical: string;
  reply: Promise<Reply>;
  /** UTF-8 bytes of canonical content plus reply JSON; the reply counts once it settled. */
  size: number;
};

export class ReplyWindow {
  readonly limits: ReplyWindowLimits;
  // Insertion order is age: the first key is the oldest.
  readonly #entries = new Map<string, Entry>();
  #size = 0;
  readonly #ledger = new Set<number>();
  readonly #ring: Float64Array;
  #ringNext = 0;
  #ringFull = false;

  constructor(limits: Partial<ReplyWindowLimits> = {}) {
    this.limits = {
      ids: limits.ids ?? REPLY_WINDOW_IDS,
      bytes: limits.bytes ?? REPLY_WINDOW_BYTES,
      ledger: limits.ledger ?? ID_LEDGER_SIZE,
    };
    for (const [k, v] of Object.entries(this.limits)) {
      if (!Number.isSafeInteger(v) || v < 1)
        throw new RangeError(`${k} must be a positive integer`);
    }
    if (this.limits.ledger < this.limits.ids) {
      throw new RangeError("the ledger must reach at least as far back as the window");
    }
    this.#ring = new Float64Array(this.limits.ledger);
  }

  lookup(id: string): Lookup {
    const e = this.#entries.get(id);
    if (e) return { kind: "held", canonical: e.canonical, reply: e.reply };
    return this.#ledger.has(digest(id)) ? { kind: "forgotten" } : { kind: "new" };
  }

  /** Remembers a new request id with its content and (pending) reply. */
  add(id: string, canonical: string, reply: Promise<Reply>): void {
    const entry: Entry = { canonical, reply, size: Buffer.byteLength(canonical) };
    this.#entries.set(id, entry);
    this.#size += entry.size;
    this.#remember(digest(id));
    this.#evict();
    void reply.then((r) => {
      // Evicted before it settled: nothing to count.
      if (this.#entries.get(id) !== entry) return;
      const bytes = Buffer.byteLength(JSON.stringify(r));
      entry.size += bytes;
      this.#size += bytes;
      this.#evict();
    });
  }

  /** What is held now: for tests and the bench. */
  get stats(): { ids: number; bytes: number; remembered: number } {
    return { ids: this.#entries.size, bytes: this.#size, remembered: this.#ledger.size };
  }

  #evict(): void {
    const { ids, bytes } = this.limits;
    for (const [id, e] of this.#entries) {
      if (this.#entries.size <= 1) return;
      if (this.#entries.size <= ids && this.#size <= bytes) return;
      this.#entries.delete(id);
      this.#size -= e.size;
    }
  }

  #remember(d: number): void {
    if (this.#ringFull) this.#ledger.delete(this.#ring[this.#ringNext] as number);
    this.#ring[this.#ringNext] = d;
    this.#ledger.add(d);
    this.#ringNext = (this.#ringNext + 1) % this.#ring.length;
    if (this.#ringNext === 0) this.#ringFull = true;
  }
}

/**
 * 48 bits of SHA-256: exact as a double, and a fresh id collides with one of 65,536 remembered
 * ids with probability 2^-32, in which case it is refused, never run twice.
 */
function digest(id: string): number {
  return createHash("sha256").update(id).digest().readUIntBE(0, 6);
}
