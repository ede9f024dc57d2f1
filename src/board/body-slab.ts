// Large reply bodies cross from a read worker to the request loop through memory they share
// rather than by a transfer. A transferred ArrayBuffer is new external memory on the loop's
// heap, and at tens of MB/s of pages that memory drives the loop's garbage collector into
// full collections of tens of ms — pauses every other answer (the catalogue's) waits out.
// A view of a slab allocates nothing the collector must reclaim.
//
// The slab is cut into fixed chunks, each with an Int32 state: FREE or USED. Only the worker
// sets FREE → USED (when it writes a body) and only the loop sets USED → FREE (when the
// response is done with it), so a state never has two writers at once; Atomics order the
// state against the bytes. A body that finds no run of free chunks goes by transfer instead.
import type { SlabMemory, SlabRange } from "./read-messages.ts";

const FREE = 0;
const USED = 1;

/** 256 KiB chunks, 32 MiB a slab: room for about 80 pages of 0.4 MiB in flight. */
export const SLAB_CHUNK = 256 * 1024;
export const SLAB_CHUNKS = 128;
/** Smaller bodies are cheap to transfer; they would waste most of a chunk. */
export const SLAB_MIN_BODY = 64 * 1024;

export function createSlab(): SlabMemory {
  return {
    bytes: new SharedArrayBuffer(SLAB_CHUNK * SLAB_CHUNKS),
    states: new SharedArrayBuffer(4 * SLAB_CHUNKS),
  };
}

/** The worker's side: writes a body into free chunks, or says there is no room. */
export class SlabWriter {
  readonly #bytes: Uint8Array;
  readonly #states: Int32Array;
  #next = 0;

  constructor(memory: SlabMemory) {
    this.#bytes = new Uint8Array(memory.bytes);
    this.#states = new Int32Array(memory.states);
  }

  /** Copies `body` into the slab and marks its chunks used; null when no run is free. */
  write(body: Uint8Array): SlabRange | null {
    if (body.byteLength < SLAB_MIN_BODY) return null;
    const count = Math.ceil(body.byteLength / SLAB_CHUNK);
    if (count > SLAB_CHUNKS) return null;
    // First fit from where the last body ended, wrapping once: bodies are freed roughly in
    // the order they were written, so the run after the last one is the likeliest free.
    for (let tried = 0; tried < SLAB_CHUNKS; tried++) {
      const first = (this.#next + tried) % SLAB_CHUNKS;
      if (first + count > SLAB_CHUNKS) continue;
      if (!this.#isFree(first, count)) continue;
      const offset = first * SLAB_CHUNK;
      this.#bytes.set(body, offset);
      // The stores publish the bytes: the loop reads them only after seeing the message.
      for (let c = first; c < first + count; c++) Atomics.store(this.#states, c, USED);
      this.#next = (first + count) % SLAB_CHUNKS;
      return { offset, length: body.byteLength, first, count };
    }
    return null;
  }

  #isFree(first: number, count: number): boolean {
    for (let c = first; c < first + count; c++) {
      if (Atomics.load(this.#states, c) !== FREE) return false;
    }
    return true;
  }
}

/** The loop's side: a view of a body in the slab, and its release once the socket is done. */
export class SlabReader {
  readonly #bytes: SharedArrayBuffer;
  readonly #states: Int32Array;

  constructor(memory: SlabMemory) {
    this.#bytes = memory.bytes;
    this.#states = new Int32Array(memory.states);
  }

  /** A Buffer over the range (no copy) and the call that frees its chunks, at most once. */
  open(range: SlabRange): { body: Buffer; release: () => void } | null {
    const end = range.first + range.count;
    if (range.first < 0 || end > SLAB_CHUNKS || range.offset !== range.first * SLAB_CHUNK) {
      return null;
    }
    if (range.length > range.count * SLAB_CHUNK || range.length < 0) return null;
    const body = Buffer.from(this.#bytes, range.offset, range.length);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (let c = range.first; c < end; c++) Atomics.store(this.#states, c, FREE);
    };
    return { body, release };
  }

  /** Chunks in use now (for tests: every response done means zero). */
  get used(): number {
    let n = 0;
    for (let c = 0; c < SLAB_CHUNKS; c++) if (Atomics.load(this.#states, c) === USED) n++;
    return n;
  }
}
