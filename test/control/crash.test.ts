// Crash tests (issue 6 item 11; seed: Choices, Recovery; H20, H21). A Controller runs in a child
// process (ctrl-child.ts) and is killed with SIGKILL mid-turn and mid-stop. What is left: an
// engine with no controller (H20: nothing serves its socket any more), a claim whose latest
// revision names a dead holder, and a next Controller that refuses `unsafe-replacement` (the
// crash barrier) until a recovery records a proven stop through the ClaimStore. The controller
// started after that has a new execution and incarnation, and refuses the old incarnation
// `stale-incarnation` (H21).
//
// Pinned Pi, and fake-pi like it, exit when stdin ends (rpc-mode.js 641-644), so a bare fake-pi
// dies with its controller's pipe. The orphan tests launch fake-pi under a keeper, a sh pipeline
// that forwards the controller's stdin and then holds the engine's stdin open for up to 60 s:
// an engine that outlives its controller, as a wedged engine or its tool processes can. The
// third test runs the bare fake-pi and shows the barrier holds even though that engine ended.
//
// Every child and every member of an engine's process group is killed and awaited with a
// deadline; the test then checks /proc for every pid it recorded. Orphans are reparented to
// pid 1, which reaps them in its own time, so a zombie counts as gone. Temp dirs are removed.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { type ClaimState, ClaimStore } from "../../src/control/claim/claim.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { SLOW_TEST_MS, until, within } from "../helpers/deadline.ts";
import { assertValid } from "../helpers/schema.ts";
import {
  controllerOptions,
  type Fixture,
  GRANTS,
  type Msg,
  stableSession,
  TestClient,
  validateRecords,
} from "./controller-fixture.ts";
import type { CtrlChildArgs } from "./ctrl-child.ts";
import { type CtrlChild as Child, type Exit, startCtrlChild } from "./ctrl-child-process.ts";
import { FAKE_PI, FAKE_SESSION_ID, holdPoint } from "./fake-pi-harness.ts";

/** `sh -c KEEPER keeper <engine argv...>`: forwards stdin, then holds it open for 60 s. */
const KEEPER = '{ /bin/cat; exec /bin/sleep 60; } | exec "$@"';

// --- /proc ------------------------------------------------------------------------------------

type ProcStat = { state: string; ppid: number; pgrp: number };

/** proc(5) stat: field 3 the state, 4 the parent, 5 the process group; null when gone. */
function procStat(pid: number): ProcStat | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: f[0] ?? "?", ppid: Number(f[1]), pgrp: Number(f[2]) };
}

/** Alive: in /proc and neither a zombie nor dead. */
function running(pid: number): boolean {
  const s = procStat(pid);
  return s !== null && s.state !== "Z" && s.state !== "X";
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/** The running members of process group `pgid`. */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^[1-9][0-9]*$/.test(name)) continue;
    const pid = Number(name);
    if (procStat(pid)?.pgrp === pgid && running(pid)) out.push(pid);
  }
  return out;
}

/** What connecting to a Unix socket gives: "connected" or the errno. */
function connectOutcome(path: string): Promise<string> {
  return new Promise((resolve) => {
    const s = createConnection(path);
    s.once("connect", () => {
      s.destroy();
      resolve("connected");
    });
    s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? String(e)));
  });
}

// --- the scene: children, engine groups, controllers, one temp dir -----------------------------

class Scene {
  readonly f: Fixture;
  readonly tmp: string;
  /** Every pid this test saw; none may run at the end. */
  readonly pids = new Set<number>();
  readonly #groups = new Set<number>();
  readonly #children: Child[] = [];
  readonly #controllers: Controller[] = [];
  #cleaned = false;

