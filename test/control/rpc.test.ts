import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  parseCommandList,
  parseEntries,
  parseIncoming,
  parseQueue,
  parseResponse,
  parseSessionState,
  parseTree,
  type RpcEvent,
  textDelta,
} from "../../src/control/engine/pi/rpc.ts";

function event(value: unknown): RpcEvent {
  const r = parseIncoming(value);
  assert.ok(r.ok, r.ok ? "" : r.reason);
  assert.equal(r.value.kind, "event");
  return (r.value as { event: RpcEvent }).event;
}

function refused(value: unknown): string {
  const r = parseIncoming(value);
  assert.equal(r.ok, false, JSON.stringify(value));
  return r.ok ? "" : r.reason;
}

const user = { role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 };

describe("rpc wire types", () => {
  it("parses every event pinned Pi emits (research §5) into its union member", () => {
    const samples: unknown[] = [
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "agent_settled" },
      { type: "agent_end", messages: [user], willRetry: false },
      { type: "turn_end", message: user, toolResults: [] },
      { type: "message_start", message: user },
      { type: "message_end", message: user },
      {
        type: "message_update",
        usage: { input: 1 },
        assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "he" },
      },
      { type: "tool_execution_start", toolCallId: "c", toolName: "read", args: { path: "x" } },
      {
        type: "tool_execution_update",
        toolCallId: "c",
        toolName: "bash",
        args: {},
        partialResult: {},
      },
      { type: "tool_execution_end", toolCallId: "c", toolName: "read", result: {}, isError: false },
      { type: "queue_update", steering: ["s"], followUp: [] },
      { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 50, errorMessage: "500" },
      { type: "auto_retry_end", success: true, attempt: 1 },
      { type: "compaction_start", reason: "manual" },
      { type: "compaction_end", reason: "manual", result: {}, aborted: false, willRetry: false },
      { type: "session_info_changed", name: "n" },
      { type: "session_info_changed" },
      { type: "thinking_level_changed", level: "off" },
      { type: "entry_appended", entry: { type: "label", id: "abcd0001" } },
      { type: "extension_error", extensionPath: "p", event: "e", error: "boom" },
      { type: "bash_execution_update", id: "req-1", delta: "out" },
    ];
    for (const sample of samples) {
      const e = event(sample);
      assert.equal(e.type, (sample as { type: string }).type);
      assert.deepEqual(e, sample, "nothing dropped or added");
    }
  });

  it("keeps an unknown event type whole as other", () => {
    const raw = { type: "summarization_retry_finished", extra: [1] };
    assert.deepEqual(event(raw), { type: "other", eventType: raw.type, raw });
  });

  it("refuses a known event whose fields have the wrong types", () => {
    assert.match(refused({ type: "message_end" }), /message is not an object/);
    assert.match(refused({ type: "message_end", message: { content: [] } }), /role/);
    assert.match(refused({ type: "agent_end", messages: [] }), /willRetry/);
    assert.match(refused({ type: "queue_update", steering: [1], followUp: [] }), /non-string/);
    assert.match(refused({ type: "auto_retry_start", attempt: "1" }), /attempt/);
    assert.match(refused({ noType: true }), /type is not a string/);
    assert.match(refused([1]), /not an object/);
    assert.match(refused("a JSON string"), /not an object/);
  });

  it("marks dialog requests blocking and keeps fire-and-forget ones raw", () => {
    const select = event({
      type: "extension_ui_request",
      id: "u1",
      method: "select",
      title: "Pick",
      options: ["A", "B"],
      timeout: 1000,
    });
    assert.ok(select.type === "extension_ui_request");
    assert.deepEqual(
      [select.blocking, select.title, select.options, select.timeout],
      [true, "Pick", ["A", "B"], 1000],
    );
    const notify = event({
      type: "extension_ui_request",
      id: "u2",
      method: "notify",
      message: "hi",
      notifyType: "warning",
    });
    assert.ok(notify.type === "extension_ui_request");
    assert.equal(notify.blocking, false);
    assert.equal(notify.raw.notifyType, "warning");
    assert.match(
      refused({ type: "extension_ui_request", id: "u3", method: "select", title: "t" }),
      /options/,
    );
    assert.match(
      refused({ type: "extension_ui_request", id: "u4", method: "confirm", title: "t" }),
      /message/,
    );
  });

  it("parses responses with and without id, command and data", () => {
    const cases: unknown[] = [
      { id: "req-1", type: "response", command: "abort", success: true },
      { id: "req-2", type: "response", command: "get_tree", success: true, data: { tree: [] } },
      { type: "response", command: "parse", success: false, error: "Failed to parse command: x" },
      { type: "response", success: false, error: "Unknown command: undefined" },
    ];
    for (const c of cases) {
      const r = parseResponse(c);
      assert.ok(r.ok);
      assert.deepEqual(r.value, c);
    }
    assert.equal(parseResponse({ type: "response", success: false }).ok, false, "error required");
    assert.equal(parseResponse({ type: "response", success: "yes" }).ok, false);
    assert.equal(parseResponse({ type: "agent_start" }).ok, false);
  });

  it("parses get_state, get_commands, get_entries and queue data", () => {
    const state = parseSessionState({
      model: { id: "unknown" },
      thinkingLevel: "off",
      isStreaming: false,
      isCompacting: false,
      steeringMode: "one-at-a-time",
      followUpMode: "one-at-a-time",
      sessionFile: "/s.jsonl",
      sessionId: "01a00000-0000-7000-8000-000000000001",
      autoCompactionEnabled: true,
      messageCount: 2,
      pendingMessageCount: 0,
    });
    assert.ok(
      state.ok && state.value.sessionFile === "/s.jsonl" && !("sessionName" in state.value),
    );
    assert.equal(parseSessionState({ sessionId: 1 }).ok, false);
    const commands = parseCommandList({
      commands: [{ name: "llama", source: "extension", sourceInfo: { source: "inline" } }],
    });
    assert.ok(commands.ok && commands.value[0]?.name === "llama");
    assert.equal(parseCommandList({ commands: [{ name: "x" }] }).ok, false);
    const entries = parseEntries({ entries: [{ type: "message", id: "a" }], leafId: "a" });
    assert.ok(entries.ok && entries.value.leafId === "a");
    assert.equal(parseEntries({ entries: [{ type: "message" }], leafId: null }).ok, false);
    assert.deepEqual(parseQueue({ steering: [], followUp: ["f"] }), {
      ok: true,
      value: { steering: [], followUp: ["f"] },
    });
  });

  it("parses a tree far deeper than Pi can write, without recursion, keeping sibling order", () => {
    let node: unknown = { entry: { type: "message", id: "leaf" }, children: [] };
    for (let i = 0; i < 20_000; i++)
      node = { entry: { type: "message", id: `e${i}` }, children: [node] };
    const deep = parseTree({ tree: [node], leafId: "leaf" });
    assert.ok(deep.ok);
    let depth = 0;
    for (let n = deep.value.tree[0]; n; n = n.children[0]) depth++;
    assert.equal(depth, 20_001);
    const wide = parseTree({
      tree: [
        {
          entry: { type: "message", id: "r" },
          children: ["a", "b", "c"].map((id) => ({ entry: { type: "message", id }, children: [] })),
        },
      ],
      leafId: null,
    });
    assert.ok(wide.ok);
    assert.deepEqual(
      wide.value.tree[0]?.children.map((c) => c.entry.id),
      ["a", "b", "c"],
    );
    assert.equal(parseTree({ tree: [{ entry: { id: "x" } }], leafId: null }).ok, false);
  });

  it("reads a text delta and nothing else", () => {
    assert.equal(textDelta({ type: "text_delta", delta: "x" }), "x");
    assert.equal(textDelta({ type: "toolcall_delta", delta: "{" }), null);
  });
});
