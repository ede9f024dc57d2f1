// The Claude Code adapter: Claude's store and seats as sources, and what a person sees of a
// Claude file (docs/reader.md "Claude Code"), on files in the shapes the binaries write
// (test/helpers/claude-sessions.ts). The real binary's own files: claude-oracle.test.ts.
import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { type Part, toChatId } from "../../src/protocol/chat-01.ts";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import {
  type BoardSpec,
  claudeProjectsDirOf,
  conversationId,
  type SeatRegistration,
} from "../../src/reader/sources.ts";
import { ClaudeWriter, richClaudeSession } from "../helpers/claude-sessions.ts";
import {
  checkedReader,
  entriesOf,
  expectOk,
  expectRefusal,
  readAll,
  rootsOf,
  tempDir,
} from "../helpers/reader.ts";

/** A Claude Code projects folder under `base` with the session of `cwd` at `<enc cwd>/<name>`. */
function store(base: string) {
  const projectsDir = join(base, "claude", "projects");
  mkdirSync(projectsDir, { recursive: true });
  const spec: BoardSpec = { kind: "claude-code", projectsDir };
  return {
    projectsDir,
    spec,
    fileOf: (cwd: string, name = "s.jsonl") => join(projectsDir, encodeClaudeCwd(cwd), name),
    reader: (extra: BoardSpec[] = [], regs: SeatRegistration[] = []) =>
      checkedReader(base, { roots: rootsOf([spec, ...extra], regs) }),
  };
}

function onlyRow(reader: ReturnType<ReturnType<typeof store>["reader"]>) {
  const rows = reader.catalogue().conversations;
  assert.equal(rows.length, 1, JSON.stringify(rows));
  return rows[0]!;
}

const summary = (p: Part) =>
  [
    p.kind,
    p.role ?? "",
    ...p.blocks.map(
      (b) => `${b.type}:${"text" in b ? b.text : b.type === "tool-result" ? b.toolName : ""}`,
    ),
  ].join(" ");

