// Knowing a line is valid UTF-8 from the decoding a page parses (entries.ts decodedUtf8): it
// must say exactly what isUtf8 of the bytes says, or parts would be sized another way and pages
// and cursors would move.
import assert from "node:assert/strict";
import { isUtf8 } from "node:buffer";
import { describe, it } from "node:test";
import { decodedUtf8, type EntryRec, entryObjectUtf8 } from "../../src/reader/entries.ts";
import { renderEntry } from "../../src/reader/harness/pi/blocks.ts";
import { partsOfLine } from "../../src/reader/render.ts";
import { mulberry32 as random } from "../helpers/prng.ts";

/** Byte sequences: valid characters of each length, and ill-formed ones of each kind. */
const SEQUENCES = [
  [0x41],
  [0x22],
  [0xc3, 0xa9],
  [0xe2, 0x82, 0xac],
  [0xef, 0xbf, 0xbd], // U+FFFD itself, valid
  [0xf0, 0x9f, 0x98, 0x80],
  [0x80], // a lone continuation byte
  [0xc0, 0x80], // overlong
  [0xe0, 0x80, 0x80], // overlong
  [0xed, 0xa0, 0x80], // a surrogate encoded
  [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xff],
  [0xe2, 0x82], // truncated
  [0xf0, 0x9f, 0x98], // truncated
];

describe("decodedUtf8", () => {
  it("says what isUtf8 says of the bytes, for 20,000 random byte strings", () => {
    const next = random(2026);
    let valid = 0;
    let invalid = 0;
    for (let n = 0; n < 20_000; n++) {
      const bytes: number[] = [];
      const count = Math.floor(next() * 12);
      // Half the strings only from valid sequences, so both answers are tested often.
      const onlyValid = next() < 0.5;
      for (let i = 0; i < count; i++) {
        const pick = Math.floor(next() * (onlyValid ? 6 : SEQUENCES.length));
        bytes.push(...(SEQUENCES[pick] ?? [0x41]));
      }
      const buf = Buffer.from(bytes);
      const expected = isUtf8(buf);
      if (expected) valid++;
      else invalid++;
      assert.equal(
        decodedUtf8(buf.toString("utf8"), buf, 0, buf.length),
        expected,
        `case ${n}: ${buf.toString("hex")}`,
      );
    }
    assert.ok(valid > 5000 && invalid > 5000, `${valid} valid, ${invalid} invalid`);
  });
});

describe("partsOfLine with the validity entryObjectUtf8 found", () => {
  it("sizes every line as when it checks the bytes itself", () => {
    const content = [
      { type: "text", text: 'quotes " and \\ backslashes, é and 😀' },
      { type: "toolCall", id: "c1", name: "bash", arguments: { command: 'echo "a\\b" \u0001' } },
      { type: "text", text: "a literal \ufffd replacement character" },
    ];
    const entry = {
      type: "message",
      id: "e1",
      parentId: null,
      timestamp: "2026-12-02T00:00:00.000Z",
      message: { role: "assistant", content, timestamp: 1 },
    };
    const text = JSON.stringify(entry);
    const lines = [
      Buffer.from(text),
      // An ill-formed byte inside a string: decoded to U+FFFD, so the line is measured.
      Buffer.concat([
        Buffer.from(text.slice(0, 60)),
        Buffer.from([0xff]),
        Buffer.from(text.slice(60)),
      ]),
      Buffer.concat([
        Buffer.from(text.slice(0, 60)),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from(text.slice(60)),
      ]),
    ];
    const seen: boolean[] = [];
    for (const buf of lines) {
      const rec: EntryRec = {
        id: "e1",
        parentId: null,
        type: "message",
        line: 1,
        start: 0,
        end: buf.length,
        index: 0,
      };
      const { obj, utf8 } = entryObjectUtf8(buf, rec);
      assert.equal(utf8, isUtf8(buf));
      seen.push(utf8);
      const draft = renderEntry(obj);
      assert.ok(draft);
      assert.deepEqual(
        partsOfLine("n.e1", draft, buf, rec, 0, utf8),
        partsOfLine("n.e1", draft, buf, rec),
      );
    }
    assert.deepEqual(seen, [true, false, false]);
  });
});
