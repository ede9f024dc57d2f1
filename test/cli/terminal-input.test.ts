import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  Composer,
  type ComposerEffect,
  InputDecoder,
  type KeyAction,
  NOT_CONNECTED,
  OBSERVING,
} from "../../src/cli/terminal-input.ts";
import { makeVisible } from "../../src/present/visible.ts";
import { firstForbidden } from "./hostile.ts";

const START = "\x1b[200~";
const END = "\x1b[201~";

/** Adjacent insert or paste pieces joined: how a chunking is seen does not matter. */
function merged(actions: KeyAction[]): KeyAction[] {
  const out: KeyAction[] = [];
  for (const a of actions) {
    const last = out.at(-1);
    if (last && (a.type === "insert" || a.type === "paste") && last.type === a.type) {
      out[out.length - 1] = { type: a.type, text: last.text + a.text };
    } else out.push(a);
  }
  return out;
}

/** Feeds `chunks` as bytes; a trailing wait is flushed as the caller's timeout would. */
function decode(chunks: (string | Uint8Array)[], flush = true): KeyAction[] {
  const d = new InputDecoder();
  const out = chunks.flatMap((c) => d.push(typeof c === "string" ? Buffer.from(c, "utf8") : c));
  if (flush) out.push(...d.flushTimeout());
  return merged(out);
}

/** Every byte its own chunk. */
function bytewise(s: string): Uint8Array[] {
  return [...Buffer.from(s, "utf8")].map((b) => Uint8Array.of(b));
}

const KEYS: [string, string, KeyAction[]][] = [
  ["Enter", "\r", [{ type: "submit" }]],
  ["Ctrl-J", "\n", [{ type: "newline" }]],
  ["Alt-Enter", "\x1b\r", [{ type: "newline" }]],
  ["Alt-Ctrl-J", "\x1b\n", [{ type: "newline" }]],
  ["Ctrl-T", "\x14", [{ type: "takeover" }]],
  ["Ctrl-G", "\x07", [{ type: "interrupt" }]],
  ["Ctrl-O", "\x0f", [{ type: "reread" }]],
  ["PageUp", "\x1b[5~", [{ type: "scroll", direction: "up" }]],
  ["PageDown", "\x1b[6~", [{ type: "scroll", direction: "down" }]],
  ["Ctrl-PageUp", "\x1b[5;5~", [{ type: "scroll", direction: "up" }]],
  ["Ctrl-C", "\x03", [{ type: "quit" }]],
  ["Ctrl-D", "\x04", [{ type: "quit" }]],
  ["Backspace", "\x7f", [{ type: "backspace" }]],
  ["Ctrl-H", "\b", [{ type: "backspace" }]],
  ["text", "hello world", [{ type: "insert", text: "hello world" }]],
  ["wide text and emoji", "é日本😀👨‍👩‍👧", [{ type: "insert", text: "é日本😀👨‍👩‍👧" }]],
  ["TAB", "\t", [{ type: "insert", text: "\t" }]],
  ["Escape", "\x1b", [{ type: "escape" }]],
  ["Ctrl-A", "\x01", [{ type: "ignored", sequence: "\x01" }]],
  ["Up", "\x1b[A", [{ type: "ignored", sequence: "\x1b[A" }]],
  ["F1", "\x1bOP", [{ type: "ignored", sequence: "\x1bOP" }]],
  ["Alt-x", "\x1bx", [{ type: "ignored", sequence: "\x1bx" }]],
  ["a C1 control", "\u009b", [{ type: "ignored", sequence: "\u009b" }]],
  ["a stray paste end", END, [{ type: "ignored", sequence: END }]],
  [
    "a paste",
    `${START}one\rtwo\r\nthree\nfour${END}`,
    [{ type: "paste", text: "one\ntwo\nthree\nfour" }],
  ],
];

