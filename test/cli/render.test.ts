import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPartPrinter, formatTime, renderBlock } from "../../src/cli/render.ts";
import { textWidth, wrapText } from "../../src/cli/wrap.ts";
import type { Block, Part } from "../../src/index.ts";
import { firstForbidden } from "./hostile.ts";

function widest(lines: string[]): number {
  return Math.max(0, ...lines.map(textWidth));
}

describe("wrapText", () => {
  it("wraps on spaces within the width and keeps every word when a line is long", () => {
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`);
    const lines = wrapText(words.join(" "), { width: 40, indent: 2 });
    assert.ok(lines.length > 5);
    assert.ok(widest(lines) <= 40);
    assert.ok(lines.every((l) => l.startsWith("  word")));
    assert.deepEqual(lines.join(" ").trim().split(/ +/), words);
  });

  it("cuts a word longer than the line between characters when it cannot fit", () => {
    const token = "x".repeat(200);
    const lines = wrapText(`a ${token} b`, { width: 80 });
    assert.ok(widest(lines) <= 80);
    assert.equal(lines.join("").replace(/ /g, ""), `a${token}b`);
  });

  it("cuts long Latin words by columns when they are wider than the line", () => {
    const lines = wrapText(`café ${"é".repeat(50)} naïve`, { width: 20, indent: 2 });
    // A word wider than a line starts where the line is, and fills every line it needs.
    assert.deepEqual(lines, [
      `  café ${"é".repeat(13)}`,
      `  ${"é".repeat(18)}`,
      `  ${"é".repeat(18)}`,
      "  é naïve",
    ]);
  });

  it("never cuts a marker or a grapheme cluster when they sit at the edge", () => {
    const family = "👨\u200d👩\u200d👧";
    const text = `${"\u202e\u001b".repeat(30)}${family.repeat(30)}`;
    const lines = wrapText(text, { width: 20 });
    assert.ok(widest(lines) <= 20);
    for (const line of lines) {
      assert.match(line, /^(<U\+202E>|\^\[|👨\u200d👩\u200d👧)*$/u);
    }
  });

  it("counts wide characters as two columns when text is CJK", () => {
    const lines = wrapText("日本語".repeat(30), { width: 20 });
    assert.ok(lines.every((l) => textWidth(l) <= 20));
    assert.equal(lines[0], `${"日本語".repeat(3)}日`);
  });

  it("expands TAB to the next stop and keeps leading indentation when code is shown", () => {
    assert.deepEqual(wrapText("a\tb\n    indented", { width: 40 }), ["a       b", "    indented"]);
  });

  it("keeps one logical line and shows LF as ^J when oneLine is set", () => {
    assert.deepEqual(wrapText("title\nsecond\u001b", { width: 40, oneLine: true }), [
      "title^Jsecond^[",
    ]);
  });
});

describe("text rendering", () => {
  it("prints an ISO time in UTC and anything else as written", () => {
    assert.equal(formatTime("2026-01-01T10:00:01.123Z"), "2026-01-01 10:00:01 UTC");
    assert.equal(formatTime("yesterday"), "yesterday");
  });

  it("rejoins fragments across parts before showing them when a string was split", () => {
    const out: string[] = [];
    const printer = createPartPrinter((t) => out.push(t), 80);
    const frag = (text: string, index: number): Block => ({
      type: "text",
      text,
      fragment: { index, count: 3 },
    });
    const part = (n: number, blocks: Block[]): Part => ({
      id: `n.e1.${n}`,
      entry: "n.e1",
      kind: "message",
      role: "assistant",
      ...(n > 0 ? { continues: true } : {}),
      blocks,
    });
    printer.print(part(0, [frag("abc", 0)]));
    printer.print(part(1, [frag("def", 1)]));
    printer.print(part(2, [frag("ghi", 2), { type: "text", text: "after" }]));
    printer.finish();
    const text = out.join("");
    assert.match(text, /\n {2}abcdefghi\n {2}after\n$/);
    assert.equal((text.match(/── assistant/g) ?? []).length, 1, "one header per entry");
  });

  it("marks a fragment run that never finished when the parts end early", () => {
    const out: string[] = [];
    const printer = createPartPrinter((t) => out.push(t), 80);
    printer.print({
      id: "n.e1.0",
      entry: "n.e1",
      kind: "message",
      blocks: [{ type: "text", text: "abc", fragment: { index: 0, count: 2 } }],
    });
    printer.finish();
    assert.match(out.join(""), /abc\n {2}\[only 1 of 2 fragments\]\n$/);
  });

  it("shows tool arguments as key: value lines when they are a JSON object", () => {
    const lines = renderBlock(
      { type: "tool-call", id: "t1", name: "write", text: '{"path":"a.ts","content":"x\\ny\\n"}' },
      80,
    );
    assert.deepEqual(lines, [
      "  [tool call: write · t1]",
      "    path: a.ts",
      "    content:",
      "      x",
      "      y",
    ]);
  });

  it("makes hostile tool names and mime types visible when they label a block", () => {
    const lines = [
      ...renderBlock({ type: "tool-call", id: "t1", name: "x\u001b[2J\ny", text: "{}" }, 80),
      ...renderBlock({ type: "image", mimeType: "image/png\u202e", data: "AAAA" }, 80),
    ];
    assert.ok(lines.every((l) => firstForbidden(l, true) === null));
    assert.equal(lines[0], "  [tool call: x^[[2J^Jy · t1]");
    assert.equal(lines[1], "  [image: image/png<U+202E>, 3 B]");
  });
});
