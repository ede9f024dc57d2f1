// The oracle for the Claude Code adapter, as Pi's getBranch is for Pi's: the real pinned Claude
// Code (sealed, offline, against the loopback stand-in) writes the sessions, and resumed it sends
// the model the history it read from the file. Every prompt, reply, tool call and result of the
// reader's default branch must be that request's messages, system reminders aside. Also: the
// files land where the reader's cwd encoding says, and a subagent's transcript opens from its
// Agent call.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Part } from "../../src/protocol/chat-01.ts";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import {
  type AnthropicReply,
  firstPromptOf,
  type RecordedRequest,
} from "../helpers/fake-anthropic.ts";
import { checkedReader, readAll, rootsOf } from "../helpers/reader.ts";
import { type ClaudeProcess, filesUnder, realClaude } from "../helpers/real-claude.ts";

/** A message as the oracle compares it: role and blocks with only what a person is shown. */
type Msg = { role: "user" | "assistant"; content: Blk[] };
type Blk =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string }
  | { type: "redacted_thinking" }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error: boolean };

const REMINDER = /\s*<system-reminder>[\s\S]*?<\/system-reminder>\s*/g;

/** Claude Code's wrapping of what a person typed or saw, undone (the reader shows it unwrapped). */
function unwrap(text: string): string | null {
  const t = text.trim();
  if (t.startsWith("<local-command-caveat>")) return null;
  const name = /<command-name>([\s\S]*?)<\/command-name>/.exec(t);
  if (name) {
    const args = /<command-args>([\s\S]*?)<\/command-args>/.exec(t)?.[1]?.trim() ?? "";
    return args === "" ? name[1]! : `${name[1]} ${args}`;
  }
  const out = /^<local-command-stdout>([\s\S]*?)<\/local-command-stdout>$/.exec(t);
  if (out) return out[1]!.trim();
  return t;
}

function normalText(text: string): string | null {
  const stripped = text.replace(REMINDER, "\n").trim();
  return stripped === "" ? null : unwrap(stripped);
}

/** The request's messages, system reminders and system-role messages aside, roles merged. */
function sentMessages(request: RecordedRequest): Msg[] {
  const body = request.body as { messages: { role: string; content: unknown }[] };
  const out: Msg[] = [];
  for (const m of body.messages) {
    if (m.role !== "user" && m.role !== "assistant") continue;
    const items = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    const content: Blk[] = [];
    for (const raw of items as Record<string, unknown>[]) {
      if (raw.type === "text") {
        const text = normalText(String(raw.text));
        if (text !== null) content.push({ type: "text", text });
      } else if (raw.type === "thinking") {
        content.push({ type: "thinking", thinking: String(raw.thinking) });
      } else if (raw.type === "redacted_thinking") {
        content.push({ type: "redacted_thinking" });
      } else if (raw.type === "tool_use") {
        content.push({
          type: "tool_use",
          id: String(raw.id),
          name: String(raw.name),
          input: raw.input,
        });
      } else if (raw.type === "tool_result") {
        const c = raw.content;
        const text =
          typeof c === "string"
            ? c
            : (c as { type: string; text?: string }[])
                .filter((x) => x.type === "text")
                .map((x) => x.text ?? "")
                .join("\n");
        content.push({
          type: "tool_result",
          tool_use_id: String(raw.tool_use_id),
          content: text.replace(REMINDER, "\n").trim(),
          is_error: raw.is_error === true,
        });
      } else {
        throw new Error(`the request holds a block the oracle does not know: ${String(raw.type)}`);
      }
    }
    push(out, m.role, content);
  }
  return out;
}

function push(out: Msg[], role: "user" | "assistant", content: Blk[]): void {
  if (content.length === 0) return;
  const last = out[out.length - 1];
  if (last && last.role === role) last.content.push(...content);
  else out.push({ role, content });
}

/** The reader's default branch as the messages the model would be sent. */
function shownMessages(parts: Part[]): Msg[] {
  const out: Msg[] = [];
  let pending: { tool_use_id: string; is_error: boolean; text: string[] } | null = null;
  const flush = () => {
    if (pending) {
      push(out, "user", [
        {
          type: "tool_result",
          tool_use_id: pending.tool_use_id,
          content: pending.text.join("\n").trim(),
          is_error: pending.is_error,
        },
      ]);
    }
    pending = null;
  };
  for (const p of parts) {
    if (p.role === "toolResult") {
      for (const b of p.blocks) {
        if (b.type === "tool-result") {
          flush();
          pending = { tool_use_id: b.toolCallId, is_error: b.isError, text: [] };
        } else if (b.type === "text" && pending) pending.text.push(b.text);
      }
      flush();
      continue;
    }
    const role: "user" | "assistant" = p.role === "assistant" ? "assistant" : "user";
    const content: Blk[] = [];
    for (const b of p.blocks) {
      if (b.type === "text") {
        const text = normalText(b.text);
        if (text !== null) content.push({ type: "text", text });
      } else if (b.type === "thinking") content.push({ type: "thinking", thinking: b.text });
      else if (b.type === "unavailable") content.push({ type: "redacted_thinking" });
      else if (b.type === "tool-call") {
        content.push({ type: "tool_use", id: b.id, name: b.name, input: JSON.parse(b.text) });
      } else if (b.type === "notice" && b.code === "stopped" && p.kind === "notice") {
        // An interrupt: what Claude Code sends in its place.
        content.push({ type: "text", text: "[Request interrupted by user]" });
      } else if (b.type === "notice") {
        throw new Error(`a notice on the default branch: ${b.code}: ${b.text}`);
      }
    }
    push(out, role, content);
  }
  return out;
}

