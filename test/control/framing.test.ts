import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  DEFAULT_MAX_RECORD_BYTES,
  encodeLine,
  FramingError,
  LineSplitter,
} from "../../src/control/engine/framing.ts";

/** Feeds `bytes` in pieces of `size` and returns every record, the unterminated last included. */
function split(bytes: Buffer, size: number, splitter = new LineSplitter()): string[] {
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += size)
    out.push(...splitter.push(bytes.subarray(i, i + size)));
  const last = splitter.end();
  if (last !== null) out.push(last);
  return out;
}

function catchFraming(fn: () => unknown): FramingError {
  try {
    fn();
  } catch (e) {
    if (e instanceof FramingError) return e;
    throw e;
  }
  assert.fail("expected a FramingError");
}

describe("framing", () => {
  const records = [
    { type: "message_update", delta: "line\u2028sep\u2029para" },
    { type: "text", text: "héllo wörld € 𝄞 🙂 — 日本語" },
    { type: "empty", text: "" },
    { type: "escapes", text: "a\nb\r\nc\td" },
  ];
  const stream = Buffer.from(records.map(encodeLine).join(""), "utf8");

  it("returns the same records whether fed byte by byte or whole", () => {
    const whole = split(stream, stream.length);
    assert.deepEqual(
      whole.map((l) => JSON.parse(l)),
      records,
    );
    assert.deepEqual(split(stream, 1), whole);
    for (const size of [2, 3, 5, 7, 64]) assert.deepEqual(split(stream, size), whole);
  });

  it("keeps U+2028 and U+2029 inside a record when JSON carries them raw", () => {
    const line = encodeLine({ s: "a\u2028b\u2029c" });
    assert.ok(line.includes("\u2028") && line.includes("\u2029"), "JSON.stringify leaves them raw");
    assert.equal(line.indexOf("\n"), line.length - 1, "the only LF is the terminator");
    const out = split(Buffer.from(line + line), 1);
    assert.equal(out.length, 2);
    assert.deepEqual(JSON.parse(out[0]!), { s: "a\u2028b\u2029c" });
  });

  it("strips exactly one CR before LF when lines end in CRLF", () => {
    const out = split(Buffer.from('{"a":1}\r\n{"b":2}\r\r\nplain\r\n'), 1);
    assert.deepEqual(out, ['{"a":1}', '{"b":2}\r', "plain"]);
  });

  it("splits on LF only, never on CR, VT, FF, NEL or the Unicode separators", () => {
    const text = "a\rb\u000bc\u000cd\u0085e\u2028f\u2029g\n";
    assert.deepEqual(split(Buffer.from(text), 1), ["a\rb\u000bc\u000cd\u0085e\u2028f\u2029g"]);
  });

  it("decodes a multibyte character split across chunks at every offset", () => {
    const text = `${JSON.stringify({ s: "€𝄞é🙂\u2028" })}\n`;
    const bytes = Buffer.from(text, "utf8");
    for (let cut = 1; cut < bytes.length; cut++) {
      const s = new LineSplitter();
      const out = [...s.push(bytes.subarray(0, cut)), ...s.push(bytes.subarray(cut))];
      assert.deepEqual(out, [text.slice(0, -1)], `cut at byte ${cut}`);
      assert.equal(s.end(), null);
    }
  });

  it("returns the last record from end() when it has no LF", () => {
    const s = new LineSplitter();
    assert.deepEqual(s.push(Buffer.from('{"a":1}\n{"b"')), ['{"a":1}']);
    assert.deepEqual(s.push(Buffer.from(":2}\r")), []);
    assert.equal(s.end(), '{"b":2}');
    const empty = new LineSplitter();
    empty.push(Buffer.from("x\n"));
    assert.equal(empty.end(), null, "nothing after the last LF");
  });

  it("completes a truncated UTF-8 sequence at end() with U+FFFD, as StringDecoder does", () => {
    const s = new LineSplitter();
    s.push(Buffer.from([0x61, 0xe2, 0x82]));
    assert.equal(s.end(), "a\ufffd");
  });

  it("keeps empty records between consecutive LFs", () => {
    assert.deepEqual(split(Buffer.from("\n\na\n"), 1), ["", "", "a"]);
  });

  it("refuses an oversize record with record-too-large and stays closed", () => {
    const s = new LineSplitter({ maxRecordBytes: 8 });
    assert.deepEqual(s.push(Buffer.from("12345678\n")), ["12345678"], "exactly the limit passes");
    const err = catchFraming(() => s.push(Buffer.from("ok\n123456789\nlater\n")));
    assert.equal(err.code, "record-too-large");
    assert.equal(err.limit, 8);
    assert.deepEqual(err.lines, ["ok"], "the records before the oversize one are handed back");
    const again = catchFraming(() => s.push(Buffer.from("x\n")));
    assert.equal(again.code, "record-too-large");
    assert.deepEqual(again.lines, [], "nothing is handed back twice");
    assert.equal(catchFraming(() => s.end()).code, "record-too-large");
  });

  it("refuses an oversize record before its LF arrives, counting bytes not characters", () => {
    const s = new LineSplitter({ maxRecordBytes: 6 });
    assert.deepEqual(s.push(Buffer.from("€€")), [], "6 bytes held");
    assert.equal(s.pendingBytes, 6);
    assert.throws(() => s.push(Buffer.from("a")), {
      name: "FramingError",
      code: "record-too-large",
    });
  });

  it("rejects a bad limit and use after end()", () => {
    assert.throws(() => new LineSplitter({ maxRecordBytes: 0 }), RangeError);
    assert.equal(new LineSplitter().maxRecordBytes, DEFAULT_MAX_RECORD_BYTES);
    const s = new LineSplitter();
    s.end();
    assert.throws(() => s.push(Buffer.from("x")), /after end/);
  });

  it("splits a 21 MB record fed in 64 KiB chunks in linear time", () => {
    const payload = "x".repeat(21 * 1024 * 1024);
    const bytes = Buffer.from(`${JSON.stringify({ data: payload })}\n{"next":true}\n`);
    const s = new LineSplitter();
    // CPU time, not wall time: on a machine busy with other suites the wall clock measures them.
    const started = process.cpuUsage();
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i += 64 * 1024)
      out.push(...s.push(bytes.subarray(i, i + 64 * 1024)));
    const used = process.cpuUsage(started);
    const ms = (used.user + used.system) / 1000;
    assert.equal(out.length, 2);
    assert.equal(out[0]!.length, payload.length + '{"data":""}'.length);
    assert.equal(out[1], '{"next":true}');
    // A rescanning reader takes seconds here (research §3.4: 17 s); linear takes tens of ms.
    assert.ok(ms < 1000, `took ${ms.toFixed(0)} ms of CPU`);
  });

  it("encodes one JSON record with a single trailing LF", () => {
    assert.equal(encodeLine({ a: "x\ny" }), '{"a":"x\\ny"}\n');
    assert.throws(() => encodeLine(undefined), TypeError);
  });
});
