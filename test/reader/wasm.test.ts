// The WebAssembly half of the string-body scan (src/reader/wasm/): the committed bytes are the
// source's, the module is in use on this Node, and a long body scans the same in it as in the
// JavaScript loop and as a plain byte-by-byte reading of JSON's string grammar — at every
// alignment, cut anywhere, with every escape good and bad, and for a line scanned while another
// holds the module's memory.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { build } from "esbuild";
import { assemble, moduleText } from "../../scripts/build-wasm.ts";
import { lineWords, sawEscape, scanString } from "../../src/reader/json-scan.ts";
import { BYTES_BASE64 } from "../../src/reader/wasm/json-string.ts";
import {
  isMirrored,
  MIRROR_MAX_BYTES,
  MIRROR_MIN_BYTES,
} from "../../src/reader/wasm/string-body.ts";
import { embed, int, pickOf, prng, type Rng, show } from "./harness/json-lines.ts";

/**
 * JSON's string grammar read plainly, a byte at a time: the closing quote and whether the body
 * held an escape, or -1 (and false).
 */
function reference(buf: Buffer, p: number, end: number): { close: number; escaped: boolean } {
  const r = grammar(buf, p, end);
  return r.close < 0 ? { close: -1, escaped: false } : r;
}

function grammar(buf: Buffer, p: number, end: number): { close: number; escaped: boolean } {
  const hex = (c: number | undefined) =>
    c !== undefined && /^[0-9a-fA-F]$/.test(String.fromCharCode(c));
  let escaped = false;
  while (p < end) {
    const c = buf[p]!;
    if (c === 0x22) return { close: p, escaped };
    if (c < 0x20) return { close: -1, escaped };
    if (c !== 0x5c) {
      p++;
      continue;
    }
    escaped = true;
    if (p + 1 >= end) return { close: -1, escaped };
    const e = String.fromCharCode(buf[p + 1]!);
    if (e === "u") {
      if (p + 5 >= end || ![2, 3, 4, 5].every((i) => hex(buf[p + i]))) {
        return { close: -1, escaped };
      }
      p += 6;
    } else if ('"\\/bfnrt'.includes(e)) {
      p += 2;
    } else {
      return { close: -1, escaped };
    }
  }
  return { close: -1, escaped };
}

const PIECES: (string | number[])[] = [
  '\\"',
  "\\\\",
  "\\/",
  "\\b",
  "\\f",
  "\\n",
  "\\r",
  "\\t",
  "\\u0041",
  "\\uD83D\\uDE42",
  "\\uabcF",
  "\\u00G0",
  "\\u12",
  "\\q",
  "\\",
  '"',
  [0x00],
  [0x0a],
  [0x1f],
  [0x20],
  [0x7f],
  [0x80],
  [0xff],
  "é",
  "日本語",
  "🙂",
];

/** A long string body: plain runs (some longer than the module's 32-byte step) and pieces. */
function longBody(rng: Rng): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  const target = MIRROR_MIN_BYTES + int(rng, 3000);
  while (n < target) {
    const run = Buffer.from("x".repeat(int(rng, 4) === 0 ? int(rng, 200) : int(rng, 40)));
    const piece = pickOf(rng, PIECES);
    const b = Buffer.concat([
      run,
      typeof piece === "string" ? Buffer.from(piece) : Buffer.from(piece),
    ]);
    parts.push(b);
    n += b.length;
  }
  return Buffer.concat(parts);
}

/** scanString's answer for the body at `p` in the line [start, end), mirrored or not. */
function scan(buf: Buffer, start: number, p: number, end: number, mirrored: boolean) {
  const { words, base } = lineWords(buf, start, end);
  // Another line's scan takes the module's memory: this line's words go back to the JS loop.
  if (!mirrored) lineWords(Buffer.alloc(MIRROR_MIN_BYTES + 8), 0, MIRROR_MIN_BYTES + 8);
  assert.equal(isMirrored(words), mirrored && end - start >= MIRROR_MIN_BYTES);
  const close = scanString(buf, p, end, words, base);
  return { close, escaped: close >= 0 ? sawEscape : false };
}

