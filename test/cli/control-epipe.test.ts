// `conversation control … | head`: a reader of the controller's output that goes away (its stdout
// or stderr pipe closed, EPIPE at the next write) is a request to stop, the same orderly stop as
// SIGTERM: the real pinned Pi stopped, its scratch HOME removed, the registry entry gone, the
// seat's claim ended as the launcher can prove it, exit status 0 and no crash. Every wait has a
// deadline; children are killed and temp dirs removed in t.after.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ClaimStore } from "../../src/control/claim/claim.ts";
import { chooseLauncher } from "../../src/control/cohort/cohort.ts";
import { listControllers } from "../../src/control/registry/registry.ts";
import { DEADLINE_MS, SLOW_TEST_MS, within } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { isAlive } from "../helpers/processes.ts";
import { MODEL, settledSession, writeAgentDir, writeLines } from "../helpers/real-pi.ts";
import { type Child, startCli } from "./run-cli.ts";

const REAL = { timeout: SLOW_TEST_MS };

type Run = { root: string; project: string; tmp: string; cli: Child };

/** Starts `control` on a fixture session of the real Pi, with a TMPDIR the test can look into. */
async function startControl(t: TestContext): Promise<Run> {
  // Short, so the socket path fits in sun_path.
  const root = mkdtempSync("/tmp/ce-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const fixtureRoot = join(root, "fx");
  const project = join(fixtureRoot, "proj");
  const sessions = join(project, ".pi", "state", "main", "sessions");
  mkdirSync(sessions, { recursive: true });
  const session = join(sessions, "s.jsonl");
  writeLines(session, settledSession(project));
  const model = await startFakeModel({ replies: [{ kind: "text", text: "unused" }] });
  t.after(() => model.close());
  writeAgentDir(join(root, "h"), model.baseUrl);
  // The engine's scratch HOME is made in TMPDIR: this one, so the test sees what is left.
  const tmp = join(root, "tmp");
  mkdirSync(tmp, { mode: 0o700 });
  const cli = startCli(
    t,
    [
      "control",
      ...["--fixture-root", fixtureRoot, "--claim-root", join(root, "claims")],
      ...["--socket-dir", join(root, "s"), "--session", session, "--seat", "main"],
      ...["--state-dir", join(root, "st"), "--model", MODEL],
      ...["--agent-dir", join(root, "h", ".pi", "agent")],
    ],
    { env: { TMPDIR: tmp } },
  );
  return { root, project, tmp, cli };
}

/** Live processes (other than this test's) whose command line names a path under `root`. */
function processesUnder(root: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    if (cmdline.includes(root) && isAlive(pid)) found.push(pid);
  }
  return found;
}

/** What an orderly stop leaves: nothing of the run's, and the seat free when provable. */
async function assertStoppedCleanly(run: Run): Promise<void> {
  const exit = await within(run.cli.exited, `the controller's exit: ${run.cli.stderr()}`);
  assert.deepEqual(exit, { code: 0, signal: null }, run.cli.stderr());
  assert.doesNotMatch(run.cli.stderr(), /EPIPE|Error|at .*\.ts:/, "no crash, no stack");
  assert.deepEqual(
    readdirSync(run.tmp).filter((n) => n.startsWith("mosaic-home-")),
    [],
    "the engine's scratch HOME is removed",
  );
  assert.deepEqual(processesUnder(run.root), [], "no engine left running");
  assert.equal(existsSync(join(run.root, "s", "control.sock")), false, "the socket is gone");
  assert.deepEqual(listControllers(join(run.root, "st", "registry")).live, [], "unregistered");
  const { kind } = await chooseLauncher();
  const view = await new ClaimStore({ root: join(run.root, "claims") }).inspect({
    seatKey: { projectRoot: run.project, seat: "main" },
    sessionKey: "not-written",
  });
  // A cgroup (or scope) launcher proves the stop and ends the claim; the process-group one
  // cannot (docs/claim.md), as after SIGTERM.
  if (kind !== "pgroup") assert.equal(view.verdict, "free", view.why);
}

describe("conversation control when its output is closed", () => {
  it(
    "stops the engine and removes its scratch HOME when stdout's reader has gone",
    REAL,
    async (t) => {
      const run = await startControl(t);
      // `| head` that has exited: the first line the controller prints meets EPIPE.
      run.cli.proc.stdout?.destroy();
      await assertStoppedCleanly(run);
      assert.match(run.cli.stderr(), /Stopping the engine\.\.\.\n/);
    },
  );

  it("stops as on SIGTERM, without a crash, when stderr's reader has gone", REAL, async (t) => {
    const run = await startControl(t);
    await run.cli.waitFor("the attach line", (c) => /\nAttach: .*\n/.test(c.stdout()), DEADLINE_MS);
    // `2>&1 | head`-like: stderr closed, then a stop; its "Stopping…" line meets EPIPE.
    run.cli.proc.stderr?.destroy();
    run.cli.proc.kill("SIGTERM");
    await assertStoppedCleanly(run);
    assert.match(run.cli.stdout(), /\nStopped: /);
  });
});
