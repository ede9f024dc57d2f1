// The Controller with the real pinned Pi (issue 6 item 12): sealed, the default engine command
// (this Node running the pinned cli.js), the PgroupLauncher, and the loopback fake model reached
// through `agentDir` (PI_CODING_AGENT_DIR, SPEC §6), an agent directory outside the live roots
// and outside the fixture root. Driven through ConversationClient. One cleanup per test stops
// the controller (which ends the engine), closes the model and removes the temp dir, in order.
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { StopRecord } from "../../src/control/controller/records.ts";
import type { Receipt, ReceiptReason, StreamEvent } from "../../src/control/protocol.ts";
import { DEADLINE_MS, SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import {
  assistantEntry,
  headerLine,
  REAL_PI_VERSIONS,
  readLines,
  userEntry,
} from "../helpers/real-pi.ts";
import { startReal } from "./real-controller.ts";

const T = { timeout: SLOW_TEST_MS };

function settled(events: StreamEvent[], receipt: string): ReceiptReason | null {
  for (const e of events) {
    const r = e.event.receipt as Receipt | undefined;
    if (e.event.kind === "receipt" && r?.id === receipt && r.state === "settled") {
      return r.reason ?? null;
    }
  }
  return null;
}

for (const piVersion of REAL_PI_VERSIONS)
  describe(`the Controller with the real pinned Pi ${piVersion}`, () => {
    it(
      "observes, takes over, runs a prompt whose reply calls read, and refuses a second client",
      T,
      async (t) => {
        const run = await startReal(t, {
          piVersion,
          replies: [
            {
              kind: "tool-calls",
              calls: [{ id: "call_read_1", name: "read", arguments: { path: "hello.txt" } }],
            },
            { kind: "text", text: "The file says hello." },
          ],
        });
        const { ctrl, f } = run;
        writeFileSync(join(f.projectRoot, "hello.txt"), "hello from the sealed workspace\n");
        assert.equal(ctrl.state().binding, "bound", "K8 passed: Pi appended nothing at start");
        assert.equal(ctrl.state().admission, "open");
        const exec = ctrl.execution;
        assert.ok(exec);
        assert.equal(exec.binding.loaded?.leafId, "aaaa0003");
        assert.equal(exec.binding.testHook, false, "the default command: the pinned cli.js");
        assert.equal(exec.binding.engine?.version, piVersion, "the binding names the version");
        // PI_CODING_AGENT_DIR took effect: Pi wrote its own files into the agent dir.
        assert.ok(existsSync(join(run.agentDir, "auth.json")), readdirSync(run.agentDir).join(","));

        const { client: a, events } = await run.client();
        const first = await a.observe();
        assert.ok(first.outcome === "admitted", JSON.stringify(first));
        assert.equal(first.seam.quiet, true);
        assert.equal(first.seam.streamEpoch, exec.stream.epoch);
        const page0 = JSON.stringify(first.result.page);
        assert.ok(page0.includes('"hello"') && !page0.includes("sealed workspace"), page0);

        assert.equal((await a.takeover()).outcome, "admitted");
        assert.equal(a.role, "controller");

        const { client: b } = await run.client();
        await until(() => b.state?.generation === a.state?.generation, "b saw the takeover");
        const fromB = await b.prompt("hello from b");
        assert.equal(fromB.outcome, "refused:controller", JSON.stringify(fromB));

        const r = await a.prompt("read hello.txt");
        assert.ok(r.outcome === "admitted", JSON.stringify(r));
        await until(() => settled(events, r.receipt.id) !== null, "receipt settled");
        assert.equal(settled(events, r.receipt.id), "completed");
        const kinds = events.map((e) => e.event.kind);
        assert.ok(kinds.includes("tool-started") && kinds.includes("tool-ended"), kinds.join(","));
        const toolEnd = events.find((e) => e.event.kind === "tool-ended");
        assert.deepEqual([toolEnd?.event.toolName, toolEnd?.event.isError], ["read", false]);
        assert.equal(run.model.requests.length, 2);
        assert.equal(exec.tracker.overlaps.length, 0);
        assert.equal(ctrl.state().binding, "bound");

        const added = readLines(f.sessionFile).slice(4);
        assert.deepEqual(
          added.map((e) => `${e.type}/${(e.message as { role: string }).role}`),
          [
            // 1.6.0 persists the run's system prompt as a message before the user's (issue 16).
            ...(piVersion === "0.85.1" ? [] : ["message/system"]),
            "message/user",
            "message/assistant",
            "message/toolResult",
            "message/assistant",
          ],
        );
        const next = await a.observe();
        assert.ok(next.outcome === "admitted", JSON.stringify(next));
        assert.equal(next.seam.quiet, true);
        assert.equal(next.seam.fromSequence, (events.at(-1)?.sequence ?? 0) + 1);
        const page1 = JSON.stringify(next.result.page);
        for (const text of [
          "read hello.txt",
          "hello from the sealed workspace",
          "The file says hello.",
        ]) {
          assert.ok(page1.includes(text), `${text} in the page`);
        }
        assert.ok(!page1.includes("thinking_level_change"));

        // stop() ends the engine; the process group can't prove it, so the claim stays held
        // as uncertain (K2).
        await run.stop();
        assert.ok(exec.link.exit, "the engine exited");
        assert.equal(ctrl.claim?.state, "uncertain");
        const shutdown = ctrl.records.findLast((x) => x.kind === "stop") as StopRecord | undefined;
        assert.deepEqual([shutdown?.trigger, shutdown?.result], ["shutdown", "uncertain"]);
        assert.ok(!existsSync(exec.home), "the engine's scratch HOME is removed");
      },
    );

    it(
      "interrupts a slow stream: the receipt settles interrupted, the aborted message is persisted",
      T,
      async (t) => {
        const run = await startReal(t, { piVersion, replies: [{ kind: "slow", tickMs: 25 }] });
        const { client: a, events } = await run.client();
        assert.equal((await a.takeover()).outcome, "admitted");
        const r = await a.prompt("count slowly");
        assert.ok(r.outcome === "admitted", JSON.stringify(r));
        await until(
          () =>
            events.some(
              (e) => e.event.kind === "text-delta" && String(e.event.delta).includes("tick 2"),
            ),
          "tick 2 streamed",
        );
        const busy = await a.prompt("meanwhile");
        assert.equal(busy.outcome, "refused:busy");
        const sent = performance.now();
        const stopped = await a.interrupt();
        const ms = performance.now() - sent;
        assert.ok(stopped.outcome === "admitted", JSON.stringify(stopped));
        const stop = (stopped.result as { stop: StopRecord }).stop;
        assert.deepEqual(
          [stop.trigger, stop.result, stop.abortWritten, stop.nativeQueue],
          ["interrupt", "interrupted", true, "cleared"],
        );
        // Bounded only against a hang: the stop's record above is the proof.
        assert.ok(ms < DEADLINE_MS, `interrupt answered in ${ms.toFixed(0)} ms`);
        await until(() => settled(events, r.receipt.id) !== null, "receipt settled");
        assert.equal(settled(events, r.receipt.id), "interrupted");
        assert.equal(run.ctrl.execution?.tracker.overlaps.length, 0);
        await until(() => a.state?.admission === "open", "admission open again");

        const last = readLines(run.f.sessionFile).at(-1);
        const message = last?.message as Record<string, unknown>;
        assert.equal(message.role, "assistant");
        assert.equal(message.stopReason, "aborted");
        assert.match(JSON.stringify(message.content), /tick 0 tick 1 tick 2 /);
        const page = await a.observe();
        assert.ok(page.outcome === "admitted");
        assert.ok(JSON.stringify(page.result.page).includes("tick 2"));
      },
    );

    it(
      "accepts exactly Pi's startup append and records it in the binding (seed: Findings)",
      T,
      async (t) => {
        // Messages but no thinking entry on the branch: pinned Pi appends thinking_level_change.
        const run = await startReal(t, {
          piVersion,
          session: (cwd) => [
            headerLine(cwd),
            userEntry("aaaa0001", null, "hi", 1),
            assistantEntry("aaaa0002", "aaaa0001", "hello", 2),
          ],
        });
        const { ctrl, f } = run;
        const lines = readLines(f.sessionFile);
        assert.equal(lines.length, 4, "Pi appended one entry");
        assert.equal(lines[3]?.type, "thinking_level_change");
        assert.equal(lines[3]?.parentId, "aaaa0002");
        const exec = ctrl.execution;
        assert.ok(exec);
        assert.equal(exec.binding.state, "bound");
        assert.equal(exec.binding.reason, "loaded");
        assert.equal(exec.binding.expected.leafId, "aaaa0002");
        assert.equal(exec.binding.loaded?.leafId, lines[3]?.id);
        assert.deepEqual(exec.binding.startupAppend?.entries, [
          { id: lines[3]?.id, type: "thinking_level_change" },
        ]);
        assert.equal(ctrl.state().admission, "open");

        const { client: a } = await run.client();
        assert.equal((await a.takeover()).outcome, "admitted");
        const r = await a.prompt("hi");
        assert.equal(r.outcome, "admitted", JSON.stringify(r));
      },
    );

    it(
      "refuses preflight when something other than Pi moved the leaf before it started (K8)",
      T,
      async (t) => {
        const run = await startReal(t, {
          piVersion,
          // Another writer appends a message after the controller was constructed.
          beforeStart: (f) =>
            appendFileSync(
              f.sessionFile,
              `${JSON.stringify(userEntry("ffff0001", "aaaa0003", "someone else", 9))}\n`,
            ),
        });
        const { ctrl } = run;
        const exec = ctrl.execution;
        assert.ok(exec);
        assert.equal(exec.binding.state, "uncertain");
        assert.equal(exec.binding.reason, "k8-load-check");
        assert.equal(exec.binding.expected.leafId, "aaaa0003");
        assert.equal(exec.binding.loaded?.leafId, "ffff0001");
        assert.match(exec.load?.reason ?? "", /not Pi's known startup entry \(added: nothing\)/);
        assert.equal(ctrl.state().admission, "never");
        assert.equal(ctrl.claim?.state, "held");

        const { client: a } = await run.client();
        assert.equal(a.state?.admission, "never");
        assert.equal((await a.takeover()).outcome, "admitted");
        const r = await a.prompt("hi");
        assert.equal(r.outcome, "refused:preflight", JSON.stringify(r));
        assert.equal(run.model.requests.length, 0, "nothing reached the model");
      },
    );
  });

for (const piVersion of REAL_PI_VERSIONS)
  describe(`replay after a reconnect, with the real pinned Pi ${piVersion}`, () => {
    it(
      "a client dropped before the first delta and between deltas misses nothing",
      T,
      async (t) => {
        const run = await startReal(t, { piVersion, replies: [{ kind: "slow", tickMs: 15 }] });
        const a = await run.client();
        const b = await run.client();
        assert.equal((await a.client.takeover()).outcome, "admitted");
        const kinds = (w: { events: StreamEvent[] }) => w.events.map((e) => e.event.kind);
        const p = await a.client.prompt("stream slowly");
        assert.equal(p.outcome, "admitted");
        // Drop 1: once the run started, before any delta reached B.
        await until(() => kinds(b).includes("run-started"), "run-started");
        await b.client.close();
        await until(() => kinds(a).includes("text-delta"), "the first delta (B away)");
        // Drop 2 and 3: between deltas, each time some deltas later.
        for (let k = 0; k < 2; k++) {
          const w = await b.client.connect();
          assert.ok(typeof w.replay === "object", JSON.stringify(w.replay));
          const seen = a.events.length;
          await until(() => a.events.length > seen + 3, "more deltas");
          await b.client.close();
          const gone = a.events.length;
          await until(() => a.events.length > gone + 3, "more deltas while B is away");
        }
        const w = await b.client.connect();
        assert.ok(typeof w.replay === "object", JSON.stringify(w.replay));
        assert.equal((await a.client.interrupt()).outcome, "admitted");
        await until(() => settled(a.events, p.receipt.id) !== null, "A: the receipt settled");
        await until(() => b.events.length >= a.events.length, "B has every event");
        assert.deepEqual(
          b.events.map((e) => e.id),
          a.events.map((e) => e.id),
        );
        assert.deepEqual(b.events, a.events);
      },
    );
  });
