// The Console's live view folds controller events with the terminal's own state machine
// (src/control/client/transcript-state.ts, bundled by scripts/build-console.mjs into
// src/board/console/transcript.js): the bundle imports nothing (no node: built-in reaches the
// browser), its two stand-ins for node:crypto and node:buffer agree with Node, and one scripted
// event sequence gives the same lines in Node's TranscriptState and on the page (made visible
// there by the history's rule, src/present/visible.ts).
import assert from "node:assert/strict";
import { constants } from "node:buffer";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { chromium } from "playwright-core";
import { startBoard } from "../../src/board/index.ts";
import { TranscriptState } from "../../src/control/client/transcript-state.ts";
import type { StreamEvent } from "../../src/control/protocol.ts";
import { makeVisible } from "../../src/present/visible.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { writeBoardFixture } from "./fixture.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const BUNDLE = join(ROOT, "src", "board", "console", "transcript.js");
const CHROMIUM = "/usr/bin/chromium";

/** Plain JS modules (no declarations): loaded through a string so tsc types them here. */
const load = (path: string): Promise<unknown> => import(join(ROOT, path));
type Line = { className: string; text: string } | null;
const { itemLine } = (await load("src/board/console/live-run.js")) as {
  itemLine: (item: unknown) => Line;
};
const browserConstants = (
  (await load("scripts/browser-buffer.mjs")) as { constants: { MAX_STRING_LENGTH: number } }
).constants;
type Hash = { update(s: string, enc: "utf8"): Hash; digest(enc: "hex"): string };
const browserHash = (
  (await load("scripts/browser-crypto.mjs")) as {
    createHash: (algorithm: string) => Hash;
  }
).createHash;

const EPOCH = "e1";
const HOSTILE = '<img src=x onerror="window.pwned=1">\u202eevil';
/** A run with hostile text, a tool, a hidden setting, an unknown kind, a repeat, a receipt. */
const KINDS: StreamEvent["event"][] = [
  { kind: "run-started" },
  { kind: "message-started", role: "assistant" },
  { kind: "text-delta", delta: "Hello " },
  { kind: "text-delta", delta: HOSTILE },
  { kind: "thinking_level_change", level: "high" },
  { kind: "tool-started", toolCallId: "call_1", toolName: "bash" },
  { kind: "tool-started", toolCallId: "call|odd id", toolName: "read" },
  { kind: "tool-ended", toolCallId: "call|odd id", toolName: "read", isError: true },
  { kind: "engine-notice", method: "notify", message: HOSTILE },
  { kind: "future-kind" },
  {
    kind: "receipt",
    receipt: { id: "r1", state: "settled", reason: "interrupted", detail: HOSTILE },
  },
  { kind: "receipt", receipt: { id: "r2", state: "settled", reason: "completed" } },
];
const EVENTS: StreamEvent[] = KINDS.map((event, i) => ({
  type: "event",
  streamEpoch: EPOCH,
  sequence: 5 + i,
  id: `${EPOCH}:${5 + i}`,
  event,
}));
// The same event again (a replay) is shown once.
EVENTS.splice(4, 0, EVENTS[3] as StreamEvent);

/** What the terminal's state machine makes of EVENTS, as the Console's lines. */
function nodeLines(): string[] {
  const state = new TranscriptState();
  state.beginRead();
  state.applyPage(
    { parts: [] },
    { replay: "available", streamEpoch: EPOCH, fromSequence: 5, reconcile: true, quiet: true },
  );
  for (const e of EVENTS) state.applyEvent(e);
  const lines: string[] = [];
  for (const item of state.items()) {
    const line = itemLine(item);
    if (line !== null) lines.push(`${line.className}|${line.text}`);
  }
  return lines;
}

/** A fold line as the page shows it: its text made visible by the rule the history uses. */
function onPage(line: string): string {
  const [className = "", ...rest] = line.split("|");
  const text = rest.join("|");
  const opts =
    className === "streaming" ? { passCrlf: true } : { showNewlines: true, showTabs: true };
  return `${className}|${makeVisible(text, opts)}`;
}

