// The reader's WebAssembly module (json-string.wat), instantiated once for the process: the
// line scans' string bodies (string-body.ts) and long string values (long-strings.ts) share its
// memory, each copying the line it works on into the memory's first 2 MiB. Null where
// WebAssembly or its SIMD is missing: both then leave the work to JavaScript.
import { BYTES_BASE64 } from "./json-string.ts";

export type Exports = {
  memory: { buffer: ArrayBuffer };
  /** Where the next long value's characters go (long-strings.ts sets it before each line). */
  out: { value: number };
  string(p: number, end: number): number;
  spans(p: number, end: number, min: number, k: number): number;
  tokens(p: number, end: number, maxDepth: number): number;
};

/** The part of the WebAssembly API used here (Node's types leave it to the DOM's). */
type Api = {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
};

/**
 * The memory's layout (json-string.wat): the line, long values' characters, their list, the tape
 * of a line's tokens (line-tokens.ts).
 */
export const LINE_BYTES = 0x200000;
export const OUT_AT = 0x200000;
export const LIST_AT = 0x610000;
export const LIST_MAX = 4096;
export const TAPE_AT = 0x620000;
export const TAPE_MAX = 65536;
export const KEYS_AT = 0x6f1000;
export const KEYS_MAX = 64;

function instantiate(): Exports | null {
  // Absent from a --jitless Node; a module without SIMD support throws as it compiles.
  const api = (globalThis as { WebAssembly?: Api }).WebAssembly;
  if (!api) return null;
  try {
    const module = new api.Module(Buffer.from(BYTES_BASE64, "base64"));
    return new api.Instance(module).exports as Exports;
  } catch {
    return null;
  }
}

export const wasm = instantiate();
