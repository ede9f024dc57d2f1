// Pi 1.6.0's RPC differences (issue 16 item 2), as run against the pinned 1.6.0: the prompt
// response carries `data.disposition`; a run starts with a `system` message before the user's;
// `get_commands` no longer lists `/llama`. Unit-level here; the real 1.6.0 runs in the real-Pi
// suites (REAL_PI_VERSIONS).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type OverlapSignal, Tracker } from "../../src/control/controller/turns.ts";
import { piSignals } from "../../src/control/engine/pi/pi-engine.ts";
import { mapEvent } from "../../src/control/engine/pi/pi-events.ts";
import { promptDisposition, type RpcEvent } from "../../src/control/engine/pi/rpc.ts";
import type { ReceiptReason } from "../../src/control/protocol.ts";

function tracker() {
  const settled: [string, ReceiptReason][] = [];
  const details: (string | undefined)[] = [];
  const overlaps: OverlapSignal[] = [];
  const t = new Tracker({
    settle: (r, why, detail) => {
      settled.push([r, why]);
      details.push(detail);
    },
    overlap: (s) => overlaps.push(s),
  });
  return { t, settled, details, overlaps };
}

const message = (role: string, text: string): RpcEvent => ({
  type: "message_start",
  message: { role, content: role === "system" ? "" : [{ type: "text", text }] },
});

describe("Pi 1.6.0's RPC differences", () => {
  it("reads the prompt response's disposition; 0.85.1's empty data is null", () => {
    assert.equal(promptDisposition({ disposition: "started" }), "started");
    assert.equal(promptDisposition({ disposition: "queued" }), "queued");
    assert.equal(promptDisposition({ disposition: "handled" }), "handled");
    for (const data of [undefined, null, {}, [], { disposition: "later" }, "started"]) {
      assert.equal(promptDisposition(data), null, JSON.stringify(data));
    }
  });

  it("settles handled-without-run at once when 1.6.0 says the prompt was handled", () => {
    const { t, settled, details } = tracker();
    t.dispatch("rc1", "/cmd");
    t.ack("rc1", true, { disposition: "handled" });
    assert.deepEqual(settled, [["rc1", "handled-without-run"]]);
    assert.deepEqual(details, [undefined], "a success carries no reason");
    assert.equal(t.isQuiet(), true, "the slot is free again");
  });

  it("a failed prompt settles handled-without-run with Pi's reason, whatever the version", () => {
    const { t, settled, details } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", false, { error: "No model selected" });
    t.dispatch("rc2", "hi");
    t.ack("rc2", true, { disposition: "queued" });
    assert.deepEqual(settled, [["rc1", "handled-without-run"]], "queued keeps the slot");
    assert.deepEqual(details, ["No model selected"]);
    assert.equal(t.slotReceipt(), "rc2");
  });

  it("a system message before the user's does not disturb the attribution", () => {
    const { t, settled, overlaps } = tracker();
    t.dispatch("rc1", "hi");
    t.ack("rc1", true, { disposition: "started" });
    const run: RpcEvent[] = [
      { type: "agent_start" },
      { type: "turn_start" },
      message("system", ""),
      { type: "message_end", message: { role: "system", content: "" } },
      message("user", "hi"),
      { type: "agent_settled" },
    ];
    for (const e of run) for (const s of piSignals(e)) t.onSignal(s);
    assert.deepEqual(overlaps, []);
    assert.deepEqual(settled, [["rc1", "completed"]]);
  });

  it("streams the system message as message-started/ended with role system", () => {
    assert.deepEqual(mapEvent(message("system", "")), { kind: "message-started", role: "system" });
    const end = mapEvent({ type: "message_end", message: { role: "system", content: "" } });
    assert.equal(end?.kind, "message-ended");
    assert.equal(end?.role, "system");
  });
});
