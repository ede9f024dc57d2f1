// Cursors live in memory only: an LRU of at most 1000, each valid for 10 minutes, bound to
// actor, purpose, conversation, branch, snapshot and epoch. A foreign attempt leaves the cursor
// in place, so the view that owns it keeps working; a successful use consumes it.
import { randomFillSync } from "node:crypto";
import type { Cursor, CursorKind, Snapshot } from "../protocol/chat-01.ts";
import type { Position } from "./parts.ts";
import { Refusal } from "./refusal.ts";

export const CURSOR_CAP = 1000;
export const CURSOR_TTL_MS = 10 * 60 * 1000;

/** What the reader needs to resume, beyond the public record. */
export type CursorState = {
  record: Cursor;
  dev: bigint;
  ino: bigint;
  /** Page cursors: where the next page starts in the snapshot's branch items. */
  position: Position;
  /** Follow cursors: how many items the branch had, and a digest of their keys. */
  itemCount: number;
  itemsDigest: string;
  /** The snapshot left out a trailing partial line (for the view of later pages). */
  incomplete: boolean;
  expiresAtMs: number;
};

export type Binding = { actor: string; purpose: string; conversation: string; branch: string };

export type CursorStoreOptions = { cap?: number; ttlMs?: number; now?: () => number };

/** Random bytes for cursor ids, drawn from the CSPRNG a pool at a time. */
const TOKEN_BYTES = 20;
const pool = Buffer.alloc(TOKEN_BYTES * 256);
let used = pool.length;

/**
 * 160 random bits as hex. Drawing them a pool at a time costs one call to the system's CSPRNG
 * per 256 cursors instead of one per cursor (a page issues one; that call was 3% of a page).
 * Each token's bytes are used once and are as unpredictable as a call of their own.
 */
function cursorToken(): string {
  if (used + TOKEN_BYTES > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const token = pool.toString("hex", used, used + TOKEN_BYTES);
  used += TOKEN_BYTES;
  return token;
}

export class CursorStore {
  readonly #cursors = new Map<string, CursorState>();
  readonly #cap: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: CursorStoreOptions = {}) {
    this.#cap = options.cap ?? CURSOR_CAP;
    this.#ttlMs = options.ttlMs ?? CURSOR_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#cursors.size;
  }

  issue(
    kind: CursorKind,
    binding: Binding,
    pinned: { snapshot: Snapshot; sourceEpoch: string; dev: bigint; ino: bigint },
    resume: { position: Position; itemCount: number; itemsDigest: string; incomplete: boolean },
  ): Cursor {
    const expiresAtMs = this.#now() + this.#ttlMs;
    const record: Cursor = {
      id: `c-${cursorToken()}`,
      kind,
      ...binding,
      snapshot: pinned.snapshot,
      sourceEpoch: pinned.sourceEpoch,
      expiresAt: new Date(expiresAtMs).toISOString(),
    };
    this.#cursors.set(record.id, {
      record,
      dev: pinned.dev,
      ino: pinned.ino,
      ...resume,
      expiresAtMs,
    });
    while (this.#cursors.size > this.#cap) {
      const oldest = this.#cursors.keys().next().value;
      if (oldest === undefined) break;
      this.#cursors.delete(oldest);
    }
    return record;
  }

  /**
   * Looks a cursor up for use under `binding`: cursor-unknown (never issued or evicted),
   * cursor-expired, cursor-foreign (any binding differs; the cursor stays).
   */
  check(id: string, binding: Binding): CursorState {
    const state = this.#cursors.get(id);
    if (state === undefined) {
      throw new Refusal(
        "cursor-unknown",
        "This cursor is not known (never issued, used, or evicted); open the conversation again.",
      );
    }
    if (this.#now() >= state.expiresAtMs) {
      this.#cursors.delete(id);
      throw new Refusal(
        "cursor-expired",
        "This cursor expired after 10 minutes; open the conversation again.",
      );
    }
    const r = state.record;
    const differs = (["actor", "purpose", "conversation", "branch"] as const).filter(
      (k) => r[k] !== binding[k],
    );
    if (differs.length > 0) {
      throw new Refusal(
        "cursor-foreign",
        `This cursor belongs to another ${differs.join(", ")}; it was not used.`,
      );
    }
    // Refresh its place in the LRU: it is in use.
    this.#cursors.delete(id);
    this.#cursors.set(id, state);
    return state;
  }

  consume(id: string): void {
    this.#cursors.delete(id);
  }
}
