// Crash recovery that ends (issue 18 item 4; docs/claim.md, Recovery after a crash). A
// Controller under the cgroup launcher runs in a child (ctrl-child.ts) and is SIGKILLed at many
// points of a turn and of a stop. Its shim then kills the engine's cgroup. The next Controller
// on the session proves the dead execution's stop from what the launcher left (the launch
// record's scope, the same boot, the `engine` cgroup gone or frozen-empty), records the proof
// with recordProvenStop, takes the claim, and a client takes over and prompts. Then the
// refusals: a still-populated cgroup (doing what the message says lifts it), the process-group
// launcher, a dead holder with no launch record, and a launch record of another boot; and a
// holder of an earlier boot, proven by the reboot.
//
// The engine is fake-pi under a keeper (a sh pipeline that holds its stdin open), so it would
// outlive its controller if nothing killed it: the cgroup kill is what ends it. Without a
// writable cgroup v2 it skips and prints why, unless CI is set.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type ClaimRevision, ClaimStore } from "../../src/control/claim/claim.ts";
import { readLaunchRecord, writeLaunchRecord } from "../../src/control/claim/launch-record.ts";
import { readEvents, removeTree, writeControl } from "../../src/control/cohort/cgroup.ts";
import { CgroupLauncher } from "../../src/control/cohort/cohort.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { digestOf } from "../../src/control/controller/records.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { DEADLINE_MS, SLOW_TEST_MS, until, within } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { isAlive } from "../helpers/processes.ts";
import { MODEL, SESSION_ID, settledSession, writeAgentFiles } from "../helpers/real-pi.ts";
import { assertValid } from "../helpers/schema.ts";
import {
  controllerOptions,
  type Fixture,
  GRANTS,
  type Msg,
  makeFixture,
  stableSession,
  TestClient,
  validateRecords,
} from "./controller-fixture.ts";
import type { CtrlChildArgs } from "./ctrl-child.ts";
import { type CtrlChild as Child, startCtrlChild } from "./ctrl-child-process.ts";
import type { HoldPoint } from "./fake-pi.ts";
import { FAKE_PI, FAKE_SESSION_ID, holdPoint } from "./fake-pi-harness.ts";

const KEEPER = '{ /bin/cat; exec /bin/sleep 60; } | exec "$@"';
const T = { timeout: SLOW_TEST_MS };

const probe = await CgroupLauncher.probe({ termGraceMs: 1000, killTimeoutMs: 3000 });
const skip = probe.ok || process.env.CI ? false : `no writable cgroup v2 here: ${probe.reason}`;
if (skip) console.log(`# crash recovery tests skip: ${skip}`);

/** One fixture, its children and controllers, and every scope and pid they made. */
class Scene {
  readonly f: Fixture;
  readonly pids = new Set<number>();
  readonly scopes = new Set<string>();
  /** Pids seen in a crashed child's engine cgroup. */
  readonly deadEngine: number[] = [];
  readonly #children: Child[] = [];
  readonly #controllers: Controller[] = [];

  readonly sessionKey: string;
  /** For the real Pi: its agent dir, given to the child and the next controllers. */
  readonly real: { agentDir: string } | null;

  constructor(
    t: TestContext,
    options: {
      session?: Parameters<typeof makeFixture>[1];
      sessionKey?: string;
      realPi?: { baseUrl: string };
    } = {},
  ) {
    this.f = makeFixture(t, options.session);
    this.sessionKey = options.sessionKey ?? FAKE_SESSION_ID;
    if (options.realPi) {
      const agentDir = join(this.f.root, "agent");
      writeAgentFiles(agentDir, options.realPi.baseUrl);
      this.real = { agentDir };
    } else {
      this.real = null;
    }
    mkdirSync(join(this.f.root, "tmp"));
    // Registered after makeFixture's removal, so it runs after it: remove the tree again.
    t.after(async () => {
      await this.cleanup();
      rmSync(this.f.root, { recursive: true, force: true });
    });
  }

