// Recovery after a proven stop with the real pinned Pi under the cgroup launcher (issue 7 item
// 6; seed: Choices, Recovery): K7 (a confirmed force stop proven from the cgroup, a confirmed
// recover's single-use eligibility record, and `launch` minting a new execution and controller
// incarnation, generation + 1, on the same leaf), K17 (a used record, a record from another
// incarnation and a changed reservation refuse `eligibility`) and K18 (a leaf that moved since
// eligibility refuses `target`). Driven through ConversationClient. The session carries a
// thinking entry on its branch, so pinned Pi appends nothing at startup and K8 passes on both
// launches. Without a writable cgroup v2 it skips and prints why, unless CI is set.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync } from "node:fs";
import { after, describe, it, type TestContext } from "node:test";
import { ClaimStore } from "../../src/control/claim/claim.ts";
import { ConversationClient } from "../../src/control/client/client.ts";
import { CgroupLauncher, CohortExecution } from "../../src/control/cohort/cohort.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import {
  digestOf,
  type EligibilityRecord,
  FixtureVerifier,
  type StopRecord,
} from "../../src/control/controller/records.ts";
import { PI_VERSION, type PiVersion } from "../../src/control/engine/pi/pi-pin.ts";
import { readSessionHead } from "../../src/control/engine/pi/session-head.ts";
import type {
  ControllerState,
  Receipt,
  ReceiptReason,
  StreamEvent,
} from "../../src/control/protocol.ts";
import { SLOW_TEST_MS, until, within } from "../helpers/deadline.ts";
import { type FakeModel, type ModelReply, startFakeModel } from "../helpers/fake-model.ts";
import { isAlive } from "../helpers/processes.ts";
import {
  MODEL,
  REAL_PI_VERSIONS,
  readLines,
  settledSession,
  writeAgentFiles,
} from "../helpers/real-pi.ts";
import {
  controllerOptions,
  type Fixture,
  makeFixture,
  validateRecords,
} from "./controller-fixture.ts";

const T = { timeout: SLOW_TEST_MS };

const probe = await CgroupLauncher.probe({
  termGraceMs: 2000,
  freezeTimeoutMs: 2000,
  killTimeoutMs: 3000,
});
const skip = probe.ok || process.env.CI ? false : `no writable cgroup v2 here: ${probe.reason}`;
if (skip) console.log(`# recovery real-Pi tests skip: ${skip}`);

/**
 * Every scope directory this file's controllers launched into. The suite's last check is that
 * none is left; it names only ours, since other test files may run cgroup scopes concurrently
 * (a host-wide `find -name 'mosaic*'` would race them).
 */
const scopes = new Set<string>();

function leftoverScopes(): string[] {
  if (!probe.ok) return [];
  const out = execFileSync("find", [probe.launcher.hierarchy.dir, "-name", "mosaic-*"], {
    encoding: "utf8",
  });
  return out.split("\n").filter((l) => scopes.has(l));
}

function settled(events: StreamEvent[], receipt: string): ReceiptReason | null {
  for (const e of events) {
    const r = e.event.receipt as Receipt | undefined;
    if (e.event.kind === "receipt" && r?.id === receipt && r.state === "settled") {
      return r.reason ?? null;
    }
  }
  return null;
}

type Running = {
  ctrl: Controller;
  f: Fixture;
  model: FakeModel;
  client(): Promise<{ client: ConversationClient; events: StreamEvent[] }>;
  /** Every CohortExecution this controller launched, in order (`note()` adds the current one). */
  executions: CohortExecution[];
  note(): CohortExecution;
};

/**
 * A started Controller over the real Pi with the cgroup launcher. One cleanup, in order:
 * clients closed, the controller stopped, any scope a failed assertion left given up, the
 * model closed, the temp dir removed.
 */
