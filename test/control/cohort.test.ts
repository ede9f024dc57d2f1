import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, describe, it, type TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import {
  findCgroup2,
  listMembers,
  readEvents,
  removeTree,
  waitForEvents,
  writeControl,
} from "../../src/control/cohort/cgroup.ts";
import {
  type CgroupLaunched,
  CgroupLauncher,
  type CgroupLauncherOptions,
  CohortError,
  type CohortObservation,
  type CohortStopOutcome,
  chooseLauncher,
} from "../../src/control/cohort/cohort.ts";
import { FixtureVerifier } from "../../src/control/controller/records.ts";
import type { EngineSpec } from "../../src/control/engine/engine.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { isAlive, killQuietly, waitForPidFile, waitGone } from "../helpers/processes.ts";
import { assertValid } from "../helpers/schema.ts";
import { fakeHeader, fakePiSpec, makeFakeProject } from "./fake-pi-harness.ts";

const TINY = join(import.meta.dirname, "tiny-engine.ts");
const COHORT = join(import.meta.dirname, "../../src/control/cohort/cohort.ts");
const PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;
const FAST: Omit<CgroupLauncherOptions, "hierarchy" | "unshare"> = {
  termGraceMs: 1000,
  freezeTimeoutMs: 2000,
  killTimeoutMs: 3000,
};

const probe = await CgroupLauncher.probe(FAST);
const skip = probe.ok || process.env.CI ? false : `no writable cgroup v2 here: ${probe.reason}`;
if (skip) console.log(`# cohort tests skip: ${skip}`);

/** Every cgroup directory a test made or had made; the suite checks all are gone. */
const created = new Set<string>();

function launcherOf(): CgroupLauncher {
  assert.ok(probe.ok, probe.ok ? "" : probe.reason);
  return probe.launcher;
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "cohort-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function tinySpec(dir: string): EngineSpec {
  return { command: process.execPath, args: [TINY], env: { PATH, HOME: dir }, cwd: dir };
}

/**
 * The tiny engine behind a shell that first starts grandchildren, each writing its pid (and
 * its own view of its cgroup) to `<dir>/<name>.pid` / `.cgroup`, renamed into place whole.
 * `pre` runs first in the grandchild's shell; `body` is what it then runs (default `exec sleep
 * 60`); `setsid` makes it leave the engine's session and process group.
 */
function familySpec(
  dir: string,
  children: { name: string; pre?: string; body?: string; setsid?: boolean }[],
): EngineSpec {
  const lines = children.map(({ name, pre = "", body = "exec sleep 60", setsid = false }) => {
    const record = `cat /proc/self/cgroup > ${dir}/${name}.cgroup; echo $$ > ${dir}/${name}.tmp && mv ${dir}/${name}.tmp ${dir}/${name}.pid`;
    return `${setsid ? "setsid " : ""}sh -c '${pre} ${record}; ${body}' </dev/null >/dev/null 2>&1 &`;
  });
  const script = [...lines, `exec "${process.execPath}" "${TINY}"`].join("\n");
  return { command: "/bin/sh", args: ["-c", script], env: { PATH, HOME: dir }, cwd: dir };
}

const STAYED = { name: "stayed", pre: `trap "" TERM;` };
const ESCAPED = { name: "escaped", setsid: true };

/** Kills whatever is left in a scope and removes it, deadline bounded; never trusts the code. */
async function scrubScope(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const leaf of ["engine", "supervisor", ""]) {
    const d = join(dir, leaf);
    if (!existsSync(d)) continue;
    await writeControl(d, "cgroup.kill", "1");
    await waitForEvents(d, { populated: false }, 5000);
  }
  const { failed } = await removeTree(dir);
  assert.deepEqual(failed, [], `cleanup could not remove ${dir}`);
}

async function launch(
  t: TestContext,
  spec: EngineSpec,
  options: { executionId?: string } = {},
): Promise<CgroupLaunched> {
  const launched = await launcherOf().launch(spec, options);
  created.add(launched.scope.dir);
  t.after(async () => {
    killQuietly(launched.scope.shimPid);
    launched.link.kill("SIGKILL", "group");
    await scrubScope(launched.scope.dir);
    launched.shim.close();
  });
  return launched;
}

