import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { toChatId } from "../../src/protocol/chat-01.ts";
import { entryAt, keyOf } from "../../src/reader/entries.ts";
import { parseHeader } from "../../src/reader/harness/pi/pi.ts";
import { parsePiSession } from "../../src/reader/harness/pi/rows.ts";
import {
  type BranchItems,
  branchItems,
  extendBranchItems,
  itemKey,
} from "../../src/reader/items.ts";
import {
  branchName,
  depthOf,
  extendSession,
  leafOf,
  type ParsedSession,
} from "../../src/reader/tree.ts";
import {
  assistant,
  entriesOf,
  expectOk,
  expectRefusal,
  header,
  idOf,
  project,
  readAll,
  readerFor,
  T0,
  tempDir,
  ts,
  user,
  writeSession,
} from "../helpers/reader.ts";

function setup(t: import("node:test").TestContext, lines: (object | string)[], tail = "\n") {
  const p = project(tempDir(t));
  writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot), ...lines], tail);
  const reader = readerFor(p);
  return { p, reader, id: idOf(reader, "s.jsonl") };
}

describe("pi parser", () => {
  it("refuses not-a-pi-session when line 1 is not a header", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "a.jsonl", ["garbage", header(p.projectRoot)]);
    writeSession(p.sessionsDir, "b.jsonl", [user("u1", null, "hi")]);
    writeSession(p.sessionsDir, "c.jsonl", ["", header(p.projectRoot)]);
    const reader = readerFor(p);
    for (const f of ["a.jsonl", "b.jsonl", "c.jsonl"]) {
      const r = reader.open({ conversation: idOf(reader, f) });
      expectRefusal(r, "not-a-pi-session");
      assert.equal(r.ok ? null : r.refusal.reconcile, false);
    }
  });

  it("refuses incomplete-header with reconcile when line 1 has no newline yet or the file is empty", (t) => {
    const p = project(tempDir(t));
    writeSession(
      p.sessionsDir,
      "partial.jsonl",
      [JSON.stringify(header(p.projectRoot)).slice(0, 30)],
      "",
    );
    writeSession(p.sessionsDir, "empty.jsonl", []);
    writeSession(p.sessionsDir, "nolf.jsonl", [header(p.projectRoot)], "");
    const reader = readerFor(p);
    for (const f of ["partial.jsonl", "empty.jsonl", "nolf.jsonl"]) {
      const r = reader.open({ conversation: idOf(reader, f) });
      expectRefusal(r, "incomplete-header");
      assert.equal(r.ok ? null : r.refusal.reconcile, true);
    }
  });

  it("refuses foreign-project when the header cwd is relative, outside, or missing", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "rel.jsonl", [header("demo")]);
    writeSession(p.sessionsDir, "out.jsonl", [header("/tmp")]);
    writeSession(p.sessionsDir, "sibling.jsonl", [header(`${p.projectRoot}-other`)]);
    writeSession(p.sessionsDir, "none.jsonl", [
      { type: "session", version: 3, id: "x", timestamp: ts(0) },
    ]);
    const reader = readerFor(p);
    for (const f of ["rel.jsonl", "out.jsonl", "sibling.jsonl", "none.jsonl"]) {
      expectRefusal(reader.open({ conversation: idOf(reader, f) }), "foreign-project");
    }
  });

  it("accepts a header cwd inside the project, and one that no longer exists compared as written", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "sub.jsonl", [
      header(`${p.projectRoot}/gone/deeper`),
      user("u", null, "x"),
    ]);
    const reader = readerFor(p);
    expectOk(reader.open({ conversation: idOf(reader, "sub.jsonl") }));
  });

  it("reads an empty main branch from a header-only file", (t) => {
    const { reader, id } = setup(t, []);
    const r = expectOk(reader.open({ conversation: id }));
    assert.equal(r.page.branch, "main");
    assert.deepEqual(r.page.parts, []);
    assert.equal(r.view.defaultLeaf, null);
    assert.deepEqual(
      r.view.branches.map((b) => b.name),
      ["main"],
    );
    assert.ok(r.follow && !r.cursor);
  });

  it("makes the last valid entry in file order the default leaf, even with children (SM:695)", (t) => {
    // Child before parent: b (child of a) is written first, a last; Pi's leaf is a.
    const { reader, id } = setup(t, [assistant("b", "a", "child"), user("a", null, "parent")]);
    const r = expectOk(reader.open({ conversation: id }));
    assert.equal(r.view.defaultLeaf, "n.a");
    assert.deepEqual(entriesOf(r.page.parts), ["n.a", "n.b"]);
  });

  it("lets the later copy of a duplicate id win (SM:694)", (t) => {
    const { reader, id } = setup(t, [
      user("u1", null, "first"),
      user("u1", null, "second"),
      assistant("a1", "u1", "ok"),
    ]);
    const { parts } = readAll(reader, id);
    const texts = parts.flatMap((p) => p.blocks.map((b) => ("text" in b ? b.text : "")));
    assert.deepEqual(texts, ["second", "ok"]);
  });

  it("names branches main and b.<entry id>, earliest child continuing its parent", (t) => {
    const { reader, id } = setup(t, [
      user("u1", null, "q"),
      assistant("a1", "u1", "x"),
      assistant("a2", "u1", "y"),
      user("r2", null, "second root"),
      assistant("a3", "a1", "z"),
    ]);
    const r = expectOk(reader.open({ conversation: id }));
    assert.deepEqual(
      r.view.branches.map((b) => [b.name, b.leaf, b.forksFrom?.entry ?? null]),
      [
        ["main", "n.a3", null],
        ["b.a2", "n.a2", "n.u1"],
        ["b.r2", "n.r2", null],
      ],
    );
    assert.equal(r.view.defaultBranch, "main");
    assert.deepEqual(entriesOf(readAll(reader, id, "b.a2").parts), ["n.u1", "n.a2"]);
  });

  it("places a malformed line as a notice at its file position on every branch, after the leaf too", (t) => {
    const { reader, id } = setup(t, [
      user("u1", null, "q"),
      "{not json",
      assistant("a1", "u1", "x"),
      assistant("a2", "u1", "y"),
      "[1,2]",
      "42",
      "null",
      '{"type":"message","parentId":null}',
    ]);
    const main = entriesOf(readAll(reader, id, "main").parts);
    assert.deepEqual(main, [
      "n.u1",
      "x.line-3",
      "n.a1",
      "x.line-6",
      "x.line-7",
      "x.line-8",
      "x.line-9",
    ]);
    const other = entriesOf(readAll(reader, id, "b.a2").parts);
    assert.deepEqual(other, [
      "n.u1",
      "x.line-3",
      "n.a2",
      "x.line-6",
      "x.line-7",
      "x.line-8",
      "x.line-9",
    ]);
    const r = expectOk(reader.open({ conversation: id }));
    assert.equal(r.view.unreadableLines, 5);
  });

  it("skips blank lines and reads CRLF lines", (t) => {
    const p = project(tempDir(t));
    const body = [
      header(p.projectRoot),
      user("u1", null, "q"),
      "",
      "   ",
      assistant("a1", "u1", "x"),
    ]
      .map((l) => (typeof l === "string" ? l : JSON.stringify(l)))
      .join("\r\n");
    writeSession(p.sessionsDir, "crlf.jsonl", [body], "\r\n");
    const reader = readerFor(p);
    const { parts } = readAll(reader, idOf(reader, "crlf.jsonl"));
    assert.deepEqual(entriesOf(parts), ["n.u1", "n.a1"]);
  });

  it("leaves out a truncated trailing line and says so in view.incomplete", (t) => {
    const { reader, id } = setup(
      t,
      [user("u1", null, "q"), '{"type":"message","id":"a1","par'],
      "",
    );
    const r = expectOk(reader.open({ conversation: id }));
    assert.equal(r.view.incomplete, true);
    assert.deepEqual(entriesOf(r.page.parts), ["n.u1"]);
  });

  it("stops the history at a missing parent with a notice naming nearby unreadable lines", (t) => {
    const { reader, id } = setup(t, [
      user("u1", null, "q"),
      assistant("a1", "u1", "x"),
      "{broken",
      "{broken too",
      user("u2", "lost", "after the gap"),
      assistant("a2", "u2", "y"),
    ]);
    const r = expectOk(reader.open({ conversation: id }));
    assert.deepEqual(
      r.view.branches.map((b) => b.name),
      ["main", "b.u2"],
    );
    assert.equal(r.view.defaultBranch, "b.u2");
    const parts = readAll(reader, id, "b.u2").parts;
    assert.deepEqual(entriesOf(parts), [
      "x.line-4",
      "x.line-5",
      "x.missing-parent-u2",
      "n.u2",
      "n.a2",
    ]);
    const notice = parts.find((p) => p.entry === "x.missing-parent-u2")?.blocks[0];
    assert.ok(notice && notice.type === "notice" && notice.code === "missing-parent");
    assert.match(notice.text, /lost/);
    assert.match(notice.text, /4–5/);
    // The entries before the gap are their own branch, never joined to it.
    assert.deepEqual(entriesOf(readAll(reader, id, "main").parts), [
      "n.u1",
      "n.a1",
      "x.line-4",
      "x.line-5",
    ]);
  });

  it("stops a parent loop with a notice instead of spinning", (t) => {
    const { reader, id } = setup(t, [
      assistant("a", "b", "one"),
      assistant("b", "a", "two"),
      user("c", "a", "leaf"),
    ]);
    const r = expectOk(reader.open({ conversation: id }));
    assert.equal(r.view.defaultBranch, "b.c");
    const parts = readAll(reader, id, "b.c").parts;
    assert.deepEqual(entriesOf(parts), ["x.loop-a", "n.a", "n.c"]);
    assert.equal(parts[0]?.blocks[0]?.type === "notice" && parts[0].blocks[0].code, "loop");
    assert.deepEqual(entriesOf(readAll(reader, id, "main").parts), ["x.loop-a", "n.a", "n.b"]);
    const self = setup(t, [user("s", "s", "self parent")]);
    const sp = readAll(self.reader, self.id).parts;
    assert.deepEqual(entriesOf(sp), ["x.loop-s", "n.s"]);
  });

  it("gives a forked-from-earlier-session notice for parentSession and never opens it", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "f.jsonl", [
      header(p.projectRoot, { parentSession: "/nowhere/parent.jsonl" }),
      user("u", null, "q"),
    ]);
    const reader = readerFor(p);
    const r = expectOk(reader.open({ conversation: idOf(reader, "f.jsonl") }));
    assert.equal(r.view.forkedFromEarlierSession, true);
    assert.deepEqual(entriesOf(r.page.parts), ["x.forked", "n.u"]);
  });

  it("ignores a second header mid-file with a notice, as Pi does", (t) => {
    const { reader, id } = setup(t, [
      user("u", null, "q"),
      header("/elsewhere"),
      assistant("a", "u", "x"),
    ]);
    assert.deepEqual(entriesOf(readAll(reader, id).parts), ["n.u", "x.header-3", "n.a"]);
  });

  it("shows redacted thinking as unavailable with empty text and never reads the signature", (t) => {
    const { reader, id } = setup(t, [
      {
        type: "message",
        id: "a",
        parentId: null,
        timestamp: ts(1),
        message: {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "secret", redacted: true, thinkingSignature: "SIG" },
            { type: "thinking", thinking: "visible", thinkingSignature: "SIG2" },
          ],
        },
      },
    ]);
    const blocks = expectOk(reader.open({ conversation: id })).page.parts[0]?.blocks;
    assert.deepEqual(blocks, [
      { type: "unavailable", of: "thinking", text: "" },
      { type: "thinking", text: "visible" },
    ]);
    assert.ok(!JSON.stringify(blocks).includes("SIG"));
  });

  it("renders a compaction as a marker in place and never renders retainedTail twice", (t) => {
    const { reader, id } = setup(t, [
      user("u1", null, "q"),
      assistant("a1", "u1", "x"),
      {
        type: "compaction",
        id: "c1",
        parentId: "a1",
        timestamp: ts(3),
        summary: "summary",
        firstKeptEntryId: "a1",
        tokensBefore: 10,
        retainedTail: [{ role: "user", content: "RETAINED" }],
      },
      user("u2", "c1", "after"),
    ]);
    const { parts } = readAll(reader, id);
    assert.deepEqual(entriesOf(parts), ["n.u1", "n.a1", "n.c1", "n.u2"]);
    const c = parts[2];
    assert.equal(c?.kind, "compaction");
    assert.deepEqual(c?.meta, { tokensBefore: 10, firstKeptEntry: "n.a1" });
    assert.ok(!JSON.stringify(parts).includes("RETAINED"));
  });

  it("hides model and thinking changes, labels, session names, extension state and undisplayed custom messages", (t) => {
    const { reader, id } = setup(t, [
      {
        type: "model_change",
        id: "m",
        parentId: null,
        timestamp: ts(1),
        provider: "p",
        modelId: "x",
      },
      {
        type: "thinking_level_change",
        id: "t",
        parentId: "m",
        timestamp: ts(1),
        thinkingLevel: "off",
      },
      user("u", "t", "q"),
      { type: "label", id: "l", parentId: "u", timestamp: ts(2), targetId: "u", label: "L" },
      { type: "session_info", id: "i", parentId: "l", timestamp: ts(2), name: "N" },
      { type: "custom", id: "c", parentId: "i", timestamp: ts(2), customType: "ext", data: {} },
      {
        type: "custom_message",
        id: "h",
        parentId: "c",
        timestamp: ts(2),
        customType: "ext",
        content: "hidden",
        display: false,
      },
      {
        type: "custom_message",
        id: "s",
        parentId: "h",
        timestamp: ts(2),
        customType: "ext",
        content: "shown",
        display: true,
      },
    ]);
    const { parts } = readAll(reader, id);
    assert.deepEqual(entriesOf(parts), ["n.u", "n.s"]);
    assert.equal(parts[1]?.kind, "custom-message");
    assert.deepEqual(parts[1]?.meta, { customType: "ext" });
    // Hidden entries still count for the default leaf: here the last line is shown.
    assert.equal(expectOk(reader.open({ conversation: id })).view.defaultLeaf, "n.s");
  });

  it("hides Pi 1.6.0's system messages, context edits and usage entries, and shows their targets as written", (t) => {
    // Shapes from Pi 1.6.0's docs/session-format.md: a leading system prompt, a later update
    // (with null content, which Pi's sessionEntryToContextMessages tolerates), edits that
    // replace and omit, a usage entry, and a compaction carrying the prompt checkpoint.
    const system = (id: string, parentId: string | null, extra: Record<string, unknown>) => ({
      type: "message",
      id,
      parentId,
      timestamp: ts(1),
      message: { role: "system", timestamp: T0, ...extra },
    });
    const { reader, id } = setup(t, [
      system("p", null, { content: "", sections: { preamble: "You are Pi." }, toolsAdded: [] }),
      user("u", "p", "question"),
      assistant("a", "u", "answer"),
      {
        type: "context_edit",
        id: "e1",
        parentId: "a",
        timestamp: ts(3),
        targetId: "u",
        replacement: { content: "edited question" },
      },
      {
        type: "context_edit",
        id: "e2",
        parentId: "e1",
        timestamp: ts(3),
        targetId: "a",
        replacement: null,
      },
      {
        type: "usage",
        id: "w",
        parentId: "e2",
        timestamp: ts(3),
        kind: "cache_warm",
        provider: "p",
        model: "m",
        usage: { input: 0, output: 0, cacheRead: 5, cacheWrite: 0, totalTokens: 5 },
      },
      system("p2", "w", {
        content: null,
        sections: { skills: null },
        toolsRemoved: [{ name: "x" }],
      }),
      {
        type: "compaction",
        id: "c",
        parentId: "p2",
        timestamp: ts(4),
        summary: "sum",
        firstKeptEntryId: "u",
        tokensBefore: 10,
        systemMessage: { role: "system", content: "You are Pi.", timestamp: T0 },
      },
      system("p3", "c", { content: "more instructions" }),
    ]);
    const { parts } = readAll(reader, id);
    assert.deepEqual(entriesOf(parts), ["n.u", "n.a", "n.c"]);
    assert.deepEqual(
      parts.map((p) => p.blocks.map((b) => (b.type === "text" ? b.text : b.type))),
      [["question"], ["answer"], ["sum"]],
    );
    // A hidden system message can be the leaf, as any hidden entry (Pi's leaf is the last line).
    assert.equal(expectOk(reader.open({ conversation: id })).view.defaultLeaf, "n.p3");
  });

  it("turns unknown entry types, roles and content items into notices", (t) => {
    const { reader, id } = setup(t, [
      { type: "future_thing", id: "f", parentId: null, timestamp: ts(1) },
      {
        type: "message",
        id: "r",
        parentId: "f",
        timestamp: ts(1),
        message: { role: "oracle", content: "?" },
      },
      {
        type: "message",
        id: "c",
        parentId: "r",
        timestamp: ts(1),
        message: { role: "user", content: [{ type: "audio" }] },
      },
    ]);
    const { parts } = readAll(reader, id);
    assert.deepEqual(
      parts.map((p) => p.blocks.map((b) => (b.type === "notice" ? b.code : b.type))),
      [["unknown-entry-type"], ["unknown-role"], ["unknown-content"]],
    );
  });

  it("hashes ids that do not fit CHAT-01 (h- + 40 hex), so a call meets its result", (t) => {
    const callId = "call_abc123|fc_def456";
    const { reader, id } = setup(t, [
      user("u", null, "q"),
      {
        type: "message",
        id: "a",
        parentId: "u",
        timestamp: ts(2),
        message: {
          role: "assistant",
          content: [{ type: "toolCall", id: callId, name: "bash", arguments: { command: "ls" } }],
        },
      },
      {
        type: "message",
        id: "weird id|with spaces",
        parentId: "a",
        timestamp: ts(3),
        message: {
          role: "toolResult",
          toolCallId: callId,
          toolName: "bash",
          content: [{ type: "text", text: "out" }],
          isError: false,
        },
      },
    ]);
    const { parts } = readAll(reader, id);
    const call = parts[1]?.blocks[0];
    const result = parts[2]?.blocks[0];
    assert.ok(call?.type === "tool-call" && result?.type === "tool-result");
    assert.match(call.id, /^h-[0-9a-f]{40}$/);
    assert.equal(call.id, result.toolCallId);
    assert.equal(call.text, '{"command":"ls"}');
    assert.equal(parts[2]?.entry, `n.${toChatId("weird id|with spaces")}`);
    assert.match(parts[2]?.entry ?? "", /^n\.h-[0-9a-f]{40}$/);
  });

  it("reads a v1 session (no ids) as Pi's migration would: one line, in file order", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "v1.jsonl", [
      { type: "session", id: "old", timestamp: ts(0), cwd: p.projectRoot },
      { type: "message", timestamp: ts(1), message: { role: "user", content: "one" } },
      {
        type: "message",
        timestamp: ts(2),
        message: { role: "assistant", content: [{ type: "text", text: "two" }] },
      },
      {
        type: "message",
        timestamp: ts(3),
        message: { role: "hookMessage", customType: "h", content: "three", display: true },
      },
    ]);
    const reader = readerFor(p);
    const { parts } = readAll(reader, idOf(reader, "v1.jsonl"));
    assert.deepEqual(entriesOf(parts), ["n.line-2", "n.line-3", "n.line-4"]);
    assert.equal(parts[2]?.kind, "custom-message");
  });

  it("renders tool calls, tool results, bash executions, images, branch summaries and stopped replies", (t) => {
    const { reader, id } = setup(t, [
      user("u", null, "q"),
      {
        type: "message",
        id: "b",
        parentId: "u",
        timestamp: ts(2),
        message: {
          role: "bashExecution",
          command: "ls",
          output: "a\n",
          exitCode: 0,
          cancelled: false,
          truncated: true,
        },
      },
      {
        type: "branch_summary",
        id: "s",
        parentId: "b",
        timestamp: ts(3),
        fromId: "u",
        summary: "went elsewhere",
      },
      {
        type: "message",
        id: "i",
        parentId: "s",
        timestamp: ts(4),
        message: {
          role: "user",
          content: [{ type: "image", data: "AAAA", mimeType: "image/png" }],
        },
      },
      {
        type: "message",
        id: "x",
        parentId: "i",
        timestamp: ts(5),
        message: { role: "assistant", content: [], stopReason: "error", errorMessage: "500 boom" },
      },
    ]);
    const { parts } = readAll(reader, id);
    assert.deepEqual(parts[1]?.blocks, [
      { type: "bash-command", text: "ls" },
      { type: "bash-output", text: "a\n" },
    ]);
    assert.deepEqual(parts[1]?.meta, { exitCode: 0, cancelled: false, truncated: true });
    assert.equal(parts[2]?.kind, "branch-summary");
    assert.deepEqual(parts[2]?.meta, { fromEntry: "n.u" });
    assert.deepEqual(parts[3]?.blocks, [{ type: "image", mimeType: "image/png", data: "AAAA" }]);
    assert.equal(parts[4]?.meta?.stopReason, "error");
    assert.match(JSON.stringify(parts[4]?.blocks), /500 boom/);
  });
});

