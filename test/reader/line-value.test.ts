// An entry line parsed with its long string values decoded outside JSON.parse
// (src/reader/line-value.ts) is exactly JSON.parse's value of the line's text: for random JSON
// written with every escape and none, long keys and values, duplicate keys, `__proto__`,
// integer-like keys, deep nesting and cuts; for byte mutations of such lines; and where it
// cannot be (invalid UTF-8, escaped lone surrogates, not JSON) it declines and the caller's
// whole-line parse gives the value. It takes the fast way where it should, so these are not
// comparisons of JSON.parse with itself.
import assert from "node:assert/strict";
import { isUtf8 } from "node:buffer";
import { describe, it } from "node:test";
import type { EntryRec } from "../../src/reader/entries.ts";
import { entryObject, entryObjectUtf8 } from "../../src/reader/entries.ts";
import { LONG_LINE_MIN_BYTES, parseLongValues } from "../../src/reader/line-value.ts";
import { LONG_MIN_BYTES, listLongStrings, longs } from "../../src/reader/wasm/long-strings.ts";
import { embed, int, mutate, pickOf, prng, type Rng, show } from "./harness/json-lines.ts";

/** JSON.parse's value of the bytes' UTF-8 text, or THROWS. */
const THROWS = Symbol("throws");
function reference(buf: Buffer, start: number, end: number): unknown {
  try {
    return JSON.parse(buf.toString("utf8", start, end));
  } catch {
    return THROWS;
  }
}

/** Equal as values, with keys in the same order and the same prototypes all the way down. */
function assertSame(got: unknown, want: unknown, line: Buffer): void {
  assert.deepStrictEqual(got, want, show(line));
  assert.equal(JSON.stringify(got), JSON.stringify(want), show(line));
}

/** A character for a string, from the ranges that decode or escape differently. */
function char(rng: Rng): string {
  const r = rng();
  if (r < 0.55) return String.fromCharCode(0x20 + int(rng, 0x5f));
  if (r < 0.65) return pickOf(rng, ['"', "\\", "/", "\n", "\t", "\r", "\b", "\f", "\u0000"]);
  if (r < 0.75) return String.fromCharCode(int(rng, 0x20));
  if (r < 0.85) return String.fromCharCode(0x80 + int(rng, 0x780));
  if (r < 0.92) return String.fromCharCode(0x800 + int(rng, 0xd000));
  if (r < 0.97) return String.fromCodePoint(0x10000 + int(rng, 0x100000));
  return pickOf(rng, ["\ufffd", "\ufeff", "\u2028", "\uffff"]);
}

/** `s` as a JSON string, each character written as itself or as an escape, at random. */
function writeString(rng: Rng, s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    const plain = JSON.stringify(ch).slice(1, -1);
    const escaped = rng() < 0.3 || plain !== ch;
    if (!escaped) out += ch;
    else if (c > 0xffff) {
      const hi = 0xd800 + ((c - 0x10000) >> 10);
      const lo = 0xdc00 + ((c - 0x10000) & 0x3ff);
      out += rng() < 0.5 ? ch : `\\u${hi.toString(16)}\\u${lo.toString(16).toUpperCase()}`;
    } else if (plain.startsWith("\\") && rng() < 0.6) out += plain;
    else out += `\\u${c.toString(16).padStart(4, "0")}`;
  }
  return `${out}"`;
}

function randomString(rng: Rng, long: boolean): string {
  const n = long ? LONG_MIN_BYTES - 40 + int(rng, 1200) : int(rng, 12);
  let s = "";
  while (s.length < n) s += char(rng);
  return s;
}

const KEYS = ["type", "id", "__proto__", "0", "1", "10", "4294967295", "content", "", "text"];

const ws = (rng: Rng) => pickOf(rng, ["", "", "", " ", "\n", "\t ", "\r\n"]);

