import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { FakeLauncher } from "../../src/control/cohort/launcher.ts";
import { type Msg, startController, TestClient } from "./controller-fixture.ts";
import { holdPoint } from "./fake-pi-harness.ts";

const draft = { id: "d1", revision: 1 };

async function controlling(t: TestContext, o: Parameters<typeof startController>[1] = {}) {
  const { ctl, f } = await startController(t, o);
  const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath);
  const g0 = (welcome.state as { generation: number }).generation;
  assert.equal((await c.request({ op: "takeover", generation: g0 })).outcome, "admitted");
  return { ctl, f, c, gen: g0 + 1 };
}

async function confirm(c: TestClient, gen: number, operation: string): Promise<string> {
  const r = await c.request({ op: "confirm", generation: gen, operation });
  assert.equal(r.outcome, "admitted");
  return ((r.result as Msg).confirmation as Msg).id as string;
}

const stopOf = (r: Msg) => (r.result as Msg).stop as Msg;

describe("stops", () => {
  it("interrupts a slow stream: the receipt settles interrupted and admission reopens", async (t) => {
    const { ctl, c, gen } = await controlling(t);
    const p = await c.request({ op: "prompt", generation: gen, text: "go slow", draft });
    assert.equal(p.outcome, "admitted");
    await c.waitFor((m) => m.type === "event" && (m.event as Msg).kind === "text-delta", "a delta");
    const r = await c.request({ op: "interrupt", generation: gen });
    assert.equal(r.outcome, "admitted");
    assert.equal(stopOf(r).result, "interrupted");
    assert.equal(stopOf(r).nativeQueue, "cleared");
    const settled = await c.waitFor(
      (m) => m.type === "event" && (m.event as Msg).kind === "receipt",
      "receipt",
    );
    assert.equal(((settled.event as Msg).receipt as Msg).reason, "interrupted");
    assert.equal(ctl.state().admission, "open");
    assert.deepEqual(ctl.execution?.tracker.overlaps, []);
  });

  it("uses a confirmation once, refuses a foreign one and one issued before the stop changed (H17)", async (t) => {
    const { ctl, c, gen } = await controlling(t, {
      launcher: new FakeLauncher({
        stops: [{ result: "uncertain" }],
        defaultStop: { result: "stopped" },
      }),
    });
    const { c: other } = await TestClient.welcomed(t, ctl.socketPath);
    const first = await confirm(c, gen, "force-stop");
    const stale = await confirm(c, gen, "force-stop");
    const foreign = await other.request({ op: "force-stop", generation: gen, confirmation: first });
    assert.equal(foreign.outcome, "refused:controller");
    const s1 = await c.request({ op: "force-stop", generation: gen, confirmation: first });
    assert.equal(stopOf(s1).result, "uncertain");
    assert.equal(ctl.claim?.state, "uncertain");
    const reused = await c.request({
      id: "again",
      op: "force-stop",
      generation: gen,
      confirmation: first,
    });
    assert.equal(reused.outcome, "refused:confirmation");
    const changed = await c.request({ op: "force-stop", generation: gen, confirmation: stale });
    assert.equal(changed.outcome, "refused:confirmation");
    assert.match(String(changed.message), /stop changed/);
    // H10: a retry after uncertain with a fresh confirmation; this one is proven.
    const fresh = await confirm(c, gen, "force-stop");
    const s2 = await c.request({ op: "force-stop", generation: gen, confirmation: fresh });
    assert.equal(stopOf(s2).result, "stopped");
    assert.equal(stopOf(s2).supersedes, stopOf(s1).id);
    assert.equal(ctl.claim?.state, "stopped-proven");
  });

  it("refuses a second force stop while one escalation runs (fenced) and supersedes an interrupt", async (t) => {
    let release!: () => void;
    const hold = new Promise<void>((ok) => {
      release = ok;
    });
    const { ctl, c, gen, f } = await controlling(t, {
      launcher: new FakeLauncher({ stops: [{ result: "stopped", hold }] }),
      script: { holds: ["clear-queue-response"] },
    });
    await c.request({ op: "prompt", generation: gen, text: "go slow", draft });
    c.raw(`${JSON.stringify({ type: "request", id: "int", op: "interrupt", generation: gen })}\n`);
    await holdPoint(f, "clear-queue-response").reached;
    const a = await confirm(c, gen, "force-stop");
    const b = await confirm(c, gen, "force-stop");
    c.raw(
      `${JSON.stringify({ type: "request", id: "fs1", op: "force-stop", generation: gen, confirmation: a })}\n`,
    );
    await c.waitFor(
      (m) => m.type === "state" && (m.state as Msg).admission === "fenced",
      "fenced state",
    );
    const second = await c.request({ op: "force-stop", generation: gen, confirmation: b });
    assert.equal(second.outcome, "refused:fenced");
    release();
    const fs1 = await c.reply("fs1");
    assert.equal(stopOf(fs1).result, "stopped");
    const int = await c.reply("int");
    assert.equal(stopOf(int).result, "superseded");
    assert.equal(stopOf(fs1).supersedes, stopOf(int).id);
    assert.equal(ctl.state().admission, "fenced", "the interrupt never reopens admission");
  });

  it("recovers after a proven stop: eligibility once, then launch with a new incarnation (K17)", async (t) => {
    const { ctl, c, gen } = await controlling(t);
    const before = ctl.state();
    const fs = await c.request({
      op: "force-stop",
      generation: gen,
      confirmation: await confirm(c, gen, "force-stop"),
    });
    assert.equal(stopOf(fs).result, "stopped");
    assert.equal(ctl.claim?.state, "stopped-proven");
    const rec = await c.request({
      op: "recover",
      generation: gen,
      confirmation: await confirm(c, gen, "recover"),
    });
    assert.equal(rec.outcome, "admitted");
    const el = ((rec.result as Msg).eligibility as Msg).id;
    const launch = await c.request({ op: "launch", generation: gen, eligibility: el });
    assert.equal(launch.outcome, "admitted", JSON.stringify(launch));
    const after = ctl.state();
    assert.notEqual(after.execution, before.execution);
    assert.notEqual(after.incarnation, before.incarnation);
    assert.equal(after.generation, gen + 1);
    assert.equal(after.admission, "open");
    assert.equal(after.controllerConnection, null);
    assert.equal(ctl.claim?.state, "held");
    const again = await c.request({ op: "launch", generation: gen + 1, eligibility: el });
    assert.equal(again.outcome, "refused:eligibility");
    const old = await c.request({
      op: "takeover",
      generation: gen + 1,
      incarnation: before.incarnation,
    });
    assert.equal(old.outcome, "refused:stale-incarnation");
  });

  it("pushes a Pi dialog disabled, never answers it, and marks approval uncertain (P3)", async (t) => {
    const { ctl, c, gen } = await controlling(t);
    await c.request({ op: "prompt", generation: gen, text: "dialog:confirm please", draft });
    const d = await c.waitFor((m) => m.type === "dialog", "dialog");
    assert.equal(d.disabled, true);
    assert.equal(d.method, "confirm");
    const r = await c.request({ op: "interrupt", generation: gen });
    assert.equal(stopOf(r).approvalDisposition, "uncertain");
    assert.equal(ctl.execution?.dialogs.length, 1);
  });
});
