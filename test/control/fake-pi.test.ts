import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { EngineLink, type LinkRecord } from "../../src/control/engine/engine.ts";
import {
  parseCommandList,
  parseEntries,
  parseSessionState,
  parseTree,
  type RpcResponse,
} from "../../src/control/engine/pi/rpc.ts";
import {
  FAKE_SESSION_ID,
  fakeHeader,
  fakePiSpec,
  holdPoint,
  startFakePi,
} from "./fake-pi-harness.ts";

type Line = Record<string, unknown>;

function lines(file: string): Line[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
}

function data(r: RpcResponse): unknown {
  assert.equal(r.success, true, JSON.stringify(r));
  return r.success ? r.data : undefined;
}

function ok<T>(p: { ok: true; value: T } | { ok: false; reason: string }): T {
  assert.ok(p.ok, p.ok ? "" : p.reason);
  return p.value;
}

function message(id: string, parentId: string | null, role: string, text: string, n: number): Line {
  return {
    type: "message",
    id,
    parentId,
    timestamp: `2026-01-01T00:00:0${n}.000Z`,
    message: { role, content: [{ type: "text", text }], timestamp: n },
  };
}

function withMessages(cwd: string): Line[] {
  return [
    fakeHeader(cwd) as Line,
    message("aaaa0001", null, "user", "hi", 1),
    message("aaaa0002", "aaaa0001", "assistant", "hello", 2),
  ];
}

function isMessageEnd(r: LinkRecord, role: string): boolean {
  return r.kind === "event" && r.event.type === "message_end" && r.event.message.role === role;
}

