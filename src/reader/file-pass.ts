// The reads a snapshot is made and verified with, over an open descriptor. The reader never
// keeps a snapshot's bytes: it reads them forward once, in whole blocks, handing the lines to
// the parser and taking the SHA-256 and the block tags as they pass (readForward), and later
// reads blocks again and checks their tags — all of them backward, in steps of another size, to
// verify (verifyBackward), or a page's few, to render them (readWindow).
//
// Why backward, in other steps: a read racing a writer can see a mix of two versions, and a
// second read in the same steps and order can see the very same mix again (a writer that
// alternates two same-length versions recreates it; issue 23 measured it). A writer copies
// forward; a read going backward crosses it at most once per pass of the writer, and its steps
// (three blocks, 768 KiB) never coincide with the forward read's (four, 1 MiB).
import type { Hash } from "node:crypto";
import { BLOCK, type BlockTags, blocksOf, extendTags, isBlock, tagOf } from "./block-tags.ts";
import { readInto } from "./safe-fs.ts";
import { work } from "./work.ts";

/** The forward read's step: whole blocks, from a block boundary. */
const FORWARD_STEP = 4 * BLOCK;
/** The backward read's step: another whole number of blocks. */
const BACKWARD_STEP = 3 * BLOCK;

/** Scratch for the passes: one of each for the process (the reader is synchronous). */
const FORWARD_BUF = Buffer.allocUnsafeSlow(FORWARD_STEP);
const BACKWARD_BUF = Buffer.allocUnsafeSlow(BACKWARD_STEP);
/** The snapshot's partial last block as far as a forward read has found whole lines. */
const LAST_BLOCK_BUF = Buffer.allocUnsafeSlow(BLOCK);

/**
 * Receives a snapshot's whole lines in file order as the forward read passes them: `lines` (a
 * view of scratch memory, valid during the call only) starts at byte `base` of the file.
 */
export type LineSink = { lines(lines: Buffer, base: number): void };

/** A snapshot as a forward read continues it: its length, SHA-256 state and tags. */
export type SnapshotEnd = { bytes: number; hash: Hash; tags: BlockTags };

/** Reads `buf.length` bytes at `position` (fewer at the end of the file), counted. */
function read(fd: number, buf: Buffer, position: number): number {
  const got = readInto(fd, buf, position);
  work.bytesRead += got;
  return got;
}

/** Bytes of a line that does not end in the current step yet, waiting for its newline. */
class Carry {
  buf = Buffer.alloc(0);
  used = 0;
  start: number;

  constructor(start: number) {
    this.start = start;
  }

  append(piece: Buffer): void {
    if (this.used + piece.length > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.used + piece.length, this.buf.length * 2));
      this.buf.copy(next, 0, 0, this.used);
      this.buf = next;
    }
    piece.copy(this.buf, this.used);
    this.used += piece.length;
  }

  view(): Buffer {
    return this.buf.subarray(0, this.used);
  }

  /** Empty again, from `start`; a buffer grown for one long line is let go. */
  reset(start: number): void {
    this.start = start;
    this.used = 0;
    if (this.buf.length > 2 * FORWARD_STEP) this.buf = Buffer.alloc(0);
  }
}

/**
 * Reads the file forward from the block where `from` ends up to `limit`, and returns the
 * snapshot that continues `from` with the whole lines found (the lines after `from.bytes` are
 * handed to `sink`). "differs" when the bytes of `from`'s partial last block are not `from`'s
 * any more; "short" when the file ended before `limit` (it shrank while being read).
 */
