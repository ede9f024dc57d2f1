import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type OverlapSignal, Tracker } from "../../src/control/controller/turns.ts";
import { piSignals } from "../../src/control/engine/pi/pi-engine.ts";
import type { RpcEvent } from "../../src/control/engine/pi/rpc.ts";
import type { ReceiptReason } from "../../src/control/protocol.ts";

function tracker() {
  const settled: [string, ReceiptReason][] = [];
  const overlaps: OverlapSignal[] = [];
  const t = new Tracker({
    settle: (r, why) => settled.push([r, why]),
    overlap: (s) => overlaps.push(s),
  });
  // The tracker reads turn signals; Pi's events become them through Pi's own mapping.
  const feed = (e: RpcEvent) => {
    for (const signal of piSignals(e)) t.onSignal(signal);
  };
  return { t, feed, settled, overlaps, codes: () => overlaps.map((o) => o.code) };
}
const user = (text: string): RpcEvent => ({
  type: "message_start",
  message: { role: "user", content: [{ type: "text", text }] },
});
const start: RpcEvent = { type: "agent_start" };
const settledEv: RpcEvent = { type: "agent_settled" };
const aborted: RpcEvent = {
  type: "message_end",
  message: { role: "assistant", stopReason: "aborted" },
};

describe("turns", () => {
  it("attributes the run whose first user message follows the ack, and settles completed", () => {
    const { t, feed, settled, overlaps } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true);
    for (const e of [start, user("hi"), settledEv]) feed(e);
    assert.deepEqual(settled, [["rc1", "completed"]]);
    assert.deepEqual(overlaps, []);
    assert.equal(t.isQuiet(), true);
  });

  it("settles handled-without-run when the prompt's response fails", () => {
    const { t, settled } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", false);
    assert.deepEqual(settled, [["rc1", "handled-without-run"]]);
  });

  it("signals O1 for a run with no prompt in the slot", () => {
    const { feed, codes } = tracker();
    feed(start);
    assert.deepEqual(codes(), ["O1"]);
  });

  it("signals O2 for a second user message in one run (a queued message ran)", () => {
    const { t, feed, codes, settled } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true);
    for (const e of [start, user("hi"), user("sneaky")]) feed(e);
    assert.deepEqual(codes(), ["O2"]);
    assert.deepEqual(settled, [["rc1", "run-overlap"]]);
  });

  it("signals O3 when the run after the ack carries another input (N8, the losing settle)", () => {
    const { t, feed, codes, settled } = tracker();
    t.dispatch("rc1", "mine");
    t.ack("rc1", true);
    for (const e of [start, user("theirs")]) feed(e);
    assert.deepEqual(codes(), ["O3"]);
    assert.deepEqual(settled, [["rc1", "run-overlap"]]);
  });

  it("signals O4 for a run that starts before the prompt's response", () => {
    const { t, feed, codes } = tracker();
    t.dispatch("rc1", "hi");
    feed(start);
    assert.deepEqual(codes(), ["O4"]);
  });

  it("signals O5 for a queue the controller never filled", () => {
    const { t, feed, codes } = tracker();
    feed({ type: "queue_update", steering: ["x"], followUp: [] });
    t.queueCleared(0, 1);
    assert.deepEqual(codes(), ["O5", "O5"]);
  });

  it("signals O6 for an aborted with no abort written, even after a fence (N9)", () => {
    const { t, feed, codes, settled } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true);
    feed(start);
    feed(user("hi"));
    t.stopBegan("st1");
    feed(aborted);
    assert.deepEqual(codes(), ["O6"]);
    assert.deepEqual(settled, [["rc1", "run-overlap"]]);
  });

  it("links an aborted to the stop once its chain wrote an abort, and settles interrupted", () => {
    const { t, feed, codes, settled } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true);
    for (const e of [start, user("hi")]) feed(e);
    t.stopBegan("st1");
    t.abortWritten();
    t.stopBegan("st2"); // a force stop takes the chain over and keeps the abort
    feed(aborted);
    feed(settledEv);
    assert.deepEqual(codes(), []);
    assert.deepEqual(settled, [["rc1", "interrupted"]]);
  });

  it("settles interrupted when a stop's abort ends the run between two replies, with no message cut", () => {
    // Pi aborted while a tool ran (a budget stop after the tool call's reply): the run ends
    // with no aborted message. It did not complete: the stop ended it.
    const { t, feed, codes, settled } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true);
    for (const e of [start, user("hi")]) feed(e);
    t.stopBegan("st1");
    t.abortWritten();
    feed(settledEv);
    assert.deepEqual(codes(), []);
    assert.deepEqual(settled, [["rc1", "interrupted"]]);
  });

  it("settles completed when a stop began but wrote no abort before the run ended", () => {
    const { t, feed, settled } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true);
    for (const e of [start, user("hi")]) feed(e);
    t.stopBegan("st1");
    feed(settledEv);
    assert.deepEqual(settled, [["rc1", "completed"]]);
  });

  it("settles transport-unknown or ack-without-start when the engine goes", () => {
    const a = tracker();
    a.t.dispatch("rc1", "hi");
    a.t.engineGone();
    const b = tracker();
    b.t.dispatch("rc2", "hi");
    b.t.ack("rc2", true);
    b.t.engineGone();
    assert.deepEqual(
      [...a.settled, ...b.settled],
      [
        ["rc1", "transport-unknown"],
        ["rc2", "ack-without-start"],
      ],
    );
  });
});
