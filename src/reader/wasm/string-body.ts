// The WebAssembly half of the line scans' string bodies (json-string.wat): a line is copied into
// the module's memory as its scan begins (mirrorLine, from json-scan.ts lineWords), and a long
// string body's rest is scanned there 32 bytes at a time (scanMirrored). Where WebAssembly or
// its SIMD is missing, nothing is mirrored and the JavaScript loop scans every body: the same
// answers, a little slower.
import { LINE_BYTES, wasm } from "./module.ts";

const memory = wasm ? new Uint8Array(wasm.memory.buffer) : new Uint8Array(0);
const scan = wasm ? wasm.string : () => -1;

/** Lines shorter than this gain less from the module than their copy costs. */
export const MIRROR_MIN_BYTES = 256;
/** The longest line the module's memory takes (json-string.wat: its first 2 MiB). */
export const MIRROR_MAX_BYTES = wasm ? LINE_BYTES : 0;

/** Bit 30 of the module's answer: the body held an escape. */
const ESCAPED = 0x40000000;

/** Whether the body scanMirrored scanned last held an escape (read as a live binding). */
export let mirroredEscape = false;

/**
 * The words of the line now in the module's memory: a scan may use the module only for the line
 * it was handed these words for (lineWords makes a new array per line, so a line scanned inside
 * another's scan takes the mirror and the outer one goes back to the JavaScript loop). Holding
 * them keeps one buffer of at most a step or a 2 MiB line from the collector until the next
 * mirrored line: bounded, and cheaper than clearing it after every scan.
 */
let mirrored: Int32Array | null = null;
let mirrorStart = 0;
let mirrorEnd = 0;

/** Copies `buf[start, end)` into the module's memory for the line whose words are `words`. */
export function mirrorLine(buf: Buffer, start: number, end: number, words: Int32Array): void {
  const n = end - start;
  if (n < MIRROR_MIN_BYTES || n > MIRROR_MAX_BYTES) return;
  memory.set(buf.subarray(start, end));
  mirrored = words;
  mirrorStart = start;
  mirrorEnd = end;
}

/**
 * Says the module's memory no longer holds the mirrored line: long-strings.ts copied another
 * line over it. A scan under way then goes on with the JavaScript loop (isMirrored).
 */
export function forgetMirror(): void {
  mirrored = null;
}

/** Whether the line whose words are `words` is the one in the module's memory. */
export function isMirrored(words: Int32Array): boolean {
  return words === mirrored;
}

/**
 * The string body from `p` to before `end` (offsets in the mirrored line's buffer) scanned in
 * the module: its closing quote's offset, or -1 (json-scan.ts scanString's answer). Sets
 * `mirroredEscape`. Offsets in the buffer may pass 2^31: only the line's own go through bits.
 */
export function scanMirrored(p: number, end: number): number {
  const r = scan(p - mirrorStart, Math.min(end, mirrorEnd) - mirrorStart);
  if (r < 0) return -1;
  mirroredEscape = (r & ESCAPED) !== 0;
  return mirrorStart + (r & ~ESCAPED);
}
