// The demo's Claude Code seat: one session in the shape Claude Code 2.1.328 writes
// (docs/claude-code-files.md), where a controlled Claude Code keeps them
// (`.pi/state/<seat>/claude/projects/<encoded cwd>/<session>.jsonl`), so the demo shows a Claude
// row beside Pi's: a prompt, a reply written one block per line (thinking, text, a Bash call),
// its result, the answer, and bookkeeping the reader hides.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { claudeProjectsDirOf, encodeClaudeCwd } from "../index.ts";

const SESSION = "c1a0de00-0000-4000-8000-00000000d3e0";

/** Writes the seat's one session; returns its path. */
export function writeDemoClaudeSeat(projectRoot: string, seat: string): string {
  const dir = join(claudeProjectsDirOf(projectRoot, seat), encodeClaudeCwd(projectRoot));
  mkdirSync(dir, { recursive: true });
  let n = 0;
  let clock = Date.parse("2026-01-01T09:00:00.000Z");
  const uuid = () => `d3e00000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
  const now = () => {
    clock += 2000;
    return new Date(clock).toISOString();
  };
  const common = {
    isSidechain: false,
    userType: "external",
    cwd: projectRoot,
    sessionId: SESSION,
    version: "2.1.328",
    gitBranch: "main",
  };
  const lines: object[] = [];
  let leaf: string | null = null;
  const record = (fields: object, parent: string | null = leaf): string => {
    const id = uuid();
    lines.push({ parentUuid: parent, ...common, ...fields, uuid: id, timestamp: now() });
    leaf = id;
    return id;
  };
  const usage = { input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 900 };
  const chunk = (msg: string, content: object, stop: string) =>
    record({
      type: "assistant",
      requestId: `req_${msg}`,
      message: {
        id: msg,
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [content],
        stop_reason: stop,
        usage,
      },
    });
  lines.push({ type: "queue-operation", operation: "enqueue", sessionId: SESSION });
  record({
    type: "user",
    message: { role: "user", content: "How many tests does this project have?" },
  });
  record({ type: "attachment", attachment: { type: "date", date: "2026-01-01" } });
  chunk(
    "msg_demo_1",
    { type: "thinking", thinking: "Count them with grep.", signature: "x" },
    "tool_use",
  );
  chunk("msg_demo_1", { type: "text", text: "I'll count the test files." }, "tool_use");
  const call = chunk(
    "msg_demo_1",
    {
      type: "tool_use",
      id: "toolu_demo_1",
      name: "Bash",
      input: { command: "ls test | wc -l", timeout: 60000 },
    },
    "tool_use",
  );
  record(
    {
      type: "user",
      message: {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_demo_1", content: "42" }],
      },
      toolUseResult: { stdout: "42", stderr: "", interrupted: false },
      sourceToolAssistantUUID: call,
    },
    call,
  );
  chunk("msg_demo_2", { type: "text", text: "There are **42** test files." }, "end_turn");
  lines.push({ type: "ai-title", aiTitle: "Claude Code: count the tests", sessionId: SESSION });
  lines.push({ type: "last-prompt", lastPrompt: "How many tests?", sessionId: SESSION });
  const file = join(dir, `${SESSION}.jsonl`);
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
  return file;
}
