// Attention states from real Pi runs (issue 27 items 1 and 5): a Controller over the pinned Pi
// and the loopback model, registered as `conversation control` registers it, watched by an
// AttentionWatch over that registry with the observe-only grant. Each state is reached by what
// Pi really did: a prompt's run, a model error, a model that goes quiet, an engine killed.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { AttentionWatch, type InboxRow } from "../../src/attention/watch.ts";
import { register } from "../../src/control/registry/registry.ts";
import { conversationId } from "../../src/reader/sources.ts";
import { startReal } from "../control/real-controller.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import type { ModelReply } from "../helpers/fake-model.ts";

const T = { timeout: SLOW_TEST_MS };

async function watched(t: TestContext, replies: ModelReply[], stallMs = 60_000) {
  const run = await startReal(t, { replies });
  const registryDir = join(run.f.root, "state", "controllers");
  const conversation = conversationId(run.f.projectRoot, "main", "s.jsonl");
  const reg = await register(registryDir, {
    conversation,
    project: run.f.projectRoot,
    seat: "main",
    sessionFile: run.f.sessionFile,
    socket: run.ctrl.socketPath,
    execution: "ex-test",
    grants: ["g-op", "g-ro"],
    startedAt: new Date().toISOString(),
  });
  const watch = new AttentionWatch({ registryDir, grant: "g-ro", stallMs, scanMs: 200 });
  const seen: string[] = [];
  watch.onChange((row) => seen.push(row.attention.state));
  t.after(async () => {
    await watch.close();
    reg.remove();
  });
  await watch.start();
  const row = (): InboxRow | undefined => watch.rows().find((r) => r.conversation === conversation);
  const state = () => row()?.attention.state;
  const { client } = await run.client();
  assert.equal((await client.takeover()).outcome, "admitted");
  return { run, watch, row, state, seen, client };
}

describe("attention/watch with the real pinned Pi", () => {
  it(
    "goes idle, running, waiting-input over a real run, and lists it in the inbox",
    T,
    async (t) => {
      const w = await watched(t, [{ kind: "text", text: "Done." }]);
      // The fixture's session ends on an assistant reply: the probe reads it as waiting for input.
      assert.equal(w.state(), "waiting-input");
      const before = w.row()?.attention.since ?? 0;
      const r = await w.client.prompt("say done");
      assert.ok(r.outcome === "admitted", JSON.stringify(r));
      await until(() => w.seen.includes("running"), "the watch saw the run");
      await until(() => w.seen.at(-1) === "waiting-input", "the run ended");
      const row = w.row();
      assert.ok(row !== undefined && row.attention.since > before, "since: the new run's end");
      assert.deepEqual(
        w.watch.inbox().map((x) => x.conversation),
        [row.conversation],
      );
      assert.equal(row.steerGrant, "g-op");
    },
  );

  it("fails when the model answers with an error", T, async (t) => {
    const w = await watched(t, [
      { kind: "error", status: 400, body: '{"error":{"message":"no such model"}}' },
    ]);
    const r = await w.client.prompt("fail please");
    assert.ok(r.outcome === "admitted", JSON.stringify(r));
    await until(() => w.state() === "failed", "failed after the model's error");
    assert.match(w.row()?.attention.reason ?? "", /engine failed/);
  });

  it(
    "turns stalled when a run goes quiet past the stall time, and failed when the engine is killed",
    T,
    async (t) => {
      const w = await watched(t, [{ kind: "slow", tickMs: 60_000 }], 400);
      const r = await w.client.prompt("take your time");
      assert.ok(r.outcome === "admitted", JSON.stringify(r));
      await until(() => w.seen.includes("running"), "running");
      await until(() => w.state() === "stalled", "stalled after 400 ms of silence");
      assert.match(w.row()?.attention.reason ?? "", /no event for/);
      const link = w.run.ctrl.execution?.link;
      assert.ok(link?.pid !== undefined);
      process.kill(link.pid, "SIGKILL");
      await until(() => w.state() === "failed", "failed once the engine is gone");
      assert.match(w.row()?.attention.reason ?? "", /engine stopped or exited/);
    },
  );
});