export function readForward(
  fd: number,
  from: SnapshotEnd,
  limit: number,
  sink: LineSink,
): SnapshotEnd | "differs" | "short" {
  const n0 = from.bytes;
  const keep = Math.floor(n0 / BLOCK);
  const hash = from.hash.copy();
  const added: Buffer[] = [];
  const carry = new Carry(n0);
  let end = n0;
  /** How much of the snapshot's partial last block, [floor(end), end), LAST_BLOCK_BUF holds. */
  let lastBlock = 0;
  for (let pos = keep * BLOCK; pos < limit; pos += FORWARD_STEP) {
    const len = Math.min(FORWARD_STEP, limit - pos);
    const step = FORWARD_BUF.subarray(0, len);
    if (read(fd, step, pos) < len) return "short";
    if (pos < n0 && !isBlock(from.tags, keep, step.subarray(0, n0 - pos))) return "differs";
    for (let at = 0; at + BLOCK <= len; at += BLOCK)
      added.push(tagOf(step.subarray(at, at + BLOCK)));
    const segStart = Math.max(pos, n0);
    const seg = step.subarray(segStart - pos);
    const nl = seg.lastIndexOf(0x0a);
    if (nl < 0) {
      carry.append(seg);
      continue;
    }
    let rest = 0;
    if (carry.used > 0) {
      // The line the carry began ends here: it alone is joined to the carry (copying the whole
      // step's lines behind it cost a copy of the file per pass), the rest are handed as read.
      rest = seg.indexOf(0x0a) + 1;
      carry.append(seg.subarray(0, rest));
      const joined = carry.view();
      hash.update(joined);
      sink.lines(joined, carry.start);
    }
    if (rest < nl + 1) {
      const lines = seg.subarray(rest, nl + 1);
      hash.update(lines);
      sink.lines(lines, segStart + rest);
    }
    end = segStart + nl + 1;
    carry.reset(end);
    carry.append(seg.subarray(nl + 1));
    // The block holding `end` lies in this step: steps start on block boundaries.
    const blockStart = Math.floor(end / BLOCK) * BLOCK;
    lastBlock = step.copy(LAST_BLOCK_BUF, 0, blockStart - pos, end - pos);
  }
  const count = Math.floor(end / BLOCK);
  let last: Buffer | null = null;
  if (end % BLOCK !== 0) {
    last = end === n0 ? from.tags.last : tagOf(LAST_BLOCK_BUF.subarray(0, lastBlock));
  }
  return {
    bytes: end,
    hash,
    tags: extendTags(from.tags, keep, added.slice(0, count - keep), last, end),
  };
}

/**
 * Whether the file holds the snapshot `tags` describes from block `fromBlock` on: read backward
 * in BACKWARD_STEP steps, every block's tag checked.
 */
export function verifyBackward(fd: number, tags: BlockTags, fromBlock = 0): boolean {
  const per = BACKWARD_STEP / BLOCK;
  for (let hi = blocksOf(tags.bytes); hi > fromBlock; hi -= per) {
    const lo = Math.max(fromBlock, hi - per);
    const start = lo * BLOCK;
    const buf = BACKWARD_BUF.subarray(0, Math.min(hi * BLOCK, tags.bytes) - start);
    const got = read(fd, buf, start);
    work.bytesVerified += got;
    if (got < buf.length) return false;
    for (let j = lo; j < hi; j++) {
      const at = (j - lo) * BLOCK;
      if (!isBlock(tags, j, buf.subarray(at, Math.min(at + BLOCK, buf.length)))) return false;
    }
  }
  return true;
}

/** The bytes blocks [lo, hi) of the snapshot `tags` describes span (the last may be partial). */
export function windowBytes(tags: BlockTags, lo: number, hi: number): number {
  return Math.min(hi * BLOCK, tags.bytes) - lo * BLOCK;
}

/**
 * Reads blocks [lo, hi) of the snapshot `tags` describes into `buf` (windowBytes long); with
 * `check`, false unless every block carries its tag. False when the file ended first.
 */
export function readWindow(
  fd: number,
  tags: BlockTags,
  lo: number,
  buf: Buffer,
  check: boolean,
): boolean {
  if (read(fd, buf, lo * BLOCK) < buf.length) return false;
  return !check || windowHolds(tags, lo, buf);
}

/** Whether `buf`, read from block `lo` on, is the snapshot's: every block carries its tag. */
export function windowHolds(tags: BlockTags, lo: number, buf: Buffer): boolean {
  for (let at = 0, j = lo; at < buf.length; at += BLOCK, j++) {
    if (!isBlock(tags, j, buf.subarray(at, Math.min(at + BLOCK, buf.length)))) return false;
  }
  return true;
}