describe("InputDecoder", () => {
  for (const [name, input, expected] of KEYS) {
    it(`decodes ${name} whole and byte by byte`, () => {
      assert.deepEqual(decode([input]), expected);
      assert.deepEqual(decode(bytewise(input)), expected);
    });
  }

  it("keeps each key in order when many come in one chunk", () => {
    const all = KEYS.filter(([name]) => name !== "Escape");
    const input = all.map(([, s]) => s).join("");
    const expected = merged(all.flatMap(([, , e]) => e));
    assert.deepEqual(decode([input]), expected);
    assert.deepEqual(decode(bytewise(input)), expected);
  });

  it("joins a UTF-8 character split across chunks", () => {
    for (const ch of ["é", "日", "😀"]) {
      const bytes = Buffer.from(`a${ch}b`, "utf8");
      for (let k = 1; k < bytes.length; k++) {
        assert.deepEqual(decode([bytes.subarray(0, k), bytes.subarray(k)]), [
          { type: "insert", text: `a${ch}b` },
        ]);
      }
    }
  });

  it("inserts a paste literally, newlines included, and never submits", () => {
    const d = new InputDecoder();
    const out = d.push(`${START}line 1\rline 2\r\r\x03\x04\x14\x07\x0f\x1b[5~${END}`);
    assert.deepEqual(out, [
      { type: "paste", text: "line 1\nline 2\n\n\x03\x04\x14\x07\x0f\x1b[5~" },
    ]);
    assert.equal(d.inPaste, false);
  });

  it("still sees a paste marker split across chunks at every offset", () => {
    const input = `ab${START}x\r\ny${END}\rc`;
    const expected: KeyAction[] = [
      { type: "insert", text: "ab" },
      { type: "paste", text: "x\ny" },
      { type: "submit" },
      { type: "insert", text: "c" },
    ];
    for (let i = 1; i < input.length; i++) {
      assert.deepEqual(decode([input.slice(0, i), input.slice(i)]), expected, `split at ${i}`);
      for (let j = i + 1; j < input.length; j++) {
        const chunks = [input.slice(0, i), input.slice(i, j), input.slice(j)];
        assert.deepEqual(decode(chunks), expected, `split at ${i} and ${j}`);
      }
    }
    assert.deepEqual(decode(bytewise(input)), expected);
  });

  it("still sees a paste marker split right after its ESC, with a timeout in between", () => {
    const d = new InputDecoder();
    assert.deepEqual(d.push("a\x1b"), [{ type: "insert", text: "a" }]);
    assert.equal(d.waiting, true);
    assert.deepEqual(d.push("[200~b\r\x1b"), [{ type: "paste", text: "b\n" }]);
    // Inside a paste a held ESC is never flushed: only the end marker ends it.
    assert.deepEqual(d.flushTimeout(), []);
    assert.deepEqual(d.push("[201~\r"), [{ type: "submit" }]);
  });

  it("joins a CRLF split between two paste pieces into one newline", () => {
    assert.deepEqual(decode([`${START}a\r`, `\nb${END}`]), [{ type: "paste", text: "a\nb" }]);
    assert.deepEqual(decode([`${START}a\r`, `\r\nb${END}`]), [{ type: "paste", text: "a\n\nb" }]);
  });

  it("waits with a lone trailing ESC for the next chunk", () => {
    const d = new InputDecoder();
    assert.deepEqual(d.push("abc\x1b"), [{ type: "insert", text: "abc" }]);
    assert.equal(d.waiting, true);
    assert.deepEqual(d.push("[6~"), [{ type: "scroll", direction: "down" }]);
    assert.equal(d.waiting, false);
    assert.deepEqual(d.flushTimeout(), []);
  });

  it("takes a lone ESC as Escape after the timeout, and what follows as text", () => {
    const d = new InputDecoder();
    assert.deepEqual(d.push("\x1b"), []);
    assert.deepEqual(d.flushTimeout(), [{ type: "escape" }]);
    assert.deepEqual(d.push("[5~"), [{ type: "insert", text: "[5~" }]);
    assert.deepEqual(d.push("\x1b["), []);
    assert.deepEqual(d.flushTimeout(), [{ type: "ignored", sequence: "\x1b[" }]);
  });

  it("drops an overlong escape sequence instead of waiting forever", () => {
    const input = `\x1b[${"1;".repeat(40)}`;
    const out = decode([input, "x"], false);
    assert.equal(out[0]?.type, "ignored");
    assert.deepEqual(out.at(-1), { type: "insert", text: `${"1;".repeat(40).slice(30)}x` });
  });
});

function run(composer: Composer, input: string, role: "controller" | "observer" | null) {
  const d = new InputDecoder();
  return d.push(input).map((a) => composer.apply(a, role));
}

const prompts = (effects: ComposerEffect[]) =>
  effects.flatMap((e) => (e.type === "prompt" ? [e.text] : []));

