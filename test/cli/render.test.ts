import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createPartPrinter,
  formatTime,
  renderBlock,
  renderCatalogue,
} from "../../src/cli/render.ts";
import { textWidth, wrapText } from "../../src/cli/wrap.ts";
import type { Block, Part } from "../../src/index.ts";
import { mulberry32 } from "../helpers/prng.ts";
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

  it("goes on under a line's own indentation when an indented line wraps", () => {
    const code = `        if (s === '') return []; // ${"an empty input has no fields ".repeat(2)}`;
    const lines = wrapText(code, { width: 40, indent: 2 });
    assert.ok(lines.length > 2);
    assert.ok(widest(lines) <= 40);
    for (const l of lines)
      assert.match(l, /^ {10}\S/, `indented as its line: ${JSON.stringify(l)}`);
    // An indentation that would leave less than half the line is not repeated.
    const deep = wrapText(`${" ".repeat(30)}${"word ".repeat(20)}`, { width: 40 });
    assert.ok(
      deep.slice(1).every((l) => /^word/.test(l)),
      deep.join("|"),
    );
  });

  it("expands TAB to the next stop and keeps leading indentation when code is shown", () => {
    assert.deepEqual(wrapText("a\tb\n    indented", { width: 40 }), ["a       b", "    indented"]);
  });

  it("expands TAB by each cluster's columns, wide, emoji, marked and combined alike", () => {
    // The rule: a TAB goes to the next 8-column stop of the source line, every cluster before
    // it counted as textWidth counts it alone (a reference built on exactly that).
    const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
    const expand = (line: string) => {
      let out = "";
      let col = 0;
      for (const { segment } of segmenter.segment(line)) {
        if (segment === "\t") {
          out += " ".repeat(8 - (col % 8));
          col += 8 - (col % 8);
        } else {
          out += segment;
          col += textWidth(segment);
        }
      }
      return out;
    };
    const random = mulberry32(0x7ab);
    const alphabet = [
      "\t",
      "a",
      " ",
      "é",
      "日",
      "😀",
      "\u0301",
      "\u001b",
      "\u202e",
      "\u200d",
      "👩",
      "x",
    ];
    for (let n = 0; n < 2_000; n++) {
      let line = "";
      for (let i = Math.floor(random() * 30); i > 0; i--) {
        line += alphabet[Math.floor(random() * alphabet.length)];
      }
      assert.deepEqual(
        wrapText(line, { width: 400 }),
        wrapText(expand(line), { width: 400 }),
        JSON.stringify(line),
      );
    }
    assert.deepEqual(wrapText("日本\tx", { width: 40 }), ["日本    x"]);
    assert.deepEqual(wrapText("é\tx\ty", { width: 40 }), ["é       x       y"]);
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

  it("shows another tool's arguments as key: value lines when they are a JSON object", () => {
    const lines = renderBlock(
      {
        type: "tool-call",
        id: "t1",
        name: "grep",
        text: '{"pattern":"a.ts","context":"x\\ny\\n"}',
      },
      80,
    );
    assert.deepEqual(lines, [
      "  [tool call: grep · t1]",
      "    pattern: a.ts",
      "    context:",
      "      x",
      "      y",
    ]);
  });

  it("shows edit, write, bash and read calls as the Console does when their arguments fit", () => {
    const edit = {
      path: "src/parse.ts",
      edits: [
        {
          oldText: "function parse(s) {\n  return s.split(',');\n}",
          newText: "function parse(s) {\n  if (s === '') return [];\n  return s.split(',');\n}",
        },
        { oldText: "a", newText: "b" },
      ],
    };
    const call = (name: string, args: object) =>
      renderBlock({ type: "tool-call", id: "t1", name, text: JSON.stringify(args) }, 80).slice(1);
    assert.deepEqual(call("edit", edit), [
      "    edit src/parse.ts",
      "      function parse(s) {",
      "    +   if (s === '') return [];",
      "        return s.split(',');",
      "      }",
      "",
      "    - a",
      "    + b",
    ]);
    assert.deepEqual(call("write", { path: "a.ts", content: "x\n  y\n" }), [
      "    write a.ts",
      "      x",
      "        y",
    ]);
    assert.deepEqual(call("bash", { command: "ls -la", timeout: 30 }), [
      "    $ ls -la",
      "    (timeout 30 s)",
    ]);
    assert.deepEqual(call("read", { path: "a.txt", offset: 10, limit: 20 }), [
      "    read a.txt lines 10–29",
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

describe("renderCatalogue", () => {
  it("breaks a row's facts only between two facts when they do not fit 80 columns", () => {
    const row = {
      conversation: `pi-${"a".repeat(40)}`,
      project: "/home/me/code/infra",
      seat: "main",
      fileName: "s.jsonl",
      sessionId: null,
      createdAt: null,
      size: 554,
      modifiedAt: "2026-01-01T10:00:01.000Z",
      engineStartedAt: null,
      title: "A title",
      preview: null,
      messageCount: null,
      model: null,
      unsupportedReason: null,
      harness: "pi",
      forkedFrom: null,
      live: true,
    };
    const lines = renderCatalogue(
      { ok: true, conversations: [row], refusedRoots: [], generatedAt: "2026-01-01T10:00:02.000Z" },
      80,
    );
    assert.ok(widest(lines) <= 80);
    assert.ok(
      lines.includes("    live: a controller runs it now · last activity 2026-01-01 10:00:01 UTC"),
      lines.join("\n"),
    );
    assert.ok(lines.includes("    554 B"), lines.join("\n"));
  });
});
