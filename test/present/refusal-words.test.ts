// A refusal as a person reads it (issue 24 item 12): plain words first, the code and the
// layer's own message after them; every code given words is one a layer really refuses with.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BOARD_REFUSAL_STATUS } from "../../src/board/status.ts";
import { CONTROL_REFUSAL_CODES } from "../../src/control/refusal.ts";
import { refusalLine, refusalWords, WORDED_CODES } from "../../src/present/refusal-words.ts";
import { READER_REFUSAL_CODES } from "../../src/protocol/chat-01.ts";

/** The refusals the Console makes itself (src/board/console/api.js's localRefusal). */
const CONSOLE_LOCAL = ["board-unreachable", "bad-response", "no-storage"];

describe("refusal-words", () => {
  it("gives words only to codes some layer refuses with, so a misspelt code cannot hide", () => {
    const known = new Set<string>([
      ...READER_REFUSAL_CODES,
      ...Object.keys(BOARD_REFUSAL_STATUS),
      ...CONTROL_REFUSAL_CODES,
      ...CONSOLE_LOCAL,
    ]);
    const strays = WORDED_CODES.filter((c) => !known.has(c));
    assert.deepEqual(strays, []);
    assert.ok(WORDED_CODES.length >= 20, "the codes a person meets most have words");
  });

  it("puts plain words and what to do first, then the code and the layer's words, when the code is known", () => {
    assert.deepEqual(refusalWords("controller", "this connection is not the controller"), {
      said: "This page does not control the run.",
      todo: "Press Take control first, then try again.",
      code: "controller",
      detail: "this connection is not the controller",
    });
    assert.equal(
      refusalLine("unknown-conversation", "No approved session root holds this conversation now"),
      "This conversation is no longer on this board: its file was moved or deleted, or its folder is no longer one the board reads. Reload the catalogue to see what is there now. (unknown-conversation: No approved session root holds this conversation now)",
    );
  });

  it("shows the layer's own message as the words when the code has none of its own", () => {
    assert.deepEqual(refusalWords("stop-proof", "the engine's exit is not proven yet"), {
      said: "the engine's exit is not proven yet",
      todo: null,
      code: "stop-proof",
      detail: null,
    });
    assert.equal(refusalLine("stop-proof", "not proven"), "not proven (stop-proof)");
    assert.equal(
      refusalLine("busy", ""),
      `${refusalWords("busy", "").said} ${refusalWords("busy", "").todo} (busy)`,
    );
  });

  it("names no engine: the same words serve a Pi run and a Claude Code run", () => {
    const named = WORDED_CODES.map((c) => refusalWords(c, "m"))
      .filter((w) => /\b(Pi|Claude)\b/.test(`${w.said} ${w.todo ?? ""}`))
      .map((w) => w.code);
    assert.deepEqual(named, []);
    assert.match(
      refusalLine("budget", "34 of 30 tokens spent"),
      /^This run's budget is spent, so nothing was sent\. Raise the budget in the box below/,
    );
  });

  it("never reads a code from the object's prototype when a layer sends a code such as __proto__", () => {
    for (const code of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      assert.deepEqual(refusalWords(code, "m"), { said: "m", todo: null, code, detail: null });
    }
  });
});
