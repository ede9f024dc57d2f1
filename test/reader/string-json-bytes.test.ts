import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stringJsonBytes } from "../../src/reader/parts.ts";
import { mulberry32 } from "../helpers/prng.ts";

const truth = (s: string) => Buffer.byteLength(JSON.stringify(s), "utf8");

describe("a string's JSON size, counted without serializing it", () => {
  it("equals JSON.stringify's bytes for quotes, backslashes, controls and every kind of character", () => {
    const cases = [
      "",
      "plain",
      '{"command":"ls -la","description":"List"}',
      'a \\ b \\\\ c " d ""',
      "line\nbreak\ttab\u0000nul\u001f",
      "é ü — 日本語 \u2028 \u2029 \u007f",
      "pair 😀 and lone \ud800 and \udc00 and reversed \udc00\ud800",
      "\\u00e9 already escaped text",
    ];
    for (const s of cases) assert.equal(stringJsonBytes(s), truth(s), JSON.stringify(s));
  });

  it("agrees with JSON.stringify on random strings drawn from the characters that matter", () => {
    const random = mulberry32(0x5eed);
    const alphabet = ['"', "\\", "a", "{", "\n", "\u0001", "é", "€", "\ud83d", "\ude00", "\u2028"];
    for (let n = 0; n < 5_000; n++) {
      let s = "";
      const len = Math.floor(random() * 40);
      for (let i = 0; i < len; i++) s += alphabet[Math.floor(random() * alphabet.length)];
      assert.equal(stringJsonBytes(s), truth(s), JSON.stringify(s));
    }
  });
});