function cgroupOf(pid: number): string | null {
  try {
    const line = readFileSync(`/proc/${pid}/cgroup`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("0::"));
    return line?.slice(3) ?? null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await delay(10);
  }
}

function logOf<K extends CohortObservation["kind"]>(
  outcome: CohortStopOutcome,
  kind: K,
): Extract<CohortObservation, { kind: K }>[] {
  return outcome.log.filter((o): o is Extract<CohortObservation, { kind: K }> => o.kind === kind);
}

describe("cohort", { skip }, () => {
  after(() => {
    const left = [...created].filter((d) => existsSync(d));
    assert.deepEqual(left, [], "every cgroup the suite made is removed");
  });

  describe("probe", () => {
    it("finds this process's cgroup2 hierarchy from mountinfo and /proc/self/cgroup", async (t) => {
      const found = await findCgroup2();
      assert.ok(found.ok, found.ok ? "" : found.reason);
      const h = found.hierarchy;
      t.diagnostic(
        `cgroup2 at ${h.mountPoint} (${h.options.join(",")}), this cgroup ${h.cgroupPath}`,
      );
      assert.ok(existsSync(join(h.dir, "cgroup.procs")));
      const mine = readFileSync("/proc/self/cgroup", "utf8")
        .split("\n")
        .find((l) => l.startsWith("0::"));
      assert.equal(`0::${h.cgroupPath}`, mine);
    });

    it("reads a synthetic mountinfo: mount root, octal escapes, nsdelegate, and why not", async (t) => {
      const dir = tempDir(t);
      const proc = (mountinfo: string, cgroup: string) => {
        const d = mkdtempSync(join(dir, "p-"));
        writeFileSync(join(d, "mountinfo"), mountinfo);
        writeFileSync(join(d, "cgroup"), cgroup);
        return d;
      };
      const v1 = "36 31 0:33 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
      const v2 = "41 31 0:38 /a /mnt/cg\\0402 rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";
      const ok = await findCgroup2(proc(v1 + v2, "4:memory:/\n0::/a/b/c\n"));
      assert.ok(ok.ok);
      assert.deepEqual(
        { dir: ok.hierarchy.dir, nsdelegate: ok.hierarchy.nsdelegate },
        { dir: "/mnt/cg 2/b/c", nsdelegate: true },
      );
      const none = await findCgroup2(proc(v1, "0::/\n"));
      assert.deepEqual(none, { ok: false, reason: "no cgroup2 mount in mountinfo" });
      const outside = await findCgroup2(proc(v2, "0::/../x\n"));
      assert.ok(!outside.ok && outside.reason.includes("outside the namespace's view"));
      const elsewhere = await findCgroup2(proc(v2, "0::/z\n"));
      assert.ok(!elsewhere.ok && elsewhere.reason.includes("no cgroup2 mount shows"));
      const missing = await findCgroup2(join(dir, "nope"));
      assert.ok(!missing.ok && missing.reason.includes("ENOENT"));
    });

    it("chooses cgroup here and says why; pgroup without cgroup2; reports a user manager", async (t) => {
      const here = await chooseLauncher({ cgroup: FAST });
      t.diagnostic(`chosen: ${here.kind}: ${here.reason}`);
      assert.equal(here.kind, "cgroup");
      assert.match(here.reason, /^scope: .*; cgroup: cgroup2 at /);

      const dir = tempDir(t);
      writeFileSync(join(dir, "mountinfo"), "1 0 0:1 / / rw - ext4 /dev/x rw\n");
      writeFileSync(join(dir, "cgroup"), "0::/\n");
      const systemctl = join(dir, "systemctl");
      writeFileSync(systemctl, "#!/bin/sh\necho 255\n", { mode: 0o755 });
      const fallback = await chooseLauncher({ procSelf: dir, systemctl });
      assert.equal(fallback.kind, "pgroup");
      assert.equal(
        fallback.reason,
        "scope: a systemd user manager answers (version 255) but no cgroup2 mount in mountinfo; cgroup: no cgroup2 mount in mountinfo; pgroup: stops can't be proven",
      );
    });
  });

  it("launch puts the shim in supervisor and the engine, in its own cgroup namespace, in engine", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, familySpec(dir, [STAYED]));
    const { scope } = launched;
    await launched.link.ready();
    const stayed = await waitForPidFile(dir, "stayed");
    t.after(() => killQuietly(stayed));
    const enginePid = launched.link.pid;
    assert.ok(enginePid !== undefined);
    assert.equal(cgroupOf(scope.shimPid), join(dirname(scope.enginePath), "supervisor"));
    assert.equal(cgroupOf(enginePid), scope.enginePath);
    assert.equal(cgroupOf(stayed), scope.enginePath);
    // The shell that wrote stayed.pid may not have exited yet: wait for it to go, then the
    // members are exactly the engine and the grandchild that stayed.
    const expected = [enginePid, stayed].sort((a, b) => a - b);
    let members = await listMembers(scope.engine);
    const deadline = Date.now() + 5000;
    while (JSON.stringify(members) !== JSON.stringify({ status: "observed", pids: expected })) {
      if (Date.now() > deadline) break;
      await delay(20);
      members = await listMembers(scope.engine);
    }
    assert.deepEqual(members, { status: "observed", pids: expected });
    assert.equal(launched.cgroupNamespace, true);
    assert.equal(
      readFileSync(join(dir, "stayed.cgroup"), "utf8")
        .split("\n")
        .find((l) => l.startsWith("0::")),
      "0::/",
      "inside its namespace a member sees `engine` as the root",
    );
    const hello = await launched.shim.request({ type: "hello" }, 5000);
    assert.equal(hello.pid, scope.shimPid);
    assert.equal(hello.engine, scope.engine);
  });

  it("force stop ends stopped, the proof naming the engine, a TERM-ignoring and a setsid grandchild, and leaves nothing", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, familySpec(dir, [STAYED, ESCAPED]));
    const engine = launched.link.pid;
    assert.ok(engine !== undefined);
    const stayed = await waitForPidFile(dir, "stayed");
    const escaped = await waitForPidFile(dir, "escaped");
    t.after(() => {
      killQuietly(stayed);
      killQuietly(escaped);
    });
    await launched.link.ready();
    const stat = readFileSync(`/proc/${escaped}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    assert.equal(Number(fields[3]), escaped, "escaped leads its own session");
    assert.equal(cgroupOf(escaped), launched.scope.enginePath, "but it is still in the cgroup");

    const started = performance.now();
    const outcome = await launched.forceStop();
    t.diagnostic(`force stop took ${Math.round(performance.now() - started)} ms`);

    assert.equal(outcome.result, "stopped", JSON.stringify(outcome.log, null, 1));
    assert.ok(outcome.proof);
    assertValid("stopProof", outcome.proof);
    assert.equal(outcome.proof.method, "cgroup");
    const all = [engine, stayed, escaped].sort((a, b) => a - b);
    assert.deepEqual(outcome.proof.enumerated.pids, all);
    assert.equal(outcome.proof.enumerated.phase, "term", "frozen before any TERM");
    assert.deepEqual(outcome.members, all);
    assert.ok(outcome.observations.includes(outcome.proof.enumerated));
    assert.ok(outcome.observations.includes(outcome.proof.emptied));
    assert.deepEqual(
      logOf(outcome, "member-signal").map((s) => [s.pid, s.delivery]),
      all.map((pid) => [pid, "sent"]),
    );
    const kill = logOf(outcome, "members").filter((o) => o.phase === "kill");
    assert.deepEqual(
      kill.map((o) => (o.status === "observed" ? o.pids : null)),
      [[stayed]],
      "after TERM only the grandchild that ignores it is left for cgroup.kill",
    );
    assert.deepEqual(
      logOf(outcome, "frozen").map((f) => [f.phase, f.status === "observed" && f.frozen]),
      [
        ["term", true],
        ["kill", true],
      ],
    );
    const exit = outcome.observations.find((o) => o.kind === "engine-exit");
    assert.ok(exit?.status === "observed" && exit.exitCode === 143);
    assert.deepEqual(
      logOf(outcome, "survivors").map((s) => s.status === "observed" && s.alive),
      [[]],
    );
    for (const pid of all) assert.equal(isAlive(pid), false, `pid ${pid} is gone`);

    const verdict = new FixtureVerifier({ fixtureRoot: dir }).verifyStop(outcome, { pid: engine });
    assert.equal(verdict.verified, true, JSON.stringify(verdict));

    assert.ok(outcome.removal);
    assert.deepEqual(outcome.removal.failed, []);
    assert.equal(existsSync(launched.scope.dir), false, "the scope is removed");
    assert.equal(isAlive(launched.scope.shimPid), false, "the shim was released");
    assert.equal(launched.shim.closed, true);
  });

  it("runs fake-pi; its proven stop passes the FixtureVerifier and the schema", async (t) => {
    const project = makeFakeProject();
    t.after(() => rmSync(project.root, { recursive: true, force: true }));
    writeFileSync(project.sessionFile, `${JSON.stringify(fakeHeader(project.projectRoot))}\n`);
    const launched = await launch(t, fakePiSpec(project));
    const state = await launched.link.ready();
    assert.equal(state.success, true, JSON.stringify(state));
    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "stopped");
    assertValid("stopProof", outcome.proof);
    assert.deepEqual(outcome.proof?.enumerated.pids, [launched.link.pid]);
    const verdict = new FixtureVerifier({ fixtureRoot: project.root }).verifyStop(outcome, {
      pid: launched.link.pid,
    });
    assert.equal(verdict.verified, true, JSON.stringify(verdict));
    assert.equal(existsSync(launched.scope.dir), false);
  });

  it("the shim survives SIGTERM and still answers", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, tinySpec(dir));
    await launched.link.ready();
    const shim = launched.scope.shimPid;
    process.kill(shim, "SIGTERM");
    process.kill(shim, "SIGTERM");
    const hello = await launched.shim.request({ type: "hello" }, 5000);
    assert.equal(hello.pid, shim);
    assert.equal(isAlive(shim), true);
    const events = await launched.shim.request({ type: "events", until: null, timeoutMs: 0 }, 5000);
    assert.deepEqual(events.events, { status: "observed", populated: true, frozen: false });
    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "stopped");
    const read = outcome.log.filter((o) => "source" in o && o.kind !== "survivors");
    assert.ok(read.every((o) => "source" in o && o.source.startsWith("shim:")));
  });

  it("a removed engine cgroup is an absent observation: uncertain, no proof", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, tinySpec(dir));
    await launched.link.ready();
    await assert.rejects(launched.link.request({ type: "prompt", message: "exit 0" }));
    await launched.link.exited;
    const empty = await waitForEvents(launched.scope.engine, { populated: false }, 5000);
    assert.equal(empty.met, true);
    await rmdir(launched.scope.engine);

    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "uncertain");
    assert.equal(outcome.proof, null);
    assert.equal(outcome.removal, null);
    assert.deepEqual(outcome.members, []);
    const reads = outcome.observations.filter(
      (o) => o.kind === "members" || o.kind === "cohort-empty",
    );
    assert.equal(reads.length, 4);
    for (const o of reads) {
      assert.ok(o.status === "absent" && o.reason.includes("ENOENT"), JSON.stringify(o));
      assert.ok(!("pids" in o) && !("empty" in o), "absent, never empty");
    }
    assert.deepEqual(
      logOf(outcome, "cgroup-write").map((w) => (w.status === "failed" ? w.errno : w.status)),
      ["ENOENT", "ENOENT", "ENOENT", "ENOENT"],
    );
    assert.equal(existsSync(launched.scope.dir), true, "an uncertain stop keeps the scope");
    const again = await launched.forceStop();
    assert.notEqual(again, outcome, "a retry is a new stop");
    assert.equal(again.result, "uncertain");
    const disposed = await launched.dispose();
    assert.deepEqual(disposed.failed, []);
    assert.equal(existsSync(launched.scope.dir), false);
  });

  it("K13: a member writing its pid into another cgroup is refused under nsdelegate; here, without it, the move shows as a survivor and the stop is uncertain", async (t) => {
    const launcher = launcherOf();
    const outside = join(launcher.hierarchy.dir, `mosaic-k13-${process.pid}-${Date.now()}`);
    mkdirSync(outside);
    created.add(outside);
    t.after(() => scrubScope(outside));
    const dir = tempDir(t);
    // On TERM (after the stop's first enumeration saw it) it tries to leave for `outside`.
    const mover = {
      name: "mover",
      pre: `trap "echo $$ > ${outside}/cgroup.procs; echo \\$? > ${dir}/move.rc" TERM;`,
      body: "while :; do sleep 1 & wait; done",
    };
    const launched = await launch(t, familySpec(dir, [mover]));
    await launched.link.ready();
    const pid = await waitForPidFile(dir, "mover");
    t.after(() => killQuietly(pid));
    const nsdelegate = launcher.hierarchy.nsdelegate;
    const why = nsdelegate
      ? "cgroup2 is mounted nsdelegate: the kernel refuses a move to a cgroup outside the member's namespace"
      : `cgroup2 at ${launcher.hierarchy.mountPoint} is mounted ${launcher.hierarchy.options.join(",")}, without nsdelegate: the kernel checks the cgroup namespace on a move only under nsdelegate (cgroup_procs_write_permission), so a root member that can reach the mount moves itself anywhere; the refusal can't be shown on this host`;
    t.diagnostic(why);

    const outcome = await launched.forceStop();
    await waitFor("the mover's trap ran", () => existsSync(join(dir, "move.rc")));
    const rc = Number(readFileSync(join(dir, "move.rc"), "utf8"));
    assert.ok(outcome.proof === null || outcome.proof.enumerated.pids.includes(pid));
    if (nsdelegate) {
      assert.notEqual(rc, 0, "the move is refused");
      assert.equal(outcome.result, "stopped");
      assert.equal(isAlive(pid), false);
      return;
    }
    assert.equal(rc, 0, "the move succeeded");
    assert.equal(cgroupOf(pid), join(launcher.hierarchy.cgroupPath, basename(outside)));
    assert.equal(outcome.result, "uncertain", "a member seen and then alive elsewhere is no proof");
    assert.equal(outcome.proof, null);
    assert.deepEqual(
      logOf(outcome, "survivors").map((s) =>
        s.status === "observed" ? s.alive.map((a) => a.pid) : null,
      ),
      [[pid]],
    );
    assert.equal(existsSync(launched.scope.dir), true, "kept for a retry");
  });

  it("with the shim gone, the stop acts on the cgroup directly and still proves it", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, familySpec(dir, [ESCAPED]));
    await launched.link.ready();
    const escaped = await waitForPidFile(dir, "escaped");
    t.after(() => killQuietly(escaped));
    process.kill(launched.scope.shimPid, "SIGKILL");
    await new Promise<void>((resolve) => launched.shim.onClose(resolve));
    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "stopped", JSON.stringify(outcome.log, null, 1));
    assert.ok(outcome.log.every((o) => !("source" in o) || !o.source.startsWith("shim:")));
    assert.deepEqual(
      outcome.proof?.enumerated.pids,
      [launched.link.pid!, escaped].sort((a, b) => a - b),
    );
    assert.equal(isAlive(escaped), false);
    assert.equal(existsSync(launched.scope.dir), false);
  });

  it("an engine that exited by itself: stopped with an empty enumeration and its exit observed", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, tinySpec(dir));
    await launched.link.ready();
    await assert.rejects(launched.link.request({ type: "prompt", message: "exit 3" }));
    await launched.link.exited;
    const outcome = await launched.forceStop();
    assert.equal(outcome.result, "stopped");
    assert.deepEqual(outcome.proof?.enumerated.pids, []);
    assert.deepEqual(outcome.members, []);
    const exit = outcome.observations.find((o) => o.kind === "engine-exit");
    assert.ok(exit?.status === "observed" && exit.exitCode === 3);
  });

  it("shares one stop between concurrent calls; after a proven stop, later calls return it", async (t) => {
    const dir = tempDir(t);
    const launched = await launch(t, tinySpec(dir));
    await launched.link.ready();
    const a = launched.forceStop();
    assert.equal(launched.forceStop(), a);
    const first = await a;
    assert.equal(first.result, "stopped");
    assert.equal(await launched.forceStop(), first);
  });

  it("refuses a second scope for the same execution, and a bad execution id, making nothing", async (t) => {
    const dir = tempDir(t);
    const id = `exec-${process.pid}-${Date.now()}`;
    const launched = await launch(t, tinySpec(dir), { executionId: id });
    assert.equal(launched.executionId, id);
    await assert.rejects(launcherOf().launch(tinySpec(dir), { executionId: id }), {
      name: "CohortError",
      code: "scope-exists",
    });
    await launched.link.ready();
    await assert.rejects(launcherOf().launch(tinySpec(dir), { executionId: "../x" }), TypeError);
    assert.equal((await launched.forceStop()).result, "stopped");
  });

  it("a launch whose shim lands in the wrong cgroup fails shim-start and kills the shim", async (t) => {
    // A plain directory posing as the hierarchy: the shim's join writes a regular file, so
    // /proc/self/cgroup shows it never moved.
    const dir = tempDir(t);
    const fake = new CgroupLauncher({
      ...FAST,
      hierarchy: { ...launcherOf().hierarchy, dir },
      unshare: null,
      startTimeoutMs: 5000,
    });
    const error = await fake.launch(tinySpec(dir), { executionId: "x1" }).then(
      () => assert.fail("launched"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof CohortError, String(error));
    assert.equal(error.code, "shim-start");
    assert.match(error.message, /the shim reports cgroup \/.*, not \/mosaic-x1\/supervisor/);
    const pid = Number(readFileSync(join(dir, "mosaic-x1", "supervisor", "cgroup.procs"), "utf8"));
    assert.equal(isAlive(pid), false, "the shim is killed");
  });

  it("a released shim has removed the scope before it answers, so a launcher killed then leaves nothing", async (t) => {
    // The launcher releases the shim only after a proven stop: the engine cgroup is empty. Here
    // it is emptied by hand and `release` sent straight to the shim, with no launcher removal.
    const dir = tempDir(t);
    const launched = await launch(t, familySpec(dir, []));
    await launched.link.ready();
    const kill = await launched.shim.request({ type: "kill" }, 5_000);
    assert.equal(kill.type, "written");
    const empty = await launched.shim.request(
      { type: "events", until: { populated: false }, timeoutMs: 10_000 },
      15_000,
    );
    assert.ok(empty.type === "events" && empty.met, JSON.stringify(empty));
    const reply = await launched.shim.request({ type: "release" }, 5_000);
    assert.equal(reply.type, "released");
    assert.equal(existsSync(launched.scope.dir), false, "the scope is gone when the answer comes");
    await waitGone(launched.scope.shimPid);
  });

  it("when the controller dies, the orphaned shim kills the cohort and removes the scope", async (t) => {
    const dir = tempDir(t);
    const spec = familySpec(dir, [STAYED, ESCAPED]);
    const program = `
      const { CgroupLauncher } = await import(${JSON.stringify(COHORT)});
      const p = await CgroupLauncher.probe();
      if (!p.ok) throw new Error(p.reason);
      const l = await p.launcher.launch(${JSON.stringify(spec)});
      await l.link.ready();
      process.stdout.write(JSON.stringify({ scope: l.scope.dir, shim: l.scope.shimPid, engine: l.link.pid }) + "\\n");
      setInterval(() => {}, 1000);
    `;
    const controller = spawn(process.execPath, ["--input-type=module", "-e", program], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    t.after(() => killQuietly(controller.pid ?? 0));
    const line = await new Promise<string>((resolve, reject) => {
      let text = "";
      const timer = setTimeout(() => reject(new Error("the controller never launched")), 15_000);
      controller.stdout.on("data", (c: Buffer) => {
        text += c.toString();
        if (text.includes("\n")) {
          clearTimeout(timer);
          resolve(text.slice(0, text.indexOf("\n")));
        }
      });
      controller.on("exit", (code) => reject(new Error(`the controller exited ${code}`)));
    });
    const info = JSON.parse(line) as { scope: string; shim: number; engine: number };
    created.add(info.scope);
    t.after(async () => {
      killQuietly(info.shim);
      await scrubScope(info.scope);
    });
    const stayed = await waitForPidFile(dir, "stayed");
    const escaped = await waitForPidFile(dir, "escaped");
    t.after(() => {
      killQuietly(stayed);
      killQuietly(escaped);
    });
    assert.equal((await readEvents(join(info.scope, "engine"))).status, "observed");

    controller.kill("SIGKILL");
    for (const pid of [info.engine, stayed, escaped, info.shim]) await waitGone(pid);
    await waitFor("the scope removed", () => !existsSync(info.scope));
  });
});