/** A random JSON text, long strings likely, written with random escapes and whitespace. */
function writeValue(rng: Rng, depth: number): string {
  const r = rng();
  if (depth > 4 || r < 0.35) {
    const leaf = rng();
    if (leaf < 0.6) return writeString(rng, randomString(rng, rng() < 0.5));
    return pickOf(rng, ["0", "-1.5e3", "true", "false", "null", "12345678901234567890"]);
  }
  const n = int(rng, 5);
  const items: string[] = [];
  if (r < 0.6) {
    for (let i = 0; i < n; i++) items.push(ws(rng) + writeValue(rng, depth + 1) + ws(rng));
    return `[${items.join(",")}]`;
  }
  for (let i = 0; i < n; i++) {
    const key = rng() < 0.8 ? pickOf(rng, KEYS) : randomString(rng, rng() < 0.2);
    items.push(
      `${ws(rng)}${writeString(rng, key)}${ws(rng)}:${ws(rng)}${writeValue(rng, depth + 1)}`,
    );
  }
  return `{${items.join(",")}}`;
}

function randomLine(rng: Rng): Buffer {
  const text = `{"type":"message","id":"e1","v":${writeValue(rng, 0)},"w":${writeValue(rng, 1)}}`;
  return Buffer.from(text, "utf8");
}

