// The WebAssembly half of the line scans' fast path (json-string.wat tokens): a line is copied
// into the module's memory, validated there exactly as JSON.parse validates it, and the tokens
// of its shallow levels — the keys and values a scan looks at, with where each lies — are
// written to a tape JavaScript reads. A scan then visits a line's few fields instead of each of
// its bytes. Where WebAssembly is missing, a line is too long or has too many shallow tokens,
// or the module finds it invalid, the caller scans the line in JavaScript as before: an invalid
// line's notice is the JavaScript scanner's to give.
import { KEYS_AT, KEYS_MAX, LINE_BYTES, TAPE_AT, TAPE_MAX, wasm } from "./module.ts";
import { forgetMirror } from "./string-body.ts";

const memory = wasm ? new Uint8Array(wasm.memory.buffer) : new Uint8Array(0);

/**
 * The tape of the last `lineTokens` call, valid until the next: entry i is `tape[3i]` (kind in
 * its low byte, the depth — the containers around the token — above it), `tape[3i + 1]` and
 * `tape[3i + 2]` (where it lies, in bytes from the line's start; see the TOKEN_ kinds).
 */
export const tape = wasm
  ? new Int32Array(wasm.memory.buffer, TAPE_AT, TAPE_MAX * 3)
  : new Int32Array(0);

/** An object or array: from its first byte to just after its last. */
export const TOKEN_OBJECT = 1;
export const TOKEN_ARRAY = 2;
/** A key or a string value: from its body's first byte to its closing quote (with ESCAPED). */
export const TOKEN_KEY = 3;
export const TOKEN_STRING = 4;
/** A number, true, false, null: its bytes. */
export const TOKEN_NUMBER = 5;
export const TOKEN_TRUE = 6;
export const TOKEN_FALSE = 7;
export const TOKEN_NULL = 8;
/** Bit 30 of a key's or string's end: its body holds an escape. */
export const ESCAPED = 0x40000000;
export const OFFSET = 0x3fffffff;

/** Below 0: the caller scans the line itself. */
export const TOKENS_DECLINED = -2;
export const TOKENS_INVALID = -1;

/** The keys a scan watches, at any depth: the module leaves every other key's value off the tape. */
export type WatchedKeys = { readonly bytes: Buffer };

/** Watched keys, ASCII and at most 27 bytes each (one of the module's 32-byte slots). */
export function watchedKeys(keys: readonly string[]): WatchedKeys {
  if (keys.length > KEYS_MAX) throw new Error(`at most ${KEYS_MAX} watched keys`);
  const bytes = Buffer.alloc(4 + 32 * keys.length);
  bytes.writeInt32LE(keys.length, 0);
  keys.forEach((key, i) => {
    if (!/^[\x20-\x7e]{0,27}$/.test(key) || key.includes('"') || key.includes("\\")) {
      throw new Error(
        `watched key ${JSON.stringify(key)}: printable ASCII, no quote or backslash, 27 bytes at most`,
      );
    }
    bytes.writeInt32LE(key.length, 4 + 32 * i);
    bytes.write(key, 8 + 32 * i, "latin1");
  });
  return { bytes };
}

/** The keys now in the module's memory. */
let current: WatchedKeys | null = null;

/** While false, every line is left to the JavaScript scanners (withoutTape). */
let enabled = true;

/**
 * Runs `fn` with every line left to the JavaScript scanners, as on a Node without WebAssembly:
 * the tests hold both paths to JSON.parse, and a benchmark can time the loop the tape replaced.
 */
export function withoutTape<T>(fn: () => T): T {
  const was = enabled;
  enabled = false;
  try {
    return fn();
  } finally {
    enabled = was;
  }
}

/**
 * Validates the line `buf[start, end)` and writes the tape of its tokens at depth `maxDepth` or
 * less (the line's value is at depth 0, its fields' keys and values at 1) — of its keys only
 * those in `keys` (and every escaped key: JavaScript compares it decoded), with their values:
 * their count, or TOKENS_INVALID where JSON.parse would throw, or TOKENS_DECLINED (no
 * WebAssembly, a line over 2 MiB, more than 65,536 such tokens, nesting deeper than 65,536).
 */
export function lineTokens(
  buf: Buffer,
  start: number,
  end: number,
  maxDepth: number,
  keys: WatchedKeys,
): number {
  if (!wasm || !enabled || end - start > LINE_BYTES) return TOKENS_DECLINED;
  if (current !== keys) {
    memory.set(keys.bytes, KEYS_AT);
    current = keys;
  }
  memory.set(buf.subarray(start, end));
  // The line scans' mirror is overwritten: a scan under way must not read it as its line.
  forgetMirror();
  return wasm.tokens(0, end - start, maxDepth);
}
