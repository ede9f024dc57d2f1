// The bytes a page renders, read from the file again: the reader keeps no snapshot in memory, so
// a page reads the blocks holding the lines it shows (a window) and serves them only once they
// are proved to be the snapshot's — by their tags (block-tags.ts), or, under a settled change
// time, by an fstat after the reads that still shows it. Windows are kept for the next calls
// (bytes proved once are the snapshot's for good), 4 MiB for the whole reader.
import { BLOCK, blocksOf } from "./block-tags.ts";
import type { EntryRec } from "./entries.ts";
import { readWindow, windowBytes, windowHolds } from "./file-pass.ts";
import type { Item } from "./items.ts";
import { type FileIdentity, type OpenFile, statOpenFile } from "./safe-fs.ts";
import { type ByteProof, replaced, type SnapshotData } from "./snapshot.ts";

/** A window is read at least this many blocks long, so one read serves a page's many lines. */
const WINDOW_BLOCKS = 4;
/**
 * The memory windows are read into: one ring for the reader, reused as windows are let go, so
 * reading a file's every page allocates no new memory (windows a page needs and then drops
 * would otherwise pile up as garbage until the collector runs: tens of MiB).
 */
export const WINDOW_ARENA_BYTES = 4 * 1024 * 1024;

type Window = {
  data: SnapshotData;
  lo: number;
  start: number;
  buf: Buffer;
  /** Where it lies in the arena, or -1 for a window too large for it (its own buffer). */
  at: number;
  /** The call that read it: the arena never reuses a window of the call under way. */
  call: number;
  /** Proved the snapshot's; until then (read under the change time) only its call uses it. */
  proved: boolean;
};

/**
 * Windows proved to be their snapshots' bytes, most recently used last, in one arena. A window
 * is a fresh Buffer object over its part of the arena: its identity (which render.ts keeps a
 * long entry's parts by) is never reused for other bytes, because the arena gives its part to
 * another window only after this one left the cache.
 */
export class WindowCache {
  readonly #windows: Window[] = [];
  readonly #arena: Buffer;
  #next = 0;
  #call = 0;

  constructor(arenaBytes = WINDOW_ARENA_BYTES) {
    this.#arena = Buffer.allocUnsafeSlow(arenaBytes);
  }

