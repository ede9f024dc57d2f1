// The Controller with the real pinned Claude Code 2.1.328 (issue 26), offline against the
// loopback Anthropic stand-in: a prompt end to end in a new session, approvals allowed and
// denied through `answer`, and the races — a second answer, an observer's answer, an answer from
// a connection that lost control since the approval opened, an interrupt that denies a pending
// approval first, a force stop that closes one — and an interrupt of a slow reply.
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { seatCredentials } from "../../src/control/engine/claude-code/claude-credentials.ts";
import type { Dialog, Receipt, ReceiptReason, StreamEvent } from "../../src/control/protocol.ts";
import { until } from "../helpers/deadline.ts";
import { startClaude } from "./real-claude-controller.ts";

const T = { timeout: 120_000 };
const WAIT = 60_000;

function settled(events: StreamEvent[], receipt: string): ReceiptReason | null {
  for (const e of events) {
    const r = e.event.receipt as Receipt | undefined;
    if (e.event.kind === "receipt" && r?.id === receipt && r.state === "settled") {
      return r.reason ?? null;
    }
  }
  return null;
}

// The latest message per dialog id decides where it stands.
function latest(dialogs: Dialog[]): Map<string, Dialog> {
  const by = new Map<string, Dialog>();
  for (const d of dialogs) by.set(d.id, d);
  return by;
}
const openApproval = (dialogs: Dialog[]): Dialog | undefined =>
  [...latest(dialogs).values()].find((d) => d.method === "approval" && d.state === "open");
const endOf = (dialogs: Dialog[], id: string): Dialog | undefined => {
  const d = latest(dialogs).get(id);
  return d?.state === "open" ? undefined : d;
};
const isSome = (v: unknown) => v !== undefined;

function touch(path: string) {
  return {
    kind: "message" as const,
    content: [
      {
        type: "tool_use" as const,
        id: "toolu_touch",
        name: "Bash",
        input: { command: `touch ${path}`, description: "create the marker file" },
      },
    ],
  };
}
const done = { kind: "message" as const, content: [{ type: "text" as const, text: "done" }] };

