// The real pinned Pi, sealed, through EngineLink, with a loopback fake model: no network, an
// environment of PATH and a scratch HOME only (issue 5 item 7, seed "Findings against pinned Pi").
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { EngineLink, type LinkRecord } from "../../src/control/engine/engine.ts";
import type { PiVersion } from "../../src/control/engine/pi/pi-pin.ts";
import {
  parseCommandList,
  parseSessionState,
  parseTree,
  type RpcResponse,
} from "../../src/control/engine/pi/rpc.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import {
  assistantEntry,
  headerLine,
  MODEL,
  REAL_PI_VERSIONS,
  type RealPi,
  readLines,
  realPiSpec,
  SESSION_ID,
  settledSession,
  startRealPi,
  userEntry,
} from "../helpers/real-pi.ts";
import { startFakePi } from "./fake-pi-harness.ts";

const T = { timeout: SLOW_TEST_MS };
const BUSY =
  "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";

function data(r: RpcResponse): unknown {
  assert.equal(r.success, true, JSON.stringify(r));
  return r.success ? r.data : undefined;
}

function ok<T>(p: { ok: true; value: T } | { ok: false; reason: string }): T {
  assert.ok(p.ok, p.ok ? "" : p.reason);
  return p.value;
}

function isDelta(r: LinkRecord, text: string): boolean {
  return (
    r.kind === "event" &&
    r.event.type === "message_update" &&
    r.event.assistantMessageEvent.type === "text_delta" &&
    String(r.event.assistantMessageEvent.delta).includes(text)
  );
}

/** Keys and JSON types, recursively; arrays by their first element. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? [] : [shape(value[0])];
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, shape(v)]),
    );
  }
  return value === null ? "null" : typeof value;
}

/**
 * What 1.6.0 adds to a run (issue 16): the system prompt as a message, streamed and persisted
 * before the user's; the prompt response's `data.disposition`. 0.85.1 has neither.
 */
const systemEvents = (v: PiVersion): string[] =>
  v === "0.85.1" ? [] : ["message_start:system", "message_end:system"];
const systemEntries = (v: PiVersion, prefix: string): string[] =>
  v === "0.85.1" ? [] : [`${prefix}system`];
const promptData = (v: PiVersion): unknown =>
  v === "0.85.1" ? undefined : { disposition: "started" };

function rawFile(pi: RealPi): string {
  return readFileSync(pi.scratch.sessionFile, "utf8");
}