  get keys() {
    return {
      seatKey: { projectRoot: this.f.projectRoot, seat: "main" },
      sessionKey: this.sessionKey,
    };
  }

  get store(): ClaimStore {
    return new ClaimStore({ root: this.f.claimRoot });
  }

  async startChild(
    launcher: CtrlChildArgs["launcher"],
    holds: HoldPoint[] = [],
    keeper = true,
  ): Promise<Child> {
    const script = join(this.f.root, "child-script.json");
    writeFileSync(script, JSON.stringify({ holdDir: this.f.holdDir, holds }));
    const args: CtrlChildArgs = {
      fixtureRoot: this.f.fixtureRoot,
      claimRoot: this.f.claimRoot,
      socketDir: this.f.socketDir,
      sessionFile: this.f.sessionFile,
      seat: "main",
      grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
      engine: this.real
        ? { extraArgs: ["--model", MODEL] }
        : {
            ...(keeper
              ? {
                  command: "/bin/sh",
                  preArgs: ["-c", KEEPER, "keeper", process.execPath, FAKE_PI],
                }
              : { command: process.execPath, preArgs: [FAKE_PI] }),
            extraArgs: ["--model", "fake/echo"],
            env: { FAKE_PI_SCRIPT: script },
          },
      launcher,
      ...(this.real ? { agentDir: this.real.agentDir } : {}),
    };
    const child = await startCtrlChild(args, {
      tmpDir: join(this.f.root, "tmp"),
      waitMs: 20_000,
      spawned: (pid) => this.pids.add(pid),
    });
    this.#children.push(child);
    const first = child.ready;
    this.pids.add(first.enginePid);
    if (first.shimPid) this.pids.add(first.shimPid);
    if (first.scope) this.scopes.add(first.scope);
    return child;
  }

  /** The pids in a scope's engine cgroup now (recorded, so the end can check they are gone). */
  engineMembers(scope: string): number[] {
    let text = "";
    try {
      text = readFileSync(join(scope, "engine", "cgroup.procs"), "utf8");
    } catch {
      return [];
    }
    const pids = text.split("\n").filter(Boolean).map(Number);
    for (const p of pids) this.pids.add(p);
    return pids;
  }

  async kill(child: Child): Promise<void> {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill("SIGKILL");
    await within(child.exited, `ctrl-child ${child.proc.pid} exit`);
  }

  controller(
    launcher = probe.ok ? probe.launcher : undefined,
    sessionFile = this.f.sessionFile,
  ): Controller {
    const { engine: fakeEngine, ...rest } = controllerOptions(this.f, launcher ? { launcher } : {});
    const ctl = new Controller({
      ...rest,
      ...(this.real
        ? { engine: { extraArgs: ["--model", MODEL] }, agentDir: this.real.agentDir }
        : fakeEngine
          ? { engine: fakeEngine }
          : {}),
      sessionFile,
      launcherReason: "test: CgroupLauncher.probe() succeeded",
    });
    this.#controllers.push(ctl);
    return ctl;
  }