describe("the Controller with the real pinned Claude Code", () => {
  it("runs a prompt end to end in a new session, filed in the seat's own folder", T, async (t) => {
    const run = await startClaude(t, {
      replies: [{ kind: "message", content: [{ type: "text", text: "Hello from Claude." }] }],
    });
    const { ctrl } = run;
    assert.equal(ctrl.state().binding, "bound");
    assert.equal(ctrl.state().admission, "open");
    const exec = ctrl.execution;
    assert.ok(exec);
    assert.equal(exec.binding.engine?.name, "@anthropic-ai/claude-code");
    assert.equal(exec.binding.engine?.version, "2.1.328");
    assert.equal(exec.binding.loaded?.via, "initialize");
    assert.equal(exec.binding.testHook, false, "the pinned binary itself");
    assert.equal(existsSync(run.sessionFile), false, "no file before the first turn");
    const { client, events } = await run.client();
    // Before the first turn there is no file: the page is empty, and the stream joins at once.
    const before = await client.observe();
    assert.ok(before.outcome === "admitted", JSON.stringify(before));
    assert.deepEqual((before.result.page as { parts: unknown[] }).parts, []);
    assert.equal(before.seam.streamEpoch, exec.stream.epoch);
    assert.equal((await client.takeover()).outcome, "admitted");
    const r = await client.prompt("say hello");
    assert.ok(r.outcome === "admitted", JSON.stringify(r));
    await until(() => settled(events, r.receipt.id) !== null, "receipt settled", WAIT);
    assert.equal(settled(events, r.receipt.id), "completed");
    const text = events
      .filter((e) => e.event.kind === "text-delta")
      .map((e) => e.event.delta)
      .join("");
    assert.equal(text, "Hello from Claude.");
    assert.ok(existsSync(run.sessionFile), "the session landed in the seat's claude folder");
    const lines = readFileSync(run.sessionFile, "utf8");
    assert.ok(lines.includes("say hello") && lines.includes("Hello from Claude."));
    // The reader's Claude adapter reads the session under the controller's conversation id.
    const page = await client.observe();
    assert.ok(page.outcome === "admitted", JSON.stringify(page));
    assert.ok(JSON.stringify(page.result.page).includes("Hello from Claude."));
    // Sealed: nothing of the user's settings; the first request went to the stand-in only.
    assert.ok(run.fake.messages().length >= 1);
  });

  it(
    "pushes an approval to every client; only the controller's first answer counts",
    T,
    async (t) => {
      const run = await startClaude(t, { replies: [] });
      const marker = join(run.projectRoot, "allowed.txt");
      run.fake.enqueue(touch(marker), done);
      const a = await run.client();
      const b = await run.client();
      assert.equal((await a.client.takeover()).outcome, "admitted");
      const r = await a.client.prompt("make the marker");
      assert.ok(r.outcome === "admitted", JSON.stringify(r));
      await until(
        () => isSome(openApproval(a.dialogs)) && isSome(openApproval(b.dialogs)),
        "approval pushed",
        WAIT,
      );
      const d = openApproval(b.dialogs) as Dialog;
      assert.equal(d.tool?.name, "Bash");
      assert.deepEqual(d.tool?.input, {
        command: `touch ${marker}`,
        description: "create the marker file",
      });
      assert.equal(d.disabled, false);
      const fromObserver = await b.client.answer(d.id, "allow");
      assert.equal(fromObserver.outcome, "refused:controller", JSON.stringify(fromObserver));
      const first = await a.client.answer(d.id, "allow");
      assert.equal(first.outcome, "admitted", JSON.stringify(first));
      const second = await a.client.answer(d.id, "deny");
      assert.equal(second.outcome, "refused:dialog", JSON.stringify(second));
      await until(() => settled(a.events, r.receipt.id) !== null, "receipt settled", WAIT);
      assert.equal(settled(a.events, r.receipt.id), "completed");
      assert.ok(existsSync(marker), "the allowed tool ran");
      await until(() => isSome(endOf(b.dialogs, d.id)), "the end pushed to the observer", WAIT);
      const ended = endOf(b.dialogs, d.id) as Dialog;
      assert.equal(ended.state, "allowed");
      assert.equal(ended.answeredBy?.actor, "local-operator");
      assert.equal(ended.answeredBy?.connection, a.client.welcome?.connection);
    },
  );

  it(
    "denies a tool with the message, which the model is given; the tool never runs",
    T,
    async (t) => {
      const run = await startClaude(t, { replies: [] });
      const marker = join(run.projectRoot, "denied.txt");
      run.fake.enqueue(touch(marker), done);
      const a = await run.client();
      await a.client.takeover();
      const r = await a.client.prompt("make the marker");
      assert.ok(r.outcome === "admitted");
      await until(() => isSome(openApproval(a.dialogs)), "approval pushed", WAIT);
      const d = openApproval(a.dialogs) as Dialog;
      const answered = await a.client.answer(d.id, "deny", "not in this repository");
      assert.equal(answered.outcome, "admitted", JSON.stringify(answered));
      await until(() => settled(a.events, r.receipt.id) !== null, "receipt settled", WAIT);
      assert.equal(existsSync(marker), false, "the denied tool did not run");
      const second = JSON.stringify(run.fake.messages()[1]?.body ?? {});
      assert.ok(second.includes("not in this repository"), "the deny's message reached the model");
      assert.equal(endOf(a.dialogs, d.id)?.state, "denied");
    },
  );

  it(
    "refuses an answer from a connection that lost control after the approval opened",
    T,
    async (t) => {
      const run = await startClaude(t, { replies: [] });
      const marker = join(run.projectRoot, "lost.txt");
      run.fake.enqueue(touch(marker), done);
      const a = await run.client();
      const b = await run.client();
      await a.client.takeover();
      const r = await a.client.prompt("make the marker");
      assert.ok(r.outcome === "admitted");
      await until(() => isSome(openApproval(a.dialogs)), "approval pushed", WAIT);
      const d = openApproval(a.dialogs) as Dialog;
      assert.equal((await b.client.takeover()).outcome, "admitted");
      await until(
        () => a.client.state?.generation === b.client.state?.generation,
        "a saw it",
        WAIT,
      );
      assert.equal((await a.client.takeover()).outcome, "admitted", "a controls again");
      const late = await a.client.answer(d.id, "allow");
      assert.equal(late.outcome, "refused:controller", JSON.stringify(late));
      // Nothing was approved by the refusal, and nothing by time: the approval is still open.
      assert.equal(endOf(a.dialogs, d.id), undefined);
      assert.equal(existsSync(marker), false);
      // An interrupt denies it first, then ends the turn; an answer after that is refused.
      const stop = await a.client.interrupt();
      assert.equal(stop.outcome, "admitted", JSON.stringify(stop));
      await until(() => isSome(endOf(a.dialogs, d.id)), "the interrupt ended the approval", WAIT);
      assert.equal(endOf(a.dialogs, d.id)?.state, "denied");
      assert.equal((await a.client.answer(d.id, "allow")).outcome, "refused:dialog");
      await until(() => settled(a.events, r.receipt.id) !== null, "receipt settled", WAIT);
      assert.equal(settled(a.events, r.receipt.id), "interrupted");
      assert.equal(existsSync(marker), false, "the tool never ran");
    },
  );

  it("interrupts a slow reply; the receipt settles interrupted", T, async (t) => {
    const run = await startClaude(t, {
      replies: [
        { kind: "hold", content: [{ type: "text", text: "thinking slowly" }], tickMs: 100 },
      ],
    });
    const a = await run.client();
    await a.client.takeover();
    const r = await a.client.prompt("take your time");
    assert.ok(r.outcome === "admitted");
    await until(() => a.events.some((e) => e.event.kind === "text-delta"), "reply streams", WAIT);
    const stop = await a.client.interrupt();
    assert.equal(stop.outcome, "admitted", JSON.stringify(stop));
    await until(() => settled(a.events, r.receipt.id) !== null, "receipt settled", WAIT);
    assert.equal(settled(a.events, r.receipt.id), "interrupted");
    assert.equal(run.ctrl.state().admission, "open", "the interrupt lifted its own fence");
  });

  it("closes an open approval when the engine is force stopped, with a proof", T, async (t) => {
    const credentials = '{"claudeAiOauth":{"accessToken":"sk-ant-oat01-x"}}';
    const run = await startClaude(t, { replies: [], credentials });
    // The login file is placed for the engine in the seat's config folder, private.
    const placed = seatCredentials(run.projectRoot, "main");
    assert.equal(readFileSync(placed, "utf8"), credentials);
    assert.equal(statSync(placed).mode & 0o777, 0o600);
    run.fake.enqueue(touch(join(run.projectRoot, "never.txt")), done);
    const a = await run.client();
    await a.client.takeover();
    const r = await a.client.prompt("make the marker");
    assert.ok(r.outcome === "admitted");
    await until(() => isSome(openApproval(a.dialogs)), "approval pushed", WAIT);
    const d = openApproval(a.dialogs) as Dialog;
    const stopped = await a.client.confirmed("force-stop");
    assert.equal(stopped.outcome, "admitted", JSON.stringify(stopped));
    await until(() => isSome(endOf(a.dialogs, d.id)), "the approval closed", WAIT);
    assert.equal(endOf(a.dialogs, d.id)?.state, "closed");
    // Fenced for good: an allow is refused before anything else; a deny finds nothing open.
    assert.equal((await a.client.answer(d.id, "allow")).outcome, "refused:fenced");
    assert.equal((await a.client.answer(d.id, "deny")).outcome, "refused:dialog");
    const link = run.ctrl.execution?.link;
    assert.ok(link && link.exit !== null, "the engine is gone");
    // The credentials went with the engine, while the controller still runs.
    await until(() => !existsSync(placed), "the credentials removed at the engine's exit", WAIT);
  });
});
