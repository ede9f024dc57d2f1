import assert from "node:assert/strict";
import { renameSync, writeFileSync } from "node:fs";
import { describe, it, type TestContext } from "node:test";
import { FakeLauncher, PgroupLauncher } from "../../src/control/cohort/launcher.ts";
import { OPERATIONS } from "../../src/control/protocol.ts";
import {
  GRANTS,
  type Msg,
  stableSession,
  startController,
  TestClient,
} from "./controller-fixture.ts";

const draft = { id: "d1", revision: 1 };

/** A started controller and a client that took control; `gen` is the current generation. */
async function controlling(t: TestContext, o: Parameters<typeof startController>[1] = {}) {
  const { ctl, f } = await startController(t, o);
  const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath);
  const g0 = (welcome.state as { generation: number }).generation;
  const take = await c.request({ op: "takeover", generation: g0 });
  assert.equal(take.outcome, "admitted");
  return { ctl, f, c, gen: g0 + 1 };
}

function refused(reply: Msg, code: string): void {
  assert.equal(reply.outcome, `refused:${code}`, JSON.stringify(reply));
  assert.equal(reply.refusal, code);
}

describe("admission", () => {
  it("answers malformed to garbage, a non-hello first message and a huge line", async (t) => {
    const { ctl } = await startController(t);
    const c = await TestClient.connect(t, ctl.socketPath);
    c.raw("not json\n");
    refused(await c.waitFor((m) => m.type === "reply", "garbage reply"), "malformed");
    c.raw(`${JSON.stringify({ type: "request", id: "q1", op: "observe" })}\n`);
    refused(await c.reply("q1"), "malformed");
    assert.equal(c.messages.length, 2, "nothing else happens");
    c.raw(`${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op" })}\n`);
    await c.waitFor((m) => m.type === "welcome", "welcome after malformed lines");
    c.raw(`${JSON.stringify({ type: "request", id: "q2", op: "observe", extra: 1 })}\n`);
    refused(await c.reply("q2"), "malformed");
    const big = "x".repeat(3 * 1024 * 1024);
    c.raw(big);
    await c.waitFor(
      (m) => m.type === "reply" && m.id === null && m.refusal === "malformed",
      "oversize",
      3,
    );
    await c.closed;
  });

  it("refuses grant when the hello names no active grant", async (t) => {
    const { ctl } = await startController(t);
    const c = await TestClient.connect(t, ctl.socketPath);
    c.raw(`${JSON.stringify({ type: "hello", protocol: 2, grant: "g-none" })}\n`);
    refused(await c.waitFor((m) => m.type === "reply", "grant"), "grant");
  });

  it("refuses channel once the connection's grant was revoked", async (t) => {
    const { ctl, c, gen } = await controlling(t);
    ctl.revokeGrant("g-op");
    refused(await c.request({ op: "observe" }), "channel");
    assert.equal(ctl.state().controllerConnection, null);
    assert.equal(gen, ctl.state().generation);
  });

  it("refuses unsupported-capability for recovery when the launcher can't prove a stop", async (t) => {
    const { c, gen } = await controlling(t, { launcher: new PgroupLauncher() });
    refused(
      await c.request({ op: "recover", generation: gen, confirmation: "cf-x" }),
      "unsupported-capability",
    );
  });

  it("refuses scope when the grant covers another conversation", async (t) => {
    const grants = [{ ...GRANTS[0]!, scope: { conversations: ["pi-other"] } }];
    const { ctl } = await startController(t, { grants });
    const { c } = await TestClient.welcomed(t, ctl.socketPath);
    refused(await c.request({ op: "observe" }), "scope");
  });

  it("refuses mapping when the session file left its place", async (t) => {
    const { ctl, f } = await startController(t);
    const { c } = await TestClient.welcomed(t, ctl.socketPath);
    renameSync(f.sessionFile, `${f.sessionFile}.moved`);
    refused(await c.request({ op: "observe" }), "mapping");
  });

  it("refuses audit for acting requests when the audit sink failed", async (t) => {
    const { ctl } = await startController(t, {
      audit: () => {
        throw new Error("disk full");
      },
    });
    const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath);
    const g = (welcome.state as { generation: number }).generation;
    refused(await c.request({ op: "takeover", generation: g }), "audit");
    assert.equal((await c.request({ op: "observe" })).outcome, "admitted");
  });

  it("refuses capability when the grant lacks the operation", async (t) => {
    const { ctl } = await startController(t);
    const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath, "g-ro");
    const g = (welcome.state as { generation: number }).generation;
    refused(await c.request({ op: "takeover", generation: g }), "capability");
  });

  it("refuses target for another conversation, and when the header id changed (W4)", async (t) => {
    const { c, gen, f } = await controlling(t);
    refused(await c.request({ op: "observe", target: { conversation: "pi-other" } }), "target");
    refused(await c.request({ op: "observe", target: { execution: "ex-other" } }), "target");
    const lines = stableSession(f.projectRoot, "01a00000-0000-7000-8000-0000000000f2");
    writeFileSync(f.sessionFile, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    refused(await c.request({ op: "prompt", generation: gen, text: "hi", draft }), "target");
  });

  it("refuses generation for a stale generation and controller for an observer (H1, H2)", async (t) => {
    const { ctl, c, gen } = await controlling(t);
    const { c: other } = await TestClient.welcomed(t, ctl.socketPath);
    refused(await other.request({ op: "takeover", generation: gen - 1 }), "generation");
    refused(
      await other.request({ op: "prompt", generation: gen, text: "hi", draft }),
      "controller",
    );
    assert.equal((await other.request({ op: "takeover", generation: gen })).outcome, "admitted");
    refused(await c.request({ op: "prompt", generation: gen, text: "hi", draft }), "generation");
    assert.equal(ctl.state().generation, gen + 1);
  });

  it("admits exactly one of two takeovers written in the same tick; the other is stale (H1, H2)", async (t) => {
    const { ctl } = await startController(t);
    const { c: a, welcome: wa } = await TestClient.welcomed(t, ctl.socketPath);
    const { c: b, welcome: wb } = await TestClient.welcomed(t, ctl.socketPath);
    const g = (wa.state as { generation: number }).generation;
    assert.equal((wb.state as { generation: number }).generation, g);
    const [na, nb] = [a.messages.length, b.messages.length];
    const line = (id: string) =>
      `${JSON.stringify({ type: "request", id, op: "takeover", generation: g })}\n`;
    a.raw(line("ta"));
    b.raw(line("tb"));
    const [ra, rb] = await Promise.all([a.reply("ta", na), b.reply("tb", nb)]);
    const outcomes = [ra.outcome, rb.outcome].sort();
    assert.deepEqual(outcomes, ["admitted", "refused:generation"], JSON.stringify([ra, rb]));
    const [winner, loser] = ra.outcome === "admitted" ? [a, b] : [b, a];
    const [won, lost] = ra.outcome === "admitted" ? [ra, rb] : [rb, ra];
    const winnerId = (ra.outcome === "admitted" ? wa : wb).connection;
    const loserId = (ra.outcome === "admitted" ? wb : wa).connection;
    assert.deepEqual(won.result, { generation: g + 1, role: "controller" });
    refused(lost, "generation");
    assert.deepEqual(ctl.state().generation, g + 1);
    assert.equal(ctl.state().controllerConnection, winnerId);
    // Both clients were told the same thing: one state at g + 1 naming the winner, none beyond.
    for (const [c, from] of [
      [a, na],
      [b, nb],
    ] as const) {
      const states = c.messages.slice(from).filter((m) => m.type === "state");
      const seen = states.map(
        (m) => m.state as { generation: number; controllerConnection: string },
      );
      assert.deepEqual(
        seen.map((s) => [s.generation, s.controllerConnection]),
        [[g + 1, winnerId]],
      );
    }
    // The loser takes over at the generation it was told: H2, the newest takeover wins.
    const [ma, mb] = [a.messages.length, b.messages.length];
    const again = await loser.request({ op: "takeover", generation: g + 1 });
    assert.equal(again.outcome, "admitted");
    for (const [c, from] of [
      [a, ma],
      [b, mb],
    ] as const) {
      const s = await c.waitFor((m) => m.type === "state", "state after the second takeover", from);
      assert.deepEqual(
        [(s.state as Msg).generation, (s.state as Msg).controllerConnection],
        [g + 2, loserId],
      );
    }
    refused(
      await winner.request({ op: "prompt", generation: g + 1, text: "hi", draft }),
      "generation",
    );
  });

  it("refuses already-controller on self-takeover (H4)", async (t) => {
    const { c, gen } = await controlling(t);
    refused(await c.request({ op: "takeover", generation: gen }), "already-controller");
  });

  it("refuses conflicting-request for a reused id and replays an identical one (H13)", async (t) => {
    const { c, gen } = await controlling(t);
    const first = await c.request({ id: "same", op: "observe" });
    assert.equal(first.outcome, "admitted");
    const n = c.messages.length;
    c.raw(`${JSON.stringify({ type: "request", id: "same", op: "observe" })}\n`);
    assert.equal((await c.reply("same", n)).outcome, "admitted");
    const m = c.messages.length;
    c.raw(`${JSON.stringify({ type: "request", id: "same", op: "interrupt", generation: gen })}\n`);
    refused(await c.reply("same", m), "conflicting-request");
  });

  it("refuses stale-incarnation for an old incarnation (H21)", async (t) => {
    const { c, gen } = await controlling(t);
    refused(
      await c.request({ op: "interrupt", generation: gen, incarnation: "in-old" }),
      "stale-incarnation",
    );
  });

  it("admits a prompt with a receipt and refuses a second one busy (H18)", async (t) => {
    const { c, gen, ctl, f } = await controlling(t, { script: { holds: ["run-start"] } });
    const r = await c.request({ op: "prompt", generation: gen, text: "hi there", draft });
    assert.equal(r.outcome, "admitted");
    assert.equal((r.receipt as { state: string }).state, "admitted");
    refused(await c.request({ op: "prompt", generation: gen, text: "again", draft }), "busy");
    const { holdPoint } = await import("./fake-pi-harness.ts");
    holdPoint({ ...f, root: f.root, sessionFile: f.sessionFile }, "run-start").release();
    const settled = await c.waitFor(
      (m) => m.type === "event" && (m.event as Msg).kind === "receipt",
      "receipt settled",
    );
    assert.equal(((settled.event as Msg).receipt as Msg).reason, "completed");
    assert.equal(ctl.state().admission, "open");
  });

  it("refuses text-policy for slash text and draft for empty text", async (t) => {
    const { c, gen } = await controlling(t);
    refused(
      await c.request({ op: "prompt", generation: gen, text: "  /llama", draft }),
      "text-policy",
    );
    refused(await c.request({ op: "prompt", generation: gen, text: "   ", draft }), "draft");
  });

  it("refuses no-turn for an interrupt with no slot and no run (N16)", async (t) => {
    const { c, gen } = await controlling(t);
    refused(await c.request({ op: "interrupt", generation: gen }), "no-turn");
  });

  it("refuses controller-present for recovery while another connection controls", async (t) => {
    const { ctl, gen } = await controlling(t);
    const { c: other } = await TestClient.welcomed(t, ctl.socketPath);
    refused(
      await other.request({ op: "recover", generation: gen, confirmation: "cf-x" }),
      "controller-present",
    );
  });

  it("refuses confirmation, cursor and eligibility for unknown ids", async (t) => {
    const { c, gen } = await controlling(t);
    refused(
      await c.request({ op: "force-stop", generation: gen, confirmation: "cf-none" }),
      "confirmation",
    );
    const bad = await c.request({ op: "observe", cursor: "cu-none" });
    refused(bad, "cursor");
    assert.equal(bad.detail, "cursor-unknown");
    refused(
      await c.request({ op: "launch", generation: gen, eligibility: "el-none" }),
      "eligibility",
    );
  });

  it("refuses stop-proof for recovery after an uncertain stop, and fenced for prompts", async (t) => {
    const { c, gen } = await controlling(t, {
      launcher: new FakeLauncher({ defaultStop: { result: "uncertain" } }),
    });
    const cf = await c.request({ op: "confirm", generation: gen, operation: "force-stop" });
    const id = ((cf.result as Msg).confirmation as Msg).id;
    const stop = await c.request({ op: "force-stop", generation: gen, confirmation: id });
    assert.equal(((stop.result as Msg).stop as Msg).result, "uncertain");
    refused(await c.request({ op: "prompt", generation: gen, text: "hi", draft }), "fenced");
    const rc = await c.request({ op: "confirm", generation: gen, operation: "recover" });
    const rid = ((rc.result as Msg).confirmation as Msg).id;
    refused(await c.request({ op: "recover", generation: gen, confirmation: rid }), "stop-proof");
  });

  it("lists every operation in the full grant", () => {
    assert.deepEqual(GRANTS[0]!.capabilities, [...OPERATIONS]);
  });
});