async function startReal(
  t: TestContext,
  replies: ModelReply[],
  piVersion: PiVersion = PI_VERSION,
): Promise<Running> {
  assert.ok(probe.ok, probe.ok ? "" : probe.reason);
  const clients: ConversationClient[] = [];
  const removals: (() => void)[] = [];
  const executions: CohortExecution[] = [];
  let ctrl: Controller | null = null;
  let model: FakeModel | null = null;
  t.after(async () => {
    for (const c of clients) await c.close();
    try {
      await ctrl?.stop();
    } finally {
      const current = ctrl?.execution?.launched;
      if (current instanceof CohortExecution && !executions.includes(current)) {
        executions.push(current);
      }
      for (const e of executions) scopes.add(e.scope.dir);
      for (const e of executions) if (existsSync(e.scope.dir)) await e.dispose();
      await model?.close();
      for (const rm of removals) rm();
    }
  });
  const f = makeFixture(
    { after: (fn) => removals.push(fn as () => void) },
    (cwd) => settledSession(cwd) as Record<string, unknown>[],
  );
  model = await startFakeModel({ replies });
  const agentDir = `${f.root}/agent`;
  writeAgentFiles(agentDir, model.baseUrl);
  const { engine: _fakeEngine, ...rest } = controllerOptions(f, { launcher: probe.launcher });
  ctrl = new Controller({
    ...rest,
    launcherReason: "test: CgroupLauncher.probe() succeeded",
    engine: { extraArgs: ["--model", MODEL] },
    agentDir,
    piVersion,
  });
  await within(ctrl.start(), "controller start");
  const started = ctrl;
  const run: Running = {
    ctrl: started,
    f,
    model,
    executions,
    note() {
      const launched = started.execution?.launched;
      assert.ok(launched instanceof CohortExecution, "the cgroup launcher ran the engine");
      if (!executions.includes(launched)) executions.push(launched);
      scopes.add(launched.scope.dir);
      return launched;
    },
    async client() {
      const client = new ConversationClient({
        socketPath: started.socketPath,
        grant: "g-op",
        requestTimeoutMs: 20_000,
      });
      clients.push(client);
      const events: StreamEvent[] = [];
      client.onEvent((e) => events.push(e));
      client.onError((issue) => assert.fail(`client issue: ${issue.code}: ${issue.message}`));
      await within(client.connect(), "connect");
      return { client, events };
    },
  };
  run.note();
  return run;
}

/** Takes over and confirms a force stop; asserts it ended `stopped` with a cgroup proof. */
async function forceStop(run: Running, client: ConversationClient): Promise<StopRecord> {
  const forced = await within(client.confirmed("force-stop"), "force stop");
  assert.ok(forced.outcome === "admitted", JSON.stringify(forced));
  const stop = (forced.result as { stop: StopRecord }).stop;
  assert.equal(stop.result, "stopped", stop.why);
  assert.ok(stop.proof);
  assert.equal(stop.proof.method, "cgroup");
  assert.equal(stop.proofDigest, digestOf(stop.proof));
  assert.equal(run.ctrl.claim?.state, "stopped-proven");
  return stop;
}

