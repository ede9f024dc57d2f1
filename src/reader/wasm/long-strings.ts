// The WebAssembly half of parsing a line with its long string values decoded outside JSON.parse
// (line-value.ts): the line is copied into the module's memory, and the module reads every
// string of it, checking that it is UTF-8 and JSON, and lists its string values of at least
// LONG_MIN_BYTES with their characters written beside the line, as UTF-16 or, when every one is
// at most U+00FF, as Latin-1 (json-string.wat spans): JavaScript makes each a string by a copy,
// without decoding. Where WebAssembly is missing, nothing is listed and every line is parsed
// whole: the same values, a little slower.

import { LINE_BYTES, LIST_AT, LIST_MAX, OUT_AT, wasm } from "./module.ts";
import { forgetMirror } from "./string-body.ts";

/** A string value at least this long is decoded outside JSON.parse. */
export const LONG_MIN_BYTES = 512;

const memoryBytes = wasm ? Buffer.from(wasm.memory.buffer) : Buffer.alloc(0);
const list = wasm ? new Int32Array(wasm.memory.buffer, LIST_AT, LIST_MAX * 4) : new Int32Array(0);

/** Bit 30 of a value's start in the module's memory: its characters are UTF-16LE. */
const UTF16 = 0x40000000;

/**
 * The long string values listed by the last call of listLongStrings, valid until the next:
 * the i-th value's body (from its first byte to its closing quote, offsets in the line) and
 * the value itself.
 */
export const longs = {
  bodyStart: (i: number) => list[i * 4]!,
  bodyEnd: (i: number) => list[i * 4 + 1]!,
  value(i: number): string {
    const from = list[i * 4 + 2]!;
    const to = list[i * 4 + 3]!;
    return (from & UTF16) !== 0
      ? memoryBytes.toString("utf16le", from & ~UTF16, to)
      : memoryBytes.toString("latin1", from, to);
  },
};

/**
 * Lists the long string values of the line `buf[start, end)`, leaving out the value at
 * `[cutFrom, cutTo)` (offsets in `buf`; a cut before `start` for none): their count (offsets in
 * `longs` are then the line's, from 0), or below 0 when the module cannot (no WebAssembly, a
 * line over 2 MiB, a string JSON refuses, bytes in a string that are not UTF-8, too many
 * values), and the caller parses the line whole. A count says every string of the line outside
 * the cut is UTF-8; a byte above 0x7f outside strings makes the line fail JSON.parse.
 */
export function listLongStrings(
  buf: Buffer,
  start: number,
  end: number,
  cutFrom = -1,
  cutTo = -1,
): number {
  if (!wasm || end - start > LINE_BYTES) return -1;
  memoryBytes.set(buf.subarray(start, end));
  // The line scans' mirror is overwritten: a scan under way must not read it as its line.
  forgetMirror();
  wasm.out.value = OUT_AT;
  const n = end - start;
  if (cutFrom < start) return wasm.spans(0, n, LONG_MIN_BYTES, 0);
  const k = wasm.spans(0, cutFrom - start, LONG_MIN_BYTES, 0);
  if (k < 0) return k;
  return wasm.spans(cutTo - start, n, LONG_MIN_BYTES, k);
}