for (const piVersion of REAL_PI_VERSIONS)
  describe(`real pinned Pi, sealed, idle (Pi ${piVersion})`, () => {
    // One Pi for the read-only smoke checks; every record is logged from spawn.
    const hooks: (() => Promise<void> | void)[] = [];
    let pi: RealPi;
    let before0 = "";
    let startedAt = 0;
    let readyMs = 0;

    before(async () => {
      startedAt = performance.now();
      pi = await startRealPi(
        { after: (fn) => hooks.push(fn as () => Promise<void>) },
        { piVersion },
      );
      before0 = rawFile(pi);
      await pi.link.ready({ timeoutMs: DEADLINE_MS });
      readyMs = performance.now() - startedAt;
    });
    after(async () => {
      for (const fn of hooks) await fn();
    });

    it("prints nothing before the response to its first command", T, () => {
      const first = pi.log.records[0];
      assert.ok(first?.kind === "response" && first.matched, pi.log.labels().join(", "));
      assert.equal(first.response.id, "req-1");
      assert.equal(first.response.command, "get_state");
      assert.equal(pi.log.records.length, 1);
      assert.equal(pi.link.stderr().totalBytes, 0, pi.link.stderr().text);
      assert.ok(readyMs < DEADLINE_MS, `ready in ${readyMs.toFixed(0)} ms`);
    });

    it("appends nothing at start to a session with messages and a thinking entry", T, () => {
      assert.equal(rawFile(pi), before0);
    });

    it(
      "answers get_state with the session file, the header id and the loopback model",
      T,
      async () => {
        const state = ok(parseSessionState(data(await pi.link.request({ type: "get_state" }))));
        assert.equal(state.sessionFile, pi.scratch.sessionFile);
        assert.equal(state.sessionId, SESSION_ID);
        assert.equal(state.isStreaming, false);
        assert.equal(state.thinkingLevel, "off");
        assert.equal(state.messageCount, 2);
        assert.equal(`${state.model?.provider}/${state.model?.id}`, MODEL);
      },
    );

    it("lists exactly the pinned commands in get_commands", T, async () => {
      const commands = ok(parseCommandList(data(await pi.link.request({ type: "get_commands" }))));
      // Pinned so a change in what sealed Pi exposes shows (seed: One inline extension command).
      // 1.6.0 no longer registers the inline /llama: under the seal it lists nothing.
      if (piVersion !== "0.85.1") {
        assert.deepEqual(commands, []);
        return;
      }
      assert.deepEqual(commands, [
        {
          name: "llama",
          description: "Manage llama.cpp router models",
          source: "extension",
          sourceInfo: {
            path: "<inline:llama.cpp>",
            source: "inline",
            scope: "temporary",
            origin: "top-level",
          },
        },
      ]);
    });

    it("emits an empty queue_update before clear_queue's response", T, async () => {
      const from = pi.log.records.length;
      assert.deepEqual(data(await pi.link.request({ type: "clear_queue" })), {
        steering: [],
        followUp: [],
      });
      assert.deepEqual(pi.log.labels(from), ["queue_update", "response:clear_queue"]);
      const update = pi.log.records[from];
      assert.ok(update?.kind === "event" && update.event.type === "queue_update");
      assert.deepEqual([update.event.steering, update.event.followUp], [[], []]);
    });

    it("answers abort when idle with success and no events", T, async () => {
      const from = pi.log.records.length;
      const r = await pi.link.request({ type: "abort" });
      assert.deepEqual(r, { type: "response", id: r.id, command: "abort", success: true });
      assert.deepEqual(pi.log.labels(from), ["response:abort"]);
    });

    it("answers smoke commands with the same fields and types as fake-pi", T, async (t) => {
      const fake = startFakePi(t, { model: MODEL, session: settledSession });
      await fake.link.ready();
      for (const type of ["get_state", "get_commands", "get_tree", "clear_queue"] as const) {
        const real = data(await pi.link.request({ type })) as Record<string, unknown>;
        const modelled = data(await fake.link.request({ type })) as Record<string, unknown>;
        // fake-pi models 0.85.1's /llama; 1.6.0's empty list is checked above.
        if (type === "get_commands" && piVersion !== "0.85.1") continue;
        // The model object echoes models.json (`compat` and the like), which the fake never reads.
        const { model: realModel, ...realRest } = real;
        const { model: fakeModel, ...fakeRest } = modelled;
        assert.deepEqual(shape(fakeRest), shape(realRest), type);
        assert.equal(fakeModel === undefined, realModel === undefined, `${type} model`);
        if (fakeModel === undefined) continue;
        const realModelShape = shape(realModel) as Record<string, unknown>;
        for (const [k, v] of Object.entries(shape(fakeModel) as Record<string, unknown>)) {
          assert.deepEqual(v, realModelShape[k], `${type} model.${k}`);
        }
      }
    });

    it("answers get_tree with the tree and the last entry as leafId", T, async () => {
      const tree = ok(parseTree(data(await pi.link.request({ type: "get_tree" }))));
      assert.equal(tree.leafId, "aaaa0003");
      assert.equal(tree.tree.length, 1);
      const chain: string[] = [];
      for (let n = tree.tree[0]; n; n = n.children[0]) chain.push(n.entry.id);
      assert.deepEqual(chain, ["aaaa0001", "aaaa0002", "aaaa0003"]);
      assert.equal(rawFile(pi), before0, "still nothing written");
    });
  });