  async cleanup(): Promise<void> {
    for (const c of this.#children) await this.kill(c).catch(() => undefined);
    for (const ctl of this.#controllers) {
      const scope = ctl.execution?.binding?.scope;
      if (scope) this.scopes.add(scope);
      await ctl.stop().catch(() => undefined);
    }
    // A scope a failed test left: kill what is in it and remove it, so no cgroup stays behind.
    for (const scope of this.scopes) {
      if (!existsSync(scope)) continue;
      await writeControl(join(scope, "engine"), "cgroup.kill", "1");
      await until(() => this.engineMembers(scope).length === 0, `${scope} empty`).catch(() => {});
      await writeControl(join(scope, "supervisor"), "cgroup.kill", "1");
      await sleep(100);
      await removeTree(scope);
    }
    await until(() => [...this.pids].every((p) => !isAlive(p)), "every recorded pid gone");
  }
}

function revisions(claimRoot: string, key: "session" | "seat"): ClaimRevision[] {
  const base = join(claimRoot, key);
  const dir = join(base, readdirSync(base)[0] ?? "");
  return readdirSync(dir)
    .filter((n) => /^r[0-9]{10}\.json$/.test(n))
    .sort()
    .map((n) => {
      const r: unknown = JSON.parse(readFileSync(join(dir, n), "utf8"));
      assertValid("claimRevision", r);
      return r;
    });
}

/** A client takes control, sends a prompt, and sees its receipt settle, on `socketPath`. */
async function takeOverAndPrompt(t: TestContext, ctl: Controller): Promise<void> {
  const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath);
  const gen = (welcome.state as { generation: number }).generation;
  const took = await c.request({ op: "takeover", generation: gen });
  assert.equal(took.outcome, "admitted", JSON.stringify(took));
  const from = c.messages.length;
  const p = await c.request({
    op: "prompt",
    generation: gen + 1,
    text: "after the crash",
    draft: { id: "d-after", revision: 1 },
  });
  assert.equal(p.outcome, "admitted", JSON.stringify(p));
  await c.waitFor(
    (m: Msg) => m.type === "event" && (m.event as Msg).kind === "receipt",
    "the new controller's receipt settling",
    from,
  );
}

/** Starting refuses `unsafe-replacement`, writing no claim revision; returns the message. */
async function refusedStart(scene: Scene, ctl: Controller): Promise<string> {
  const before = await scene.store.inspect(scene.keys);
  let message = "";
  await assert.rejects(ctl.start(), (e: unknown) => {
    assert.ok(isControlRefusal(e), `a ControlRefusal, not ${String(e)}`);
    assert.equal(e.code, "unsafe-replacement", e.message);
    message = e.message;
    return true;
  });
  assert.equal(ctl.execution, null, "no engine was launched");
  const after = await scene.store.inspect(scene.keys);
  assert.equal(after.session?.revision, before.session?.revision, "nothing written (session)");
  assert.equal(after.seat?.revision, before.seat?.revision, "nothing written (seat)");
  return message;
}

/**
 * After the crash: the next controller proves the stop, records it for the dead holder, and
 * takes over. `live` says whether the dead holder's claim was still open at the kill (a stop
 * may have ended it `stopped-proven` first; then there is nothing to prove).
 */
async function recoverAndTakeOver(t: TestContext, scene: Scene, child: Child): Promise<void> {
  const { ready } = child;
  const dead = await scene.store.inspect(scene.keys);
  const live = dead.verdict !== "free";
  if (live) assert.equal(dead.verdict, "unsafe-replacement", dead.why);
  const next = scene.controller();
  await within(next.start(), "the next controller's start", DEADLINE_MS);
  const st = next.state();
  assert.notEqual(st.execution, ready.execution);
  assert.equal(st.binding, "bound");
  assert.equal(st.admission, "open");
  // The engine's cgroup is proven empty by now; the scope's folder goes with its last member,
  // the dead controller's shim, which may still be leaving it (seen at load 37).
  const scope = ready.scope;
  assert.ok(scope, "the dead execution had a scope");
  await until(() => !existsSync(scope), "the dead execution's scope removed", DEADLINE_MS);
  // Every process seen in the dead execution's engine cgroup has ended (init reaps them).
  await until(
    () => scene.deadEngine.every((pid) => !isAlive(pid)),
    "the dead execution's engine processes gone",
  );
  if (live) {
    const r = next.recovered;
    assert.ok(r, "the next controller proved the stop");
    assert.equal(r.proof.kind, "cohort-proof");
    assertValid("cohortProof", r.proof);
    if (r.proof.kind !== "cohort-proof") return;
    assert.equal(r.proof.holder.execution, ready.execution);
    assert.equal(r.proof.holder.pid, ready.pid);
    assert.equal(r.proof.scope, ready.scope);
    assert.equal(r.proofDigest, digestOf(r.proof));
    const kept: unknown = JSON.parse(
      readFileSync(join(scene.f.claimRoot, "proofs", `${r.proofDigest}.json`), "utf8"),
    );
    assert.deepEqual(kept, r.proof, "the proof is kept beside the claim");
    for (const key of ["session", "seat"] as const) {
      const all = revisions(scene.f.claimRoot, key);
      const proven = all.find((x) => x.state === "stopped-proven" && x.reason === "cohort-proof");
      assert.ok(proven, `a cohort-proof revision on ${key}`);
      assert.equal(proven.proof, r.proofDigest);
      assert.equal(proven.holder.execution, ready.execution, "for the dead holder");
      assert.equal(proven.writer.pid, process.pid, "written by the next controller");
      assert.equal(proven.writer.execution, st.execution);
      assert.equal(all.at(-1)?.state, "held");
      assert.equal(all.at(-1)?.holder.execution, st.execution);
    }
    assert.equal(
      await readLaunchRecord(scene.f.claimRoot, ready.execution),
      null,
      "the dead execution's launch record is gone once its stop is recorded",
    );
  } else {
    assert.equal(next.recovered, null, "nothing to prove: the stop had ended the claim");
  }
  await takeOverAndPrompt(t, next);
  await next.stop();
  validateRecords(next);
  assert.equal(next.claim?.state, "stopped-proven");
  assert.equal((await scene.store.inspect(scene.keys)).verdict, "free");
}