describe("the string-body scan in WebAssembly", () => {
  it("is built from its source (npm run build:wasm writes it)", async () => {
    const bytes = await assemble("json-string");
    assert.equal(BYTES_BASE64, Buffer.from(bytes).toString("base64"));
    assert.match(moduleText("json-string", bytes), /do not edit/);
  });

  it("is in use on this Node for a line of 256 bytes to 2 MiB, and only then", () => {
    const at = (n: number) => isMirrored(lineWords(Buffer.alloc(n + 8), 4, 4 + n).words);
    assert.equal(at(MIRROR_MIN_BYTES), true);
    assert.equal(at(MIRROR_MAX_BYTES), true);
    assert.equal(at(MIRROR_MIN_BYTES - 1), false);
    assert.equal(at(MIRROR_MAX_BYTES + 1), false);
  });

  it("answers as JSON's grammar and the JavaScript loop do, for long bodies cut anywhere", () => {
    const rng = prng(25);
    for (let i = 0; i < 3000; i++) {
      const body = longBody(rng);
      const lead = Buffer.from(`{"k":"${"y".repeat(int(rng, 9))}`);
      const tail = int(rng, 3) === 0 ? Buffer.alloc(0) : Buffer.from('","z":1}');
      const full = Buffer.concat([lead, body, tail]);
      // Cut the line short now and then: the scan must stop at `end`, whatever lies after it.
      const line = int(rng, 4) === 0 ? full.subarray(0, lead.length + int(rng, body.length)) : full;
      const { buf, start, end } = embed(rng, line);
      const p = start + lead.length - int(rng, 3);
      const want = reference(buf, p, end);
      const simd = scan(buf, start, p, end, true);
      const js = scan(buf, start, p, end, false);
      const what = `case ${i}: ${show(line)} from ${p - start}`;
      assert.deepEqual(simd, js, what);
      assert.deepEqual(simd, want, what);
      if (want.close >= 0) {
        // And JSON.parse takes the body it found.
        const quoted = Buffer.concat([Buffer.from('"'), buf.subarray(p, want.close + 1)]);
        assert.doesNotThrow(() => JSON.parse(quoted.toString("utf8")), what);
      }
    }
  });

  it("finds a quote, backslash or control byte at every offset of its 32-byte step", () => {
    for (let at = 0; at < 96; at++) {
      for (const special of [0x22, 0x5c, 0x00, 0x1f]) {
        const line = Buffer.alloc(MIRROR_MIN_BYTES + 200, 0x61);
        const p = 40;
        line[p + at] = special;
        if (special === 0x5c) line[p + at + 1] = 0x22; // \" : the body goes on to its quote
        line[line.length - 2] = 0x22; // the quote a scan that missed the special would find
        const want = reference(line, p, line.length);
        const got = scan(line, 0, p, line.length, true);
        assert.deepEqual(got, want, `byte ${special} at ${at}`);
      }
    }
  });

  it("leaves a Node without WebAssembly (--jitless) to the JavaScript loop and JSON.parse, with the same facts and values", async () => {
    const line = JSON.stringify({ type: "message", id: "a1", text: `${"x".repeat(4000)}\n"é` });
    // Node strips TypeScript's types with WebAssembly, so the jitless child runs a bundle.
    const root = join(import.meta.dirname, "..", "..");
    const bundle = await build({
      stdin: {
        contents: `
          import { MIRROR_MAX_BYTES } from "./src/reader/wasm/string-body.ts";
          import { scanLine } from "./src/reader/harness/pi/line-scan.ts";
          import { entryObject } from "./src/reader/entries.ts";
          import { parseLongValues } from "./src/reader/line-value.ts";
          const buf = Buffer.from(process.argv.at(-1));
          const rec = { id: "a1", parentId: null, type: "message", line: 1, start: 0, end: buf.length, index: 0 };
          console.log(JSON.stringify({
            max: MIRROR_MAX_BYTES,
            facts: scanLine(buf, 0, buf.length),
            fast: parseLongValues(buf, 0, buf.length) !== null,
            value: entryObject(buf, rec),
          }));`,
        resolveDir: root,
        loader: "ts",
      },
      bundle: true,
      platform: "node",
      format: "esm",
      write: false,
    });
    const script = bundle.outputFiles[0]!.text;
    const run = (flags: string[]) =>
      JSON.parse(
        execFileSync(process.execPath, [...flags, "--input-type=module", "-e", script, line], {
          encoding: "utf8",
          timeout: 30_000,
        }),
      );
    const jitless = run(["--jitless"]);
    const jit = run([]);
    assert.equal(jitless.max, 0);
    assert.equal(jit.max, MIRROR_MAX_BYTES);
    assert.deepEqual(jitless.facts, jit.facts);
    assert.equal(jitless.facts.id, "a1");
    // Long values are decoded by the module where it runs, and the whole line parsed where not.
    assert.equal(jit.fast, true);
    assert.equal(jitless.fast, false);
    assert.deepEqual(jitless.value, JSON.parse(line));
    assert.deepEqual(jit.value, JSON.parse(line));
  });
});