  constructor(t: TestContext) {
    const root = mkdtempSync("/tmp/cr-");
    const fixtureRoot = join(root, "fx");
    const projectRoot = join(fixtureRoot, "proj");
    const sessions = join(projectRoot, ".pi", "state", "main", "sessions");
    mkdirSync(sessions, { recursive: true });
    const sessionFile = join(sessions, "s.jsonl");
    writeFileSync(
      sessionFile,
      stableSession(projectRoot)
        .map((l) => `${JSON.stringify(l)}\n`)
        .join(""),
    );
    this.f = {
      root,
      fixtureRoot,
      projectRoot,
      sessionFile,
      claimRoot: join(root, "claims"),
      socketDir: join(root, "s"),
      holdDir: join(root, "holds"),
    };
    mkdirSync(this.f.holdDir);
    // The child's engine HOME (engineEnv's mkdtemp) lands here, so the crash leaks nothing.
    this.tmp = join(root, "tmp");
    mkdirSync(this.tmp);
    t.after(() => this.cleanup());
  }

  get keys() {
    return {
      seatKey: { projectRoot: this.f.projectRoot, seat: "main" },
      sessionKey: FAKE_SESSION_ID,
    };
  }

  /** The fake-pi harness's view of this fixture, for its hold points. */
  get project() {
    const { root, projectRoot, sessionFile, holdDir } = this.f;
    return { root, projectRoot, sessionFile, holdDir };
  }

  async startChild(args: CtrlChildArgs): Promise<Child> {
    const child = await startCtrlChild(args, {
      tmpDir: this.tmp,
      waitMs: 15_000,
      spawned: (pid) => this.pids.add(pid),
    });
    this.#children.push(child);
    const first = child.ready;
    this.pids.add(first.enginePid);
    this.#groups.add(first.enginePid);
    return child;
  }

  /** SIGKILLs a child and awaits its exit. */
  async kill(child: Child): Promise<Exit> {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill("SIGKILL");
    return within(child.exited, `ctrl-child ${child.proc.pid} exit`);
  }

  /** SIGKILLs every member of a process group and waits until none runs. */
  async killGroup(pgid: number): Promise<void> {
    for (const pid of groupMembers(pgid)) this.pids.add(pid);
    try {
      process.kill(-pgid, "SIGKILL");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
    }
    await until(() => groupMembers(pgid).length === 0, `process group ${pgid} gone`);
  }

  controller(): Controller {
    const ctl = new Controller(controllerOptions(this.f));
    this.#controllers.push(ctl);
    return ctl;
  }

