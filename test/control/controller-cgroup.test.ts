// The Controller over fake-pi with the cgroup launcher (docs/cohort.md): stop() is proven from
// the cgroup, the FixtureVerifier accepts the proof, and the claim ends `stopped-proven`.
// Without a writable cgroup v2 it skips and prints why, unless CI is set (then it fails).
import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { describe, it } from "node:test";
import { CgroupLauncher, CohortExecution } from "../../src/control/cohort/cohort.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { digestOf, FixtureVerifier } from "../../src/control/controller/records.ts";
import { isAlive } from "../helpers/processes.ts";
import { controllerOptions, makeFixture, validateRecords } from "./controller-fixture.ts";

const probe = await CgroupLauncher.probe({
  termGraceMs: 1000,
  freezeTimeoutMs: 2000,
  killTimeoutMs: 3000,
});
const skip = probe.ok || process.env.CI ? false : `no writable cgroup v2 here: ${probe.reason}`;
if (skip) console.log(`# controller cgroup tests skip: ${skip}`);

describe("controller with the cgroup launcher", { skip }, () => {
  it("ends the claim stopped-proven on stop, with a verified cgroup proof", async (t) => {
    assert.ok(probe.ok, probe.ok ? "" : probe.reason);
    const f = makeFixture(t);
    const reason = "test: CgroupLauncher.probe() succeeded";
    const ctl = new Controller({
      ...controllerOptions(f, { launcher: probe.launcher }),
      launcherReason: reason,
    });
    t.after(async () => {
      await ctl.stop();
      // A failed assertion may leave the scope: give it up so no cgroup stays behind.
      const launched = ctl.execution?.launched;
      if (launched instanceof CohortExecution && existsSync(launched.scope.dir)) {
        await launched.dispose();
      }
      rmSync(f.root, { recursive: true, force: true });
    });
    await ctl.start();
    const exec = ctl.execution;
    assert.ok(exec);
    assert.ok(exec.launched instanceof CohortExecution);
    const scope = exec.launched.scope.dir;
    assert.equal(existsSync(scope), true, "the engine runs in its scope");
    assert.equal(exec.binding.launcher, "cgroup");
    assert.equal(exec.binding.launcherReason, reason);
    assert.equal(ctl.state().binding, "bound");
    const engine = exec.link.pid;

    await ctl.stop();
    assert.equal(ctl.claim?.state, "stopped-proven");
    const stop = ctl.records.findLast((r) => r.kind === "stop");
    assert.ok(stop?.kind === "stop");
    assert.equal(stop.result, "stopped", stop.why);
    assert.ok(stop.proof);
    assert.equal(stop.proof.method, "cgroup");
    assert.equal(stop.proof.emptied.empty, true);
    assert.equal(stop.proofDigest, digestOf(stop.proof));
    // A proven stop stays proven: the launcher hands back the same outcome, and the fixture
    // verifier accepts it again, for this engine.
    const outcome = await exec.launched.forceStop();
    assert.equal(outcome.result, "stopped");
    assert.equal(digestOf(outcome.proof), stop.proofDigest);
    assert.deepEqual(outcome.removal?.failed, []);
    const verdict = new FixtureVerifier({ fixtureRoot: f.fixtureRoot }).verifyStop(outcome, {
      pid: engine,
    });
    assert.equal(verdict.verified, true, JSON.stringify(verdict));
    validateRecords(ctl);

    assert.equal(existsSync(scope), false, "the proven stop removed the scope");
    assert.equal(isAlive(exec.launched.scope.shimPid), false, "the shim was released");
    if (engine !== undefined) assert.equal(isAlive(engine), false, "the engine is gone");
  });
});