describe("Composer", () => {
  it("takes the draft at Enter: text after it in the same chunk starts the next message", () => {
    const c = new Composer();
    const effects = run(c, "one\x1b\rmore\rtwo\rthree", "controller");
    assert.deepEqual(prompts(effects), ["one\nmore", "two"]);
    assert.equal(c.text, "three");
  });

  it("sends nothing for an empty draft", () => {
    const c = new Composer();
    assert.deepEqual(run(c, "\r", "controller"), [{ type: "none" }]);
  });

  it("keeps an observer's draft and answers not admitted: controller (S5)", () => {
    const c = new Composer();
    const effects = run(c, "hello\r", "observer");
    assert.deepEqual(effects.at(-1), { type: "notice", text: OBSERVING });
    assert.match(OBSERVING, /^not admitted: controller · \^T takes control/);
    assert.equal(c.text, "hello");
    assert.deepEqual(run(c, "\r", null).at(-1), { type: "notice", text: NOT_CONNECTED });
    assert.equal(c.text, "hello");
    assert.deepEqual(prompts(run(c, " world\r", "controller")), ["hello world"]);
    assert.equal(c.isEmpty, true);
  });

  it("clears the draft whenever the controller changes (S4)", () => {
    const c = new Composer();
    c.insert("draft");
    assert.equal(c.observeController({ generation: 3, controllerConnection: "cn-1" }), false);
    assert.equal(c.text, "draft");
    assert.equal(c.observeController({ generation: 3, controllerConnection: "cn-1" }), false);
    assert.equal(c.text, "draft");
    assert.equal(c.observeController({ generation: 4, controllerConnection: "cn-2" }), true);
    assert.equal(c.text, "");
    c.insert("again");
    // The controller left without a new generation: still a change of controller.
    assert.equal(c.observeController({ generation: 4, controllerConnection: null }), true);
    assert.equal(c.text, "");
  });

  it("sets a draft aside, never drops it, when the controller changes, and Ctrl-R brings it back", () => {
    const c = new Composer();
    c.observeController({ generation: 3, controllerConnection: "cn-1" });
    run(c, "typed before taking control", "observer");
    assert.equal(c.observeController({ generation: 4, controllerConnection: "cn-2" }), true);
    // S4 holds: the new controller starts with a new draft, and Enter sends nothing of the old.
    assert.equal(c.text, "");
    assert.equal(c.hasSetAside, true);
    assert.deepEqual(run(c, "\r", "controller"), [{ type: "none" }]);
    // The person chooses to bring it back; Enter then sends it.
    assert.deepEqual(run(c, "\x12", "controller").at(-1), {
      type: "notice",
      text: "your set-aside draft is back: Enter sends it",
    });
    assert.deepEqual(prompts(run(c, "\r", "controller")), ["typed before taking control"]);
    assert.equal(c.hasSetAside, false);
    assert.deepEqual(run(c, "\x12", "controller").at(-1), {
      type: "notice",
      text: "no draft set aside",
    });
  });

  it("maps Ctrl-Y and Ctrl-N to allowing and denying the open approval, keeping the draft", () => {
    const c = new Composer();
    run(c, "half a thought", "controller");
    assert.deepEqual(run(c, "\x19\x0e", "controller"), [
      { type: "answer", decision: "allow" },
      { type: "answer", decision: "deny" },
    ]);
    assert.equal(c.text, "half a thought", "an answer is not the draft's business");
  });

  it("maps the control keys to the terminal's commands", () => {
    const c = new Composer();
    assert.deepEqual(run(c, "\x14\x07\x0f\x1b[5~\x1b[6~\x03\x04", "observer"), [
      { type: "takeover" },
      { type: "interrupt" },
      { type: "reread" },
      { type: "scroll", direction: "up" },
      { type: "scroll", direction: "down" },
      { type: "quit" },
      { type: "quit" },
    ]);
  });

  it("backspace removes one grapheme cluster", () => {
    const c = new Composer();
    run(c, "ab👨‍👩‍👧é\x7f", "controller");
    assert.equal(c.text, "ab👨‍👩‍👧");
    run(c, "\x7f", "controller");
    assert.equal(c.text, "ab");
    run(c, "\n\x7f\x7f\x7f\x7f", "controller");
    assert.equal(c.text, "");
  });

  it("keeps hostile bytes of a paste literal, and renders none of them raw", () => {
    const hostile = [
      "\x1b]52;c;ZXZpbA==\x07", // OSC 52: write the clipboard
      "\x1b[2J\x1b[H", // clear the screen, move the cursor
      "\x1b]0;owned\x1b\\", // set the title
      "\u202Eexe.txt", // bidi spoofing of a file name
      "\u009b31m\u0085", // C1 CSI and NEL
      "\u2028\u200b\ufeff\u{e0041}",
      `${START}nested`,
      "\r\x03\x04",
    ].join(" ");
    const c = new Composer();
    const effects = run(c, `typed ${START}${hostile}${END} after`, "controller");
    assert.deepEqual(
      effects.filter((e) => e.type !== "none"),
      [],
    );
    assert.equal(c.text, `typed ${hostile.replace("\r", "\n")} after`);
    const shown = c.render();
    assert.equal(firstForbidden(shown), null);
    assert.equal(shown, makeVisible(c.text));
    assert.match(shown, /\^\[\]52;c;ZXZpbA==\^G/);
    assert.match(shown, /<U\+202E>exe\.txt/);
    assert.match(shown, /\^C\^D/);
  });
});
