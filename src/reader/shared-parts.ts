// Rendered parts of shared history, kept for the next branch (issue 25): branches that fork
// share the rows above their fork, and every branch's pages render its whole path, so without
// this a traversal of every branch parses and renders the shared rows once per branch. A row's
// parts do not depend on the branch it is read on (its entry, its chunk group, its call above
// and its first part number are the row's), so the parts a page rendered for a shared row serve
// the next branch's page as they are.
//
// The rule: one snapshot's parse at a time (another one clears it), held weakly so the parse
// cache alone decides how long a parse lives; only rows on two branches or more (at or above the
// deepest fork from their branch); first come, first kept, until `maxBytes` of parts (their
// sized JSON bytes, SizedPart.bytes) or a quarter of the snapshot's bytes, whichever is less —
// then rows are no longer added (a traversal re-reads shared history from its start, which a
// least-recently-used cache under the shared size would have let go first). Parts rendered
// during a call are used by that call only until `commit`, after its bytes were proved; a call
// that fails (refused, or bytes that could not be proved) leaves nothing behind. The page still
// reads and proves every line it shows (page-bytes.ts): what is kept saves the parse and the
// render, never a check.
import type { SizedPart } from "./parts.ts";
import type { ParsedSession } from "./tree.ts";

/** The bound on the kept parts' sized JSON bytes, whatever the file. */
export const SHARED_PARTS_BYTES = 64 * 1024 * 1024;
/** The kept parts of a snapshot are at most its bytes divided by this. */
const SNAPSHOT_SHARE = 4;
/** Rows whose parts are this big or bigger are not kept here (render.ts keeps them per page). */
const ROW_MAX_BYTES = 1024 * 1024;

export class SharedParts {
  readonly #maxBytes: number;
  #session: WeakRef<ParsedSession> | null = null;
  /** Per branch of the session: the depth of the deepest row another branch forks from. */
  #deepestFork: Int32Array | null = null;
  #limit = 0;
  readonly #kept = new Map<number, SizedPart[]>();
  readonly #pending = new Map<number, SizedPart[]>();
  #bytes = 0;
  #pendingBytes = 0;

  constructor(maxBytes = SHARED_PARTS_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /**
   * Starts a call rendering rows of `s`, a snapshot of `snapshotBytes`: what an earlier call
   * left unproved is let go, and everything when `s` is not the parse kept.
   */
  begin(s: ParsedSession, snapshotBytes: number): void {
    this.#pending.clear();
    this.#pendingBytes = 0;
    if (this.#session?.deref() === s) return;
    this.drop();
    this.#limit = Math.min(this.#maxBytes, Math.floor(snapshotBytes / SNAPSHOT_SHARE));
    if (this.#limit <= 0 || s.branches.count < 2) return;
    this.#session = new WeakRef(s);
    this.#deepestFork = deepestForks(s);
  }

  /** The parts kept for row `row` of `s` (this call's own, or proved by an earlier call). */
  get(s: ParsedSession, row: number): SizedPart[] | undefined {
    if (this.#session === null || this.#session.deref() !== s) return undefined;
    return this.#kept.get(row) ?? this.#pending.get(row);
  }

  /** Offers the parts just rendered for row `row` of `s`: kept if shared and there is room. */
  offer(s: ParsedSession, row: number, parts: SizedPart[]): void {
    const deepest = this.#deepestFork;
    if (deepest === null || parts.length === 0 || this.#session?.deref() !== s) return;
    const b = s.branchOf[row]!;
    if (b < 0 || s.cols.depthAt[row]! > deepest[b]!) return;
    let bytes = 0;
    for (const p of parts) bytes += p.bytes;
    if (bytes >= ROW_MAX_BYTES || this.#bytes + this.#pendingBytes + bytes > this.#limit) return;
    this.#pendingBytes += bytes;
    this.#pending.set(row, parts.map(copySized));
  }

  /** The call's bytes were proved the snapshot's: its rendered rows are kept for later calls. */
  commit(): void {
    for (const [row, parts] of this.#pending) this.#kept.set(row, parts);
    this.#pending.clear();
    this.#bytes += this.#pendingBytes;
    this.#pendingBytes = 0;
  }

  /** Lets everything go (the snapshot was refused, or another is read). */
  drop(): void {
    this.#session = null;
    this.#deepestFork = null;
    this.#kept.clear();
    this.#pending.clear();
    this.#bytes = 0;
    this.#pendingBytes = 0;
  }

  /** Sized JSON bytes held (tests). */
  get bytes(): number {
    return this.#bytes;
  }
}

/**
 * A copy of rendered parts to keep (strings are shared, objects are new). Kept, not the parts
 * the page rendered: V8 tenures the objects of an allocation site whose objects survive, so
 * keeping the renderer's own objects made it allocate every later part in the old generation,
 * where garbage waits for a full collection (a 100 MiB traversal keeping 2 MiB peaked at 230 MiB
 * above its baseline instead of 85). Only these copies survive, from sites of their own.
 */
function copySized(p: SizedPart): SizedPart {
  return { part: copyJson(p.part) as SizedPart["part"], bytes: p.bytes };
}

function copyJson(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = copyJson(v[i]);
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = copyJson(x);
  return out;
}

/**
 * Per branch, the depth of the deepest row of it another branch forks from (0: none). Row `r`
 * is on every branch forking from its branch at depth `depthAt[r]` or deeper, so it is on two
 * branches or more exactly when its depth is at most its branch's deepest fork.
 */
function deepestForks(s: ParsedSession): Int32Array {
  const { count, forksFrom } = s.branches;
  const out = new Int32Array(count);
  for (let c = 0; c < count; c++) {
    const from = forksFrom[c]!;
    if (from < 0) continue;
    const b = s.branchOf[from]!;
    const d = s.cols.depthAt[from]!;
    if (b >= 0 && d > out[b]!) out[b] = d;
  }
  return out;
}
