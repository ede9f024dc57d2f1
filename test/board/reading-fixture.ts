// A session for the reading features (Markdown, tool views, usage, branches with labels) and
// for export and search: hand-written Pi lines, hostile Markdown included. Small and synthetic.
import type { TestContext } from "node:test";
import { createReader, type Reader, rootsFromSpecs } from "../../src/index.ts";
import { header, project, tempDir, ts, user, writeSession } from "../helpers/reader.ts";

export const MARKDOWN_TEXT = [
  "Here is **bold**, *slanted* and `inline code`.",
  "",
  "```ts",
  "const answer: number = 42; // the answer",
  "```",
  "",
  "- first point",
  "- second point",
  "",
  "A [safe link](https://example.com/docs) and [mail](mailto:ops@example.com).",
].join("\n");

/** Markdown that must stay inert: every line is something a renderer could get wrong. */
export const HOSTILE_MARKDOWN = [
  "<script>window.__pwned=1</script>",
  '<img src=x onerror="window.__pwned=1">',
  "[js link](javascript:window.__pwned=1) [data link](data:text/html,<script>alert(1)</script>)",
  "[file link](file:///etc/passwd) [relative](../../etc/passwd)",
  "![tracker](https://tracker.example/pixel.png)",
  '<a href="https://evil.example" onclick="window.__pwned=1">raw anchor</a>',
  "```html",
  '<img src=x onerror="window.__pwned=1">',
  "```",
].join("\n");

export const LONG_OUTPUT_LINES = 45;
export const SEARCH_WORD = "zanzibarite";

/** An assistant message with usage; `message` overrides its fields (a model, a stop reason). */
export function assistantMessage(
  id: string,
  parentId: string,
  n: number,
  content: object[],
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number; cost: number },
  message: Record<string, unknown> = {},
): object {
  return {
    type: "message",
    id,
    parentId,
    timestamp: ts(n),
    message: {
      role: "assistant",
      content,
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: {
        input: usage.input,
        output: usage.output,
        cacheRead: usage.cacheRead,
        cacheWrite: usage.cacheWrite,
        totalTokens: usage.input + usage.output + usage.cacheRead + usage.cacheWrite,
        cost: {
          input: 0,
          output: 0,
          cacheRead: 0,
          cacheWrite: 0,
          total: usage.cost,
        },
      },
      stopReason: content.some((c) => (c as { type: string }).type === "toolCall")
        ? "toolUse"
        : "stop",
      timestamp: n,
      ...message,
    },
  };
}

function toolResult(
  id: string,
  parentId: string,
  n: number,
  call: string,
  name: string,
  text: string,
): object {
  return {
    type: "message",
    id,
    parentId,
    timestamp: ts(n),
    message: {
      role: "toolResult",
      toolCallId: call,
      toolName: name,
      isError: false,
      content: [{ type: "text", text }],
      timestamp: n,
    },
  };
}

export type ReadingFixture = {
  reader: () => Reader;
  conversation: string;
  file: string;
  sessionsDir: string;
  base: string;
};

/** Writes the reading session (two branches) into a fresh project; returns its reader. */
export function writeReadingFixture(t: TestContext): ReadingFixture {
  const base = tempDir(t, "reading-");
  const p = project(base, "gamma", "main");
  const longOutput = Array.from({ length: LONG_OUTPUT_LINES }, (_, i) => `line ${i + 1}`).join(
    "\n",
  );
  const file = writeSession(p.sessionsDir, "reading.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-0000000000a1" }),
    { type: "session_info", id: "info", parentId: null, timestamp: ts(1), name: "Reading fixture" },
    user("u1", "info", `Please tidy the parser; mention ${SEARCH_WORD} once.`, 2),
    assistantMessage("a1", "u1", 3, [{ type: "text", text: MARKDOWN_TEXT }], {
      input: 1200,
      output: 300,
      cacheRead: 5000,
      cacheWrite: 200,
      cost: 0.0123,
    }),
    user("u2", "a1", HOSTILE_MARKDOWN, 4),
    assistantMessage(
      "a2",
      "u2",
      5,
      [
        { type: "text", text: "Editing, writing, running and reading." },
        {
          type: "toolCall",
          id: "call_edit",
          name: "edit",
          arguments: {
            path: "src/parser.ts",
            edits: [
              { oldText: "const a = 1;\nconst b = 2;\n", newText: "const a = 1;\nconst b = 3;\n" },
            ],
          },
        },
        {
          type: "toolCall",
          id: "call_write",
          name: "write",
          arguments: { path: "notes/plan.py", content: "def plan():\n    return 'ok'\n" },
        },
        { type: "toolCall", id: "call_bash", name: "bash", arguments: { command: "seq 1 45" } },
        {
          type: "toolCall",
          id: "call_read",
          name: "read",
          arguments: { path: "src/index.ts", offset: 10, limit: 20 },
        },
        { type: "toolCall", id: "call_other", name: "grep", arguments: { pattern: "x\ny" } },
      ],
      { input: 800, output: 100, cacheRead: 0, cacheWrite: 0, cost: 0.0077 },
    ),
    toolResult("r1", "a2", 6, "call_edit", "edit", "Edited src/parser.ts"),
    toolResult("r2", "r1", 7, "call_write", "write", "Wrote notes/plan.py"),
    toolResult("r3", "r2", 8, "call_bash", "bash", longOutput),
    toolResult("r4", "r3", 9, "call_read", "read", "export const x = 1;\n"),
    toolResult("r5", "r4", 10, "call_other", "grep", "no match"),
    assistantMessage("a3", "r5", 11, [{ type: "text", text: "All done on the main line." }], {
      input: 10,
      output: 5,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0.001,
    }),
    // A second branch from a1: its label comes from its first words.
    user("u9", "a1", "Try the lexer approach instead of regular expressions", 12),
    assistantMessage("a9", "u9", 13, [{ type: "text", text: "Lexer version ready." }], {
      input: 20,
      output: 10,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0.002,
    }),
  ]);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  const reader = () => createReader({ roots: () => rootsFromSpecs(specs, []) });
  const row = reader()
    .catalogue()
    .conversations.find((r) => r.fileName === "reading.jsonl");
  if (!row) throw new Error("the reading fixture has no catalogue row");
  return { reader, conversation: row.conversation, file, sessionsDir: p.sessionsDir, base };
}