describe("claude-code", () => {
  it("lists Claude Code's store as rows of harness claude-code, titled, named by the cwd", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "work", "my app");
    richClaudeSession(cwd).write(s.fileOf(cwd, "5e55e55e.jsonl"));
    // Subagents' transcripts are not rows of their own.
    new ClaudeWriter({ cwd, sidechain: true }).write(s.fileOf(cwd, "agent-a12.jsonl"));
    const row = onlyRow(s.reader());
    assert.equal(row.harness, "claude-code");
    assert.equal(row.seat, "claude-code");
    assert.equal(row.project, cwd);
    assert.equal(row.title, "Rich session");
    assert.equal(row.sessionId, "5e55e55e-0000-4000-8000-000000000001");
    assert.equal(row.unsupportedReason, null);
    assert.match(row.conversation, /^cc-[0-9a-f]{40}$/);
    assert.notEqual(row.conversation, conversationId(s.projectsDir, "claude-code", row.fileName!));
  });

  it("titles a row by custom-title, else ai-title, else summary, else the first typed prompt", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const session = (name: string, fill: (w: ClaudeWriter) => void) => {
      const w = new ClaudeWriter({ cwd });
      fill(w);
      w.write(s.fileOf(cwd, name));
    };
    session("a.jsonl", (w) => {
      w.bookkeeping("ai-title", { aiTitle: "An AI title" });
      w.prompt("first words");
      w.bookkeeping("custom-title", { customTitle: "  Named   by me " });
    });
    session("b.jsonl", (w) => {
      w.prompt("first words");
      w.bookkeeping("summary", { summary: "An old summary", leafUuid: w.leaf });
      w.bookkeeping("ai-title", { aiTitle: "An AI title" });
    });
    session("c.jsonl", (w) => {
      w.prompt("first words");
      w.bookkeeping("summary", { summary: "An old summary", leafUuid: w.leaf });
    });
    session("d.jsonl", (w) => {
      w.prompt("<command-name>/model</command-name>");
      w.prompt([{ type: "text", text: "What the\nperson typed" }]);
    });
    const titles = Object.fromEntries(
      s
        .reader()
        .catalogue()
        .conversations.map((r) => [r.fileName, r.title]),
    );
    assert.deepEqual(titles, {
      "a.jsonl": "Named by me",
      "b.jsonl": "An AI title",
      "c.jsonl": "An old summary",
      "d.jsonl": "What the person typed",
    });
  });

  it("refuses foreign-project for a session whose cwd does not encode to its folder", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    richClaudeSession(join(base, "elsewhere")).write(s.fileOf(cwd));
    const reader = s.reader();
    const row = onlyRow(reader);
    assert.equal(row.unsupportedReason, "foreign-project");
    expectRefusal(reader.open({ conversation: row.conversation }), "foreign-project");
  });

  it("names a long cwd's folder as Claude Code does: 200 characters, then a hash", () => {
    const long = `/${"deep-folder/".repeat(20)}end`;
    const name = encodeClaudeCwd(long);
    assert.equal(name.slice(0, 200), long.replace(/[^a-zA-Z0-9]/g, "-").slice(0, 200));
    assert.match(name, /^.{200}-[0-9a-z]+$/);
    assert.equal(encodeClaudeCwd("/tmp/x/my proj.x"), "-tmp-x-my-proj-x");
  });

  it("says a missing store is unavailable, as a refused root of seat claude-code", (t) => {
    const base = tempDir(t);
    const reader = checkedReader(base, {
      roots: rootsOf([{ kind: "claude-code", projectsDir: join(base, "none") }]),
    });
    const c = reader.catalogue();
    assert.deepEqual(
      c.refusedRoots.map((r) => [r.seat, r.code]),
      [["claude-code", "unavailable"]],
    );
  });

  it("shows a reply's lines as one entry, its results on the main line, bookkeeping hidden", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = richClaudeSession(cwd);
    w.write(s.fileOf(cwd));
    const reader = s.reader();
    const { parts, last } = readAll(reader, onlyRow(reader).conversation);
    assert.equal(last.view.branchCount, 1, "parallel results are not a fork");
    assert.deepEqual(parts.map(summary), [
      "message user text:Write notes and echo",
      "message assistant thinking:Two tools at once.",
      "message assistant text:Doing both.",
      `message assistant tool-call:${JSON.stringify({ file_path: `${cwd}/n.txt`, content: "a\n" })}`,
      `message assistant tool-call:${JSON.stringify({ command: "echo hi" })}`,
      "message toolResult tool-result:Write text:File created",
      "message toolResult tool-result:Bash text:hi",
      "message assistant unavailable:",
      "message assistant text:Both done.",
    ]);
    const reply = parts.filter((p) => p.entry === parts[1]!.entry);
    assert.deepEqual(
      reply.map((p) => [p.id, p.continues ?? false]),
      [0, 1, 2, 3].map((k) => [`${parts[1]!.entry}.${k}`, k > 0]),
    );
    // Usage once per reply, on its head.
    assert.deepEqual(
      parts.filter((p) => p.meta?.usage).map((p) => p.meta?.usage),
      [1, 2].map(() => ({ input: 100, output: 20, cacheRead: 5, cacheWrite: 10, cost: null })),
    );
    assert.equal(parts[1]!.meta?.model, "claude-sonnet-4-5");
    // Claude's stop reasons in CHAT-01's words, as Pi's replies say them.
    assert.deepEqual(
      parts.filter((p) => p.meta?.stopReason).map((p) => p.meta?.stopReason),
      ["toolUse", "stop"],
    );
    // The results name their calls.
    const results = parts.flatMap((p) => p.blocks).filter((b) => b.type === "tool-result");
    assert.deepEqual(
      results.map((b) => [b.toolCallId, b.toolName]),
      [
        ["toolu_w", "Write"],
        ["toolu_b", "Bash"],
      ],
    );
    assert.equal(last.view.defaultLeaf, parts.at(-1)!.entry);
  });

  it("reads a 2.0 and a 1.0 file as it reads a 2.1 one", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const seen: string[][] = [];
    for (const version of ["2.1.328", "2.0.76", "1.0.128"] as const) {
      richClaudeSession(cwd, version).write(s.fileOf(cwd, `${version}.jsonl`));
    }
    const reader = s.reader();
    for (const row of reader.catalogue().conversations) {
      const { parts, last } = readAll(reader, row.conversation);
      assert.equal(last.view.branchCount, 1, row.fileName ?? "");
      seen.push(parts.map(summary));
    }
    assert.deepEqual(seen[1], seen[0]);
    assert.deepEqual(seen[2], seen[0]);
  });

  it("shows /compact as a marker with its summary, and keeps everything before it", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("Before");
    const [kept] = w.reply([{ type: "text", text: "Reply before" }]);
    w.compact("We talked.", kept);
    w.prompt("After");
    w.reply([{ type: "text", text: "Reply after" }]);
    w.write(s.fileOf(cwd));
    const reader = s.reader();
    const { parts, last } = readAll(reader, onlyRow(reader).conversation);
    assert.equal(last.view.branchCount, 1, "the boundary is no second root");
    assert.deepEqual(parts.map(summary), [
      "message user text:Before",
      "message assistant text:Reply before",
      "compaction ",
      "compaction  text:This session is being continued from a previous conversation.\nSummary:\nWe talked.",
      "message user text:/compact",
      "custom-message  text:Compacted ",
      "message user text:After",
      "message assistant text:Reply after",
    ]);
    assert.deepEqual(parts[2]!.meta, { tokensBefore: 1234, firstKeptEntry: parts[1]!.entry });
    assert.equal(parts[3]!.entry, parts[2]!.entry);
    assert.equal(parts[3]!.continues, true);
  });

  it("keeps the history before /compact when the record it continues is written again below the summary", (t) => {
    // The shape other versions write for a compaction that keeps its last records (claude-code-log's
    // dag_compact_after_rewind_preserved): the boundary's logicalParentUuid names the preserved reply,
    // which sits below the summary, so hanging the boundary on it would make it its own ancestor.
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("Before");
    w.reply([{ type: "text", text: "Reply before" }]);
    w.prompt("Keep going");
    const [preserved] = w.reply([{ type: "text", text: "Kept going" }]);
    w.compact("We talked.", preserved);
    w.prompt("After");
    w.reply([{ type: "text", text: "Reply after" }]);
    const at = w.lines.findIndex((l) => l.uuid === preserved);
    const [moved] = w.lines.splice(at, 1);
    const summaryAt = w.lines.findIndex((l) => l.isCompactSummary === true);
    const below = w.lines[summaryAt + 1]!;
    w.lines.splice(summaryAt + 1, 0, { ...moved!, parentUuid: w.lines[summaryAt]!.uuid });
    below.parentUuid = preserved;
    w.write(s.fileOf(cwd));
    const reader = s.reader();
    const { parts, last } = readAll(reader, onlyRow(reader).conversation);
    assert.equal(last.view.branchCount, 1, "the boundary is no second root");
    assert.deepEqual(parts.map(summary), [
      "message user text:Before",
      "message assistant text:Reply before",
      "message user text:Keep going",
      "compaction ",
      "compaction  text:This session is being continued from a previous conversation.\nSummary:\nWe talked.",
      "message assistant text:Kept going",
      "message user text:/compact",
      "custom-message  text:Compacted ",
      "message user text:After",
      "message assistant text:Reply after",
    ]);
  });

  it("passes through progress records and keeps a reply whose calls ran while it was written on one line of the tree", (t) => {
    // 2.1.39's shape (spotter's recorded transcripts): hook progress hangs on a call and the next
    // chunk on that progress; a call's result comes before the reply's last chunk, which hangs on it.
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("Show three tasks");
    const call = (id: string) => ({
      type: "tool_use" as const,
      id,
      name: "Bash",
      input: { command: `bd show ${id}` },
    });
    const [c1, c2, c3] = w.reply([call("A"), call("B"), call("C")]);
    w.toolResults([
      { toolUseId: "A", content: "task A" },
      { toolUseId: "B", content: "task B" },
      { toolUseId: "C", content: "task C" },
    ]);
    w.reply([{ type: "text", text: "Three tasks." }]);
    const line = (uuid: string | undefined) => w.lines.find((l) => l.uuid === uuid)!;
    const progress = (parent: string) => ({
      ...line(c1),
      type: "progress",
      message: undefined,
      uuid: `p-${parent}`,
      parentUuid: parent,
      data: { type: "hook_progress", hookEvent: "PreToolUse" },
    });
    const resultOf = (id: string) =>
      w.lines.find((l) => JSON.stringify(l.message ?? "").includes(`"tool_use_id":"${id}"`))!;
    // Progress below the first call, the second call below it; the first result, progress below
    // it, and the third call below that; each result on its own call (as 2.1 writes them).
    const order = [
      line(c1),
      progress(c1!),
      { ...line(c2), parentUuid: `p-${c1}` },
      { ...resultOf("A"), parentUuid: c1 },
      progress(resultOf("A").uuid as string),
      { ...line(c3), parentUuid: `p-${resultOf("A").uuid}` },
      { ...resultOf("B"), parentUuid: c2 },
      { ...resultOf("C"), parentUuid: c3 },
    ];
    const from = w.lines.indexOf(line(c1));
    const moved = new Set([
      line(c1),
      line(c2),
      line(c3),
      resultOf("A"),
      resultOf("B"),
      resultOf("C"),
    ]);
    const rest = w.lines.slice(from).filter((l) => !moved.has(l));
    rest[0]!.parentUuid = resultOf("C").uuid;
    w.lines.splice(from, w.lines.length - from, ...order, ...rest);
    w.write(s.fileOf(cwd));

    const reader = s.reader();
    const row = onlyRow(reader);
    const { parts, last } = readAll(reader, row.conversation);
    assert.equal(last.view.branchCount, 1, "progress and early results fork nothing");
    assert.deepEqual(
      parts.map((p) => [summary(p), p.continues === true]),
      [
        ["message user text:Show three tasks", false],
        ['message assistant tool-call:{"command":"bd show A"}', false],
        ['message assistant tool-call:{"command":"bd show B"}', true],
        ["message toolResult tool-result:Bash text:task A", false],
        // The last call, after the first result, under a header of its own.
        ['message assistant tool-call:{"command":"bd show C"}', false],
        ["message toolResult tool-result:Bash text:task B", false],
        ["message toolResult tool-result:Bash text:task C", false],
        ["message assistant text:Three tasks.", false],
      ],
    );
    assert.equal(parts[2]!.entry, parts[1]!.entry);
    assert.equal(parts[4]!.entry, `n.${toChatId(c3!)}`);
    // The prompt and two replies: the three calls are one API message, counted once.
    assert.equal(row.messageCount, 3);
  });

  it("says a prompt or reply without a uuid is skipped (it has no place in the tree), and stays quiet about bookkeeping", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("Placed");
    w.reply([{ type: "text", text: "Placed reply" }]);
    const { uuid: _u, ...placeless } = w.lines.find((l) => l.type === "user")!;
    w.lines.push({ ...placeless, message: { role: "user", content: "No uuid" } });
    w.bookkeeping("last-prompt", { lastPrompt: "Placed" });
    w.write(s.fileOf(cwd));
    const reader = s.reader();
    const row = onlyRow(reader);
    const { parts } = readAll(reader, row.conversation);
    const notices = parts.filter((p) => p.kind === "notice");
    assert.equal(notices.length, 1, JSON.stringify(notices));
    assert.equal(
      notices[0]?.blocks[0]?.type === "notice" && notices[0].blocks[0].code,
      "malformed-line",
    );
    assert.ok(!parts.some((p) => p.blocks.some((b) => "text" in b && b.text === "No uuid")));
    assert.equal(row.messageCount, 2);
  });

  it("shows an interrupt once and a failed request as a stopped reply, with no notice storm", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("Long task");
    w.interrupt("Partial an");
    w.prompt("Again");
    w.apiError("API Error: 500 boom");
    w.write(s.fileOf(cwd));
    const reader = s.reader();
    const { parts } = readAll(reader, onlyRow(reader).conversation);
    assert.deepEqual(parts.map(summary), [
      "message user text:Long task",
      "message assistant text:Partial an",
      "notice  notice:Interrupted by the user.",
      "message user text:Again",
      "message assistant notice:The reply failed: API Error: 500 boom",
    ]);
    assert.equal(parts[4]!.meta, undefined, "a synthetic reply has no model or usage");
  });

  it("names a fork b.<uuid> by the seed's rule, stable as the file grows", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("One");
    const [reply] = w.reply([{ type: "text", text: "Reply one" }]);
    w.prompt("Two");
    w.reply([{ type: "text", text: "Reply two" }]);
    w.leaf = reply!;
    const fork = w.prompt("On the fork");
    w.reply([{ type: "text", text: "Fork reply" }]);
    const file = w.write(s.fileOf(cwd));
    const reader = s.reader();
    const id = onlyRow(reader).conversation;
    const first = expectOk(reader.open({ conversation: id }));
    const names = first.view.branches.map((b) => b.name);
    assert.deepEqual(names, ["main", `b.${fork}`]);
    assert.equal(first.view.defaultBranch, `b.${fork}`, "Claude Code resumes the newest leaf");
    assert.deepEqual(readAll(reader, id, `b.${fork}`).parts.map(summary), [
      "message user text:One",
      "message assistant text:Reply one",
      "message user text:On the fork",
      "message assistant text:Fork reply",
    ]);
    const from = w.lines.length;
    w.prompt("More on the fork");
    w.appendSince(file, from);
    const again = expectOk(reader.open({ conversation: id }));
    assert.deepEqual(
      again.view.branches.map((b) => b.name),
      names,
    );
  });

  it("keeps a 1.0 subagent's in-file records off the main line, which stays the default", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd, version: "1.0.128" });
    w.prompt("Use an agent");
    const [call] = w.reply([
      { type: "tool_use", id: "toolu_t", name: "Task", input: { prompt: "Look" } },
    ]);
    // The subagent's records: a root of their own, one even claiming the Task call as parent.
    w.sidechain = true;
    w.record({ type: "user", message: { role: "user", content: "Look" } }, null);
    w.reply([{ type: "text", text: "Agent found it" }]);
    w.record({ type: "user", message: { role: "user", content: "stray" } }, call!);
    w.sidechain = false;
    w.leaf = call!;
    w.toolResults([{ toolUseId: "toolu_t", content: "Agent found it" }]);
    w.reply([{ type: "text", text: "Done" }]);
    // The session ends inside another subagent run.
    w.sidechain = true;
    w.record({ type: "user", message: { role: "user", content: "Later agent" } }, null);
    w.write(s.fileOf(cwd));
    const reader = s.reader();
    const id = onlyRow(reader).conversation;
    const { parts, last } = readAll(reader, id);
    assert.equal(last.page.branch, "main");
    assert.deepEqual(parts.map(summary), [
      "message user text:Use an agent",
      `message assistant tool-call:${JSON.stringify({ prompt: "Look" })}`,
      "message toolResult tool-result:Task text:Agent found it",
      "message assistant text:Done",
    ]);
    const branches = last.view.branches;
    assert.ok(
      branches.every((b) => b.name === "main" || b.forksFrom === null),
      "no fork of main",
    );
    assert.equal(branches.length, 4);
  });

  it("continues a reply in a follow when its later lines arrive, numbering its parts on", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd, version: "2.0.76" });
    w.prompt("Go");
    w.reply([
      { type: "thinking", thinking: "Hm." },
      { type: "text", text: "Part one" },
    ]);
    const file = w.write(s.fileOf(cwd));
    const reader = s.reader();
    const id = onlyRow(reader).conversation;
    const open = expectOk(reader.open({ conversation: id }));
    const head = open.page.parts[1]!;
    // The same reply's next chunk (2.0 writes each block as it completes), and its result.
    const from = w.lines.length;
    const chunk = structuredClone(w.lines[w.lines.length - 1]!);
    chunk.parentUuid = w.leaf;
    chunk.uuid = w.uuid();
    (chunk.message as { content: unknown }).content = [
      { type: "tool_use", id: "toolu_x", name: "Bash", input: { command: "ls" } },
    ];
    w.lines.push(chunk);
    w.leaf = chunk.uuid as string;
    w.toolResults([{ toolUseId: "toolu_x", content: "a.txt" }]);
    w.appendSince(file, from);
    const more = expectOk(
      reader.next({ cursor: open.follow!.id, conversation: id, branch: "main" }),
    );
    assert.deepEqual(
      more.page.parts.map((p) => [p.id, p.continues ?? false, summary(p)]),
      [
        [
          `${head.entry}.2`,
          true,
          `message assistant tool-call:${JSON.stringify({ command: "ls" })}`,
        ],
        [more.page.parts[1]!.id, false, "message toolResult tool-result:Bash text:a.txt"],
      ],
    );
  });

  it("checks the cwd of a first record that a follow brings", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd: join(base, "elsewhere") });
    w.bookkeeping("queue-operation", { operation: "enqueue", content: "hi" });
    const file = w.write(s.fileOf(cwd));
    const reader = s.reader();
    const id = onlyRow(reader).conversation;
    const open = expectOk(reader.open({ conversation: id }));
    assert.deepEqual(open.page.parts, []);
    const from = w.lines.length;
    w.prompt("from another project");
    w.appendSince(file, from);
    expectRefusal(
      reader.next({ cursor: open.follow!.id, conversation: id, branch: "main" }),
      "foreign-project",
    );
  });

  it("links an Agent call's result to its subagent's transcript, in either layout", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    for (const [version, agent] of [
      ["2.1.328", "a1b2c3"],
      ["2.0.76", "d4e5f6"],
    ] as const) {
      const w = new ClaudeWriter({ cwd, version });
      w.prompt("Use an agent");
      w.reply([{ type: "tool_use", id: "toolu_a", name: "Agent", input: { prompt: "Look" } }]);
      w.toolResults([
        {
          toolUseId: "toolu_a",
          content: "found",
          toolUseResult: { status: "completed", agentId: agent },
        },
      ]);
      const name = `${version}.jsonl`;
      w.write(s.fileOf(cwd, name));
      const sub = new ClaudeWriter({ cwd, sidechain: true, agentId: agent, version });
      sub.prompt(`Look (${version})`);
      sub.reply([{ type: "text", text: "Looked" }]);
      const agentFile =
        version === "2.1.328"
          ? s.fileOf(cwd, join(name.replace(".jsonl", ""), "subagents", `agent-${agent}.jsonl`))
          : s.fileOf(cwd, `agent-${agent}.jsonl`);
      sub.write(agentFile);
    }
    const reader = s.reader();
    const rows = reader.catalogue().conversations;
    assert.equal(rows.length, 2, "transcripts are not rows");
    for (const row of rows) {
      const { parts } = readAll(reader, row.conversation);
      const result = parts.flatMap((p) => p.blocks).find((b) => b.type === "tool-result");
      assert.ok(result?.type === "tool-result" && result.transcript, row.fileName ?? "");
      const sub = readAll(reader, result.transcript);
      assert.deepEqual(sub.parts.map(summary), [
        `message user text:Look (${row.fileName?.replace(".jsonl", "")})`,
        "message assistant text:Looked",
      ]);
    }
  });

  it("reads a result's agentId however its line spells it, and shows nothing of toolUseResult", (t) => {
    // A page parses a result's line without its toolUseResult copy unless those bytes may name
    // an agentId (harness/claude-code/rows.ts): the links and the parts must not change.
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const cases = [
      { name: "plain", agent: true, edit: (l: string) => l },
      {
        name: "escaped",
        agent: true,
        edit: (l: string) => l.replace('"agentId"', '"agent\\u0049d"'),
      },
      {
        name: "overridden",
        agent: false,
        edit: (l: string) => l.replace(/}$/, ',"toolUseResult":{"stdout":"later"}}'),
      },
      {
        name: "nested",
        agent: false,
        edit: (l: string) =>
          l.replace('"agentId"', '"x":{"agentId"').replace(/"(,"stdout")/, '"}$1'),
      },
    ];
    for (const c of cases) {
      const w = new ClaudeWriter({ cwd });
      w.prompt("Use an agent");
      w.reply([{ type: "tool_use", id: "toolu_a", name: "Agent", input: { prompt: "Look" } }]);
      w.toolResults([
        {
          toolUseId: "toolu_a",
          content: "found",
          toolUseResult: {
            agentId: "a1b2c3",
            stdout: "a copy ".repeat(5000),
            file: { content: "é\n".repeat(300) },
          },
        },
      ]);
      const lines = w.text().split("\n");
      const at = lines.findIndex((l) => l.includes('"toolUseResult"'));
      lines[at] = c.edit(lines[at]!);
      const file = s.fileOf(cwd, `${c.name}.jsonl`);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, lines.join("\n"));
    }
    const reader = s.reader();
    for (const row of reader.catalogue().conversations) {
      const c = cases.find((x) => `${x.name}.jsonl` === row.fileName)!;
      const { parts } = readAll(reader, row.conversation);
      const blocks = parts.flatMap((p) => p.blocks);
      const result = blocks.find((b) => b.type === "tool-result");
      assert.ok(result?.type === "tool-result", c.name);
      assert.equal(result.transcript !== undefined, c.agent, `${c.name}: a transcript link`);
      assert.ok(!JSON.stringify(parts).includes("a copy"), `${c.name}: toolUseResult is not shown`);
      assert.deepEqual(parts.map(summary), [
        "message user text:Use an agent",
        'message assistant tool-call:{"prompt":"Look"}',
        "message toolResult tool-result:Agent text:found",
      ]);
    }
  });

  it("never follows a session folder swapped for a link to reach a transcript", (t) => {
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("Use an agent");
    w.reply([{ type: "tool_use", id: "toolu_a", name: "Agent", input: {} }]);
    w.toolResults([{ toolUseId: "toolu_a", content: "x", toolUseResult: { agentId: "aaa" } }]);
    w.write(s.fileOf(cwd, "s.jsonl"));
    const outside = join(base, "outside", "subagents");
    mkdirSync(outside, { recursive: true });
    new ClaudeWriter({ cwd, sidechain: true }).write(join(outside, "agent-aaa.jsonl"));
    symlinkSync(join(base, "outside"), s.fileOf(cwd, "s"));
    const reader = s.reader();
    const { parts } = readAll(reader, onlyRow(reader).conversation);
    const result = parts.flatMap((p) => p.blocks).find((b) => b.type === "tool-result");
    assert.ok(result?.type === "tool-result" && result.transcript);
    expectRefusal(reader.open({ conversation: result.transcript }), "unknown-conversation");
  });

  it("reads a seat registered on claude-code from its Claude folder, cwd inside the project", (t) => {
    const base = tempDir(t);
    const projectRoot = join(base, "proj");
    const projects = claudeProjectsDirOf(projectRoot, "rocko");
    const inside = join(projectRoot, "sub");
    mkdirSync(inside, { recursive: true });
    richClaudeSession(projectRoot).write(join(projects, encodeClaudeCwd(projectRoot), "a.jsonl"));
    richClaudeSession(inside).write(join(projects, encodeClaudeCwd(inside), "b.jsonl"));
    richClaudeSession(join(base, "out")).write(
      join(projects, encodeClaudeCwd(projectRoot), "c.jsonl"),
    );
    // A session of Pi's layout in the seat's sessions folder is not read.
    mkdirSync(join(projectRoot, ".pi", "state", "rocko", "sessions"), { recursive: true });
    writeFileSync(join(projectRoot, ".pi", "state", "rocko", "sessions", "pi.jsonl"), "{}\n");
    const registration = (seat: string, sessionsDir: string): SeatRegistration => ({
      seat,
      layout: "repo",
      project: projectRoot,
      sessionsDir,
      harness: "claude-code",
      startedAt: "2026-02-01T00:00:00.000Z",
    });
    const specs: BoardSpec[] = [{ kind: "repository", projectRoot, seat: "rocko" }];
    for (const reg of [
      registration("rocko", projects),
      registration("rocko", join(projectRoot, ".pi", "state", "rocko", "sessions")),
    ]) {
      const reader = checkedReader(base, { roots: rootsOf(specs, [reg]) });
      const rows = reader.catalogue().conversations;
      assert.deepEqual(
        rows.map((r) => [r.fileName, r.seat, r.project, r.harness, r.unsupportedReason]).sort(),
        [
          ["a.jsonl", "rocko", "proj", "claude-code", null],
          ["b.jsonl", "rocko", "proj", "claude-code", null],
          ["c.jsonl", "rocko", "proj", "claude-code", "foreign-project"],
        ],
      );
      assert.ok(rows.every((r) => r.unsupportedReason !== null || r.engineStartedAt !== null));
      const a = rows.find((r) => r.fileName === "a.jsonl")!;
      assert.equal(entriesOf(readAll(reader, a.conversation).parts).length, 5);
    }
    // A registration alone, for a seat under a project another spec approved, reads it too.
    const viaMain = checkedReader(base, {
      roots: rootsOf(
        [{ kind: "repository", projectRoot, seat: "main" }],
        [registration("rocko", projects)],
      ),
    });
    const rocko = viaMain.catalogue().conversations.filter((r) => r.seat === "rocko");
    assert.equal(rocko.length, 3);
  });

  it("reads a file larger than a read step, naming a result's call that lies megabytes above it", (t) => {
    // The snapshot is read in 1 MiB steps and kept by no one: the scan gets whole lines from a
    // base, and a page reads the rows it needs again (the call a result answers, 3 MiB up) in
    // windows proved by their tags, as Pi's pages do (docs/reader.md, The harness seam).
    const base = tempDir(t);
    const s = store(base);
    const cwd = join(base, "p");
    const w = new ClaudeWriter({ cwd });
    w.prompt("run it");
    const long = "x".repeat(3 * 1024 * 1024);
    w.reply([
      { type: "tool_use", id: "toolu_far", name: "Bash", input: { command: "ls" } },
      { type: "text", text: long },
    ]);
    w.toolResults([{ toolUseId: "toolu_far", content: "a.txt" }]);
    const file = s.fileOf(cwd);
    const from = w.lines.length;
    w.write(file);
    const reader = s.reader();
    const { conversation } = onlyRow(reader);
    const { parts } = readAll(reader, conversation);
    const said = parts
      .filter((p) => p.role === "assistant")
      .flatMap((p) => p.blocks)
      .map((b) => (b.type === "text" ? b.text : ""))
      .join("");
    assert.equal(said, long, "the reply's 3 MiB text, whole, across read steps and pages");
    const results = parts.flatMap((p) => p.blocks).filter((b) => b.type === "tool-result");
    assert.deepEqual(
      results.map((b) => [b.toolCallId, b.toolName]),
      [["toolu_far", "Bash"]],
    );
    // A follow scans only what was appended, from its base, and still finds the call.
    w.reply([{ type: "tool_use", id: "toolu_near", name: "Read", input: { file_path: "a" } }]);
    w.toolResults([{ toolUseId: "toolu_near", content: "b" }]);
    w.appendSince(file, from);
    const again = readAll(reader, conversation).parts.flatMap((p) => p.blocks);
    assert.deepEqual(
      again.filter((b) => b.type === "tool-result").map((b) => [b.toolCallId, b.toolName]),
      [
        ["toolu_far", "Bash"],
        ["toolu_near", "Read"],
      ],
    );
  });
});