type TurnPoint = HoldPoint | "idle" | "prompt-written" | "after-turn";

async function crashInTurn(t: TestContext, point: TurnPoint): Promise<void> {
  const scene = new Scene(t);
  const holds =
    point === "idle" || point === "prompt-written" || point === "after-turn" ? [] : [point];
  const child = await scene.startChild({ kind: "cgroup" }, holds);
  const { ready } = child;
  assert.ok(ready.scope, "the child runs its engine in a cgroup scope");
  assert.ok(scene.engineMembers(ready.scope).includes(ready.enginePid));
  const launch = await readLaunchRecord(scene.f.claimRoot, ready.execution);
  assert.ok(launch, "the child wrote its launch record");
  assertValid("launchRecord", launch);
  assert.equal(launch.scope, ready.scope);
  assert.equal(launch.launcher, "cgroup");

  const { c } = await TestClient.welcomed(t, ready.socketPath);
  assert.equal((await c.request({ op: "takeover", generation: 1 })).outcome, "admitted");
  const prompt = {
    op: "prompt",
    generation: 2,
    text: "hello",
    draft: { id: "d1", revision: 1 },
  };
  if (point === "prompt-written") {
    c.raw(`${JSON.stringify({ type: "request", id: "p1", ...prompt })}\n`);
  } else if (point === "after-turn") {
    const from = c.messages.length;
    assert.equal((await c.request(prompt)).outcome, "admitted");
    await c.waitFor(
      (m) => m.type === "event" && (m.event as Msg).kind === "run-settled",
      "settle",
      from,
    );
  } else if (point !== "idle") {
    const held = holdPoint(scene.f, point);
    assert.equal((await c.request(prompt)).outcome, "admitted");
    await held.reached;
  }
  scene.deadEngine.push(...scene.engineMembers(ready.scope));
  assert.ok(scene.deadEngine.length >= 2, "the keeper and fake-pi run in the engine cgroup");
  await scene.kill(child);
  await recoverAndTakeOver(t, scene, child);
}