describe("incremental parse", () => {
  it("extends a parse with appended lines to exactly what a whole parse gives", () => {
    const cwd = "/p";
    const lines = [
      header(cwd),
      user("u1", null, "q"),
      "{bad",
      assistant("a1", "u1", "x"),
      assistant("a2", "u1", "y"),
      user("u1", null, "dup"),
      user("r", "missing", "orphan"),
      assistant("l1", "l2", "loop"),
      assistant("l2", "l1", "loop"),
      header(cwd),
      user("c", "a2", "child"),
    ].map((l) => (typeof l === "string" ? l : JSON.stringify(l)));
    const whole = Buffer.from(`${lines.join("\n")}\n`);
    const h = parseHeader(whole, false, { projectRoot: cwd });
    const expected = shape(parsePiSession(whole, h));
    for (let cut = 1; cut < lines.length; cut++) {
      const prefix = Buffer.from(`${lines.slice(0, cut).join("\n")}\n`);
      const extended = extendSession(parsePiSession(prefix, h), whole);
      assert.deepEqual(shape(extended), expected, `cut after line ${cut}`);
    }
  });
});

describe("a branch's digest", () => {
  it("is SHA-256 over its items' keys, one per line, for a branch of thousands of items", () => {
    const cwd = "/p";
    const lines: object[] = [header(cwd)];
    for (let k = 0; k < 3000; k++) lines.push(user(`e${k}`, k === 0 ? null : `e${k - 1}`, "q"));
    const whole = Buffer.from(`${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    const s = parsePiSession(whole, parseHeader(whole, false, { projectRoot: cwd }));
    const items = branchItems(s, 0);
    const keys = Array.from({ length: items.length }, (_, i) => `${itemKey(items.at(i))}\n`);
    assert.ok(
      keys.join("").length > 40_000,
      "the keys span several of the pieces they are hashed in",
    );
    const sha = (n: number) => createHash("sha256").update(keys.slice(0, n).join("")).digest("hex");
    assert.equal(items.digestOf(items.length), sha(items.length));
    assert.equal(items.digestOf(2_345), sha(2_345));
  });
});

describe("incremental parse, chained", () => {
  it("keeps every earlier parse reading as it did while later ones extend it in place", () => {
    const cwd = "/p";
    // A seeded generator: the same lines every run.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const ids: string[] = [];
    const lines = [JSON.stringify(header(cwd))];
    const nextLine = (k: number): string => {
      const pick = rand(100);
      const id = `n${k}`;
      const parent = ids.length > 0 ? ids[rand(ids.length)]! : null;
      let entry: object | string;
      if (pick < 60 && ids.length > 0) entry = user(id, ids[ids.length - 1]!, "chain");
      else if (pick < 80) entry = assistant(id, parent, "any");
      else if (pick < 84) entry = user(id, null, "root");
      else if (pick < 88) entry = "{bad";
      else if (pick < 91 && ids.length > 0) entry = user(ids[rand(ids.length)]!, parent, "dup");
      else if (pick < 94) entry = user(id, `later${k + 1}`, "forward");
      else if (pick < 96) entry = user(`later${k}`, parent, "found");
      else entry = user(id, "nowhere", "missing");
      if (typeof entry !== "string") ids.push((entry as { id: string }).id);
      return typeof entry === "string" ? entry : JSON.stringify(entry);
    };
    const bufOf = (n: number) => Buffer.from(`${lines.slice(0, n).join("\n")}\n`);
    for (let k = 0; k < 40; k++) lines.push(nextLine(k));
    const h = parseHeader(bufOf(2), false, { projectRoot: cwd });
    const chain: { n: number; s: ParsedSession; items: BranchItems[] }[] = [];
    let s = parsePiSession(bufOf(lines.length), h);
    const itemsOf = (x: typeof s, prev?: (typeof chain)[number]) =>
      Array.from({ length: x.branches.count }, (_, b) => {
        const before = prev?.items[b];
        return (prev && before && extendBranchItems(prev.s, before, x, b)) ?? branchItems(x, b);
      });
    chain.push({ n: lines.length, s, items: itemsOf(s) });
    for (let k = 40; k < 240; k++) {
      for (let j = rand(3); j >= 0; j--) lines.push(nextLine(k * 4 + j));
      const prev = chain[chain.length - 1]!;
      s = extendSession(prev.s, bufOf(lines.length));
      chain.push({ n: lines.length, s, items: itemsOf(s, prev) });
      // Now and then a second extension of an older parse (its columns taken): a copy.
      if (k % 37 === 0 && chain.length > 3) {
        const old = chain[chain.length - 3]!;
        const again = extendSession(old.s, bufOf(lines.length));
        assert.deepEqual(shape(again), shape(s));
      }
    }
    for (const c of chain) {
      const whole = parsePiSession(bufOf(c.n), h);
      assert.deepEqual(shape(c.s), shape(whole), `the parse of ${c.n} lines`);
      const want = shape(whole).items;
      const got = c.items.map((it) =>
        Array.from({ length: it.length }, (_, i) => itemKey(it.at(i))),
      );
      assert.deepEqual(got, want, `the items of ${c.n} lines`);
      for (const [b, it] of c.items.entries()) {
        const list = branchItems(whole, b);
        assert.equal(it.digestOf(it.length), list.digestOf(list.length), `digest ${c.n}/${b}`);
        // The digest is SHA-256 over the keys, one per line, whatever pieces they are fed in.
        const keys = want[b]!.map((k) => `${k}\n`);
        const sha = (n: number) =>
          createHash("sha256").update(keys.slice(0, n).join("")).digest("hex");
        assert.equal(list.digestOf(list.length), sha(list.length), `keys' digest ${c.n}/${b}`);
        const half = Math.floor(list.length / 2);
        assert.equal(list.digestOf(half), sha(half), `a prefix's digest ${c.n}/${b}`);
      }
    }
  });
});

