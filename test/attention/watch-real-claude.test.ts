// Attention states from real Claude Code runs (issue 27 items 1 and 5): a Controller over the
// pinned Claude Code 2.1.328 and the loopback Anthropic stand-in, registered as `conversation
// control --harness claude-code` registers it, watched by an AttentionWatch over that registry
// with the observe-only grant. Each state is reached by what Claude Code really did: a turn
// that runs, a permission prompt it waits on, the turn's end, an engine killed.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { AttentionWatch, type InboxRow } from "../../src/attention/watch.ts";
import { bashCall, DONE, registerClaude } from "../board/claude-board.ts";
import { startClaude } from "../control/real-claude-controller.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import type { AnthropicReply } from "../helpers/fake-anthropic.ts";

const T = { timeout: SLOW_TEST_MS };
const WAIT = 60_000;

async function watched(t: TestContext, replies: AnthropicReply[]) {
  const run = await startClaude(t, { replies });
  const registryDir = await registerClaude(t, run);
  const conversation = run.ctrl.conversation;
  const watch = new AttentionWatch({ registryDir, grant: "g-ro", stallMs: 60_000, scanMs: 200 });
  const seen: string[] = [];
  const row = (): InboxRow | undefined => watch.rows().find((r) => r.conversation === conversation);
  watch.onChange((r) => {
    if (r.conversation === conversation) seen.push(r.attention.state);
  });
  t.after(() => watch.close());
  await watch.start();
  await until(() => row() !== undefined, "the watch found the controller", WAIT);
  const { client, dialogs } = await run.client();
  assert.equal((await client.takeover()).outcome, "admitted");
  return { run, watch, row, state: () => row()?.attention.state, seen, client, dialogs };
}

describe("attention/watch with the real pinned Claude Code", () => {
  it(
    "runs, waits for approval while the permission prompt is open, then waits for input",
    T,
    async (t) => {
      const w = await watched(t, []);
      const marker = join(w.run.projectRoot, "marker.txt");
      w.run.fake.enqueue(bashCall("toolu_attn", `touch ${marker}`, "create the marker file"), DONE);
      const r = await w.client.prompt("make the marker");
      assert.ok(r.outcome === "admitted", JSON.stringify(r));
      await until(() => w.state() === "waiting-approval", "waiting for approval", WAIT);
      assert.ok(w.seen.includes("running"), `ran before it asked (${w.seen.join(", ")})`);
      const row = w.row();
      assert.equal(row?.attention.reason, "asks to run Bash: create the marker file");
      const open = w.dialogs.find((d) => d.state === "open");
      assert.ok(open !== undefined);
      assert.equal(row?.attention.approval?.id, open.id, "the row names the open approval");
      assert.deepEqual(
        w.watch.inbox().map((x) => x.conversation),
        [w.run.ctrl.conversation],
      );
      assert.equal(existsSync(marker), false, "waiting: nothing ran");
      assert.equal((await w.client.answer(open.id, "allow")).outcome, "admitted");
      await until(() => w.state() === "waiting-input", "the turn ended", WAIT);
      const last = w.seen.lastIndexOf("waiting-approval");
      assert.ok(w.seen.slice(last).includes("running"), "running again once allowed");
      assert.ok(existsSync(marker));
    },
  );

  it("fails when the model answers with an error", T, async (t) => {
    // Claude Code tries a failed request again a few times: every try fails.
    const w = await watched(
      t,
      Array.from({ length: 8 }, () => ({
        kind: "error" as const,
        status: 400,
        message: "no such model",
      })),
    );
    assert.equal((await w.client.prompt("fail please")).outcome, "admitted");
    await until(() => w.state() === "failed", "failed after the model's error", WAIT);
    assert.match(w.row()?.attention.reason ?? "", /engine failed: API Error: 400 no such model/);
  });

  it("fails when the engine dies", T, async (t) => {
    const w = await watched(t, [{ kind: "message", content: [{ type: "text", text: "Hello." }] }]);
    assert.equal((await w.client.prompt("say hello")).outcome, "admitted");
    await until(() => w.state() === "waiting-input", "the first turn ended", WAIT);
    const link = w.run.ctrl.execution?.link;
    assert.ok(link?.pid !== undefined);
    process.kill(link.pid, "SIGKILL");
    await until(() => w.state() === "failed", "failed once the engine is gone", WAIT);
    assert.match(w.row()?.attention.reason ?? "", /engine stopped or exited/);
  });
});
