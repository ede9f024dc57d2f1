import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  attentionOf,
  byOldestWait,
  nextChangeAt,
  type Observed,
  observed,
  onDialog,
  onEvent,
  onGone,
  onProbe,
  onState,
  waited,
} from "../../src/attention/states.ts";

const STALL = 60_000;
const run = (o: Observed, at: number) => onEvent(o, { kind: "run-started" }, at);

describe("attention/states", () => {
  it("is idle before any run, running during one, waiting-input after it ends", () => {
    let o = onProbe(observed(1000), { quiet: true, parts: [] }, 1000);
    assert.deepEqual(
      [attentionOf(o, 2000, STALL).state, attentionOf(o, 2000, STALL).since],
      ["idle", 1000],
    );
    o = run(o, 3000);
    o = onEvent(o, { kind: "text-delta", delta: "hi" }, 3500);
    assert.deepEqual(
      [attentionOf(o, 4000, STALL).state, attentionOf(o, 4000, STALL).since],
      ["running", 3000],
    );
    o = onEvent(o, { kind: "run-ended", willRetry: false }, 5000);
    const a = attentionOf(o, 9000, STALL);
    assert.deepEqual([a.state, a.since], ["waiting-input", 5000]);
  });

  it("stays running when a run ends to be retried", () => {
    let o = run(observed(0), 0);
    o = onEvent(o, { kind: "run-ended", willRetry: true }, 10);
    assert.equal(attentionOf(o, 20, STALL).state, "running");
  });

  it("turns stalled when no event came for the stall time during a run, since the last event", () => {
    let o = run(observed(0), 0);
    o = onEvent(o, { kind: "tool-started", toolName: "bash" }, 1000);
    assert.equal(attentionOf(o, 1000 + STALL - 1, STALL).state, "running");
    const a = attentionOf(o, 1000 + STALL, STALL);
    assert.deepEqual([a.state, a.since], ["stalled", 1000]);
    assert.equal(nextChangeAt(o, STALL), 1000 + STALL);
    o = onEvent(o, { kind: "tool-ended", toolName: "bash" }, 1000 + STALL + 5);
    assert.equal(
      attentionOf(o, 1000 + STALL + 10, STALL).state,
      "running",
      "an event un-stalls it",
    );
  });

  it("fails a run whose reply ended on an engine error, with the engine's text", () => {
    let o = run(observed(0), 0);
    const message = { role: "assistant", stopReason: "error", errorMessage: "400 no such model" };
    o = onEvent(o, { kind: "message-ended", role: "assistant", stopReason: "error", message }, 10);
    o = onEvent(o, { kind: "run-ended", willRetry: false }, 20);
    const a = attentionOf(o, 30, STALL);
    assert.deepEqual([a.state, a.since], ["failed", 20]);
    assert.match(a.reason, /400 no such model/);
    o = run(o, 40);
    o = onEvent(o, { kind: "run-ended", willRetry: false }, 50);
    assert.equal(attentionOf(o, 60, STALL).state, "waiting-input", "a good run clears it");
  });

  it("names the tool once when the title already starts with it (Claude Code's titles)", () => {
    const o = onDialog(
      run(observed(0), 0),
      { id: "dl-1", method: "approval", title: "Bash: make the file", tool: { name: "Bash" } },
      100,
    );
    assert.equal(attentionOf(o, 200, STALL).reason, "asks to run Bash: make the file");
  });

  it("waits on a person while the controller's budget dialog is open, saying its title", () => {
    const title = "Budget reached: 17 of 10 tokens spent. Raise it, or stop here.";
    let o = onDialog(
      run(observed(0), 0),
      { id: "dl-b", method: "budget", title, state: "open" },
      100,
    );
    const a = attentionOf(o, 200, STALL);
    assert.equal(a.state, "waiting-approval");
    assert.equal(a.reason, title);
    assert.equal(a.approval?.budget, true);
    o = onDialog(o, { id: "dl-b", method: "budget", title, state: "allowed" }, 300);
    assert.notEqual(attentionOf(o, 400, STALL).state, "waiting-approval");
  });

  it("waits for approval while an approval dialog is open, oldest first, until it ends", () => {
    let o = run(observed(0), 0);
    const open = (id: string, at: number) =>
      onDialog(
        o,
        { id, method: "approval", title: "rm -rf build", state: "open", tool: { name: "Bash" } },
        at,
      );
    o = open("dl-1", 100);
    o = open("dl-2", 200);
    let a = attentionOf(o, 10 * STALL, STALL);
    assert.deepEqual([a.state, a.since, a.approval?.id], ["waiting-approval", 100, "dl-1"]);
    assert.match(a.reason, /Bash: rm -rf build/);
    assert.equal(nextChangeAt(o, STALL), null, "an open approval never stalls");
    o = onDialog(
      o,
      { id: "dl-1", method: "approval", title: "rm -rf build", state: "allowed" },
      300,
    );
    a = attentionOf(o, 400, STALL);
    assert.deepEqual([a.state, a.since], ["waiting-approval", 200]);
    o = onDialog(o, { id: "dl-2", method: "approval", title: "x", state: "denied" }, 500);
    assert.equal(attentionOf(o, 600, STALL).state, "running");
  });

  it("does not wait for approval on Pi's disabled dialogs, which no one can answer", () => {
    let o = run(observed(0), 0);
    o = onDialog(o, { id: "dl-1", method: "confirm", title: "Sure?" }, 10);
    assert.equal(attentionOf(o, 20, STALL).state, "running");
  });

  it("fails when the engine is gone or never opened, and when the controller died", () => {
    let o = run(observed(0), 0);
    o = onDialog(o, { id: "dl-1", method: "approval", title: "t", state: "open" }, 5);
    o = onState(o, { admission: "fenced" }, 10);
    let a = attentionOf(o, 20, STALL);
    assert.deepEqual([a.state, a.since], ["failed", 10]);
    assert.match(a.reason, /engine stopped or exited/);
    assert.equal(o.approvals.length, 0, "the engine's dialogs went with it");
    assert.match(
      attentionOf(onState(observed(0), { admission: "never" }, 1), 2, STALL).reason,
      /never opened/,
    );
    o = onGone(observed(0), "the controller died (its process is gone)", 50);
    a = attentionOf(o, 60, STALL);
    assert.deepEqual(
      [a.state, a.since, a.reason],
      ["failed", 50, "the controller died (its process is gone)"],
    );
  });

  it("takes a probe at connect: a run in progress, or the last reply's time", () => {
    assert.equal(
      attentionOf(onProbe(observed(0), { quiet: false, parts: [] }, 7), 8, STALL).state,
      "running",
    );
    const parts = [
      { role: "user", timestamp: "2026-12-02T03:00:00.000Z" },
      { role: "assistant", timestamp: "2026-12-02T03:00:05.000Z", meta: { stopReason: "stop" } },
    ];
    const a = attentionOf(onProbe(observed(0), { quiet: true, parts }, 7), 8, STALL);
    assert.deepEqual([a.state, a.since], ["waiting-input", Date.parse("2026-12-02T03:00:05.000Z")]);
    const failed = [
      { role: "assistant", timestamp: "2026-12-02T03:00:05.000Z", meta: { stopReason: "error" } },
    ];
    assert.equal(
      attentionOf(onProbe(observed(0), { quiet: true, parts: failed }, 7), 8, STALL).state,
      "failed",
    );
    const late = onProbe(run(observed(0), 3), { quiet: true, parts: [] }, 7);
    assert.equal(attentionOf(late, 8, STALL).state, "running", "an event that came first wins");
  });

  it("orders the oldest wait first, ties by key", () => {
    const rows = [
      { key: "b", attention: { state: "failed" as const, since: 5, reason: "" } },
      { key: "a", attention: { state: "failed" as const, since: 5, reason: "" } },
      { key: "c", attention: { state: "failed" as const, since: 1, reason: "" } },
    ];
    assert.deepEqual(
      rows.sort(byOldestWait).map((r) => r.key),
      ["c", "a", "b"],
    );
  });

  it("says a waiting time in words", () => {
    assert.deepEqual(
      [
        waited(3_000),
        waited(125_000),
        waited(3_600_000),
        waited(3_900_000),
        waited(73 * 3_600_000),
      ],
      ["3 s", "2 min", "1 h", "1 h 5 min", "3 days"],
    );
  });
});
