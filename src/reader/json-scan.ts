// The pieces of an exact JSON scanner that the reader's line scans share (harness/pi/line-scan.ts,
// harness/claude-code/scan-line.ts): whitespace, string bodies (skipped four bytes at a time),
// numbers and literals, each validated exactly as JSON.parse validates them, none building a
// value. Why bytes suffice, for lines decoded as UTF-8: see line-scan.ts's opening comment.
// A long string body's rest is scanned by WebAssembly (wasm/string-body.ts), 32 bytes a step.

import { isMirrored, mirroredEscape, mirrorLine, scanMirrored } from "./wasm/string-body.ts";

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_OBJ = 0x7b;
export const CLOSE_OBJ = 0x7d;
export const OPEN_ARR = 0x5b;
export const CLOSE_ARR = 0x5d;
export const MINUS = 0x2d;
export const DIGIT_0 = 0x30;
export const DIGIT_9 = 0x39;

export const NO_WORDS = new Int32Array(0);
/** Whether word k's lowest-addressed byte is its least significant (specialBytes relies on it). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Whether the last string scanned held an escape (set by scanString; read as a live binding). */
export let sawEscape = false;

/** Index of the first byte at or after `p` that is not JSON whitespace. */
export function skipWs(buf: Buffer, p: number, end: number): number {
  while (p < end) {
    const c = buf[p]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return p;
    p++;
  }
  return p;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/**
 * The high bit of each byte of `x` that is `"`, `\` or below 0x20, and no other bits. Exact per
 * byte, as no sum carries out of a byte: with y = x's low 7 bits per byte, `y + 0x60` sets a
 * byte's high bit when y >= 0x20, and `(y ^ v) + 0x7f` when y != v; OR-ing `x` sets it for
 * bytes from 0x80 up. The AND thus marks ordinary bytes, and its complement the special ones.
 */
function specialBytes(x: number): number {
  const y = x & 0x7f7f7f7f;
  const q = y ^ 0x22222222;
  const b = y ^ 0x5c5c5c5c;
  return ~(((y + 0x60606060) & (q + 0x7f7f7f7f) & (b + 0x7f7f7f7f)) | x) & 0x80808080;
}

/**
 * Words a string body is scanned by the JavaScript loop before the module takes its rest: keys,
 * ids and times mostly end within them, where a call into the module would cost more than it
 * saves (the 20 MiB bench sessions' scans were fastest at 4: Claude's -5%, Pi's -27% against
 * the JavaScript loop alone; docs/performance.md).
 */
const JS_WORDS = 4;

/**
 * Scans a string body from `p` (just after its opening quote). Returns the index of the closing
 * quote, or -1 when the string is invalid (a raw byte below 0x20, a bad escape, no closing
 * quote before `end`). Sets `sawEscape`. `words` views the line's whole aligned 4-byte words:
 * word k holds bytes `base + 4k .. base + 4k + 3`; bytes outside them are read one by one.
 */
export function scanString(
  buf: Buffer,
  p: number,
  end: number,
  words: Int32Array,
  base: number,
): number {
  sawEscape = false;
  const wordCount = words.length;
  for (;;) {
    const rel = p - base;
    if (rel >= 0 && rel >> 2 < wordCount) {
      // Jump to the first `"`, `\` or control byte at or after p, a word at a time.
      let k = rel >> 2;
      let m = specialBytes(words[k]!) & (-1 << ((rel & 3) << 3));
      const stop = k + JS_WORDS - 1;
      while (m === 0 && k + 1 < wordCount && k < stop) m = specialBytes(words[++k]!);
      if (m === 0 && k + 1 < wordCount && isMirrored(words)) {
        // JS_WORDS words of ordinary bytes: a long body, whose rest the module scans to its
        // closing quote.
        const close = scanMirrored(base + (k + 1) * 4, end);
        if (mirroredEscape) sawEscape = true;
        return close;
      }
      while (m === 0 && ++k < wordCount) m = specialBytes(words[k]!);
      p = base + (m === 0 ? wordCount * 4 : k * 4 + ((31 - Math.clz32(m & -m)) >> 3));
    }
    if (p >= end) return -1;
    const c = buf[p]!;
    if (c === QUOTE) return p;
    if (c === BACKSLASH) {
      sawEscape = true;
      if (p + 1 >= end) return -1;
      const e = buf[p + 1]!;
      if (e === 0x75 /* u */) {
        if (
          p + 5 >= end ||
          !isHex(buf[p + 2]!) ||
          !isHex(buf[p + 3]!) ||
          !isHex(buf[p + 4]!) ||
          !isHex(buf[p + 5]!)
        ) {
          return -1;
        }
        p += 6;
      } else if (
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f /* / */ ||
        e === 0x62 /* b */ ||
        e === 0x66 /* f */ ||
        e === 0x6e /* n */ ||
        e === 0x72 /* r */ ||
        e === 0x74 /* t */
      ) {
        p += 2;
      } else {
        return -1;
      }
    } else if (c < 0x20) {
      return -1;
    } else {
      // Only outside the words: an ordinary byte.
      p++;
    }
  }
}

/** Index just after the number starting at `p`, or -1 when it breaks JSON's number grammar. */
export function scanNumber(buf: Buffer, p: number, end: number): number {
  if (buf[p] === MINUS) p++;
  if (p >= end) return -1;
  const first = buf[p]!;
  if (first === DIGIT_0) {
    p++;
  } else if (first > DIGIT_0 && first <= DIGIT_9) {
    p++;
    while (p < end && buf[p]! >= DIGIT_0 && buf[p]! <= DIGIT_9) p++;
  } else {
    return -1;
  }
  if (p < end && buf[p] === 0x2e /* . */) {
    p++;
    if (p >= end || buf[p]! < DIGIT_0 || buf[p]! > DIGIT_9) return -1;
    while (p < end && buf[p]! >= DIGIT_0 && buf[p]! <= DIGIT_9) p++;
  }
  if (p < end && (buf[p] === 0x65 /* e */ || buf[p] === 0x45) /* E */) {
    p++;
    if (p < end && (buf[p] === 0x2b /* + */ || buf[p] === MINUS)) p++;
    if (p >= end || buf[p]! < DIGIT_0 || buf[p]! > DIGIT_9) return -1;
    while (p < end && buf[p]! >= DIGIT_0 && buf[p]! <= DIGIT_9) p++;
  }
  return p;
}

/** Index just after `true`, `false` or `null` starting at `p`, or -1. */
export function scanLiteral(buf: Buffer, p: number, end: number): number {
  const c = buf[p];
  if (c === 0x74 /* t */) {
    return p + 4 <= end && buf[p + 1] === 0x72 && buf[p + 2] === 0x75 && buf[p + 3] === 0x65
      ? p + 4
      : -1;
  }
  if (c === 0x66 /* f */) {
    return p + 5 <= end &&
      buf[p + 1] === 0x61 &&
      buf[p + 2] === 0x6c &&
      buf[p + 3] === 0x73 &&
      buf[p + 4] === 0x65
      ? p + 5
      : -1;
  }
  if (c === 0x6e /* n */) {
    return p + 4 <= end && buf[p + 1] === 0x75 && buf[p + 2] === 0x6c && buf[p + 3] === 0x6c
      ? p + 4
      : -1;
  }
  return -1;
}

/** The value of a scanned string body `s..e` (no quotes), as JSON.parse decodes it. */
export function decodeString(buf: Buffer, s: number, e: number, escaped: boolean): string {
  // The body is delimited by ASCII quotes, so decoding it alone gives the same characters as
  // decoding the whole line; escapes are left to JSON.parse on the quoted body.
  return escaped
    ? (JSON.parse(buf.toString("utf8", s - 1, e + 1)) as string)
    : buf.toString("utf8", s, e);
}

/**
 * The line's whole 4-byte-aligned words, for skipping string bodies: word k holds bytes
 * `base + 4k .. base + 4k + 3` of `buf`. Offsets may pass 2^31, so no bit operations on them
 * here. Big-endian hosts get no words and read bytes one at a time.
 */
export function lineWords(
  buf: Buffer,
  start: number,
  end: number,
): { words: Int32Array; base: number } {
  const abs = buf.byteOffset + start;
  const alignedAbs = abs + ((4 - (abs % 4)) % 4);
  const wordCount = LITTLE_ENDIAN
    ? Math.max(0, Math.floor((buf.byteOffset + end - alignedAbs) / 4))
    : 0;
  const words = wordCount > 0 ? new Int32Array(buf.buffer, alignedAbs, wordCount) : NO_WORDS;
  if (wordCount > 0) mirrorLine(buf, start, end, words);
  return { words, base: alignedAbs - buf.byteOffset };
}