for (const piVersion of REAL_PI_VERSIONS)
  describe(`real pinned Pi, sealed, running turns (Pi ${piVersion})`, () => {
    it(
      "runs a prompt whose reply calls the read tool, in the documented order, and appends four entries",
      T,
      async (t) => {
        const pi = await startRealPi(t, {
          piVersion,
          replies: [
            {
              kind: "tool-calls",
              calls: [{ id: "call_read_1", name: "read", arguments: { path: "hello.txt" } }],
            },
            { kind: "text", text: "The file says hello." },
          ],
        });
        writeFileSync(
          join(pi.scratch.projectRoot, "hello.txt"),
          "hello from the sealed workspace\n",
        );
        await pi.link.ready();
        const before = readLines(pi.scratch.sessionFile);
        const from = pi.log.records.length;
        assert.deepEqual(
          data(await pi.link.request({ type: "prompt", message: "read hello.txt" })),
          promptData(piVersion),
        );
        await pi.log.waitForEvent("agent_settled", { from });
        assert.deepEqual(pi.log.collapsed(from), [
          "response:prompt",
          "agent_start",
          "turn_start",
          ...systemEvents(piVersion),
          "message_start:user",
          "message_end:user",
          "message_start:assistant",
          "message_update",
          "message_end:assistant",
          "tool_execution_start",
          "tool_execution_end",
          "message_start:toolResult",
          "message_end:toolResult",
          "turn_end",
          "turn_start",
          "message_start:assistant",
          "message_update",
          "message_end:assistant",
          "turn_end",
          "agent_end",
          "agent_settled",
        ]);
        const toolEnd = pi.log.records.find(
          (r) => r.kind === "event" && r.event.type === "tool_execution_end",
        );
        assert.ok(toolEnd?.kind === "event" && toolEnd.event.type === "tool_execution_end");
        assert.equal(toolEnd.event.isError, false);
        assert.deepEqual(toolEnd.event.result, {
          content: [{ type: "text", text: "hello from the sealed workspace\n" }],
          // 1.6.0's read tool adds the text as structuredContent too.
          ...(piVersion === "0.85.1"
            ? {}
            : { structuredContent: "hello from the sealed workspace\n" }),
        });

        const added = readLines(pi.scratch.sessionFile).slice(before.length);
        const system = systemEntries(piVersion, "message/");
        const summary = added.map((e) => {
          const m = e.message as Record<string, unknown>;
          return `${e.type}/${m.role}${m.stopReason ? `:${m.stopReason}` : ""}`;
        });
        assert.deepEqual(summary, [
          ...system,
          "message/user",
          "message/assistant:toolUse",
          "message/toolResult",
          "message/assistant:stop",
        ]);
        let parent = before.at(-1)?.id;
        for (const e of added) {
          assert.equal(e.parentId, parent, "each entry is a child of the one before");
          assert.match(String(e.id), /^[0-9a-f]{8}$/);
          parent = e.id;
        }
        const final = added[3 + system.length]?.message as Record<string, unknown>;
        assert.deepEqual(final.content, [{ type: "text", text: "The file says hello." }]);

        const requests = pi.model.requests;
        assert.equal(requests.length, 2);
        const body = requests[1]?.body as {
          messages: { role: string; content: unknown }[];
          stream: boolean;
        };
        assert.equal(body.stream, true);
        assert.ok(
          body.messages.some(
            (m) => m.role === "tool" && JSON.stringify(m.content).includes("sealed workspace"),
          ),
          "the tool result went back to the model",
        );
        assert.equal(requests[0]?.headers.authorization, "Bearer dummy");
      },
    );

    it(
      "aborts a slow stream: aborted message persisted, abort answered after agent_settled",
      T,
      async (t) => {
        const pi = await startRealPi(t, { piVersion, replies: [{ kind: "slow", tickMs: 25 }] });
        await pi.link.ready();
        const from = pi.log.records.length;
        await pi.link.request({ type: "prompt", message: "count slowly" });
        await pi.log.waitFor((r) => isDelta(r, "tick 2"), { from });
        const abortAt = pi.log.records.length;
        const sent = performance.now();
        const r = await pi.link.request({ type: "abort" });
        const abortMs = performance.now() - sent;
        assert.equal(r.success, true);
        assert.deepEqual(
          pi.log.collapsed(abortAt).filter((l) => l !== "message_update"),
          ["message_end:assistant", "turn_end", "agent_end", "agent_settled", "response:abort"],
        );
        const end = pi.log.records
          .slice(abortAt)
          .find((x) => x.kind === "event" && x.event.type === "agent_end");
        assert.ok(end?.kind === "event" && end.event.type === "agent_end");
        assert.equal(end.event.willRetry, false);
        const last = readLines(pi.scratch.sessionFile).at(-1);
        const message = last?.message as Record<string, unknown>;
        assert.equal(message.role, "assistant");
        assert.equal(message.stopReason, "aborted");
        assert.equal(message.errorMessage, "Request was aborted");
        assert.match(JSON.stringify(message.content), /tick 0 tick 1 tick 2 /);
        // The cut reply above is the proof; the time is reported, bounded only against a hang
        // (a busy machine stretches any wall-clock figure).
        t.diagnostic(`abort answered in ${abortMs.toFixed(0)} ms`);
        assert.ok(abortMs < DEADLINE_MS, `abort answered in ${abortMs.toFixed(0)} ms`);
      },
    );

    it(
      "queues a steer and a follow-up while streaming, and clear_queue returns both",
      T,
      async (t) => {
        const pi = await startRealPi(t, { piVersion, replies: [{ kind: "slow", tickMs: 25 }] });
        await pi.link.ready();
        const from = pi.log.records.length;
        await pi.link.request({ type: "prompt", message: "count slowly" });
        await pi.log.waitFor((r) => isDelta(r, "tick 0"), { from });
        const busy = await pi.link.request({ type: "prompt", message: "no behavior" });
        assert.equal(busy.success ? "" : busy.error, BUSY);
        const q = pi.log.records.length;
        const steer = await pi.link.request({
          type: "prompt",
          message: "queued steer",
          streamingBehavior: "steer",
        });
        const follow = await pi.link.request({
          type: "prompt",
          message: "queued follow-up",
          streamingBehavior: "followUp",
        });
        assert.equal(steer.success && follow.success, true);
        const cleared = await pi.link.request({ type: "clear_queue" });
        assert.deepEqual(data(cleared), {
          steering: ["queued steer"],
          followUp: ["queued follow-up"],
        });
        const queueOrder = pi.log
          .labels(q)
          .filter((l) => l !== "message_update")
          .slice(0, 6);
        assert.deepEqual(queueOrder, [
          "queue_update",
          "response:prompt",
          "queue_update",
          "response:prompt",
          "queue_update",
          "response:clear_queue",
        ]);
        const updates = pi.log.records
          .slice(q)
          .flatMap((r) =>
            r.kind === "event" && r.event.type === "queue_update"
              ? [[r.event.steering, r.event.followUp]]
              : [],
          );
        assert.deepEqual(updates, [
          [["queued steer"], []],
          [["queued steer"], ["queued follow-up"]],
          [[], []],
        ]);
        await pi.link.request({ type: "abort" });
        const text = rawFile(pi);
        assert.ok(
          !text.includes("queued steer") && !text.includes("queued follow-up"),
          "never persisted",
        );
      },
    );
    it("retries once after an HTTP 500, keeping the error message in the branch", T, async (t) => {
      const pi = await startRealPi(t, {
        piVersion,
        replies: [
          { kind: "error", status: 500 },
          { kind: "text", text: "second time lucky" },
        ],
      });
      await pi.link.ready();
      const before = readLines(pi.scratch.sessionFile).length;
      const from = pi.log.records.length;
      await pi.link.request({ type: "prompt", message: "try" });
      await pi.log.waitForEvent("auto_retry_end", { from });
      await pi.log.waitForEvent("agent_settled", { from });
      const labels = pi.log.collapsed(from).filter((l) => l !== "message_update");
      const expected = [
        "response:prompt",
        "agent_start",
        "turn_start",
        ...systemEvents(piVersion),
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
        "auto_retry_start",
        // 1.6.0 reports the error message's entry before the retry's run.
        ...(piVersion === "0.85.1" ? [] : ["entry_appended"]),
        "agent_start",
        "turn_start",
      ];
      assert.deepEqual(labels.slice(0, expected.length), expected);
      const start = pi.log.records.find(
        (r) => r.kind === "event" && r.event.type === "auto_retry_start",
      );
      assert.ok(start?.kind === "event" && start.event.type === "auto_retry_start");
      assert.deepEqual([start.event.attempt, start.event.delayMs], [1, 50]);
      const ends = pi.log.records.filter((r) => r.kind === "event" && r.event.type === "agent_end");
      assert.deepEqual(
        ends.map((r) => r.kind === "event" && r.event.type === "agent_end" && r.event.willRetry),
        [true, false],
      );
      const added = readLines(pi.scratch.sessionFile)
        .slice(before)
        .map((e) => {
          if (e.type !== "message") return String(e.type);
          const m = e.message as Record<string, unknown>;
          return `${m.role}:${m.stopReason ?? ""}`;
        });
      assert.deepEqual(added, [
        ...(piVersion === "0.85.1" ? [] : ["system:"]),
        "user:",
        "assistant:error",
        // 1.6.0 appends a context_edit entry before the retry (a new entry type of format v3).
        ...(piVersion === "0.85.1" ? [] : ["context_edit"]),
        "assistant:stop",
      ]);
      assert.equal(pi.model.requests.length, 2);
    });
  });

