import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  FakeLauncher,
  type Launched,
  type Launcher,
  type Observation,
  PgroupLauncher,
  type StopOutcome,
} from "../../src/control/cohort/launcher.ts";
import type { EngineSpec } from "../../src/control/engine/engine.ts";
import { ID_PATTERN } from "../../src/protocol/chat-01.ts";
import { isAlive, killQuietly, statOf, waitForPidFile, waitGone } from "../helpers/processes.ts";
import { fakeHeader, fakePiSpec, makeFakeProject } from "./fake-pi-harness.ts";

const TINY = join(import.meta.dirname, "tiny-engine.ts");
const PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "launcher-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function tinySpec(dir: string): EngineSpec {
  return { command: process.execPath, args: [TINY], env: { PATH, HOME: dir }, cwd: dir };
}

/**
 * The tiny engine behind a shell that first starts two grandchildren and writes their pids:
 * `stayed` ignores SIGTERM and stays in the engine's process group; `escaped` calls setsid and
 * leaves it. Each writes its own pid ($$ survives exec), renamed into place whole.
 */
function familySpec(dir: string): EngineSpec {
  const child = (name: string, pre: string) =>
    `sh -c '${pre} echo $$ > ${dir}/${name}.tmp && mv ${dir}/${name}.tmp ${dir}/${name}.pid && exec sleep 60' </dev/null >/dev/null 2>&1 &`;
  const script = [
    child("stayed", `trap "" TERM;`),
    `setsid ${child("escaped", "")}`,
    `exec "${process.execPath}" "${TINY}"`,
  ].join("\n");
  return { command: "/bin/sh", args: ["-c", script], env: { PATH, HOME: dir }, cwd: dir };
}

/** Launches and registers cleanup: the engine's link closed, the group killed. */
async function launch(
  t: TestContext,
  launcher: Launcher,
  spec: EngineSpec,
  options: { executionId?: string } = {},
): Promise<Launched> {
  const launched = await launcher.launch(spec, options);
  t.after(async () => {
    await launched.link.close({ eofGraceMs: 500, termGraceMs: 500 });
    launched.link.kill("SIGKILL", "group");
  });
  return launched;
}

function find<K extends Observation["kind"]>(
  outcome: StopOutcome,
  kind: K,
  pred: (o: Extract<Observation, { kind: K }>) => boolean = () => true,
): Extract<Observation, { kind: K }>[] {
  return outcome.observations.filter(
    (o): o is Extract<Observation, { kind: K }> =>
      o.kind === kind && pred(o as Extract<Observation, { kind: K }>),
  );
}

function deliveries(outcome: StopOutcome, signal: "SIGTERM" | "SIGKILL"): string[] {
  return find(outcome, "signal", (o) => o.signal === signal).map((o) =>
    o.delivery === "failed" ? o.errno : o.delivery,
  );
}