async function crashInStop(
  t: TestContext,
  how: { kind: "force-stop"; afterMs: number } | { kind: "interrupt" },
): Promise<void> {
  const scene = new Scene(t);
  const holds: HoldPoint[] =
    how.kind === "interrupt" ? ["assistant-delta", "clear-queue-response"] : ["assistant-delta"];
  const child = await scene.startChild({ kind: "cgroup", termGraceMs: 500 }, holds);
  const { ready } = child;
  assert.ok(ready.scope);
  const { c } = await TestClient.welcomed(t, ready.socketPath);
  assert.equal((await c.request({ op: "takeover", generation: 1 })).outcome, "admitted");
  const held = holdPoint(scene.f, "assistant-delta");
  const p = await c.request({
    op: "prompt",
    generation: 2,
    text: "hello",
    draft: { id: "d1", revision: 1 },
  });
  assert.equal(p.outcome, "admitted");
  await held.reached;
  scene.deadEngine.push(...scene.engineMembers(ready.scope));
  if (how.kind === "interrupt") {
    const clearing = holdPoint(scene.f, "clear-queue-response");
    c.raw(`${JSON.stringify({ type: "request", id: "i1", op: "interrupt", generation: 2 })}\n`);
    await clearing.reached;
  } else {
    const conf = await c.request({ op: "confirm", generation: 2, operation: "force-stop" });
    assert.equal(conf.outcome, "admitted", JSON.stringify(conf));
    const id = (conf.result as { confirmation: { id: string } }).confirmation.id;
    c.raw(
      `${JSON.stringify({ type: "request", id: "fs1", op: "force-stop", generation: 2, confirmation: id })}\n`,
    );
    await child.event((e) => e.event === "force-stop-began", "the force stop");
    if (how.afterMs > 0) await sleep(how.afterMs);
  }
  await scene.kill(child);
  await recoverAndTakeOver(t, scene, child);
}