describe("fake-pi", () => {
  it("prints nothing before its first response, and get_state names the session", async (t) => {
    const { link, log, project } = startFakePi(t);
    const state = ok(parseSessionState(data(await link.ready())));
    assert.equal(log.records[0]?.kind, "response", "the first record is the response");
    assert.equal(state.sessionFile, project.sessionFile);
    assert.equal(state.sessionId, FAKE_SESSION_ID);
    assert.equal(state.isStreaming, false);
    assert.equal(state.model?.id, "echo");
  });

  it("appends a thinking entry at start to a session with messages but none on its branch", async (t) => {
    const { link, project } = startFakePi(t, { session: withMessages });
    await link.ready();
    const after = lines(project.sessionFile);
    assert.equal(after.length, 4);
    assert.deepEqual(
      { type: after[3]?.type, parentId: after[3]?.parentId, level: after[3]?.thinkingLevel },
      { type: "thinking_level_change", parentId: "aaaa0002", level: "off" },
    );
    assert.match(String(after[3]?.id), /^[0-9a-f]{8}$/);
    const tree = ok(parseTree(data(await link.request({ type: "get_tree" }))));
    assert.equal(tree.leafId, after[3]?.id, "the appended entry is the new leaf");
  });

  it("appends nothing to a session with messages and a thinking entry", async (t) => {
    const session = (cwd: string) => [
      ...withMessages(cwd),
      {
        type: "thinking_level_change",
        id: "aaaa0003",
        parentId: "aaaa0002",
        timestamp: "2026-01-01T00:00:03.000Z",
        thinkingLevel: "off",
      },
    ];
    const { link, project } = startFakePi(t, { session });
    await link.ready();
    assert.equal(lines(project.sessionFile).length, 4);
  });

  it("appends thinking_level_change, plus model_change with a model, to a message-less session at every start", async (t) => {
    const bare = startFakePi(t, { model: null });
    await bare.link.ready();
    assert.deepEqual(
      lines(bare.project.sessionFile).map((l) => [l.type, l.parentId]),
      [
        ["session", undefined],
        ["thinking_level_change", null],
      ],
    );
    const withModel = startFakePi(t);
    await withModel.link.ready();
    const once = lines(withModel.project.sessionFile);
    assert.deepEqual(
      once.map((l) => l.type),
      ["session", "model_change", "thinking_level_change"],
    );
    assert.deepEqual([once[1]?.provider, once[1]?.modelId], ["fake", "echo"]);
    await withModel.link.close();
    const again = EngineLink.start(fakePiSpec(withModel.project));
    t.after(() => again.close());
    await again.ready();
    assert.deepEqual(
      lines(withModel.project.sessionFile).map((l) => l.type),
      ["session", "model_change", "thinking_level_change", "model_change", "thinking_level_change"],
      "a second start appends the pair again",
    );
    await again.close();
  });

  it("creates a brand-new session file only with its first assistant message (A3)", async (t) => {
    const { link, log, project } = startFakePi(t, { session: null });
    const state = ok(parseSessionState(data(await link.ready())));
    assert.equal(state.sessionFile, project.sessionFile);
    assert.equal(existsSync(project.sessionFile), false, "not created at start");
    const from = log.records.length;
    await link.request({ type: "prompt", message: "first" });
    await log.waitForEvent("agent_settled", { from });
    assert.deepEqual(
      lines(project.sessionFile).map((l) => l.type),
      ["session", "model_change", "thinking_level_change", "message", "message"],
    );
  });

  it("lists the llama command, the tree with its leaf, and entries since an id", async (t) => {
    const { link, project } = startFakePi(t, { session: withMessages });
    const commands = ok(parseCommandList(data(await link.request({ type: "get_commands" }))));
    assert.deepEqual(
      commands.map((c) => [c.name, c.source, c.sourceInfo.source]),
      [["llama", "extension", "inline"]],
    );
    const tree = ok(parseTree(data(await link.request({ type: "get_tree" }))));
    assert.equal(tree.tree.length, 1);
    assert.equal(tree.tree[0]?.entry.id, "aaaa0001");
    assert.equal(tree.tree[0]?.children[0]?.entry.id, "aaaa0002");
    const since = ok(
      parseEntries(data(await link.request({ type: "get_entries", since: "aaaa0001" }))),
    );
    assert.deepEqual(
      since.entries.map((e) => e.id),
      lines(project.sessionFile)
        .slice(2)
        .map((l) => l.id),
    );
    const missing = await link.request({ type: "get_entries", since: "nope" });
    assert.deepEqual(missing.success ? null : missing.error, "Entry not found: nope");
  });

  it("runs a prompt in Pi's order and persists each message on its message_end", async (t) => {
    const { link, log, project } = startFakePi(t);
    await link.ready();
    const from = log.records.length;
    const before = lines(project.sessionFile).length;
    assert.equal(data(await link.request({ type: "prompt", message: "hi there" })), undefined);
    await log.waitForEvent("agent_settled", { from });
    assert.deepEqual(log.collapsed(from), [
      "response:prompt",
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
      "agent_settled",
    ]);
    const added = lines(project.sessionFile).slice(before);
    assert.deepEqual(
      added.map((l) => (l.message as Line).role),
      ["user", "assistant"],
    );
    assert.deepEqual((added[1]?.message as Line | undefined)?.content, [
      { type: "text", text: "echo: hi there" },
    ]);
  });

  it("refuses a prompt while streaming without streamingBehavior, queues with it, and clear_queue returns both", async (t) => {
    const { link, log } = startFakePi(t, { script: { tickMs: 10 } });
    await link.ready();
    const from = log.records.length;
    await link.request({ type: "prompt", message: "go slow" });
    await log.waitForEvent("message_update", { from });
    const busy = await link.request({ type: "prompt", message: "again" });
    assert.equal(busy.success ? "" : busy.error, BUSY);
    const q = log.records.length;
    assert.equal(
      (await link.request({ type: "prompt", message: "s1", streamingBehavior: "steer" })).success,
      true,
    );
    const f = await link.request({ type: "prompt", message: "f1", streamingBehavior: "followUp" });
    assert.equal(f.success, true);
    const cleared = await link.request({ type: "clear_queue" });
    assert.deepEqual(data(cleared), { steering: ["s1"], followUp: ["f1"] });
    const queueRecords = log.records
      .slice(q)
      .filter(
        (r) => r.kind === "response" || (r.kind === "event" && r.event.type === "queue_update"),
      );
    assert.deepEqual(
      queueRecords.map((r) =>
        r.kind === "event" && r.event.type === "queue_update"
          ? [r.event.steering, r.event.followUp]
          : `response:${r.kind === "response" ? r.response.command : ""}`,
      ),
      [
        [["s1"], []],
        "response:prompt",
        [["s1"], ["f1"]],
        "response:prompt",
        [[], []],
        "response:clear_queue",
      ],
    );
    await link.request({ type: "abort" });
  });

  it("delivers a queued steer as the next turn, its queue_update before the user message", async (t) => {
    const { link, log, project } = startFakePi(t, { script: { holds: ["assistant-end"] } });
    await link.ready();
    const held = holdPoint(project, "assistant-end");
    const from = log.records.length;
    await link.request({ type: "prompt", message: "first" });
    await held.reached;
    await link.request({ type: "prompt", message: "steered", streamingBehavior: "steer" });
    const second = holdPoint(project, "assistant-end", 2);
    held.release();
    await second.reached;
    second.release();
    await log.waitForEvent("agent_settled", { from });
    const labels = log.collapsed(from);
    const turnEnd = labels.indexOf("turn_end");
    assert.deepEqual(labels.slice(turnEnd, turnEnd + 5), [
      "turn_end",
      "turn_start",
      "queue_update",
      "message_start:user",
      "message_end:user",
    ]);
  });

  it("answers abort only after the aborted run settled, and persists the aborted message", async (t) => {
    const { link, log, project } = startFakePi(t, { script: { tickMs: 5 } });
    await link.ready();
    const from = log.records.length;
    await link.request({ type: "prompt", message: "go slow" });
    await log.waitFor(
      (r) =>
        r.kind === "event" &&
        r.event.type === "message_update" &&
        JSON.stringify(r.event).includes("tick 2"),
      { from },
    );
    const abort = log.records.length;
    assert.equal((await link.request({ type: "abort" })).success, true);
    assert.deepEqual(
      log.collapsed(abort).filter((l) => l !== "message_update"),
      ["message_end:assistant", "turn_end", "agent_end", "agent_settled", "response:abort"],
    );
    const last = lines(project.sessionFile).at(-1)?.message as Line;
    assert.equal(last.stopReason, "aborted");
    assert.equal(last.errorMessage, "Request was aborted");
    assert.match(JSON.stringify(last.content), /tick 0 tick 1 tick 2/);
    assert.ok(log.records.slice(abort).some((r) => isMessageEnd(r, "assistant")));
    assert.equal((await link.request({ type: "abort" })).success, true, "abort when idle");
  });

  it("raises a dialog the client answers, and cancels it on abort", async (t) => {
    const { link, log } = startFakePi(t);
    await link.ready();
    let from = log.records.length;
    await link.request({ type: "prompt", message: "dialog:select please" });
    const req = await log.waitForEvent("extension_ui_request", { from });
    assert.ok(req.kind === "event" && req.event.type === "extension_ui_request");
    assert.equal(req.event.blocking, true);
    assert.equal(req.event.method, "select");
    assert.deepEqual(req.event.options, ["Allow", "Block"]);
    assert.equal(
      link.send({ type: "extension_ui_response", id: req.event.id, value: "Block" }),
      true,
    );
    const end = await log.waitFor((r) => isMessageEnd(r, "assistant"), { from });
    assert.match(JSON.stringify(end), /dialog select: .*Block/);
    await log.waitForEvent("agent_settled", { from });

    from = log.records.length;
    await link.request({ type: "prompt", message: "dialog:confirm" });
    const confirm = await log.waitForEvent("extension_ui_request", { from });
    assert.ok(confirm.kind === "event" && confirm.event.type === "extension_ui_request");
    assert.equal(confirm.event.message, "Go ahead?");
    await link.request({ type: "abort" });
    const aborted = log.records.slice(from).find((r) => isMessageEnd(r, "assistant"));
    assert.ok(aborted?.kind === "event" && aborted.event.type === "message_end");
    assert.equal(aborted.event.message.stopReason, "aborted");
  });

  it("lets a test pin event order at hold points", async (t) => {
    const { link, log, project } = startFakePi(t, {
      script: { holds: ["settled", "clear-queue-response"] },
    });
    await link.ready();
    const settled = holdPoint(project, "settled");
    const from = log.records.length;
    await link.request({ type: "prompt", message: "x" });
    await settled.reached;
    assert.equal(log.labels(from).at(-1), "agent_end");
    const state = ok(parseSessionState(data(await link.request({ type: "get_state" }))));
    assert.equal(state.isStreaming, true, "still streaming until agent_settled");
    const clearHeld = holdPoint(project, "clear-queue-response");
    const clear = link.request({ type: "clear_queue" });
    await clearHeld.reached;
    await log.waitForEvent("queue_update", { from });
    assert.equal(
      log.labels(from).at(-1),
      "queue_update",
      "queue_update is out, the response is held",
    );
    clearHeld.release();
    await clear;
    settled.release();
    await log.waitForEvent("agent_settled", { from });
  });

  it("refuses a prompt with no model and answers /llama with a notify, as pinned Pi does", async (t) => {
    const { link, log } = startFakePi(t, { model: null });
    const r = await link.request({ type: "prompt", message: "hi" });
    assert.match(r.success ? "" : r.error, /^No API key found for the selected model\./);
    const llama = await link.request({ type: "prompt", message: "/llama" });
    assert.equal(llama.success, true);
    const notify = log.records.find(
      (x) => x.kind === "event" && x.event.type === "extension_ui_request",
    );
    assert.ok(notify?.kind === "event" && notify.event.type === "extension_ui_request");
    assert.equal(notify.event.blocking, false);
    assert.equal(notify.event.message, "/llama is available in interactive mode");
    const messages = data(await link.request({ type: "get_messages" }));
    assert.deepEqual(messages, { messages: [] });
  });

  it("exits 0 on stdin EOF, 143 on SIGTERM, and 1 when the header cwd is missing", async (t) => {
    const a = startFakePi(t);
    await a.link.ready();
    a.link.endInput();
    assert.deepEqual(await a.link.exited, { exitCode: 0, signal: null });
    const b = startFakePi(t);
    await b.link.ready();
    b.link.kill("SIGTERM");
    assert.deepEqual(await b.link.exited, { exitCode: 143, signal: null });
    const c = startFakePi(t, { session: [fakeHeader("/nonexistent/dir")] });
    assert.deepEqual(await c.link.exited, { exitCode: 1, signal: null });
    assert.match(c.link.stderr().text, /Stored session working directory does not exist/);
    const d = startFakePi(t, { script: { startupExit: { code: 3, stderr: "scripted failure" } } });
    await assert.rejects(d.link.ready(), /code 3.*scripted failure/s);
  });
});

const BUSY =
  "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";
