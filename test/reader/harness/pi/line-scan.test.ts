import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  type LineFacts,
  NON_STRING,
  scanLine,
} from "../../../../src/reader/harness/pi/line-scan.ts";
import { withoutTape } from "../../../../src/reader/wasm/line-tokens.ts";
import {
  B,
  bytes,
  embed,
  genValue,
  int,
  mutate,
  pickOf,
  prng,
  type Rng,
  show,
} from "../json-lines.ts";

// The truth scanLine must match: what the reader's index pass learns from JSON.parse.
function truth(buf: Buffer, start: number, end: number): LineFacts {
  let v: unknown;
  try {
    v = JSON.parse(buf.toString("utf8", start, end));
  } catch {
    return { json: false };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { json: true, object: false };
  const o = v as Record<string, unknown>;
  const pick = (x: unknown) => (typeof x === "string" || x === null ? x : NON_STRING);
  const hasType = Object.hasOwn(o, "type");
  const hasId = Object.hasOwn(o, "id");
  const hasParentId = Object.hasOwn(o, "parentId");
  return {
    json: true,
    object: true,
    type: hasType ? pick(o.type) : undefined,
    id: hasId ? pick(o.id) : undefined,
    parentId: hasParentId ? pick(o.parentId) : undefined,
    hasType,
    hasId,
    hasParentId,
  };
}

function sameFacts(a: LineFacts, b: LineFacts): boolean {
  if (a.json !== b.json) return false;
  if (!a.json || !b.json) return true;
  if (a.object !== b.object) return false;
  if (!a.object || !b.object) return true;
  return (
    Object.is(a.type, b.type) &&
    Object.is(a.id, b.id) &&
    Object.is(a.parentId, b.parentId) &&
    a.hasType === b.hasType &&
    a.hasId === b.hasId &&
    a.hasParentId === b.hasParentId
  );
}

/** Checks one line; returns what JSON.parse made of it. */
function check(line: Buffer, rng: Rng, what: string): LineFacts {
  const { buf, start, end } = embed(rng, line);
  const want = truth(buf, start, end);
  // With the module's tape, and as the JavaScript loop alone (a Node without WebAssembly).
  for (const path of ["tape", "loop"] as const) {
    let got: LineFacts | string;
    try {
      got =
        path === "tape" ? scanLine(buf, start, end) : withoutTape(() => scanLine(buf, start, end));
    } catch (e) {
      got = `threw ${String(e)}`;
    }
    if (typeof got === "string" || !sameFacts(got, want)) {
      assert.fail(
        `${what} (${path})\nline bytes: ${show(line)}\nscanLine: ${JSON.stringify(got)}\nJSON.parse: ${JSON.stringify(want)}`,
      );
    }
  }
  return want;
}

/** How many fuzz cases of each kind ran, by what JSON.parse made of them. */
class Tally {
  invalid = 0;
  scalar = 0;
  object = 0;
  withKey = 0;
  add(f: LineFacts): void {
    if (!f.json) this.invalid++;
    else if (!f.object) this.scalar++;
    else {
      this.object++;
      if (f.hasType || f.hasId || f.hasParentId) this.withKey++;
    }
  }
  toString(): string {
    const total = this.invalid + this.scalar + this.object;
    return `${total} (${this.invalid} invalid, ${this.scalar} non-object, ${this.object} objects, ${this.withKey} with type/id/parentId)`;
  }
}

/** Fuzz case counts; LINE_SCAN_CASES scales them (e.g. 20 for a long run), LINE_SCAN_SEED reseeds. */
const SCALE = Number(process.env.LINE_SCAN_CASES ?? 1);
const SEED = process.env.LINE_SCAN_SEED;

describe("line-scan", () => {
  it("agrees with JSON.parse when given hand-written tricky lines", () => {
    const S = NON_STRING;
    const obj = (f: Partial<Record<"type" | "id" | "parentId", unknown>>): LineFacts => ({
      json: true,
      object: true,
      type: f.type,
      id: f.id,
      parentId: f.parentId,
      hasType: "type" in f,
      hasId: "id" in f,
      hasParentId: "parentId" in f,
    });
    const NOT: LineFacts = { json: false };
    const SCALAR: LineFacts = { json: true, object: false };
    const cases: [Buffer, LineFacts][] = [
      // Empty and whitespace.
      [B(""), NOT],
      [B("   "), NOT],
      [B("\r"), NOT],
      [B(" \t{}\r"), obj({})],
      [B("{ \t\r\n}"), obj({})],
      [B('{"a"\t:\t1 }\r'), obj({})],
      [bytes([0xc2, 0xa0], "{}"), NOT], // U+00A0 is not JSON whitespace
      [bytes([0xef, 0xbb, 0xbf], "{}"), NOT], // a BOM
      [bytes('{"id":"', [0xef, 0xbb, 0xbf], '"}'), obj({ id: "\ufeff" })],
      // Scalars and arrays.
      [B("null"), SCALAR],
      [B("true"), SCALAR],
      [B("false"), SCALAR],
      [B("nul"), NOT],
      [B("nulll"), NOT],
      [B("True"), NOT],
      [B('"abc"'), SCALAR],
      [B("[]"), SCALAR],
      [B('[{"type":"x"}]'), SCALAR],
      [B("[1,]"), NOT],
      [B("[,1]"), NOT],
      [B("[1 2]"), NOT],
      // Numbers.
      [B("0"), SCALAR],
      [B("-0"), SCALAR],
      [B("1e999"), SCALAR],
      [B("-1.5E+3"), SCALAR],
      [B("0.0e-0"), SCALAR],
      [B("123456789012345678901234567890"), SCALAR],
      [B("01"), NOT],
      [B("-01"), NOT],
      [B("-"), NOT],
      [B("1."), NOT],
      [B(".5"), NOT],
      [B("+1"), NOT],
      [B("1e"), NOT],
      [B("1e+"), NOT],
      [B("1E-x"), NOT],
      [B("--1"), NOT],
      [B("0x10"), NOT],
      [B("Infinity"), NOT],
      [B("NaN"), NOT],
      [B("1_000"), NOT],
      [B('{"id":-0.5e3}'), obj({ id: S })],
      [B('{"id":01}'), NOT],
      // Object syntax.
      [B("{}"), obj({})],
      [B("{"), NOT],
      [B("}"), NOT],
      [B('{"a":1,}'), NOT],
      [B("{,}"), NOT],
      [B('{"a"}'), NOT],
      [B('{"a":}'), NOT],
      [B('{"a" 1}'), NOT],
      [B("{a:1}"), NOT],
      [B("{'a':1}"), NOT],
      [B('{"a":1}}'), NOT],
      [B('{"a":1} x'), NOT],
      [B('{"a":1} {}'), NOT],
      [B('{"a":[1}'), NOT],
      [B('{"a":{]}'), NOT],
      // The three keys.
      [
        B('{"type":"message","id":"abc","parentId":null}'),
        obj({ type: "message", id: "abc", parentId: null }),
      ],
      [B('{"type":"a","type":"b"}'), obj({ type: "b" })],
      [B('{"type":"a","type":1}'), obj({ type: S })],
      [B('{"type":1,"type":"a"}'), obj({ type: "a" })],
      [B('{"type":"a","type":null}'), obj({ type: null })],
      [B('{"type":["a"]}'), obj({ type: S })],
      [B('{"type":[]}'), obj({ type: S })],
      [B('{"type":{}}'), obj({ type: S })],
      [B('{"type":{"type":"x"}}'), obj({ type: S })],
      [B('{"id":true,"parentId":false}'), obj({ id: S, parentId: S })],
      [B('{"parentId":"p","id":""}'), obj({ id: "", parentId: "p" })],
      [B('{"t\\u0079pe":"x"}'), obj({ type: "x" })],
      [B('{"\\u0069\\u0064":"x"}'), obj({ id: "x" })],
      [
        B('{"\\u0070\\u0061\\u0072\\u0065\\u006e\\u0074\\u0049\\u0064":"x"}'),
        obj({ parentId: "x" }),
      ],
      [B('{"\\u0074ype":"x","type":"y"}'), obj({ type: "y" })],
      [B('{"Type":"x","ID":"y","parentid":"z","type ":"w"}'), obj({})],
      [B('{"ty\\npe":"x"}'), obj({})],
      [B('{"message":{"type":"x","id":"y"},"content":[{"type":"z"}]}'), obj({})],
      [B('{"a":{"b":{"type":"x"}},"id":"y"}'), obj({ id: "y" })],
      [B('{"__proto__":1,"type":"x"}'), obj({ type: "x" })],
      // Strings and escapes.
      [B('{"type":"a\\u0062c"}'), obj({ type: "abc" })],
      [B('{"id":"a\\"b"}'), obj({ id: 'a"b' })],
      [B('{"id":"a\\\\"}'), obj({ id: "a\\" })],
      [B('{"id":"a\\"}'), NOT],
      [B('{"id":"\\/\\b\\f\\n\\r\\t"}'), obj({ id: "/\b\f\n\r\t" })],
      [B('{"id":"\\uD800"}'), obj({ id: "\ud800" })],
      [B('{"id":"\\udc00x"}'), obj({ id: "\udc00x" })],
      [B('{"id":"\\uD83D\\uDE00"}'), obj({ id: "😀" })],
      [B('{"id":"\\u0000"}'), obj({ id: "\u0000" })],
      [B('{"id":"\\u00zz"}'), NOT],
      [B('{"id":"\\u12"}'), NOT],
      [B('{"id":"\\u12'), NOT],
      [B('{"id":"\\x41"}'), NOT],
      [B('{"id":"\\\'"}'), NOT],
      [B('{"id":"\\U0041"}'), NOT],
      [B('{"id":"\\'), NOT],
      [B('{"id":"abc'), NOT],
      [B('{"id":"日本語 🙂 café"}'), obj({ id: "日本語 🙂 café" })],
      // Raw bytes inside and outside strings.
      [bytes('{"id":"a', [0x09], 'b"}'), NOT],
      [bytes('{"id":"a', [0x00], 'b"}'), NOT],
      [bytes('{"id":"a', [0x1f], 'b"}'), NOT],
      [bytes('{"x":"', "y".repeat(40), [0x0d], "z".repeat(40), '"}'), NOT],
      [bytes('{"id":"a', [0x7f], 'b"}'), obj({ id: "a\u007fb" })],
      [bytes('{"id":"a', [0xff], 'b"}'), obj({ id: "a\ufffdb" })],
      [bytes('{"id":"a', [0xe6, 0x97], '"}'), obj({ id: "a\ufffd" })],
      [bytes('{"id":"', [0xed, 0xa0, 0x80], '"}'), obj({ id: "\ufffd\ufffd\ufffd" })],
      [bytes('{"id":"', [0xc0, 0x80], '"}'), obj({ id: "\ufffd\ufffd" })],
      [bytes('{"id":"', [0xe6, 0x97], '\\n"}'), obj({ id: "\ufffd\n" })],
      [bytes('{"id":"x"', [0xff], "}"), NOT],
      [bytes('{"id":"x"}', [0x80]), NOT],
      [bytes('{"id":"x",', [0x00], '"a":1}'), NOT],
      [bytes('{"id":"x",', [0x0b], '"a":1}'), NOT],
      [bytes('{"id":"x",', [0x0c], '"a":1}'), NOT],
      [bytes('{"t', [0xff], 'pe":"x"}'), obj({})],
    ];
    const rng = prng(1);
    for (const [line, want] of cases) {
      assert.deepEqual(truth(line, 0, line.length), want, `truth of ${show(line)}`);
      for (let k = 0; k < 8; k++) check(line, rng, "hand-written case");
    }
  });

  it("clamps its range as toString does when start or end fall outside the buffer", () => {
    const buf = B('{"type":"t"}');
    for (const [start, end] of [
      [-3, buf.length],
      [0, buf.length + 5],
      [-1, buf.length + 1],
      [5, 2],
      [buf.length + 1, buf.length + 2],
    ] as const) {
      assert.deepEqual(scanLine(buf, start, end), truth(buf, start, end), `${start}..${end}`);
    }
  });

  it("matches JSON.parse when lines nest very deeply", () => {
    const rng = prng(2);
    const depth = 100_000;
    const lines = [
      B(`${"[".repeat(depth)}${"]".repeat(depth)}`),
      B(`${"[".repeat(depth)}${"]".repeat(depth - 1)}`),
      B(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`),
      B(`{"type":"deep","x":${'{"type":'.repeat(depth)}1${"}".repeat(depth)},"id":"i"}`),
      B(`${'{"a":['.repeat(depth)}${"]}".repeat(depth)}`),
      B(`${'{"a":['.repeat(depth)}${"}]".repeat(depth)}`),
    ];
    for (const line of lines) check(line, rng, "deep nesting");
    assert.deepEqual(scanLine(lines[3]!, 0, lines[3]!.length), {
      json: true,
      object: true,
      type: "deep",
      id: "i",
      parentId: undefined,
      hasType: true,
      hasId: true,
      hasParentId: false,
    });
  });

  it("matches JSON.parse when string bodies put specials at every alignment", () => {
    // Specials at every offset of the 4-byte words the scanner skips.
    const rng = prng(3);
    const specials: (string | number[])[] = [
      '\\"',
      "\\\\",
      "\\n",
      "\\u0041",
      "\\uD800",
      '"',
      "\\",
      "\\u00G0",
      "\\q",
      [0x01],
      [0x1f],
      [0x20],
      [0x7f],
      [0x80],
      [0xff],
      [0xe6, 0x97],
      "é",
      "🙂",
    ];
    for (const sp of specials) {
      for (let before = 0; before < 9; before++) {
        for (let after = 0; after < 9; after++) {
          const line = bytes('{"type":"', "a".repeat(before), sp, "b".repeat(after), '","id":"x"}');
          check(line, rng, "special at an alignment");
        }
      }
    }
  });

  it("matches JSON.parse when real Pi lines are mutated at random", () => {
    const seed = Number(SEED ?? 20240601);
    const rng = prng(seed);
    const lines = sampleLines(rng);
    const tally = new Tally();
    try {
      for (const line of lines) tally.add(check(line, rng, `unmutated line (seed ${seed})`));
      for (let c = 0; c < 50_000 * SCALE; c++) {
        let m = pickOf(rng, lines);
        const n = 1 + int(rng, 3);
        for (let i = 0; i < n; i++) m = mutate(rng, m);
        tally.add(check(m, rng, `mutated Pi line, case ${c} (seed ${seed})`));
      }
    } finally {
      process.stdout.write(
        `# line-scan: ${lines.length} Pi lines, mutated: ${tally} (seed ${seed})\n`,
      );
    }
  });

  it("matches JSON.parse when random JSON texts are generated", () => {
    const seed = Number(SEED ?? 20240602);
    const rng = prng(seed);
    const tally = new Tally();
    try {
      for (let c = 0; c < 30_000 * SCALE; c++) {
        let line: Buffer = Buffer.concat(genValue(rng, 0, true));
        if (rng() < 0.3) line = mutate(rng, line);
        tally.add(check(line, rng, `random JSON, case ${c} (seed ${seed})`));
      }
    } finally {
      process.stdout.write(`# line-scan: random JSON texts: ${tally} (seed ${seed})\n`);
    }
  });
});

// ---- Fuzz inputs ----

const CACHE = fileURLToPath(new URL("../../../../bench/results/cache/", import.meta.url));

/** ~200 lines of the cached 20 MiB bench session when present, plus synthetic Pi entries. */
function sampleLines(rng: Rng): Buffer[] {
  const out: Buffer[] = [];
  // The 20 MiB session if cached, else the smallest cached one of at least 1 MiB.
  const mib = (f: string) => Number(/^long-(\d+)mib-seed\d+-.*\.jsonl$/.exec(f)?.[1] ?? 0);
  const cached = existsSync(CACHE)
    ? readdirSync(CACHE)
        .filter((f) => mib(f) > 0)
        .sort((a, b) => (mib(a) === 20 ? 0 : mib(a)) - (mib(b) === 20 ? 0 : mib(b)))[0]
    : undefined;
  if (cached !== undefined) {
    const buf = readFileSync(join(CACHE, cached));
    const all: Buffer[] = [];
    let s = 0;
    while (s < buf.length) {
      let e = buf.indexOf(0x0a, s);
      if (e < 0) e = buf.length;
      all.push(buf.subarray(s, e));
      s = e + 1;
    }
    const step = Math.max(1, Math.floor(all.length / 200));
    for (let i = 0; i < all.length; i += step) out.push(Buffer.from(all[i]!));
  }
  for (let i = 0; i < 60; i++) out.push(B(JSON.stringify(syntheticEntry(rng, i))));
  return out;
}

const WORDS = ["src/reader/pi.ts:12:", "const", "日本語", "café", "🙂", "→", "error", "✓", "leaf"];

function text(rng: Rng, n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    parts.push(pickOf(rng, WORDS));
    parts.push(pickOf(rng, [" ", " ", " ", "\n", "\t", '"', "\\", "\u0001", "\ud800"]));
  }
  return parts.join("");
}

function syntheticEntry(rng: Rng, i: number): object {
  const id = (i * 2654435761).toString(16).slice(-8);
  const base = { type: "message", id, parentId: i === 0 ? null : `p${i}`, timestamp: "2026-01-01" };
  switch (i % 4) {
    case 0:
      return { ...base, message: { role: "user", content: text(rng, 5 + int(rng, 50)) } };
    case 1:
      return {
        ...base,
        message: {
          role: "assistant",
          content: [
            { type: "thinking", thinking: text(rng, 20) },
            { type: "toolCall", id: "call_1", name: "bash", arguments: { command: "ls -la" } },
          ],
          usage: { input: 1200, output: 300, cost: { total: 0.0012 } },
        },
      };
    case 2:
      return {
        ...base,
        message: {
          role: "toolResult",
          toolCallId: "call_1",
          content: [{ type: "text", text: text(rng, 100 + int(rng, 800)) }],
          isError: false,
        },
      };
    default:
      return { type: "model_change", id, parentId: `p${i}`, provider: "x", modelId: "y" };
  }
}
