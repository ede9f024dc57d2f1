import assert from "node:assert/strict";
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Controller } from "../../src/control/controller/controller.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import {
  appendingSession,
  controllerOptions,
  type Msg,
  makeFixture,
  startController,
  TestClient,
} from "./controller-fixture.ts";

describe("controller", () => {
  it("refuses configuration when a required path is missing", (t) => {
    const f = makeFixture(t);
    for (const key of [
      "fixtureRoot",
      "claimRoot",
      "socketDir",
      "sessionFile",
      "seat",
      "verifier",
    ]) {
      const o = { ...controllerOptions(f), [key]: undefined } as never;
      assert.throws(
        () => new Controller(o),
        (e) => isControlRefusal(e) && e.code === "configuration",
        key,
      );
    }
  });

  it("refuses configuration when the session file is not at <project>/.pi/state/<seat>/sessions", (t) => {
    const f = makeFixture(t);
    const stray = join(f.fixtureRoot, "s.jsonl");
    writeFileSync(stray, "{}\n");
    const o = { ...controllerOptions(f), sessionFile: stray };
    assert.throws(
      () => new Controller(o),
      (e) => isControlRefusal(e) && e.code === "configuration",
    );
  });

  it("refuses configuration when the header id is not a CHAT-01 id", (t) => {
    const f = makeFixture(t, (cwd) => [{ type: "session", id: "bad id!", cwd }]);
    assert.throws(
      () => new Controller(controllerOptions(f)),
      (e) => isControlRefusal(e) && e.code === "configuration",
    );
  });

  it("refuses live-session-refused at construction for an agentDir inside a live root (SPEC §6)", (t) => {
    const f = makeFixture(t);
    const guardHome = join(f.root, "home");
    mkdirSync(join(guardHome, ".claude"), { recursive: true });
    const link = join(f.root, "agent-link");
    symlinkSync(join(guardHome, ".claude"), link);
    const inside = [
      join(homedir(), ".pi", "agent"),
      join(homedir(), ".claude"),
      join(homedir(), ".mosaic-dev", "x", "agent"),
      join(guardHome, ".pi", "agent"),
      join(guardHome, ".mosaic-dev"),
      link,
      join(link, "agent"),
    ];
    for (const agentDir of inside) {
      const o = { ...controllerOptions(f), homes: [guardHome], agentDir };
      assert.throws(
        () => new Controller(o),
        (e) => isControlRefusal(e) && e.code === "live-session-refused",
        agentDir,
      );
    }
    assert.throws(
      () => new Controller({ ...controllerOptions(f), agentDir: "relative/agent" }),
      (e) => isControlRefusal(e) && e.code === "configuration",
    );
    const outside = join(f.root, "agent");
    const ok = new Controller({ ...controllerOptions(f), homes: [guardHome], agentDir: outside });
    assert.equal(ok.claim, null);
  });

  it("refuses at bind when the agentDir was swapped for a link into a live root (G3)", async (t) => {
    const f = makeFixture(t);
    const guardHome = join(f.root, "home");
    mkdirSync(join(guardHome, ".pi"), { recursive: true });
    const agentDir = join(f.root, "agent");
    const ctl = new Controller({ ...controllerOptions(f), homes: [guardHome], agentDir });
    t.after(() => ctl.stop());
    symlinkSync(join(guardHome, ".pi"), agentDir);
    await assert.rejects(
      ctl.start(),
      (e) => isControlRefusal(e) && e.code === "live-session-refused",
    );
    assert.equal(ctl.execution, null, "nothing was launched");
  });

  it("closes a connection that stops reading past its queue limit; others and the engine go on", async (t) => {
    const { ctl } = await startController(t, {
      script: { tickMs: 1 },
      maxQueuedBytes: 64 * 1024,
    });
    const { c: slow, welcome } = await TestClient.welcomed(t, ctl.socketPath);
    const { c: other, welcome: otherWelcome } = await TestClient.welcomed(t, ctl.socketPath);
    const g = (welcome.state as { generation: number }).generation;
    assert.equal((await slow.request({ op: "takeover", generation: g })).outcome, "admitted");
    const draft = { id: "d1", revision: 1 };
    const p = await slow.request({ op: "prompt", generation: g + 1, text: "slow please", draft });
    assert.equal(p.outcome, "admitted");
    slow.socket.pause();
    const n = other.messages.length;
    // The slow client was the controller: its close leaves no controller, which every other
    // client is told.
    await other.waitFor(
      (m) => m.type === "state" && (m.state as Msg).controllerConnection === null,
      "the slow client closed",
      n,
      30_000,
    );
    assert.equal(ctl.state().controllerConnection, null);
    const m = other.messages.length;
    await other.waitFor((x) => x.type === "event", "events after the close", m);
    assert.equal(ctl.state().admission, "open");
    const take = await other.request({ op: "takeover", generation: g + 1 });
    assert.equal(take.outcome, "admitted");
    const stop = await other.request({ op: "interrupt", generation: g + 2 });
    assert.equal(stop.outcome, "admitted", JSON.stringify(stop));
    assert.equal(ctl.state().controllerConnection, otherWelcome.connection);
    // Resumed, the slow client reads what was left in flight, then finds the socket closed.
    slow.socket.resume();
    await slow.closed;
  });

  it("claims, launches, binds and listens in a 0700 dir with a 0600 socket when started", async (t) => {
    const { ctl, f } = await startController(t);
    assert.equal(statSync(f.socketDir).mode & 0o777, 0o700);
    assert.equal(statSync(ctl.socketPath).mode & 0o777, 0o600);
    assert.equal(ctl.claim?.state, "held");
    const state = ctl.state();
    assert.equal(state.admission, "open");
    assert.equal(state.binding, "bound");
    const { welcome } = await TestClient.welcomed(t, ctl.socketPath);
    assert.equal(welcome.role, "observer");
    assert.equal(welcome.conversation, ctl.conversation);
  });

  it("refuses to start on a socket dir with looser permissions", async (t) => {
    const f = makeFixture(t);
    mkdirSync(f.socketDir);
    chmodSync(f.socketDir, 0o750);
    const ctl = new Controller(controllerOptions(f));
    t.after(() => ctl.stop());
    await assert.rejects(ctl.start(), (e) => isControlRefusal(e) && e.code === "configuration");
  });

  it("refuses to start on a socket dir owned by another uid", async (t) => {
    const f = makeFixture(t);
    mkdirSync(f.socketDir, { mode: 0o700 });
    const { chownSync } = await import("node:fs");
    chownSync(f.socketDir, 65534, 65534);
    const ctl = new Controller(controllerOptions(f));
    t.after(() => ctl.stop());
    await assert.rejects(ctl.start(), (e) => isControlRefusal(e) && e.code === "configuration");
  });

  it("accepts the engine's known startup append, records it, and opens admission (K8)", async (t) => {
    const { ctl } = await startController(t, { session: appendingSession });
    const binding = ctl.execution?.binding;
    assert.equal(binding?.state, "bound");
    assert.deepEqual(
      binding?.startupAppend?.entries.map((e) => e.type),
      ["thinking_level_change"],
    );
    assert.equal(ctl.state().admission, "open");
  });

  it("keeps admission closed and refuses preflight when another writer moved the leaf (K8)", async (t) => {
    const f = makeFixture(t);
    const ctl = new Controller(controllerOptions(f));
    t.after(() => ctl.stop());
    // Written after construction, before the launch: not the engine's, so K8 fails.
    const foreign = {
      type: "message",
      id: "ffff0001",
      parentId: "aaaa0003",
      timestamp: new Date().toISOString(),
      message: { role: "user", content: "someone else", timestamp: Date.now() },
    };
    appendFileSync(f.sessionFile, `${JSON.stringify(foreign)}\n`);
    await ctl.start();
    assert.equal(ctl.state().admission, "never");
    assert.equal(ctl.state().binding, "uncertain");
    assert.equal(ctl.claim?.state, "held");
    assert.match(ctl.execution?.load?.reason ?? "", /is not Pi's known startup entry/);
    const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath);
    const generation = (welcome.state as { generation: number }).generation;
    const take = await c.request({ op: "takeover", generation });
    assert.equal(take.outcome, "admitted");
    const r = await c.request({
      op: "prompt",
      generation: generation + 1,
      text: "hi",
      draft: { id: "d1", revision: 1 },
    });
    assert.equal(r.outcome, "refused:preflight");
    assert.match(String(r.message), /The engine did not load this session as expected/);
  });

  it("ends the claim stopped-proven on stop when the launcher proves it", async (t) => {
    const f = makeFixture(t);
    const ctl = new Controller(controllerOptions(f));
    await ctl.start();
    await ctl.stop();
    assert.equal(ctl.claim?.state, "stopped-proven");
    const stop = ctl.records.findLast((r) => r.kind === "stop");
    assert.equal(stop?.kind === "stop" && stop.result, "stopped");
  });

  it("marks the claim uncertain on stop with the process-group launcher", async (t) => {
    const f = makeFixture(t);
    const { PgroupLauncher } = await import("../../src/control/cohort/launcher.ts");
    const ctl = new Controller(
      controllerOptions(f, {
        launcher: new PgroupLauncher({ termGraceMs: 1000, killGraceMs: 1000 }),
      }),
    );
    await ctl.start();
    await ctl.stop();
    assert.equal(ctl.claim?.state, "uncertain");
  });

  it("stops once when stop is called twice, the second call waiting for the first", async (t) => {
    const f = makeFixture(t);
    const ctl = new Controller(controllerOptions(f));
    await ctl.start();
    const [a, b] = [ctl.stop(), ctl.stop()];
    assert.equal(a, b);
    await a;
    await ctl.stop();
    assert.equal(ctl.claim?.state, "stopped-proven");
    assert.equal(ctl.records.filter((r) => r.kind === "stop").length, 1);
  });

  it("refuses configuration before claiming anything when another controller listens on its socket", async (t) => {
    const { ctl: first, f } = await startController(t);
    const g = makeFixture(t);
    const second = new Controller(controllerOptions({ ...g, socketDir: f.socketDir }));
    await assert.rejects(
      second.start(),
      (e: unknown) => isControlRefusal(e) && e.code === "configuration",
    );
    assert.equal(second.claim, null, "nothing was claimed");
    // The first controller still answers on its socket.
    const { welcome } = await TestClient.welcomed(t, first.socketPath, "g-ro");
    assert.equal(welcome.type, "welcome");
  });
});