/** The parts after the last compaction marker, with the summary and its preserved records. */
function afterCompaction(parts: Part[]): Part[] {
  let at = -1;
  for (let i = 0; i < parts.length; i++) if (parts[i]!.kind === "compaction") at = i;
  if (at < 0) return parts;
  const marker = parts.find((p) => p.kind === "compaction" && !p.continues);
  const kept = marker?.meta?.firstKeptEntry;
  const summary = parts.filter((p) => p.kind === "compaction" && p.continues);
  const start = parts.findIndex((p) => p.kind === "compaction");
  const preserved = kept ? parts.slice(0, start).filter((p) => p.entry === kept) : [];
  return [
    ...summary.map((p): Part => ({ ...p, kind: "message", role: "user" })),
    ...preserved,
    ...parts.slice(at + 1),
  ];
}

function turn(p: ClaudeProcess, prompt: string, n: number): Promise<Record<string, unknown>> {
  p.send(prompt);
  return p.waitForResult(n, 120_000);
}

const reply = (...content: Extract<AnthropicReply, { kind: "message" }>["content"]) =>
  ({ kind: "message", content }) as const;

const SESSION = "0c1a0de0-0000-4000-8000-00000000a001";
const COMPACTED = "0c1a0de0-0000-4000-8000-00000000a002";

