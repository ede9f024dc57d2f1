// The module's line tokens (json-string.wat tokens, wasm/line-tokens.ts): it accepts a line
// exactly when JSON.parse does, and its tape is what a plain reading of the line gives — every
// token at the depths asked for, in order, but an unwatched key's value — at every depth limit,
// with watched, unwatched and escaped keys, duplicates and empty containers. Lines it cannot
// take are declined, and the scans built on it then answer as JSON.parse does all the same.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { claudeFactsOf, scanClaudeLine } from "../../src/reader/harness/claude-code/scan-line.ts";
import { scanLine } from "../../src/reader/harness/pi/line-scan.ts";
import {
  lineTokens,
  TOKENS_DECLINED,
  TOKENS_INVALID,
  tape,
  watchedKeys,
} from "../../src/reader/wasm/line-tokens.ts";
import { wasm } from "../../src/reader/wasm/module.ts";
import {
  B,
  embed,
  genValue,
  int,
  mutate,
  pickOf,
  prng,
  type Rng,
  show,
} from "./harness/json-lines.ts";

const KEYS = ["type", "id", "parentId", "message", "content", "text", "a", "é", "uuid"];
const WATCHED = ["type", "id", "message", "content"];
/** The keys that can be watched (ASCII): "é" is never on the tape but escaped. */
const ASCII_KEYS = KEYS.filter((k) => k !== "é");

/**
 * The tape of a valid JSON text read plainly and recursively: what the module must write.
 * A key is on it when watched or escaped; an unwatched key's value is left off with all it holds.
 */
function referenceTape(buf: Buffer, max: number, watched: ReadonlySet<string>): number[] {
  const out: number[] = [];
  let p = 0;
  const ws = () => {
    while (p < buf.length && [0x20, 0x09, 0x0a, 0x0d].includes(buf[p]!)) p++;
  };
  const string = (): [number, number] => {
    const s = ++p;
    let escaped = 0;
    while (buf[p] !== 0x22) {
      if (buf[p] === 0x5c) {
        escaped = 1;
        p += buf[p + 1] === 0x75 ? 6 : 2;
      } else {
        p++;
      }
    }
    const close = p++;
    return [s, close | (escaped << 30)];
  };
  const value = (d: number, on: boolean): void => {
    ws();
    const c = buf[p]!;
    const emit = on && d <= max;
    if (c === 0x7b || c === 0x5b) {
      const at = out.length;
      if (emit) out.push((c === 0x7b ? 1 : 2) | (d << 8), p, 0);
      p++;
      ws();
      if (buf[p] === c + 2) {
        p++;
      } else {
        for (;;) {
          if (c === 0x7b) {
            ws();
            const [s, to] = string();
            const key = buf.toString("latin1", s, to & 0x3fffffff);
            const kept = to >> 30 === 1 || watched.has(key);
            if (on && d + 1 <= max && kept) out.push(3 | ((d + 1) << 8), s, to);
            ws();
            p++; // the colon
            value(d + 1, on && kept);
          } else {
            value(d + 1, on);
          }
          ws();
          p++;
          if (buf[p - 1] !== 0x2c) break;
        }
      }
      if (emit) out[at + 2] = p;
    } else if (c === 0x22) {
      const [s, to] = string();
      if (emit) out.push(4 | (d << 8), s, to);
    } else {
      const s = p;
      while (p < buf.length && /[0-9a-z+\-.E]/.test(String.fromCharCode(buf[p]!))) p++;
      const word = buf.toString("latin1", s, p);
      const kind = word === "true" ? 6 : word === "false" ? 7 : word === "null" ? 8 : 5;
      if (emit) out.push(kind | (d << 8), s, p);
    }
  };
  value(0, true);
  return out;
}

function parses(line: Buffer): boolean {
  try {
    JSON.parse(line.toString("utf8"));
    return true;
  } catch {
    return false;
  }
}

/** The module's tape of `line` (embedded at a random place in a larger buffer), or its answer. */
function moduleTape(
  rng: Rng,
  line: Buffer,
  max: number,
  keys: readonly string[],
): number[] | number {
  const { buf, start, end } = embed(rng, line);
  const n = lineTokens(buf, start, end, max, watchedKeys(keys));
  return n < 0 ? n : [...tape.subarray(0, n * 3)];
}

function randomLine(rng: Rng): Buffer {
  const line = Buffer.concat(genValue(rng, 0, true, KEYS));
  return rng() < 0.4
    ? mutate(
        rng,
        line,
        KEYS.map((k) => `"${k}"`),
      )
    : line;
}

