// Reads the spends of a session file from a byte offset, in one pass. Only a line that holds
// `"usage"` can hold a usage record, so the bytes are searched for that word and only the
// lines it is in are parsed: a tool result or a long user message costs a byte search, not a
// JSON.parse (the parse is most of a first run's cost). A line that holds the word in its text
// is parsed and yields nothing. The last line, while it has no newline, is left for later (Pi
// or Claude Code may be writing it).
import { readInto } from "../reader/safe-fs.ts";
import { claudeSpend, type Harness, piModelOf, piSpend, type Spend } from "./lines.ts";

const CHUNK_BYTES = 8 * 1024 * 1024;
const WORD = Buffer.from('"usage"');

export type Scanned = {
  spends: Spend[];
  /** Where the next read starts: just after the last whole line. */
  end: number;
  /** The model of the last Pi assistant message read (a later summary's model). */
  lastModel: string;
};

/**
 * The spends in `fd` from `from` (the start of a line) to `size`. `lastModel` carries a Pi
 * file's model from an earlier read.
 */
export function scanSpends(
  fd: number,
  harness: Harness,
  from: number,
  size: number,
  lastModel = "unknown",
): Scanned {
  const spends: Spend[] = [];
  let model = lastModel;
  let at = from;
  let carry: Buffer | null = null;
  let buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(0, size - from)));
  while (at < size) {
    const want = Math.min(buf.length, size - at);
    const got = readInto(fd, buf.subarray(0, want), at);
    if (got === 0) break;
    let bytes = buf.subarray(0, got);
    const base = at - (carry?.length ?? 0);
    if (carry) bytes = Buffer.concat([carry, bytes]);
    at += got;
    const lastNl = bytes.lastIndexOf(0x0a);
    const whole = lastNl + 1;
    let pos = 0;
    while (pos < whole) {
      const hit = bytes.indexOf(WORD, pos);
      if (hit < 0 || hit >= whole) break;
      const start = bytes.lastIndexOf(0x0a, hit) + 1;
      const stop = bytes.indexOf(0x0a, hit);
      pos = stop + 1;
      let parsed: unknown;
      try {
        parsed = JSON.parse(bytes.toString("utf8", Math.max(start, 0), stop));
      } catch {
        // Not JSON (a torn or foreign line): the reader shows it as such; it spent nothing.
        continue;
      }
      if (harness === "pi") {
        const spend = piSpend(parsed, model);
        model = piModelOf(parsed) ?? model;
        if (spend) spends.push(spend);
      } else {
        const spend = claudeSpend(parsed);
        if (spend) spends.push(spend);
      }
    }
    // What follows the last newline is read again with the next chunk.
    carry = whole < bytes.length ? Buffer.from(bytes.subarray(whole)) : null;
    if (carry && carry.length >= buf.length) {
      // A line longer than a chunk: read on with a larger buffer.
      buf = Buffer.allocUnsafe(carry.length * 2);
    }
    if (at >= size) return { spends, end: base + whole, lastModel: model };
  }
  return { spends, end: at - (carry?.length ?? 0), lastModel: model };
}
