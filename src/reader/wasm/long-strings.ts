// The WebAssembly half of parsing a line with its long string values decoded outside JSON.parse
// (line-value.ts): the line is copied into the module's memory, and the module lists its string
// values of at least LONG_MIN_BYTES, each unescaped to UTF-8 beside the line where it held an
// escape (json-string.wat spans). Where WebAssembly is missing, nothing is listed and every line
// is parsed whole: the same values, a little slower.

import { LINE_BYTES, LIST_AT, LIST_MAX, OUT_AT, wasm } from "./module.ts";
import { forgetMirror } from "./string-body.ts";

/** A string value at least this long is decoded outside JSON.parse. */
export const LONG_MIN_BYTES = 512;

const memoryBytes = wasm ? Buffer.from(wasm.memory.buffer) : Buffer.alloc(0);
const list = wasm ? new Int32Array(wasm.memory.buffer, LIST_AT, LIST_MAX * 4) : new Int32Array(0);

/**
 * The long string values listed by the last call of listLongStrings, valid until the next: the
 * i-th value's body is `body(i)`'s range of the line (offsets in the caller's buffer), and it is
 * the UTF-8 of `escaped(i)`'s range of `unescaped` when it held an escape (else its body's).
 */
export const longs = {
  bodyStart: (i: number) => list[i * 4]!,
  bodyEnd: (i: number) => list[i * 4 + 1]!,
  /** Where its unescaped bytes start in `unescaped`, or -1 when it held no escape. */
  outStart: (i: number) => list[i * 4 + 2]!,
  outEnd: (i: number) => list[i * 4 + 3]!,
  unescaped: memoryBytes,
};

/**
 * Lists the long string values of the line `buf[start, end)`, leaving out the value at
 * `[cutFrom, cutTo)` (offsets in `buf`; a cut before `start` for none): their count (offsets in
 * `longs` are then the line's, from 0), or -1 when the module cannot (no WebAssembly, a line
 * over 2 MiB, a string that does not end validly, an escaped lone surrogate, too many values),
 * and the caller parses the line whole.
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
  if (k < 0) return -1;
  return wasm.spans(cutTo - start, n, LONG_MIN_BYTES, k);
}