function shape(s: ParsedSession) {
  const key = (i: number) => (i >= 0 ? keyOf(entryAt(s.scan.entries, i)) : undefined);
  const branches = Array.from({ length: s.branches.count }, (_, b) => b);
  return {
    leaf: s.defaultLeaf ? keyOf(s.defaultLeaf) : undefined,
    branches: branches.map((b) => ({
      name: branchName(s, b),
      start: key(s.branches.start[b]!),
      leaf: key(leafOf(s, b)),
      forksFrom: key(s.branches.forksFrom[b]!),
      depth: depthOf(s, b),
    })),
    items: branches.map((b) => {
      const items = branchItems(s, b);
      return Array.from({ length: items.length }, (_, i) => itemKey(items.at(i)));
    }),
  };
}

describe("header versions and sizes", () => {
  it('compares the header version as Pi does: the string "1" is v1, "3" and garbage are not', (t) => {
    const p = project(tempDir(t));
    const entryless = (version: unknown) => [
      { type: "session", version, id: "h", timestamp: ts(0), cwd: p.projectRoot },
      { type: "message", timestamp: ts(1), message: { role: "user", content: "no id" } },
      user("u", null, "with id"),
    ];
    writeSession(p.sessionsDir, "s1.jsonl", entryless("1"));
    writeSession(p.sessionsDir, "s3.jsonl", entryless("3"));
    writeSession(p.sessionsDir, "sx.jsonl", entryless({ major: 3 }));
    const reader = readerFor(p);
    assert.deepEqual(entriesOf(readAll(reader, idOf(reader, "s1.jsonl")).parts), [
      "n.line-2",
      "n.line-3",
    ]);
    assert.deepEqual(entriesOf(readAll(reader, idOf(reader, "s3.jsonl")).parts), [
      "x.line-2",
      "n.u",
    ]);
    assert.deepEqual(entriesOf(readAll(reader, idOf(reader, "sx.jsonl")).parts), [
      "x.line-2",
      "n.u",
    ]);
  });

  it("lists a session whose header is longer than 64 KiB", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "big-header.jsonl", [
      header(p.projectRoot, { extra: "m".repeat(200_000) }),
      user("u", null, "long header, short talk"),
    ]);
    const reader = readerFor(p);
    const row = reader.catalogue().conversations[0];
    assert.equal(row?.unsupportedReason, null);
    assert.equal(row?.title, "long header, short talk");
  });
});