// Three tests at once: each test's Scene is its own (fixture, claim root, children, scopes),
// and a test mostly waits on its children (17 s of CPU in 80 s alone, one at a time).
describe("crash recovery with the cgroup launcher", { skip, concurrency: 3 }, () => {
  const turnPoints: TurnPoint[] = [
    "idle",
    "prompt-written",
    "run-start",
    "user-message-end",
    "assistant-start",
    "assistant-delta",
    "assistant-end",
    "agent-end",
    "settled",
    "after-turn",
  ];
  for (const point of turnPoints) {
    it(`SIGKILL mid-turn at ${point}: the next controller proves the stop and takes over`, T, (t) =>
      crashInTurn(t, point),
    );
  }
  it("SIGKILL mid-interrupt (clear_queue held): proven and taken over", T, (t) =>
    crashInStop(t, { kind: "interrupt" }),
  );
  for (const afterMs of [0, 60, 250, 700, 1500]) {
    it(
      `SIGKILL ${afterMs} ms into a force stop: proven (or already ended) and taken over`,
      T,
      (t) => crashInStop(t, { kind: "force-stop", afterMs }),
    );
  }

  it(
    "with the real pinned Pi: SIGKILL mid-stream, the next controller proves the stop and takes over",
    T,
    async (t) => {
      // The first reply streams until its client goes away; the next one (after the crash) is text.
      const model = await startFakeModel({
        replies: [{ kind: "slow", tickMs: 15 }],
        fallback: { kind: "text", text: "after the crash" },
      });
      t.after(() => model.close());
      const scene = new Scene(t, {
        session: (cwd) => settledSession(cwd) as Record<string, unknown>[],
        sessionKey: SESSION_ID,
        realPi: { baseUrl: model.baseUrl },
      });
      const child = await scene.startChild({ kind: "cgroup" });
      const { ready } = child;
      assert.ok(ready.scope);
      const { c } = await TestClient.welcomed(t, ready.socketPath);
      assert.equal((await c.request({ op: "takeover", generation: 1 })).outcome, "admitted");
      const from = c.messages.length;
      const p = { op: "prompt", generation: 2, text: "stream", draft: { id: "d1", revision: 1 } };
      assert.equal((await c.request(p)).outcome, "admitted");
      // Mid-stream: a few deltas have arrived and the model is still sending.
      await c.waitFor(
        (m) =>
          m.type === "event" &&
          (m.event as Msg).kind === "text-delta" &&
          String((m.event as Msg).delta).includes("tick 3"),
        "the real Pi streaming",
        from,
      );
      scene.deadEngine.push(...scene.engineMembers(ready.scope));
      assert.ok(scene.deadEngine.includes(ready.enginePid), "pinned Pi runs in the engine cgroup");
      await scene.kill(child);
      await recoverAndTakeOver(t, scene, child);
    },
  );

  it(
    "refuses while the dead execution's engine cgroup is populated, and says how to end it",
    T,
    async (t) => {
      const scene = new Scene(t);
      const child = await scene.startChild({ kind: "cgroup" }, ["assistant-start"]);
      const { ready } = child;
      assert.ok(ready.scope && ready.shimPid);
      const { c } = await TestClient.welcomed(t, ready.socketPath);
      assert.equal((await c.request({ op: "takeover", generation: 1 })).outcome, "admitted");
      const held = holdPoint(scene.f, "assistant-start");
      const p = { op: "prompt", generation: 2, text: "hi", draft: { id: "d1", revision: 1 } };
      assert.equal((await c.request(p)).outcome, "admitted");
      await held.reached;
      // The shim dies first, so nothing kills the engine when the controller dies.
      process.kill(ready.shimPid, "SIGKILL");
      await until(() => !isAlive(ready.shimPid ?? 0), "the shim gone");
      await scene.kill(child);
      const members = scene.engineMembers(ready.scope);
      assert.ok(members.includes(ready.enginePid), "the engine still runs in its cgroup");

      const message = await refusedStart(scene, scene.controller());
      const engine = join(ready.scope, "engine");
      assert.match(message, /still runs in cgroup/);
      assert.ok(message.includes(`echo 1 > ${engine}/cgroup.kill`), message);
      assert.ok(message.includes(String(ready.enginePid)), "the message names the pids");
      const ev = await readEvents(engine);
      assert.ok(ev.status === "observed" && !ev.frozen && ev.populated, "left thawed, as found");
      assert.ok(isAlive(ready.enginePid));

      // Doing what the message says: the next start proves the (now empty) cgroup and takes over.
      writeFileSync(join(engine, "cgroup.kill"), "1");
      await until(() => scene.engineMembers(ready.scope ?? "").length === 0, "the cgroup emptied");
      const next = scene.controller();
      await next.start();
      const r = next.recovered;
      assert.ok(r?.proof.kind === "cohort-proof");
      assert.equal(r.proof.engine.seen, "empty", "frozen, no member, populated 0");
      assert.equal(existsSync(ready.scope), false, "the emptied scope was removed");
      await takeOverAndPrompt(t, next);
    },
  );

  it("refuses after a process-group controller crashed, saying what to do", T, async (t) => {
    const scene = new Scene(t);
    const child = await scene.startChild({ kind: "pgroup" }, [], false);
    await scene.kill(child);
    const message = await refusedStart(scene, scene.controller());
    assert.match(message, /process-group launcher, whose stops can't be proven/);
    assert.match(message, /Reboot the machine/);
    assert.ok(message.includes(join(scene.f.claimRoot, "session", FAKE_SESSION_ID)), message);
    assert.match(message, /by hand/);
    await until(() => !isAlive(child.ready.enginePid), "the bare engine ended on EOF");
  });

  it("refuses a dead holder that left no launch record", T, async (t) => {
    const scene = new Scene(t);
    const dead = await deadHolderClaim(scene);
    const message = await refusedStart(scene, scene.controller());
    assert.match(message, /left no launch record/);
    assert.ok(message.includes(dead.execution));
  });

  it(
    "refuses a launch record of another boot than its claim: no boot proof covers it",
    T,
    async (t) => {
      const scene = new Scene(t);
      const dead = await deadHolderClaim(scene);
      const m = await scene.store.machine();
      await writeLaunchRecord(scene.f.claimRoot, {
        version: 2,
        kind: "launch-record",
        execution: dead.execution,
        incarnation: dead.incarnation,
        ...scene.keys,
        host: m.host,
        bootId: "00000000-0000-4000-8000-000000000000",
        launcher: "cgroup",
        scope: probe.ok ? probe.launcher.scopeFor(dead.execution) : "/nonexistent/mosaic-x",
        at: new Date().toISOString(),
      });
      const message = await refusedStart(scene, scene.controller());
      assert.match(message, /another boot's cgroups prove nothing without a boot proof/);
      assert.match(message, /Reboot the machine/);
    },
  );

  it(
    "recovers the seat from a crashed controller of another session in the same seat",
    T,
    async (t) => {
      const scene = new Scene(t);
      const otherId = "01a00000-0000-7000-8000-0000000000f2";
      const other = join(dirname(scene.f.sessionFile), "other.jsonl");
      writeFileSync(
        other,
        stableSession(scene.f.projectRoot, otherId)
          .map((l) => `${JSON.stringify(l)}\n`)
          .join(""),
      );
      const child = await scene.startChild({ kind: "cgroup" }, ["assistant-start"]);
      const { c } = await TestClient.welcomed(t, child.ready.socketPath);
      assert.equal((await c.request({ op: "takeover", generation: 1 })).outcome, "admitted");
      const held = holdPoint(scene.f, "assistant-start");
      const p = { op: "prompt", generation: 2, text: "hi", draft: { id: "d1", revision: 1 } };
      assert.equal((await c.request(p)).outcome, "admitted");
      await held.reached;
      scene.deadEngine.push(...scene.engineMembers(child.ready.scope ?? ""));
      await scene.kill(child);
      // Another session of the same seat: blocked on the seat key by the dead controller.
      const next = scene.controller(undefined, other);
      await next.start();
      const r = next.recovered;
      assert.ok(r?.proof.kind === "cohort-proof", "proved from the dead controller's scope");
      assert.equal(r.proof.holder.execution, child.ready.execution);
      assert.equal(r.proof.claim.sessionKey, FAKE_SESSION_ID, "the dead holder's own session");
      assert.equal(next.claim?.sessionKey, otherId);
      await takeOverAndPrompt(t, next);
    },
  );

  it("proves a holder of an earlier boot stopped by the reboot, and takes over", T, async (t) => {
    const scene = new Scene(t);
    const oldBoot = "00000000-0000-4000-8000-000000000001";
    const playing = new ClaimStore({ root: scene.f.claimRoot, machine: { bootId: oldBoot } });
    const sleeper = spawn("/bin/sleep", ["30"]);
    scene.pids.add(sleeper.pid ?? 0);
    const holder = await playing.holderFor({
      execution: "ex-old-boot",
      incarnation: "in-old-boot",
      pid: sleeper.pid ?? 0,
    });
    await playing.acquire({ ...scene.keys, holder });
    sleeper.kill("SIGKILL");
    const next = scene.controller();
    await next.start();
    assert.equal(next.recovered?.proof.kind, "boot-proof");
    assertValid("bootProof", next.recovered?.proof);
    const proven = revisions(scene.f.claimRoot, "session").find((r) => r.reason === "boot-proof");
    assert.equal(proven?.proof, next.recovered?.proofDigest);
    await takeOverAndPrompt(t, next);
  });
});

/** A claim held by a process of this boot that then died, with no launch record. */
async function deadHolderClaim(scene: Scene): Promise<{ execution: string; incarnation: string }> {
  const sleeper = spawn("/bin/sleep", ["30"]);
  const pid = sleeper.pid ?? 0;
  scene.pids.add(pid);
  const execution = "ex-dead-holder";
  const incarnation = "in-dead-holder";
  const store = scene.store;
  const holder = await store.holderFor({ execution, incarnation, pid });
  await store.acquire({ ...scene.keys, holder });
  const exited = new Promise((ok) => sleeper.once("exit", ok));
  sleeper.kill("SIGKILL");
  await within(exited, "the holder's exit");
  assert.equal((await store.inspect(scene.keys)).verdict, "unsafe-replacement");
  return { execution, incarnation };
}