for (const piVersion of REAL_PI_VERSIONS)
  describe(`real pinned Pi, sealed, startup appends and exits (Pi ${piVersion})`, () => {
    it(
      "appends thinking_level_change to a session with messages but none on its branch (A1)",
      T,
      async (t) => {
        const pi = await startRealPi(t, {
          piVersion,
          session: (cwd) => [
            headerLine(cwd),
            userEntry("aaaa0001", null, "hi", 1),
            assistantEntry("aaaa0002", "aaaa0001", "hello", 2),
          ],
        });
        const before = rawFile(pi);
        await pi.link.ready();
        const after = rawFile(pi);
        assert.ok(after.startsWith(before), "an append, nothing rewritten");
        const added = readLines(pi.scratch.sessionFile).slice(3);
        assert.equal(added.length, 1);
        assert.deepEqual(
          { type: added[0]?.type, parentId: added[0]?.parentId, level: added[0]?.thinkingLevel },
          { type: "thinking_level_change", parentId: "aaaa0002", level: "off" },
        );
        const tree = ok(parseTree(data(await pi.link.request({ type: "get_tree" }))));
        assert.equal(tree.leafId, added[0]?.id, "the appended entry is the new leaf");
      },
    );

    it(
      "appends only thinking_level_change to a header-only session with no model (A2)",
      T,
      async (t) => {
        const pi = await startRealPi(t, {
          piVersion,
          session: (cwd) => [headerLine(cwd)],
          model: null,
          agentDir: false,
        });
        await pi.link.ready();
        const lines = readLines(pi.scratch.sessionFile);
        assert.deepEqual(
          lines.map((l) => [l.type, l.parentId]),
          [
            ["session", undefined],
            ["thinking_level_change", null],
          ],
        );
        const state = ok(parseSessionState(data(await pi.link.request({ type: "get_state" }))));
        assert.equal(state.model?.id, "unknown", "no model: Pi's placeholder, never null");
        const prompt = await pi.link.request({ type: "prompt", message: "hi" });
        assert.match(
          prompt.success ? "" : prompt.error,
          /^No API key found for the selected model\./,
        );
      },
    );

    it(
      "appends model_change and thinking_level_change to a header-only session with --model, at every start (B2, B4)",
      T,
      async (t) => {
        const pi = await startRealPi(t, { piVersion, session: (cwd) => [headerLine(cwd)] });
        await pi.link.ready();
        const once = readLines(pi.scratch.sessionFile);
        assert.deepEqual(
          once.map((l) => l.type),
          ["session", "model_change", "thinking_level_change"],
        );
        assert.deepEqual(
          [once[1]?.provider, once[1]?.modelId, once[1]?.parentId, once[2]?.parentId],
          ["loopback", "fake-1", null, once[1]?.id],
        );
        assert.deepEqual(await pi.link.close(), { exitCode: 0, signal: null });
        const again = EngineLink.start(realPiSpec(pi.scratch, { piVersion }));
        t.after(() => again.close());
        await again.ready();
        const twice = readLines(pi.scratch.sessionFile);
        assert.deepEqual(
          twice.slice(3).map((l) => [l.type, l.parentId]),
          [
            ["model_change", once[2]?.id],
            ["thinking_level_change", twice[3]?.id],
          ],
          "still no messages, so the pair is appended again",
        );
        await again.close();
      },
    );

    it("exits 0 soon after stdin EOF", T, async (t) => {
      const pi = await startRealPi(t, { piVersion });
      await pi.link.ready();
      const sent = performance.now();
      pi.link.endInput();
      assert.deepEqual(await pi.link.exited, { exitCode: 0, signal: null });
      const ms = performance.now() - sent;
      // Exit 0 and no signal is the proof; the time is reported, bounded only against a hang.
      t.diagnostic(`exited ${ms.toFixed(0)} ms after EOF`);
      assert.ok(ms < DEADLINE_MS, `exited ${ms.toFixed(0)} ms after EOF`);
    });

    it("exits 143 on SIGTERM", T, async (t) => {
      const pi = await startRealPi(t, { piVersion });
      await pi.link.ready();
      assert.equal(pi.link.kill("SIGTERM"), true);
      assert.deepEqual(await pi.link.exited, { exitCode: 143, signal: null });
    });
  });
