// What a catalogue row says of a conversation beyond its title (issue 24 item 5): the first
// prompt's preview, the message count and the model, for Pi and Claude Code rows, found cheaply
// (message-count.ts; the byte bounds are pinned in sources.test.ts).
import assert from "node:assert/strict";
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import { richClaudeSession } from "../helpers/claude-sessions.ts";
import {
  assistant,
  checkedReader,
  header,
  project,
  readerFor,
  rootsOf,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";

/** JSON as Python's json.dumps writes it: a space after every colon and comma. */
function spacedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(spacedJson).join(", ")}]`;
  if (typeof v === "object" && v !== null) {
    const members = Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${spacedJson(x)}`);
    return `{${members.join(", ")}}`;
  }
  return JSON.stringify(v);
}

/** A Claude Code store under a temp dir: the rich session's writer, its folder, a reader of it. */
function claudeStore(t: Parameters<typeof tempDir>[0]) {
  const base = tempDir(t);
  const projectsDir = join(base, "claude", "projects");
  const cwd = join(base, "work");
  const dir = join(projectsDir, encodeClaudeCwd(cwd));
  mkdirSync(dir, { recursive: true });
  const reader = () =>
    checkedReader(base, { roots: rootsOf([{ kind: "claude-code", projectsDir }]) });
  return { w: richClaudeSession(cwd), dir, reader };
}

function toolResult(id: string, parentId: string): Record<string, unknown> {
  return {
    type: "message",
    id,
    parentId,
    timestamp: "2026-01-01T00:00:09.000Z",
    message: {
      role: "toolResult",
      toolCallId: "c1",
      toolName: "bash",
      content: [],
      isError: false,
    },
  };
}

describe("catalogue row facts", () => {
  it("gives a Pi row its first prompt on one line, its prompts and replies counted, its latest model", (t) => {
    const p = project(tempDir(t));
    const reply = (id: string, parent: string, model: string) => {
      const a = assistant(id, parent, "ok");
      (a.message as Record<string, unknown>).model = model;
      return a;
    };
    writeSession(p.sessionsDir, "a.jsonl", [
      header(p.projectRoot),
      {
        type: "model_change",
        id: "m0",
        parentId: null,
        timestamp: "2026-01-01T00:00:01.000Z",
        provider: "anthropic",
        modelId: "claude-opus-4",
      },
      user("u1", "m0", "  Fix the\n\tparser:   a missing start\nreads as 0  "),
      reply("a1", "u1", "claude-opus-4"),
      toolResult("r1", "a1"),
      reply("a2", "r1", "claude-opus-4"),
      // A fork: its prompt and reply count too (every branch).
      user("u2", "a1", "Try another way"),
      reply("a3", "u2", "claude-sonnet-4-5"),
      {
        type: "label",
        id: "l1",
        parentId: "a3",
        timestamp: "2026-01-01T00:00:09.000Z",
        targetId: "u1",
        label: "start",
      },
    ]);
    const [row] = readerFor(p).catalogue().conversations;
    assert.equal(row?.preview, "Fix the parser: a missing start reads as 0");
    assert.equal(row?.messageCount, 5);
    assert.equal(row?.model, "claude-sonnet-4-5");
  });

  it("clips a long first prompt and leaves its characters to the sinks' visible-text rule", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "a.jsonl", [
      header(p.projectRoot),
      user("u1", null, `\u001b[31m${"word ".repeat(200)}`),
    ]);
    const [row] = readerFor(p).catalogue().conversations;
    const cps = Array.from(row?.preview ?? "");
    assert.equal(cps.length, 241);
    assert.equal(cps.at(-1), "…");
    // Raw text on the wire: the CLI and the Console mark the ESC when they show it.
    assert.ok(row?.preview?.startsWith("\u001b[31mword word"));
    assert.equal(row?.messageCount, 1);
    assert.equal(row?.model, null);
  });

  it("counts a growing session from where its count stopped", (t) => {
    const p = project(tempDir(t));
    const file = writeSession(p.sessionsDir, "a.jsonl", [
      header(p.projectRoot),
      user("u1", null, "one"),
    ]);
    const reader = readerFor(p);
    assert.equal(reader.catalogue().conversations[0]?.messageCount, 1);
    appendFileSync(file, `${JSON.stringify(assistant("a1", "u1", "two"))}\n`);
    appendFileSync(
      file,
      `${JSON.stringify(user("u2", "a1", "three"))}\n${JSON.stringify(assistant("a2", "u2", "x")).slice(0, 20)}`,
    );
    // The half-written last line is not a message yet.
    assert.equal(reader.catalogue().conversations[0]?.messageCount, 3);
  });

  it("gives a Claude Code row its first typed prompt, its replies counted once however many lines, its model", (t) => {
    const { w, dir, reader } = claudeStore(t);
    // The partial reply counts; the interrupt, /compact's summary, caveat and output do not
    // (the page shows them as a notice, a marker and a command's output); /compact itself does.
    w.interrupt("Partial an");
    w.compact("We talked.");
    w.prompt("And now\nthe tests");
    w.reply(
      [
        { type: "text", text: "Running." },
        { type: "text", text: "Done." },
      ],
      { model: "claude-opus-4-1" },
    );
    w.write(join(dir, "s.jsonl"));
    const [row] = reader().catalogue().conversations;
    assert.equal(row?.title, "Rich session");
    assert.equal(row?.preview, "Write notes and echo");
    // Two prompts, /compact and four replies; the tool results and attachments are not messages.
    assert.equal(row?.messageCount, 7);
    assert.equal(row?.model, "claude-opus-4-1");
  });

  it("counts a session another tool wrote with spaces in its JSON as it counts the engines' own", (t) => {
    const p = project(tempDir(t));
    writeSession(
      p.sessionsDir,
      "a.jsonl",
      [header(p.projectRoot), user("u1", null, "one"), assistant("a1", "u1", "two")].map(
        spacedJson,
      ),
    );
    assert.equal(readerFor(p).catalogue().conversations[0]?.messageCount, 2);

    const { w, dir, reader } = claudeStore(t);
    w.reply(
      [
        { type: "text", text: "Running." },
        { type: "text", text: "Done." },
      ],
      { model: "claude-opus-4-1" },
    );
    writeSession(dir, "s.jsonl", w.lines.map(spacedJson));
    // The rich session's prompt and two replies, and one more reply on two lines; tool results
    // and attachments are not messages, whatever the spacing.
    assert.equal(reader().catalogue().conversations[0]?.messageCount, 4);
  });
});