describe("launcher", () => {
  it("PgroupLauncher kills the engine and a grandchild in its group, misses one that left with setsid, and says uncertain", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, new PgroupLauncher(), familySpec(dir));
    const pgid = launched.link.pid;
    assert.ok(pgid !== undefined);
    const stayed = await waitForPidFile(dir, "stayed");
    const escaped = await waitForPidFile(dir, "escaped");
    t.after(() => {
      killQuietly(stayed);
      killQuietly(escaped);
    });
    await launched.link.ready();
    assert.equal(statOf(stayed)?.pgrp, pgid, "stayed is in the engine's group");
    assert.deepEqual(
      { pgrp: statOf(escaped)?.pgrp, session: statOf(escaped)?.session },
      { pgrp: escaped, session: escaped },
      "escaped leads its own session and group",
    );

    const outcome = await launched.forceStop();

    assert.equal(outcome.result, "uncertain");
    assert.equal(outcome.proof, null);
    assert.deepEqual(deliveries(outcome, "SIGTERM"), ["sent"]);
    assert.deepEqual(
      deliveries(outcome, "SIGKILL"),
      ["sent"],
      "stayed ignored TERM: KILL found it",
    );
    const exits = find(outcome, "engine-exit");
    assert.equal(exits.length, 1);
    assert.ok(exits[0]?.status === "observed" && exits[0].phase === "term");
    assert.equal(exits[0].exitCode, 143, "the tiny engine exits 143 on SIGTERM");
    const scans = find(outcome, "members");
    assert.deepEqual(
      scans.map((s) => s.phase),
      ["term", "kill", "kill"],
    );
    assert.ok(scans.every((s) => s.status === "observed"));
    const [before, atKill, after] = scans.map((s) => (s.status === "observed" ? s.pids : null));
    assert.ok(before?.includes(pgid) && before.includes(stayed) && !before.includes(escaped));
    assert.deepEqual(atKill, [stayed], "after TERM only the TERM-ignoring grandchild is left");
    assert.deepEqual(after, [], "nothing left in the group after KILL");
    assert.deepEqual([...outcome.members].sort(), [pgid, stayed].sort());
    assert.ok(!outcome.members.includes(escaped), "the escaped process was never seen");

    assert.equal(isAlive(stayed), false, "the in-group grandchild is dead");
    assert.equal(isAlive(escaped), true, "the setsid grandchild survived the group kill");
    process.kill(escaped, "SIGKILL");
    await waitGone(escaped);
  });

  it("PgroupLauncher says uncertain with no proof even when fake-pi exited on SIGTERM, and again on a retry", async (t) => {
    const project = makeFakeProject();
    t.after(() => rmSync(project.root, { recursive: true, force: true }));
    writeFileSync(project.sessionFile, `${JSON.stringify(fakeHeader(project.projectRoot))}\n`);
    const launched = await launch(t, new PgroupLauncher(), fakePiSpec(project));
    const state = await launched.link.ready();
    assert.equal(state.success, true, JSON.stringify(state));

    const first = await launched.forceStop();
    assert.equal(first.result, "uncertain");
    assert.equal(first.proof, null);
    const exit = find(first, "engine-exit")[0];
    assert.ok(exit?.status === "observed");
    assert.deepEqual([exit.exitCode, exit.signal], [143, null]);
    assert.deepEqual(deliveries(first, "SIGTERM"), ["sent"]);
    assert.deepEqual(deliveries(first, "SIGKILL"), ["skipped"], "exited, and the group empty");
    assert.deepEqual(first.members, [launched.link.pid]);

    const retry = await launched.forceStop();
    assert.equal(retry.result, "uncertain");
    assert.equal(retry.proof, null);
    assert.deepEqual(deliveries(retry, "SIGTERM"), ["skipped"]);
    assert.deepEqual(deliveries(retry, "SIGKILL"), ["skipped"]);
  });

  it("PgroupLauncher records an unreadable member list as absent, never as empty", async (t) => {
    const dir = tempDir(t);
    const launcher = new PgroupLauncher({ procRoot: join(dir, "no-proc") });
    const launched = await launch(t, launcher, tinySpec(dir));
    await launched.link.ready();
    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "uncertain");
    const scans = find(outcome, "members");
    assert.equal(scans.length, 3);
    for (const s of scans) {
      assert.equal(s.status, "absent");
      assert.ok(s.status === "absent" && s.reason.includes("ENOENT"), s.status);
      assert.ok(!("pids" in s));
    }
    assert.deepEqual(outcome.members, [launched.link.pid], "only the pid it spawned");
    assert.deepEqual(deliveries(outcome, "SIGTERM"), ["sent"]);
    assert.deepEqual(
      deliveries(outcome, "SIGKILL"),
      ["ESRCH"],
      "an absent scan can't show the group empty, so KILL is sent and its errno recorded",
    );
  });

  it("shares one force stop between concurrent calls", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, new PgroupLauncher(), tinySpec(dir));
    await launched.link.ready();
    const a = launched.forceStop();
    const b = launched.forceStop();
    assert.equal(a, b);
    assert.equal((await a).result, "uncertain");
    const c = launched.forceStop();
    assert.notEqual(c, a, "a call after it settled is a new stop");
    assert.equal((await c).result, "uncertain");
  });

  it("records a spawn failure as the exit, with no group and no members", async (t) => {
    const dir = tempDir(t);
    const spec = { ...tinySpec(dir), command: join(dir, "missing-engine") };
    const launched = await launch(t, new PgroupLauncher(), spec);
    assert.equal(launched.link.pid, undefined);
    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "uncertain");
    assert.deepEqual(outcome.members, []);
    assert.equal(find(outcome, "signal").length, 0);
    const exit = find(outcome, "engine-exit")[0];
    assert.ok(exit?.status === "observed" && exit.spawnError?.includes("ENOENT"));
  });

  it("gives each launch an execution id, and refuses a bad one before spawning", async (t) => {
    const dir = tempDir(t);
    const launcher = new PgroupLauncher();
    const a = await launch(t, launcher, tinySpec(dir));
    assert.equal(a.launcher, "pgroup");
    assert.match(a.executionId, ID_PATTERN);
    const b = await launch(t, launcher, tinySpec(dir), { executionId: "exec-2" });
    assert.equal(b.executionId, "exec-2");
    assert.notEqual(a.executionId, (await launch(t, launcher, tinySpec(dir))).executionId);
    await assert.rejects(launcher.launch(tinySpec(dir), { executionId: "-bad" }), TypeError);
  });

  describe("FakeLauncher (fixture-only)", () => {
    it("reports a scripted stopped with a synthetic proof, after really ending the engine", async (t) => {
      const dir = tempDir(t);
      const launcher = new FakeLauncher({ stops: [{ result: "stopped" }] });
      const launched = await launch(t, launcher, tinySpec(dir));
      assert.equal(launched.launcher, "fake");
      await launched.link.ready();
      const outcome = await launched.forceStop();
      assert.equal(outcome.result, "stopped");
      assert.ok(outcome.proof);
      assert.equal(outcome.proof.method, "synthetic");
      assert.deepEqual(outcome.proof.enumerated.pids, [launched.link.pid]);
      assert.equal(outcome.proof.emptied.empty, true);
      assert.ok(outcome.observations.includes(outcome.proof.enumerated));
      assert.ok(outcome.observations.includes(outcome.proof.emptied));
      assert.ok(launched.link.exit, "the engine really exited");
      assert.equal(launcher.stopCalls, 1);
    });

    it("uses scripts in order, then the default (uncertain unless given)", async (t) => {
      const dir = tempDir(t);
      const launcher = new FakeLauncher();
      launcher.scriptStops({ result: "stopped", signal: false });
      const launched = await launch(t, launcher, tinySpec(dir));
      await launched.link.ready();
      const first = await launched.forceStop();
      assert.equal(first.result, "stopped");
      assert.equal(launched.link.exit, null, "signal: false leaves the engine running");
      await launched.link.ready();
      const second = await launched.forceStop();
      assert.deepEqual([second.result, second.proof], ["uncertain", null]);
      assert.ok(launched.link.exit);
      assert.equal(launcher.stopCalls, 2);
    });

    it("holds a stop in progress until the test releases it", async (t) => {
      const dir = tempDir(t);
      let release!: () => void;
      const hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      const launcher = new FakeLauncher({ defaultStop: { result: "uncertain", hold } });
      const launched = await launch(t, launcher, tinySpec(dir));
      await launched.link.ready();
      let settled = false;
      const stop = launched.forceStop().then((o) => {
        settled = true;
        return o;
      });
      await launched.link.exited;
      assert.equal(settled, false, "the engine is gone but the stop is held");
      const again = launched.forceStop();
      assert.equal(again, launched.forceStop(), "calls join the held stop");
      release();
      assert.equal((await stop).result, "uncertain");
      assert.equal(await again, await stop);
      assert.equal(launcher.stopCalls, 1);
    });
  });
});
