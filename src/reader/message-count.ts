// A catalogue row's message count: the prompts and replies in the whole file (every branch; tool
// results, notices and bookkeeping are not messages). It is the one row fact that needs every
// line, and a catalogue must stay cheap (a listing reads a file's first and last 64 KiB), so:
// - a file the head holds whole is counted from the head's bytes, reading nothing more;
// - a longer one is counted without building JSON values (harness/*/ say what a message line is:
//   Pi's by a byte search, Claude's by its scan's rule, since Claude Code writes a reply's
//   `message` before its `type`), within a budget of bytes per listing shared by all rows, and
//   goes on where it stopped at the next listing: until it is done the row's count is null;
// - a count is carried forward when the file only grew: a live session's next listing reads just
//   what was appended.
// docs/reader.md says why; `npm run bench` measures the catalogue (docs/performance.md).
import { readRange } from "./safe-fs.ts";

/** What a count knows of the bytes it counted, to go on from there when the file grows. */
export type CountState = {
  dev: bigint;
  ino: bigint;
  /** Bytes of whole lines counted (up to and including the last newline). */
  counted: number;
  count: number;
  /** The last bytes counted: a file that grew must still end its counted part with them. */
  edge: Buffer;
  /** The harness's memory between lines (Claude Code: the reply the last line continued). */
  last: string | null;
};

/**
 * Whether `line` (one line, no newline) is a message; `state.last` carries what a line must know
 * of the lines before it (a reply written on several lines is one message).
 */
export type MessageLine = (line: Buffer, state: CountState) => boolean;

const CHUNK = 1024 * 1024;
const EDGE = 64;

/** Bytes a listing may read to count messages, over all its rows (beyond heads and tails). */
export const COUNT_BUDGET = 8 * 1024 * 1024;

/** What a listing has left of COUNT_BUDGET. */
export type Budget = { left: number };

/**
 * The count for an open file of `size` bytes, going on from `prev` when it still holds; `head`:
 * the file's first whole lines, already read (counted from, not read again). `done` when every
 * byte was looked at: a trailing line without its newline is not a message yet.
 */
export function countMessages(
  fd: number,
  size: number,
  id: { dev: bigint; ino: bigint },
  prev: CountState | undefined,
  isMessage: MessageLine,
  head: Buffer,
  budget: Budget,
): { state: CountState; done: boolean } {
  let state: CountState =
    prev && holds(fd, size, id, prev)
      ? { ...prev }
      : { dev: id.dev, ino: id.ino, counted: 0, count: 0, edge: Buffer.alloc(0), last: null };
  let at = state.counted;
  let carry: Buffer | null = null;
  while (at < size) {
    const fromHead = at === 0 && head.length > 0;
    if (!fromHead && budget.left <= 0) break;
    const chunk = fromHead ? head : readRange(fd, at, Math.min(CHUNK, size - at, budget.left));
    if (!fromHead) budget.left -= chunk.length;
    if (chunk.length === 0) break;
    at += chunk.length;
    const buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a, start)) {
      // A view of the line: a search never runs past its end.
      if (isMessage(buf.subarray(start, nl), state)) state.count++;
      start = nl + 1;
    }
    state.counted += start;
    if (start > 0)
      state = { ...state, edge: Buffer.from(buf.subarray(Math.max(0, start - EDGE), start)) };
    // A line longer than a chunk is carried whole into the next read.
    carry = start < buf.length ? Buffer.from(buf.subarray(start)) : null;
  }
  return { state, done: at >= size };
}

/** `prev` counted a prefix of this file: same file, not shorter, the same bytes at its edge. */
function holds(fd: number, size: number, id: { dev: bigint; ino: bigint }, prev: CountState) {
  if (id.dev !== prev.dev || id.ino !== prev.ino || size < prev.counted) return false;
  const from = prev.counted - prev.edge.length;
  return readRange(fd, from, prev.edge.length).equals(prev.edge);
}

/** JSON's whitespace: what a writer may put between a key, its colon and its value. */
function isJsonSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/**
 * Where the value of the first member `"<key>"` at or after `from` starts (past its colon and
 * any whitespace), or -1. In JSON a quote inside a string is escaped, so a key's quotes followed
 * by a colon are structure, never text. Whitespace is allowed where JSON allows it: Pi and Claude
 * Code write none, but a session written by another tool (Python's json.dumps writes `"type":
 * "user"`) must count the same.
 */
function memberValueAt(line: Buffer, key: string, from = 0): number {
  const needle = `"${key}"`;
  for (let at = line.indexOf(needle, from); at >= 0; at = line.indexOf(needle, at + 1)) {
    let i = at + needle.length;
    while (isJsonSpace(line[i])) i++;
    if (line[i] !== 0x3a) continue;
    i++;
    while (isJsonSpace(line[i])) i++;
    return i;
  }
  return -1;
}

/**
 * The value of the first member `"<key>"` at or after `from` whose value is a string, or null
 * (its first 200 bytes, as Latin-1: the callers compare it with ASCII). Pi and Claude Code write
 * a record's own `type` before any nested object's.
 */
export function firstValue(line: Buffer, key: string, from = 0): string | null {
  for (let at = memberValueAt(line, key, from); at >= 0; at = memberValueAt(line, key, at)) {
    if (line[at] !== 0x22) continue;
    const start = at + 1;
    const close = line.indexOf(0x22, start);
    if (close < 0) return null;
    return line.toString("latin1", start, Math.min(close, start + 200));
  }
  return null;
}