describe("claude-oracle", () => {
  it("shows as its default branch what the real Claude Code, resumed, sends the model", async (t) => {
    const rc = await realClaude(t, { cwdName: "my project.x" });
    const { fake, scratch } = rc;
    const file = (name: string) => join(scratch.cwd, name);
    fake.lane(
      (r) => firstPromptOf(r).includes("List the files"),
      reply({ type: "tool_use", id: "toolu_s1", name: "Bash", input: { command: "ls" } }),
      reply({ type: "text", text: "The folder holds notes.txt." }),
    );
    fake.enqueue(
      reply(
        { type: "thinking", thinking: "Echo first." },
        { type: "text", text: "Running it." },
        { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "echo hi" } },
      ),
      reply({ type: "text", text: "It printed hi." }),
      reply({
        type: "tool_use",
        id: "toolu_2",
        name: "Write",
        input: { file_path: file("notes.txt"), content: "alpha\nbeta\n" },
      }),
      reply({
        type: "tool_use",
        id: "toolu_3",
        name: "Read",
        input: { file_path: file("notes.txt") },
      }),
      reply({
        type: "tool_use",
        id: "toolu_4",
        name: "Edit",
        input: { file_path: file("notes.txt"), old_string: "beta", new_string: "gamma" },
      }),
      reply({ type: "redacted_thinking", data: "b3BhcXVl" }, { type: "text", text: "Edited." }),
      reply({
        type: "tool_use",
        id: "toolu_5",
        name: "Agent",
        input: {
          description: "Look around",
          prompt: "List the files",
          subagent_type: "general-purpose",
          run_in_background: false,
        },
      }),
      reply({ type: "text", text: "The agent saw notes.txt." }),
      reply(
        { type: "text", text: "Two at once." },
        { type: "tool_use", id: "toolu_6", name: "Bash", input: { command: "echo one" } },
        { type: "tool_use", id: "toolu_7", name: "Read", input: { file_path: file("notes.txt") } },
      ),
      reply({ type: "text", text: "Both done." }),
      { kind: "hold", content: [{ type: "text", text: "A partial ans" }], tickMs: 50 },
      { kind: "error", status: 500, message: "boom" },
    );
    const p = rc.start({ sessionId: SESSION, args: ["--include-partial-messages"] });
    await turn(p, "Run echo", 1);
    await turn(p, "Write, read and edit notes.txt", 2);
    await turn(p, "Ask an agent", 3);
    await turn(p, "Two tools at once", 4);
    // Interrupted once Claude Code has streamed part of the reply (a tick after the text).
    const from = p.events.length;
    p.send("Start something long");
    await p.waitFor((e) => JSON.stringify(e.event ?? "").includes("tick 1"), "ticks", 60_000, from);
    p.interrupt();
    await p.waitForResult(5, 60_000);
    await turn(p, "This one fails", 6);
    await p.close();

    // The file landed where the reader's encoding says, and a transcript for the agent.
    const dir = encodeClaudeCwd(scratch.cwd);
    const files = filesUnder(scratch.projectsDir);
    assert.ok(files.includes(join(dir, `${SESSION}.jsonl`)), files.join("\n"));
    assert.ok(files.some((f) => f.startsWith(join(dir, SESSION, "subagents", "agent-"))));

    const reader = checkedReader(scratch.root, {
      roots: rootsOf([{ kind: "claude-code", projectsDir: scratch.projectsDir }]),
    });
    const rows = reader.catalogue().conversations;
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.equal(row.title, "Run echo");
    assert.equal(row.project, scratch.cwd);
    const { parts, last } = readAll(reader, row.conversation);
    assert.equal(last.view.branchCount, 1);

    // Resumed: the first request carries the history as Claude Code read it from the file.
    const before = fake.messages().length;
    fake.enqueue(reply({ type: "text", text: "Back again." }));
    const resumed = rc.start({ resume: SESSION });
    await turn(resumed, "Resumed", 1);
    await resumed.close();
    const sent = withoutNewPrompt(sentMessages(fake.messages()[before]!));
    // The failed request is not history Claude Code sends; the reader shows it as a notice.
    const shown = shownMessages(parts.filter((p) => !isFailedReply(p)));
    assert.deepEqual(shown, sent);
    assert.ok(parts.some(isFailedReply), "the failed request is shown");
    const partial = parts.find((p) =>
      p.blocks.some((b) => b.type === "text" && b.text.startsWith("A partial ans")),
    );
    assert.ok(partial, "the interrupted reply's text is kept");

    // The subagent's transcript, opened from its Agent call, is what its requests held.
    const result = parts
      .flatMap((p) => p.blocks)
      .find((b) => b.type === "tool-result" && b.toolName === "Agent");
    assert.ok(result?.type === "tool-result" && result.transcript);
    const agent = readAll(reader, result.transcript).parts;
    const agentRequests = fake
      .messages()
      .filter((r) => firstPromptOf(r).includes("List the files"));
    const lastAgent = sentMessages(agentRequests.at(-1)!);
    assert.deepEqual(shownMessages(agent).slice(0, lastAgent.length), lastAgent);
  });

  it("keeps the history before /compact, and after it shows what a resumed request sends", async (t) => {
    const rc = await realClaude(t);
    const { fake, scratch } = rc;
    fake.enqueue(
      reply({ type: "text", text: "First reply." }),
      reply({ type: "text", text: "Second reply." }),
      reply({ type: "text", text: "<summary>We said two things.</summary>" }),
      reply({ type: "text", text: "After the compaction." }),
    );
    const p = rc.start({ sessionId: COMPACTED });
    await turn(p, "First prompt", 1);
    await turn(p, "Second prompt", 2);
    await turn(p, "/compact", 3);
    await turn(p, "Third prompt", 4);
    await p.close();
    const reader = checkedReader(scratch.root, {
      roots: rootsOf([{ kind: "claude-code", projectsDir: scratch.projectsDir }]),
    });
    const row = reader.catalogue().conversations[0]!;
    // Four prompts (/compact among them) and three replies, as Claude Code wrote them (a reply's
    // `message` before its `type`); the summary, the caveat and the command's output are none.
    assert.equal(row.messageCount, 7);
    const { parts, last } = readAll(reader, row.conversation);
    assert.equal(last.view.branchCount, 1);
    const texts = parts.flatMap((p) => p.blocks).flatMap((b) => ("text" in b ? [b.text] : []));
    for (const said of ["First prompt", "First reply.", "Second prompt", "Second reply."]) {
      assert.ok(texts.includes(said), `${said} is kept before the marker`);
    }
    assert.equal(parts.filter((p) => p.kind === "compaction" && !p.continues).length, 1);

    const before = fake.messages().length;
    fake.enqueue(reply({ type: "text", text: "Back." }));
    const resumed = rc.start({ resume: COMPACTED });
    await turn(resumed, "Resumed", 1);
    await resumed.close();
    const sent = withoutNewPrompt(sentMessages(fake.messages()[before]!));
    assert.deepEqual(shownMessages(afterCompaction(parts)), sent);
  });
});

describe("claude-oracle: where sessions land", () => {
  it("files a cwd longer than 200 characters where encodeClaudeCwd says", async (t) => {
    const rc = await realClaude(t, {
      cwdName: `a long project name ${"with many words ".repeat(14)}end`,
      replies: [reply({ type: "text", text: "ok" })],
    });
    const p = rc.start({ sessionId: SESSION });
    await turn(p, "hi", 1);
    await p.close();
    assert.ok(rc.scratch.cwd.length > 200);
    assert.deepEqual(filesUnder(rc.scratch.projectsDir), [
      join(encodeClaudeCwd(rc.scratch.cwd), `${SESSION}.jsonl`),
    ]);
  });
});

/** The request's history: its messages without the prompt the resumed run was given. */
function withoutNewPrompt(sent: Msg[]): Msg[] {
  const last = sent[sent.length - 1];
  assert.deepEqual(last?.content.at(-1), { type: "text", text: "Resumed" });
  last!.content.pop();
  if (last!.content.length === 0) sent.pop();
  return sent;
}

function isFailedReply(p: Part): boolean {
  return (
    p.role === "assistant" && p.blocks.some((b) => b.type === "notice" && b.code === "stopped")
  );
}