describe("line tokens", { skip: wasm === null && "no WebAssembly on this Node" }, () => {
  it("writes a line's watched keys with their values, containers with their ends", () => {
    const line = B(
      '{"type":"user","x":{"type":1},"message":{"id":"m","content":[{"type":"t"},[]]},"t\\u0079pe":null}',
    );
    const n = lineTokens(
      line,
      0,
      line.length,
      2,
      watchedKeys(["type", "message", "id", "content"]),
    );
    const at = (s: string, from = 0) => line.indexOf(s, from);
    const m = at('{"id"');
    const c = at("[{");
    assert.deepEqual(
      [...tape.subarray(0, n * 3)],
      [
        0x001,
        0,
        line.length,
        0x103,
        2,
        6,
        0x104,
        9,
        13, // "type":"user" ("x" and all it holds left off)
        0x103,
        at("message"),
        at("message") + 7,
        0x101,
        m,
        at("]}") + 2,
        0x203,
        m + 2,
        m + 4,
        0x204,
        m + 7,
        m + 8, // "id":"m"
        0x203,
        at("content"),
        at("content") + 7,
        0x202,
        c,
        at("]}") + 1,
        // the escaped key, whatever it decodes to, and its value
        0x103,
        at("t\\u"),
        (at("t\\u") + 9) | 0x40000000,
        0x108,
        at("null"),
        at("null") + 4,
      ],
    );
  });

  it("agrees with JSON.parse on what is JSON, at every alignment", () => {
    const rng = prng(0x70c3);
    const hand = [
      "{}",
      "[]",
      " {} ",
      "\t[1]\r",
      "1",
      "-0",
      "-",
      "01",
      "1.",
      "1.5e",
      "1e+",
      "1E-5",
      "-0.0e0",
      "true",
      "tru",
      "truex",
      "false",
      "fals",
      "null",
      "nul",
      '""',
      '"\\u00e9"',
      '"\\u00g9"',
      '"\\x"',
      '"a\tb"',
      '{"a":1,}',
      "[1,]",
      '{"a" 1}',
      '{"a":1 "b":2}',
      "[1 2]",
      "{,}",
      "[,1]",
      '{"a":[1,{"b":[]}],"c":{}}',
      "[[[[[[]]]]]]",
      "[[[[[]]]]",
      '{"é":"\u{1F642}"}',
      "\u00a0{}",
      "\ufeff{}",
      "{}x",
      "{}}",
      "[]]",
      '{"a":1}{"b":2}',
      '["\\"]',
      '["\\\\"]',
      "[tRue]",
    ];
    for (const text of hand) {
      const line = B(text);
      const got = moduleTape(rng, line, 3, WATCHED);
      assert.equal(got !== TOKENS_INVALID, parses(line), `${JSON.stringify(text)}: ${String(got)}`);
    }
    // Bytes that are not UTF-8 inside a string are characters (U+FFFD) to JSON.parse; outside
    // one they are errors.
    for (const b of [0x80, 0xbf, 0xc3, 0xff]) {
      const inside = Buffer.from([0x22, b, 0x22]);
      const outside = Buffer.from([0x5b, b, 0x5d]);
      assert.notEqual(moduleTape(rng, inside, 3, WATCHED), TOKENS_INVALID);
      assert.equal(moduleTape(rng, outside, 3, WATCHED), TOKENS_INVALID);
    }
    for (let i = 0; i < 6000; i++) {
      const line = randomLine(rng);
      const got = moduleTape(rng, line, int(rng, 6), pickOf(rng, [WATCHED, ASCII_KEYS, []]));
      if ((got !== TOKENS_INVALID) !== parses(line)) {
        assert.fail(
          `module says ${String(got)}, JSON.parse ${parses(line) ? "parses" : "throws"}\n${show(line)}`,
        );
      }
    }
  });

  it("writes the tape a plain reading gives, for random lines at every depth limit", () => {
    const rng = prng(0x7a9e);
    let checked = 0;
    for (let i = 0; i < 6000; i++) {
      const line = randomLine(rng);
      if (!parses(line)) continue;
      const max = int(rng, 6);
      const keys = pickOf(rng, [WATCHED, ASCII_KEYS, [], ["a"]]);
      const got = moduleTape(rng, line, max, keys);
      const want = referenceTape(line, max, new Set(keys));
      if (!isDeepStrictEqual(got, want)) {
        assert.fail(
          `depth ${max}, keys ${keys.join(",")}\n${show(line)}\nmodule:    ${String(got)}\nreference: ${want}`,
        );
      }
      checked++;
    }
    assert.ok(checked > 2000, `${checked} valid lines`);
  });

  it("declines lines with more tokens than the tape holds, nesting deeper than its stack, or over 2 MiB, and the scans still answer", () => {
    const many = B(`{"type":"x","id":[${"1,".repeat(70_000)}1]}`);
    const deep = B(`{"type":"x","id":${"[".repeat(70_000)}${"]".repeat(70_000)}}`);
    const long = B(`{"type":"x","id":"${"y".repeat(2 << 20)}"}`);
    const keys = watchedKeys(["type", "id"]);
    for (const [name, line] of [
      ["many", many],
      ["deep", deep],
      ["long", long],
    ] as const) {
      assert.equal(lineTokens(line, 0, line.length, 2, keys), TOKENS_DECLINED, name);
      const v = JSON.parse(line.toString("utf8"));
      assert.deepEqual(scanClaudeLine(line, 0, line.length), claudeFactsOf(v), name);
      const facts = scanLine(line, 0, line.length);
      assert.ok(facts.json && facts.object && facts.type === "x" && facts.hasId, name);
    }
    // The next line is read by the tape again.
    const small = B('{"type":"y"}');
    assert.ok(lineTokens(small, 0, small.length, 1, keys) > 0);
  });

  it("refuses watched keys it could not compare", () => {
    assert.throws(() => watchedKeys(["x".repeat(28)]), /27 bytes/);
    assert.throws(() => watchedKeys(['a"b']), /quote/);
    assert.throws(() => watchedKeys(["é"]), /ASCII/);
  });
});