describe("the Console's transcript bundle", () => {
  it("imports nothing, so no node: built-in reaches the browser", () => {
    const text = readFileSync(BUNDLE, "utf8");
    assert.doesNotMatch(text, /\bnode:/);
    assert.doesNotMatch(text, /^\s*import\b|\bimport\s*\(|\brequire\s*\(/m);
    assert.match(text, /export\s*\{[^}]*\bTranscriptState\b/);
  });

  it("hashes and limits as Node does", () => {
    for (const s of ["", "abc", "call_x|fc_y", "é".repeat(300), "x".repeat(55), "y".repeat(64)]) {
      assert.equal(
        browserHash("sha256").update(s, "utf8").digest("hex"),
        createHash("sha256").update(s, "utf8").digest("hex"),
      );
    }
    assert.equal(browserConstants.MAX_STRING_LENGTH, constants.MAX_STRING_LENGTH);
  });

  const skip = existsSync(CHROMIUM) || process.env.CI ? false : `${CHROMIUM} is missing`;
  it("shows on the page what the terminal's state machine folds", { skip }, async (t) => {
    const expected = nodeLines();
    // The fold did something: a hashed tool id, a receipt, a notice, the unknown kind.
    assert.deepEqual(expected, [
      `streaming|Hello ${HOSTILE}`,
      "tool running|Running bash",
      "tool ended|read failed",
      `notice|notify: ${HOSTILE}`,
      "event|[event future-kind]",
      `receipt|Prompt settled: interrupted (${HOSTILE})`,
    ]);
    const fx = await writeBoardFixture(t);
    const board = await startBoard({ reader: fx.reader() });
    t.after(() => board.close());
    const profile = mkdtempSync(join(tmpdir(), "transcript-chromium-"));
    // One hook, in this order: Chromium writes its profile until the context is closed.
    let closeContext = async () => {};
    t.after(async () => {
      await closeContext();
      rmSync(profile, { recursive: true, force: true });
    });
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      timeout: DEADLINE_MS,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
    });
    closeContext = () => context.close();
    const page = await context.newPage();
    await page.goto(board.url);
    const script = `(async () => {
      const { createLiveRun } = await import("/live-run.js");
      const live = createLiveRun();
      live.attach("c");
      live.onController({ running: true });
      for (const e of ${JSON.stringify(EVENTS)}) live.onEvent(e);
      const rows = [...document.querySelectorAll("#live-activity > div")];
      return {
        lines: rows.map((r) => r.className + "|" + r.textContent),
        elements: document.querySelectorAll("#live-activity *:not(.ctl)").length,
        pwned: window.pwned === 1,
        who: document.getElementById("live-who").textContent,
      };
    })()`;
    const shown = (await page.evaluate(script)) as {
      lines: string[];
      elements: number;
      pwned: boolean;
      who: string;
    };
    assert.deepEqual(shown.lines, expected.map(onPage));
    assert.equal(shown.elements, expected.length, "hostile text stays text: no element made");
    assert.equal(shown.pwned, false);
    assert.match(shown.who, /A run is in progress\.$/);

    // A gap: the terminal would hold event 8 and read the page again; the Console keeps the
    // hole's marker and starts a fresh state at event 8, which it then shows.
    const gap = (await page.evaluate(`(async () => {
      const { createLiveRun } = await import("/live-run.js");
      const live = createLiveRun();
      live.attach("c");
      live.onController({ running: true });
      const ev = (sequence, event) => ({ type: "event", streamEpoch: "e1", sequence, id: "e1:" + sequence, event });
      live.onEvent(ev(5, { kind: "tool-started", toolCallId: "a", toolName: "bash" }));
      live.onEvent(ev(6, { kind: "tool-started", toolCallId: "b", toolName: "grep" }));
      live.onEvent(ev(8, { kind: "tool-started", toolCallId: "c", toolName: "edit" }));
      return [...document.querySelectorAll("#live-activity > div")].map((r) => r.textContent);
    })()`)) as string[];
    assert.deepEqual(gap, ["Events were missed: expected event 7, got 8", "Running edit"]);
  });
});