describe("long string values decoded outside JSON.parse", () => {
  it("gives JSON.parse's value for random lines, and takes the fast way for most of them", () => {
    const rng = prng(0x5eed01);
    let fast = 0;
    let long = 0;
    for (let i = 0; i < 800; i++) {
      const line = randomLine(rng);
      const { buf, start, end } = embed(rng, line);
      const want = reference(buf, start, end);
      assert.notEqual(want, THROWS, show(line));
      const got = parseLongValues(buf, start, end);
      if (line.length >= LONG_LINE_MIN_BYTES) long++;
      if (got === null) continue;
      fast++;
      assertSame(got.value, want, line);
    }
    // Every line is valid UTF-8 and JSON: every line long enough with a long value is read the
    // fast way.
    assert.ok(long > 350, `${long} long lines`);
    assert.ok(fast > 0.9 * long, `${fast} of ${long} long lines read the fast way`);
  });

  it("gives JSON.parse's value, or declines, for byte mutations of such lines", () => {
    const rng = prng(0x5eed02);
    let fast = 0;
    for (let i = 0; i < 1200; i++) {
      let line = randomLine(rng);
      for (let m = 1 + int(rng, 3); m > 0; m--) line = mutate(rng, line);
      const { buf, start, end } = embed(rng, line);
      const want = reference(buf, start, end);
      const got = parseLongValues(buf, start, end);
      if (got === null) continue;
      fast++;
      assert.notEqual(want, THROWS, `read a line JSON.parse refuses: ${show(line)}`);
      assertSame(got.value, want, line);
    }
    assert.ok(fast > 120, `${fast} mutated lines read the fast way`);
  });

  it("declines a line that is not valid UTF-8, and the entry's parse gives JSON.parse's value", () => {
    const long = "y".repeat(4000);
    for (const bad of [
      [0xff],
      [0xc0, 0x80],
      [0xed, 0xa0, 0x80],
      [0xe6, 0x97],
      [0xf4, 0x90, 0x80, 0x80],
    ]) {
      const line = Buffer.concat([
        Buffer.from(`{"id":"a","text":"${long}`),
        Buffer.from(bad),
        Buffer.from(`${long}"}`),
      ]);
      assert.equal(parseLongValues(line, 0, line.length), null, show(line));
      const { obj, utf8 } = entryObjectUtf8(line, rec(line));
      assert.equal(utf8, false);
      assertSame(obj, reference(line, 0, line.length), line);
    }
  });

  it("takes exactly the well-formed UTF-8 sequences, and reads each as the decoder does", () => {
    const pad = "x".repeat(LONG_MIN_BYTES + 8);
    // Every lead byte with every next byte, and with bytes at each range's edges after it.
    const edges = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff];
    const seqs: number[][] = [];
    for (let b0 = 0x80; b0 <= 0xff; b0++) {
      for (let b1 = 0; b1 <= 0xff; b1++) seqs.push([b0, b1]);
      for (const b1 of edges) for (const b2 of edges) seqs.push([b0, b1, b2]);
      if (b0 >= 0xf0) {
        for (const b1 of edges)
          for (const b2 of edges) for (const b3 of edges) seqs.push([b0, b1, b2, b3]);
      }
    }
    let checked = 0;
    for (const seq of seqs) {
      const line = Buffer.concat([Buffer.from(`["${pad}`), Buffer.from(seq), Buffer.from('"]')]);
      const body = line.subarray(2, line.length - 2);
      if (body.includes(0x22) || body.includes(0x5c) || body.some((c) => c < 0x20)) continue;
      checked++;
      const k = listLongStrings(line, 0, line.length);
      if (isUtf8(line)) {
        assert.equal(k, 1, show(line));
        assert.equal(longs.value(0), body.toString("utf8"), show(line));
      } else assert.equal(k, -2, show(line));
    }
    assert.ok(checked > 40_000, `${checked} sequences`);
  });

  it("takes runs of characters in other scripts, with one bad byte anywhere in them, as the decoder does", () => {
    // Three-byte characters are read in runs: a bad byte in the middle of one, a run ending at
    // the line's end, and runs mixed with other lengths must still be judged byte by byte.
    const rng = prng(0x3b1e);
    const pad = "p".repeat(LONG_MIN_BYTES);
    const chars = ["日", "本", "→", "ࠀ", "\uffff", "é", "ÿ", "Ā", "🙂", "a", " "];
    let bad = 0;
    for (let i = 0; i < 4000; i++) {
      const text = Array.from({ length: 1 + int(rng, 40) }, () => pickOf(rng, chars)).join("");
      const body = Buffer.from(`${pad}${text}`);
      if (rng() < 0.6) {
        const at = pad.length + int(rng, body.length - pad.length);
        body[at] = pickOf(rng, [
          0x80,
          0xbf,
          0xc0,
          0xe0,
          0xed,
          0xa0,
          0x9f,
          0x41,
          0xf0,
          int(rng, 256),
        ]);
      }
      if (body.includes(0x22) || body.includes(0x5c) || body.some((c) => c < 0x20)) continue;
      const line = Buffer.concat([Buffer.from('["'), body, Buffer.from('"]')]);
      const k = listLongStrings(line, 0, line.length);
      if (isUtf8(line)) {
        assert.equal(k, 1, show(line));
        assert.equal(longs.value(0), body.toString("utf8"), show(line));
      } else {
        bad++;
        assert.equal(k, -2, show(line));
      }
    }
    assert.ok(bad > 500, `${bad} lines not UTF-8`);
  });

  it("reads an escaped surrogate as its code unit, paired or not, as JSON.parse does", () => {
    const long = "z".repeat(3000);
    for (const esc of [
      "\\ud800",
      "\\udc00",
      "\\ud800\\ud800\\udc00",
      "\\ud83d😀",
      "\\ud83d\\u0041",
      "\\ud83d\\ude00",
    ]) {
      const line = Buffer.from(`{"id":"a","text":"${long}${esc}${long}","n":1}`);
      const got = parseLongValues(line, 0, line.length);
      assert.ok(got, esc);
      assertSame(got.value, reference(line, 0, line.length), line);
      assertSame(entryObject(line, rec(line)), reference(line, 0, line.length), line);
    }
  });

  it("reads values at the Latin-1 boundary, kept as Latin-1 below it and as UTF-16 above", () => {
    for (const ch of ["a", "é", "\\u00ff", "\\u0100", "日", "😀"]) {
      const line = Buffer.from(`{"id":"a","text":"${"x".repeat(3000)}${ch}"}`);
      const got = parseLongValues(line, 0, line.length);
      assert.ok(got, ch);
      assertSame(got.value, reference(line, 0, line.length), line);
    }
  });

  it("keeps a duplicate key's last value, `__proto__` as an own property, and keys' order", () => {
    const a = "a".repeat(2000);
    const b = "b".repeat(2000);
    const line = Buffer.from(
      `{"2":"${a}","__proto__":"${b}","x":"${a}","x":"${b}","1":{"__proto__":{"k":"${a}"}},"${a}":"${b}"}`,
    );
    const got = parseLongValues(line, 0, line.length);
    assert.ok(got);
    const want = reference(line, 0, line.length) as Record<string, unknown>;
    assertSame(got.value, want, line);
    const obj = got.value as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(obj), Object.prototype);
    assert.equal(Object.getOwnPropertyDescriptor(obj, "__proto__")?.value, b);
    assert.deepEqual(Object.keys(obj), ["1", "2", "__proto__", "x", a]);
    assert.equal(obj.x, b);
  });

  it("leaves a string that looks like a marker as it is (the nonce is the process's secret)", () => {
    const long = "m".repeat(3000);
    const guesses = ["~0~0", `~${"0".repeat(32)}~0`, "~~0", "0"];
    const line = Buffer.from(JSON.stringify({ id: "a", long, guesses }));
    const got = parseLongValues(line, 0, line.length);
    assert.ok(got);
    assertSame(got.value, JSON.parse(line.toString()), line);
  });

  it("reads a long value nested deeper than a recursive walk would go", () => {
    const depth = 20_000;
    const line = Buffer.from(
      `{"id":"a","v":${"[".repeat(depth)}"${"d".repeat(3000)}"${"]".repeat(depth)}}`,
    );
    const got = parseLongValues(line, 0, line.length);
    assert.ok(got);
    // Walked down by hand: a recursive comparison would overflow the stack here.
    let v = (got.value as { v: unknown }).v;
    for (let i = 0; i < depth; i++) v = (v as unknown[])[0];
    assert.equal(v, "d".repeat(3000));
  });

  it("reads a cut value as null, and its long strings are not listed", () => {
    const rng = prng(0x5eed03);
    for (let i = 0; i < 300; i++) {
      const before = writeValue(rng, 1);
      const cut = writeValue(rng, 1);
      const after = writeValue(rng, 1);
      const head = `{"id":"a","p":${before},"toolUseResult":`;
      const text = `${head}${cut},"q":${after}}`;
      const line = Buffer.from(text, "utf8");
      const from = Buffer.byteLength(head);
      const to = from + Buffer.byteLength(cut);
      const { buf, start, end } = embed(rng, line);
      const want = JSON.parse(`${head}null,"q":${after}}`);
      const got = parseLongValues(buf, start, end, start + from, start + to);
      if (got === null) continue;
      assertSame(got.value, want, line);
    }
  });

  it("declines a short line, a line without long values, and a line that is not JSON", () => {
    const short = Buffer.from(JSON.stringify({ id: "a", t: "s".repeat(LONG_MIN_BYTES) }));
    assert.ok(short.length < LONG_LINE_MIN_BYTES);
    assert.equal(parseLongValues(short, 0, short.length), null);
    const many = Buffer.from(JSON.stringify({ id: "a", t: Array(400).fill("s".repeat(20)) }));
    assert.ok(many.length >= LONG_LINE_MIN_BYTES);
    assert.equal(parseLongValues(many, 0, many.length), null);
    const broken = Buffer.from(`{"id":"a","t":"${"s".repeat(3000)}",}`);
    assert.equal(parseLongValues(broken, 0, broken.length), null);
    const unclosed = Buffer.from(`{"id":"a","t":"${"s".repeat(3000)}`);
    assert.equal(parseLongValues(unclosed, 0, unclosed.length), null);
  });
});

function rec(line: Buffer): EntryRec {
  return {
    id: "a",
    parentId: null,
    type: "message",
    line: 1,
    start: 0,
    end: line.length,
    index: 0,
  };
}