  /**
   * Starts a call: the windows it reads stay put until the next call starts. Windows an earlier
   * call read but never proved (it was refused first) are let go.
   */
  begin(): number {
    for (let i = this.#windows.length - 1; i >= 0; i--) {
      if (!this.#windows[i]?.proved) this.#windows.splice(i, 1);
    }
    return ++this.#call;
  }

  find(data: SnapshotData, start: number, end: number): Window | undefined {
    const i = this.#windows.findIndex(
      (w) =>
        w.data === data &&
        (w.proved || w.call === this.#call) &&
        w.start <= start &&
        end <= w.start + w.buf.length,
    );
    if (i < 0) return undefined;
    const [w] = this.#windows.splice(i, 1);
    if (w) this.#windows.push(w);
    return w;
  }

  /** A window of `data` holding byte `offset` (a window read on from there starts with it). */
  holding(data: SnapshotData, offset: number): Window | undefined {
    return this.#windows.find(
      (w) =>
        w.data === data &&
        (w.proved || w.call === this.#call) &&
        w.start <= offset &&
        offset < w.start + w.buf.length,
    );
  }

  /**
   * Room for a window of `bytes`: the next part of the arena (the windows there let go), or a
   * buffer of its own when the window is large or the part is still in use by this call (or
   * holds `keep`, which the new window is about to copy from).
   */
  allocate(bytes: number, keep?: Window): { buf: Buffer; at: number } {
    const size = this.#arena.length;
    if (bytes > size / 4) return { buf: Buffer.allocUnsafeSlow(bytes), at: -1 };
    if (this.#next + bytes > size) this.#next = 0;
    const lo = this.#next;
    const hi = lo + bytes;
    const overlaps = (w: Window) => w.at >= 0 && w.at < hi && lo < w.at + w.buf.length;
    if (this.#windows.some((w) => overlaps(w) && (w.call === this.#call || w === keep))) {
      return { buf: Buffer.allocUnsafeSlow(bytes), at: -1 };
    }
    for (let i = this.#windows.length - 1; i >= 0; i--) {
      const w = this.#windows[i];
      if (w && overlaps(w)) this.#windows.splice(i, 1);
    }
    this.#next = hi;
    return { buf: this.#arena.subarray(lo, hi), at: lo };
  }

  add(w: Window): void {
    this.#windows.push(w);
    // Windows of their own buffer count against the arena's size too; the newest stays.
    let own = 0;
    for (const x of this.#windows) if (x.at < 0) own += x.buf.length;
    for (let i = 0; own > this.#arena.length && i < this.#windows.length - 1; ) {
      const x = this.#windows[i];
      if (x && x.at < 0) {
        own -= x.buf.length;
        this.#windows.splice(i, 1);
      } else i++;
    }
  }

  /** Forgets the windows of a snapshot the file no longer holds. */
  drop(data: SnapshotData): void {
    for (let i = this.#windows.length - 1; i >= 0; i--) {
      if (this.#windows[i]?.data === data) this.#windows.splice(i, 1);
    }
  }
}

/** One call's access to a snapshot's bytes, over the file it opened. */
export class PageBytes {
  readonly #file: OpenFile;
  readonly #data: SnapshotData;
  readonly #proof: ByteProof;
  readonly #since: FileIdentity;
  readonly #cache: WindowCache;
  /** Windows read under the change time: proved only once `finish` finds it unmoved. */
  readonly #pending: Window[] = [];
  readonly #call: number;

  constructor(
    file: OpenFile,
    data: SnapshotData,
    proof: { proof: ByteProof; since: FileIdentity },
    cache: WindowCache,
  ) {
    this.#file = file;
    this.#data = data;
    this.#proof = proof.proof;
    this.#since = proof.since;
    this.#cache = cache;
    this.#call = cache.begin();
  }

  /** Snapshot bytes [start, end) in a buffer, and where `start` is in it. */
  range(start: number, end: number, prefetch = true): { buf: Buffer; base: number } {
    const data = this.#data;
    const hit = this.#cache.find(data, start, end);
    if (hit) return { buf: hit.buf, base: hit.start };
    const lo = Math.floor(start / BLOCK);
    const blocks = blocksOf(data.snapshot.bytes);
    const hi = Math.min(
      blocks,
      Math.max(Math.ceil(end / BLOCK), prefetch ? lo + WINDOW_BLOCKS : 0),
    );
    const tagged = this.#proof === "tags";
    // A window read on from one already held (a line that runs past its end) copies the
    // blocks they share instead of reading and checking them again.
    const prior = this.#cache.holding(data, lo * BLOCK);
    const { buf, at } = this.#cache.allocate(windowBytes(data.tags, lo, hi), prior);
    let from = lo;
    if (prior) {
      const shared = Math.min(buf.length, prior.start + prior.buf.length - lo * BLOCK);
      prior.buf.copy(buf, 0, lo * BLOCK - prior.start, lo * BLOCK - prior.start + shared);
      from = lo + Math.floor(shared / BLOCK);
    }
    const rest = buf.subarray((from - lo) * BLOCK);
    if (rest.length > 0 && !readWindow(this.#file.fd, data.tags, from, rest, tagged)) {
      this.#cache.drop(data);
      throw replaced("earlier bytes were rewritten");
    }
    const w = { data, lo, start: lo * BLOCK, buf, at, call: this.#call, proved: tagged };
    this.#cache.add(w);
    if (!tagged) this.#pending.push(w);
    return { buf, base: w.start };
  }

  /** An item with its entry's byte range moved into the buffer that holds it. */
  item(item: Item): { buf: Buffer; item: Item } {
    if (item.kind !== "entry") return { buf: EMPTY, item };
    const { rec } = item;
    const { buf, base } = this.range(rec.start, rec.end);
    return {
      buf,
      item: { kind: "entry", rec: { ...rec, start: rec.start - base, end: rec.end - base } },
    };
  }

  /** An entry's line, in a buffer of its own range (a label: no prefetch). */
  entry(rec: EntryRec): { buf: Buffer; rec: EntryRec } {
    const { buf, base } = this.range(rec.start, rec.end, false);
    return { buf, rec: { ...rec, start: rec.start - base, end: rec.end - base } };
  }

  /**
   * Ends the call's reads. Under the change time, an fstat must still show the stamp the proof
   * rests on; if the file moved meanwhile, the windows read are checked by their tags instead,
   * and the call is refused if any is not the snapshot's.
   */
  finish(): void {
    if (this.#pending.length === 0) return;
    const now = statOpenFile(this.#file);
    const still =
      now.dev === this.#since.dev &&
      now.ino === this.#since.ino &&
      now.size === this.#since.size &&
      now.ctimeNs === this.#since.ctimeNs;
    for (const w of this.#pending) {
      if (!still && !windowHolds(this.#data.tags, w.lo, w.buf)) {
        this.#cache.drop(this.#data);
        throw replaced("it changed while this page was read");
      }
    }
    for (const w of this.#pending.splice(0)) w.proved = true;
  }
}

const EMPTY = Buffer.alloc(0);