for (const piVersion of REAL_PI_VERSIONS)
  describe(`recovery after a proven stop, real pinned Pi ${piVersion}, cgroup launcher`, {
    skip,
  }, () => {
    after(() => {
      assert.deepEqual(leftoverScopes(), [], "no scope of ours is left behind");
    });

    it(
      "K7, K17: recover, launch a new execution and incarnation on the same leaf, refuse reuse",
      T,
      async (t) => {
        const run = await startReal(
          t,
          [
            { kind: "text", text: "first answer" },
            { kind: "text", text: "second answer" },
          ],
          piVersion,
        );
        const { ctrl, f } = run;
        assert.equal(ctrl.state().binding, "bound", "K8: Pi appended nothing at start");
        const first = ctrl.execution;
        assert.ok(first);
        const firstScope = run.executions[0];
        assert.ok(firstScope);
        const firstPid = first.link.pid;

        const { client: a, events } = await run.client();
        assert.equal((await within(a.takeover(), "takeover")).outcome, "admitted");
        const r = await within(a.prompt("before the stop"), "prompt");
        assert.ok(r.outcome === "admitted", JSON.stringify(r));
        await until(() => settled(events, r.receipt.id) !== null, "first receipt settled");
        assert.equal(settled(events, r.receipt.id), "completed");

        // Recovery before a proven stop refuses; the confirmation is spent by the refusal.
        const early = await within(a.confirmed("recover"), "early recover");
        assert.deepEqual([early.outcome, early.step], ["refused:stop-proof", "use"]);

        const stop = await forceStop(run, a);
        assert.equal(stop.trigger, "force-stop");
        assert.equal(stop.execution, first.execution);
        assert.ok(!existsSync(firstScope.scope.dir), "the proven stop removed the scope");
        if (firstPid !== undefined) assert.equal(isAlive(firstPid), false, "the engine is gone");
        // The verifier accepts the proof again, for this engine.
        const again = await firstScope.forceStop();
        assert.equal(again.result, "stopped");
        assert.equal(digestOf(again.proof), stop.proofDigest);
        const verdict = new FixtureVerifier({ fixtureRoot: f.fixtureRoot }).verifyStop(again, {
          pid: firstPid,
        });
        assert.equal(verdict.verified, true, JSON.stringify(verdict));

        const leaf = readSessionHead(f.sessionFile).leafId;
        const linesAtStop = readLines(f.sessionFile).length;
        assert.deepEqual(
          readLines(f.sessionFile)
            .slice(4)
            .map((e) => (e.message as { role: string }).role),
          // 1.6.0 persists the run's system prompt before the user's message.
          [...(piVersion === "0.85.1" ? [] : ["system"]), "user", "assistant"],
          "the prompt's entries after the fixture",
        );

        // Two records, both for the stopped incarnation.
        const rec1 = await within(a.confirmed("recover"), "recover");
        assert.ok(rec1.outcome === "admitted", JSON.stringify(rec1));
        const rec2 = await within(a.confirmed("recover"), "second recover");
        assert.ok(rec2.outcome === "admitted", JSON.stringify(rec2));
        assert.notEqual(rec1.eligibility, rec2.eligibility);
        const el = (rec1.result as { eligibility: EligibilityRecord }).eligibility;
        assert.deepEqual(
          [el.kind, el.execution, el.incarnation, el.stop, el.proofDigest, el.leafId],
          ["eligibility", first.execution, first.incarnation, stop.id, stop.proofDigest, leaf],
        );
        assert.deepEqual(el.reservation, ctrl.claim?.revisions);

        const before = a.state;
        assert.ok(before);
        const launched = await within(a.launch(rec1.eligibility), "launch");
        assert.ok(launched.outcome === "admitted", JSON.stringify(launched));
        const state = (launched.result as { state: ControllerState }).state;
        const second = ctrl.execution;
        assert.ok(second && second !== first);
        const secondScope = run.note();
        assert.notEqual(secondScope, firstScope);
        assert.ok(existsSync(secondScope.scope.dir), "the new engine runs in a new scope");
        assert.notEqual(state.execution, before.execution);
        assert.notEqual(state.incarnation, before.incarnation);
        assert.equal(state.execution, second.execution);
        assert.equal(state.incarnation, second.incarnation);
        assert.equal(state.generation, before.generation + 1, "generation + 1");
        assert.equal(state.controllerConnection, null);
        assert.deepEqual([state.admission, state.binding], ["open", "bound"]);
        // Same leaf: the K8 check read get_state and get_tree from the new Pi; nothing appended.
        assert.equal(second.binding.expected.leafId, leaf);
        assert.equal(second.binding.loaded?.leafId, leaf);
        assert.equal(second.binding.generation, state.generation);
        assert.equal(readLines(f.sessionFile).length, linesAtStop, "Pi appended nothing");
        assert.equal(ctrl.claim?.state, "held");
        assert.equal(ctrl.claim?.holder.incarnation, second.incarnation);
        assert.equal(ctrl.claim?.holder.execution, second.execution);

        // K17: the used record refuses; so does the other record, from the stopped incarnation.
        const reused = await within(a.launch(rec1.eligibility), "launch again");
        assert.equal(reused.outcome, "refused:eligibility", JSON.stringify(reused));
        const foreign = await within(a.launch(rec2.eligibility), "launch other incarnation");
        assert.equal(foreign.outcome, "refused:eligibility", JSON.stringify(foreign));
        assert.ok(
          foreign.outcome === "refused:eligibility" && /another incarnation/.test(foreign.message),
          JSON.stringify(foreign),
        );
        assert.equal(ctrl.execution, second, "no refused launch started anything");

        // A prompt works on the new execution.
        assert.equal((await within(a.takeover(), "takeover again")).outcome, "admitted");
        const next = await within(a.prompt("after the launch"), "second prompt");
        assert.ok(next.outcome === "admitted", JSON.stringify(next));
        assert.equal(next.receipt.execution, second.execution);
        await until(() => settled(events, next.receipt.id) !== null, "second receipt settled");
        assert.equal(settled(events, next.receipt.id), "completed");
        assert.equal(run.model.requests.length, 2);
        const added = readLines(f.sessionFile).slice(linesAtStop);
        assert.deepEqual(
          added.map((e) => `${e.type}/${(e.message as { role: string }).role}`),
          ["message/user", "message/assistant"],
        );
        assert.equal(added[0]?.parentId, leaf, "the new run continued from the recovered leaf");
        const seen = await within(a.observe(), "observe");
        assert.ok(seen.outcome === "admitted", JSON.stringify(seen));
        assert.equal(seen.seam.streamEpoch, second.stream.epoch);
        const page = JSON.stringify(seen.result.page);
        for (const text of [
          "before the stop",
          "first answer",
          "after the launch",
          "second answer",
        ]) {
          assert.ok(page.includes(text), `${text} in the page`);
        }

        // The new execution ends proven too.
        await within(ctrl.stop(), "controller stop");
        assert.equal(ctrl.claim?.state, "stopped-proven");
        assert.ok(!existsSync(secondScope.scope.dir));
        validateRecords(ctrl);
      },
    );

    it("K17: a reservation that changed after recover refuses eligibility", T, async (t) => {
      const run = await startReal(t, [], piVersion);
      const { ctrl, f } = run;
      const { client: a } = await run.client();
      assert.equal((await within(a.takeover(), "takeover")).outcome, "admitted");
      await forceStop(run, a);
      const rec = await within(a.confirmed("recover"), "recover");
      assert.ok(rec.outcome === "admitted", JSON.stringify(rec));
      const reserved = (rec.result as { eligibility: EligibilityRecord }).eligibility.reservation;

      // Another holder takes the ended claim and gives it back: the revisions move on.
      const store = new ClaimStore({ root: f.claimRoot });
      const keys = { seatKey: { projectRoot: ctrl.projectRoot, seat: ctrl.seat } };
      const other = await store.acquire({
        ...keys,
        sessionKey: ctrl.sessionKey,
        holder: await store.holderFor({ execution: "ex-other", incarnation: "in-other" }),
      });
      await store.release(other, "another-holder-left");
      assert.notDeepEqual(other.revisions, reserved);

      const launched = await within(a.launch(rec.eligibility), "launch");
      assert.equal(launched.outcome, "refused:eligibility", JSON.stringify(launched));
      assert.ok(
        launched.outcome === "refused:eligibility" &&
          /changed since it was reserved/.test(launched.message),
        JSON.stringify(launched),
      );
      assert.equal(run.executions.length, 1, "nothing was launched");
      assert.equal(ctrl.execution?.launched, run.executions[0]);
      assert.equal(ctrl.state().admission, "fenced");
    });

    it("K18: a leaf that moved after recover refuses target at launch", T, async (t) => {
      const run = await startReal(t, [], piVersion);
      const { ctrl, f } = run;
      const { client: a } = await run.client();
      assert.equal((await within(a.takeover(), "takeover")).outcome, "admitted");
      await forceStop(run, a);
      const rec = await within(a.confirmed("recover"), "recover");
      assert.ok(rec.outcome === "admitted", JSON.stringify(rec));
      const leaf = readSessionHead(f.sessionFile).leafId;
      assert.equal((rec.result as { eligibility: EligibilityRecord }).eligibility.leafId, leaf);

      // A raw entry appended behind the controller's back moves the leaf.
      appendFileSync(
        f.sessionFile,
        `${JSON.stringify({
          type: "thinking_level_change",
          id: "bbbb0001",
          parentId: leaf,
          timestamp: "2026-01-01T00:01:00.000Z",
          thinkingLevel: "low",
        })}\n`,
      );
      assert.equal(readSessionHead(f.sessionFile).leafId, "bbbb0001");

      const launched = await within(a.launch(rec.eligibility), "launch");
      assert.equal(launched.outcome, "refused:target", JSON.stringify(launched));
      assert.equal(run.executions.length, 1, "nothing was launched");
      assert.equal(ctrl.execution?.launched, run.executions[0]);
      assert.equal(ctrl.claim?.state, "stopped-proven", "the claim was not taken again");
      // A fresh recover refuses too: the leaf moved since the proof.
      const again = await within(a.confirmed("recover"), "recover again");
      assert.equal(again.outcome, "refused:target", JSON.stringify(again));
    });
  });