  /** Children, then engine groups, then controllers, then the temp dir. Idempotent. */
  async cleanup(): Promise<void> {
    if (this.#cleaned) return;
    this.#cleaned = true;
    const problems: unknown[] = [];
    const attempt = async (f: () => Promise<unknown>) => {
      try {
        await f();
      } catch (e) {
        problems.push(e);
      }
    };
    for (const c of this.#children) await attempt(() => this.kill(c));
    for (const g of this.#groups) await attempt(() => this.killGroup(g));
    for (const ctl of this.#controllers) await attempt(() => ctl.stop());
    await attempt(() =>
      until(() => [...this.pids].every((p) => !running(p)), "recorded pids gone"),
    );
    rmSync(this.f.root, { recursive: true, force: true });
    if (problems.length > 0) throw new AggregateError(problems, "crash test cleanup");
  }
}

// --- claim helpers -----------------------------------------------------------------------------

/** The states of every revision on one key, oldest first; each validated against the schema. */
function history(claimRoot: string, key: "session" | "seat"): ClaimState[] {
  const base = join(claimRoot, key);
  const dirs = readdirSync(base);
  assert.equal(dirs.length, 1, `one ${key} key`);
  const dir = join(base, dirs[0] ?? "");
  return readdirSync(dir)
    .filter((n) => /^r[0-9]{10}\.json$/.test(n))
    .sort()
    .map((n) => {
      const r: unknown = JSON.parse(readFileSync(join(dir, n), "utf8"));
      assertValid("claimRevision", r);
      return r.state;
    });
}

/** A next Controller on the same session refuses to start; it writes and launches nothing. */
async function refusedStart(scene: Scene, store: ClaimStore, code: string): Promise<void> {
  const before = await store.inspect(scene.keys);
  const ctl = scene.controller();
  await assert.rejects(ctl.start(), (e: unknown) => {
    assert.ok(isControlRefusal(e), `a ControlRefusal, not ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
  assert.equal(ctl.execution, null, "no engine was launched");
  assert.equal(ctl.claim, null, "no claim was taken");
  const after = await store.inspect(scene.keys);
  assert.equal(after.session?.revision, before.session?.revision, "nothing written (session)");
  assert.equal(after.seat?.revision, before.seat?.revision, "nothing written (seat)");
}

// --- the scenario ------------------------------------------------------------------------------

type Scenario = {
  /** turn: a prompt's run held at assistant-start; stop: that, then a force stop held too. */
  phase: "turn" | "stop";
  /** Launch fake-pi under the keeper, so the engine outlives its controller. */
  keeper: boolean;
};

async function crashAndRecover(t: TestContext, { phase, keeper }: Scenario): Promise<void> {
  const scene = new Scene(t);
  const { f } = scene;
  const script = join(f.root, "script.json");
  writeFileSync(script, JSON.stringify({ holdDir: f.holdDir, holds: ["assistant-start"] }));
  const engineArgv = [process.execPath, FAKE_PI];
  const args: CtrlChildArgs = {
    fixtureRoot: f.fixtureRoot,
    claimRoot: f.claimRoot,
    socketDir: f.socketDir,
    sessionFile: f.sessionFile,
    seat: "main",
    grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    engine: {
      ...(keeper
        ? { command: "/bin/sh", preArgs: ["-c", KEEPER, "keeper", ...engineArgv] }
        : { command: process.execPath, preArgs: [FAKE_PI] }),
      extraArgs: ["--model", "fake/echo"],
      env: { FAKE_PI_SCRIPT: script },
    },
    // Mid-stop: the FakeLauncher's force stop sends no signal and holds on a file never made.
    launcher:
      phase === "stop"
        ? {
            kind: "fake",
            stops: [{ result: "stopped", signal: false, holdFile: join(f.root, "never") }],
          }
        : { kind: "pgroup" },
  };
  const child = await scene.startChild(args);
  const { ready } = child;
  const pgid = ready.enginePid;
  assert.equal(ready.pid, child.proc.pid);

  // A client takes control and starts a turn; fake-pi holds it before the assistant message.
  const { c, welcome } = await TestClient.welcomed(t, ready.socketPath);
  const ws = welcome.state as Record<string, unknown>;
  assert.equal(ws.execution, ready.execution);
  assert.equal(ws.incarnation, ready.incarnation);
  assert.equal(ws.admission, "open");
  assert.equal((await c.request({ op: "takeover", generation: 1 })).outcome, "admitted");
  const held = holdPoint(scene.project, "assistant-start");
  const prompt = await c.request({
    op: "prompt",
    generation: 2,
    text: "hello",
    draft: { id: "d1", revision: 1 },
  });
  assert.equal(prompt.outcome, "admitted", JSON.stringify(prompt));
  await held.reached;
  let expected: ClaimState = "held";
  if (phase === "stop") {
    const conf = await c.request({ op: "confirm", generation: 2, operation: "force-stop" });
    assert.equal(conf.outcome, "admitted", JSON.stringify(conf));
    const confirmation = (conf.result as { confirmation: { id: string } }).confirmation.id;
    // Its reply never comes: the launcher holds the stop, and the controller dies first.
    c.raw(
      `${JSON.stringify({ type: "request", id: "fs1", op: "force-stop", generation: 2, confirmation })}\n`,
    );
    await child.event((e) => e.event === "force-stop-began", "the force stop");
    expected = "stopping";
  }
  const store = new ClaimStore({ root: f.claimRoot });
  const live = await store.inspect(scene.keys);
  assert.equal(live.verdict, "already-active", "the controller lives: its claim is active");
  assert.equal(live.session?.state, expected);
  assert.equal(live.seat?.state, expected);

  const members = groupMembers(pgid);
  for (const pid of members) scene.pids.add(pid);
  const fakePi = members.find((p) => cmdline(p).includes("fake-pi.ts"));
  assert.ok(fakePi !== undefined, `fake-pi in group ${pgid}: ${members.map(cmdline).join(" | ")}`);
  const cat = members.find((p) => cmdline(p).startsWith("/bin/cat"));
  if (keeper) assert.ok(cat !== undefined, "the keeper's cat forwards the controller's stdin");

  // --- the crash ---
  const exit = await scene.kill(child);
  assert.deepEqual(exit, { code: null, signal: "SIGKILL" });
  await within(c.closed, "the client's socket closing");

  if (keeper) {
    // The controller's end of the engine's stdin closed (the keeper's cat saw EOF and left)...
    await until(() => cat === undefined || !running(cat), "EOF reaching the keeper");
    // ...and the engine runs on, an orphan in its own process group, its run still held.
    const engine = procStat(pgid);
    assert.ok(engine && running(pgid), `the engine ${pgid} still runs`);
    assert.notEqual(engine.ppid, ready.pid, "reparented: its controller is gone");
    assert.equal(engine.pgrp, pgid, "it leads its own process group");
    assert.ok(running(fakePi), "fake-pi still runs");
    assert.equal(procStat(fakePi)?.pgrp, pgid);
    assert.ok(existsSync(join(f.holdDir, "assistant-start.1.reached")), "the run is in progress");
    assert.ok(!existsSync(join(f.holdDir, "assistant-start.1.release")));
  } else {
    // Without the keeper the engine reads EOF and exits, as pinned Pi does; nobody proved it.
    await until(() => !running(pgid), "the bare engine exiting on EOF");
    assert.deepEqual(groupMembers(pgid), []);
  }

  // The claim's latest revision still names the dead controller.
  const dead = await store.inspect(scene.keys);
  assert.equal(dead.verdict, "unsafe-replacement", dead.why);
  for (const latest of [dead.session, dead.seat]) {
    assert.equal(latest?.state, expected);
    assert.equal(latest?.holder.pid, ready.pid);
    assert.equal(latest?.holder.execution, ready.execution);
    assert.equal(latest?.holder.incarnation, ready.incarnation);
  }
  assert.ok(dead.blocking, "inspect names the dead holder's claim");
  assert.deepEqual(dead.blocking.revisions, {
    session: dead.session?.revision,
    seat: dead.seat?.revision,
  });

  // The crash barrier: a next controller on the session refuses, engine or no engine.
  await refusedStart(scene, store, "unsafe-replacement");

  // H20: the orphan has no controller. Nothing serves the old socket.
  const outcome = await connectOutcome(ready.socketPath);
  assert.ok(["ECONNREFUSED", "ENOENT"].includes(outcome), `connecting gave ${outcome}`);

  // The recovery ends the orphan: its whole process group, by the recorded pid.
  await scene.killGroup(pgid);
  assert.ok(!running(pgid) && !running(fakePi));
  // Killing it records nothing: the barrier stands until a proven stop is written.
  await refusedStart(scene, store, "unsafe-replacement");

  // The recovery proves the stop (the group seen empty) and records it for the dead holder.
  const blocked = await store.inspect(scene.keys);
  assert.ok(blocked.blocking);
  const proof = {
    method: "observed-empty-group",
    pgid,
    members: groupMembers(pgid),
    engineRunning: running(pgid),
    at: new Date().toISOString(),
  };
  assert.deepEqual(proof.members, []);
  const digest = createHash("sha256").update(JSON.stringify(proof)).digest("hex");
  const recovery = await store.holderFor({ execution: "ex-recovery", incarnation: "in-recovery" });
  const proven = await store.recordProvenStop(blocked.blocking, digest, {
    writer: recovery,
    reason: "recovery-proof",
  });
  assert.equal(proven.state, "stopped-proven");
  const freed = await store.inspect(scene.keys);
  assert.equal(freed.verdict, "free", freed.why);
  for (const latest of [freed.session, freed.seat]) {
    assert.equal(latest?.state, "stopped-proven");
    assert.equal(latest?.proof, digest);
    assert.equal(latest?.holder.pid, ready.pid, "the proof is for the dead holder's claim");
    assert.equal(latest?.writer.pid, process.pid, "written by the recovery");
  }

  // A new controller starts: a new execution and a new incarnation (K7).
  const next = scene.controller();
  await next.start();
  const st = next.state();
  assert.notEqual(st.execution, ready.execution);
  assert.notEqual(st.incarnation, ready.incarnation);
  assert.equal(st.binding, "bound");
  assert.equal(st.admission, "open");
  assert.equal(next.claim?.state, "held");
  assert.equal(next.claim?.holder.pid, process.pid);
  assert.equal(next.claim?.holder.incarnation, st.incarnation);

  // H21: a request carrying the old incarnation is refused; the current one is admitted.
  const { c: c2, welcome: w2 } = await TestClient.welcomed(t, next.socketPath);
  const s2 = w2.state as Record<string, unknown>;
  assert.equal(s2.incarnation, st.incarnation);
  const gen = st.generation;
  const refusedAs = (m: Msg, code: string) => {
    assert.equal(m.outcome, `refused:${code}`, JSON.stringify(m));
    assert.equal(m.refusal, code);
  };
  refusedAs(
    await c2.request({ op: "takeover", generation: gen, incarnation: ready.incarnation }),
    "stale-incarnation",
  );
  refusedAs(
    await c2.request({ op: "observe", incarnation: ready.incarnation }),
    "stale-incarnation",
  );
  refusedAs(await c2.request({ op: "observe", target: { execution: ready.execution } }), "target");
  const took = await c2.request({ op: "takeover", generation: gen, incarnation: st.incarnation });
  assert.equal(took.outcome, "admitted", JSON.stringify(took));
  const from = c2.messages.length;
  const again = await c2.request({
    op: "prompt",
    generation: gen + 1,
    incarnation: st.incarnation,
    text: "after the crash",
    draft: { id: "d2", revision: 1 },
  });
  assert.equal(again.outcome, "admitted", JSON.stringify(again));
  await c2.waitFor(
    (m) => m.type === "event" && (m.event as Record<string, unknown>).kind === "receipt",
    "the new controller's receipt settling",
    from,
  );

  // The new controller stops with a proof; the claim is free again.
  await next.stop();
  validateRecords(next);
  assert.equal((await store.inspect(scene.keys)).verdict, "free");
  const crashed: ClaimState[] = phase === "stop" ? ["held", "stopping"] : ["held"];
  const recovered: ClaimState[] = ["stopped-proven", "held", "stopping", "stopped-proven"];
  assert.deepEqual(history(f.claimRoot, "session"), [...crashed, ...recovered]);
  assert.deepEqual(history(f.claimRoot, "seat"), [...crashed, ...recovered]);

  // Nothing left: every recorded pid has stopped running, and the temp dir is gone.
  await scene.cleanup();
  for (const pid of scene.pids) assert.ok(!running(pid), `pid ${pid} (${cmdline(pid)}) still runs`);
  assert.ok(!existsSync(f.root), "the temp dir is removed");
}

test(
  "SIGKILL mid-turn: the engine is an orphan, the claim refuses unsafe-replacement until a proven stop, and the next controller refuses the old incarnation",
  { timeout: SLOW_TEST_MS },
  (t) => crashAndRecover(t, { phase: "turn", keeper: true }),
);

test(
  "SIGKILL mid-stop: the claim stays stopping, the same barrier, recovery and incarnation",
  { timeout: SLOW_TEST_MS },
  (t) => crashAndRecover(t, { phase: "stop", keeper: true }),
);

test(
  "SIGKILL mid-turn with a bare fake-pi: EOF ends the engine, and the barrier still holds",
  { timeout: SLOW_TEST_MS },
  (t) => crashAndRecover(t, { phase: "turn", keeper: false }),
);
