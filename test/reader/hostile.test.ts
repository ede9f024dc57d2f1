import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { deepToolCallLine } from "../../bench/hostile-files.ts";
import schema from "../../schema/chat-01.schema.json" with { type: "json" };
import { createHandler } from "../../src/board/routes.ts";
import { renderHeader } from "../../src/cli/render.ts";
import { LIMITS, type Part, toChatId } from "../../src/protocol/chat-01.ts";
import { jsonText } from "../../src/reader/json-text.ts";
import {
  checkedReader,
  expectOk,
  header,
  idOf,
  project,
  readAll,
  readerFor,
  rootsOf,
  tempDir,
  ts,
  user,
  writeSession,
} from "../helpers/reader.ts";
import { assertReadResult, assertValid } from "../helpers/schema.ts";

function setup(t: TestContext, lines: (object | string)[], headerExtra = {}) {
  const p = project(tempDir(t));
  writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot, headerExtra), ...lines]);
  const reader = readerFor(p);
  return { p, reader, id: idOf(reader, "s.jsonl") };
}

/** Rejoins the fragments of the first block of `type` across parts. */
function rejoined(parts: Part[], type: string): string {
  let text = "";
  for (const part of parts) {
    for (const b of part.blocks) {
      if (b.type !== type) continue;
      if (b.type === "image") text += b.data;
      else if ("text" in b) text += b.text;
    }
  }
  return text;
}

describe("hostile inputs (issue 17)", () => {
  it("renders tool arguments nested 5,000 and 1,000,000 deep instead of throwing RangeError", (t) => {
    const { reader, id } = setup(t, [
      deepToolCallLine("shallow", 5_000),
      deepToolCallLine("deep", 1_000_000).replace('"parentId":null', '"parentId":"shallow"'),
    ]);
    const { parts } = readAll(reader, id);
    const calls = parts.filter((p) => p.blocks.some((b) => b.type === "tool-call"));
    assert.equal(calls[0]?.entry, "n.shallow");
    assert.equal(
      rejoined([calls[0]!], "tool-call"),
      `{"a":${"[".repeat(5_000)}${"]".repeat(5_000)}}`,
    );
    const deep = parts.filter((p) => p.entry === "n.deep");
    assert.equal(
      rejoined(deep, "tool-call"),
      `{"a":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`,
    );
  });

  it("answers 200 on the board, not 500, for a conversation with deeply nested arguments", (t) => {
    const { reader, id } = setup(t, [deepToolCallLine("deep", 5_000)]);
    const logs: string[] = [];
    const handle = createHandler({
      reader,
      assets: new Map(),
      hosts: new Set(["127.0.0.1:1"]),
      log: (line) => logs.push(line),
    });
    const target = `/api/conversations/${encodeURIComponent(id)}/page`;
    for (let round = 0; round < 2; round++) {
      const reply = handle({ method: "GET", target, host: "127.0.0.1:1" });
      assert.equal(reply.status, 200, logs.join("\n"));
      const body: unknown = JSON.parse(reply.body.toString("utf8"));
      assertReadResult(body);
    }
    assert.deepEqual(logs, []);
  });

  it("serializes any JSON value exactly as JSON.stringify does, at any depth", () => {
    const samples = [
      '{"b":1,"a":[1.5,-0,1e400,"\\ud83d",null,true,{"__proto__":{"x":[]}}],"10":"ten","toJSON":1}',
      "[]",
      "{}",
      '"plain"',
      "1e21",
    ];
    for (const s of samples) {
      const v: unknown = JSON.parse(s);
      assert.equal(jsonText(v), JSON.stringify(v), s);
    }
    const deep: unknown = JSON.parse(`${'{"k":['.repeat(50_000)}1${"]}".repeat(50_000)}`);
    assert.throws(() => JSON.stringify(deep), RangeError);
    assert.equal(jsonText(deep), `${'{"k":['.repeat(50_000)}1${"]}".repeat(50_000)}`);
  });

  it("parses a message of 2,000,000 escaped lone surrogates once for all its pages", (t) => {
    const n = 2_000_000;
    const { reader, id } = setup(t, [
      `{"type":"message","id":"m1","parentId":null,"message":{"role":"user","content":"${"\\ud83d".repeat(n)}"}}`,
    ]);
    const parse = JSON.parse;
    let bigParses = 0;
    JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
      if (text.length > 1024 * 1024) bigParses++;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    let read: ReturnType<typeof readAll>;
    try {
      read = readAll(reader, id);
    } finally {
      JSON.parse = parse;
    }
    assert.ok(read.pages >= 2, `the message spans pages (${read.pages})`);
    // Before: the entry was parsed and rendered again for every page it spans.
    assert.equal(bigParses, 1, "the long line is parsed once");
    assert.equal(rejoined(read.parts, "text"), "\ud83d".repeat(n));
  });

  it("gives a native id spelled h-<hash> and the id that hashes to it different CHAT-01 ids", (t) => {
    const hashed = toChatId("a|b");
    assert.match(hashed, /^h-[0-9a-f]{40}$/);
    assert.notEqual(toChatId(hashed), hashed, "a native id starting h- is hashed too");
    assert.equal(toChatId("plain-id"), "plain-id");
    // Two roots and a fork whose names and part ids would repeat if the ids collided.
    const { reader, id } = setup(t, [
      user("a|b", null, "first root", 1),
      user(hashed, null, "second root", 2),
      user("c", "a|b", "child of a|b", 3),
      user("d", hashed, "child of the native h- id", 4),
      user("e", "a|b", "a fork of a|b", 5),
    ]);
    const first = expectOk(reader.open({ conversation: id, branch: "main" }));
    const names = first.view.branches.map((b) => b.name);
    assert.equal(new Set(names).size, names.length);
    assert.equal(first.view.branchCount, 3);
    for (const name of names) {
      const { parts } = readAll(reader, id, name);
      assert.ok(parts.length > 0, name);
    }
    const second = names.find((n) => n !== "main" && n !== `b.e`);
    assert.ok(second);
    const { parts } = readAll(reader, id, second);
    assert.deepEqual(
      parts.map((p) => rejoined([p], "text")),
      ["second root", "child of the native h- id"],
    );
  });

  it("keeps meta numbers within the integer rules and says what it left out", (t) => {
    const compaction = (id: string, parentId: string, tokensBefore: string) =>
      `{"type":"compaction","id":"${id}","parentId":"${parentId}","timestamp":"${ts(1)}","summary":"s","firstKeptEntryId":"u","tokensBefore":${tokensBefore}}`;
    const bash = (id: string, parentId: string, exitCode: string) =>
      `{"type":"message","id":"${id}","parentId":"${parentId}","message":{"role":"bashExecution","command":"true","output":"","exitCode":${exitCode},"cancelled":false,"truncated":false}}`;
    const { reader, id } = setup(t, [
      user("u", null, "hi"),
      compaction("c1", "u", "-1"),
      compaction("c2", "c1", "1.5"),
      compaction("c3", "c2", "1e400"),
      compaction("c4", "c3", "1200"),
      bash("b1", "c4", "1.5"),
      bash("b2", "b1", "1e400"),
      bash("b3", "b2", "-2"),
      bash("b4", "b3", "9007199254740993"),
    ]);
    const { parts } = readAll(reader, id);
    const byEntry = new Map(parts.map((p) => [p.entry, p]));
    for (const c of ["n.c1", "n.c2", "n.c3"]) {
      const part = byEntry.get(c)!;
      assert.equal(part.meta?.tokensBefore, undefined, c);
      assert.ok(
        part.blocks.some((b) => b.type === "notice" && b.code === "unknown-content"),
        c,
      );
    }
    assert.equal(byEntry.get("n.c4")?.meta?.tokensBefore, 1200);
    assert.match(
      JSON.stringify(byEntry.get("n.c3")?.blocks),
      /tokensBefore \(Infinity\) is not a whole number/,
    );
    for (const b of ["n.b1", "n.b2", "n.b4"]) {
      const part = byEntry.get(b)!;
      assert.equal(part.meta?.exitCode, null, b);
      assert.ok(
        part.blocks.some((x) => x.type === "notice" && x.code === "unknown-content"),
        b,
      );
    }
    assert.equal(byEntry.get("n.b3")?.meta?.exitCode, -2);
  });

  it("leaves out a reply's whole usage, and says so, when a count or the cost breaks the number rules", (t) => {
    const reply = (id: string, parentId: string, usage: string) =>
      `{"type":"message","id":"${id}","parentId":"${parentId}","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"model":"m","provider":"p","usage":${usage}}}`;
    const { reader, id } = setup(t, [
      user("u", null, "hi"),
      reply("r1", "u", `{"input":1.5,"output":2,"cacheRead":0,"cacheWrite":0}`),
      reply("r2", "r1", `{"input":1,"output":-2,"cacheRead":1e400,"cacheWrite":0}`),
      reply("r3", "r2", `{"input":9007199254740993,"output":1,"cacheRead":0,"cacheWrite":0}`),
      reply(
        "r4",
        "r3",
        `{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":-0.5}}`,
      ),
      reply("r5", "r4", `{"input":10,"output":20,"cost":{"total":0.25}}`),
      reply("r6", "r5", `{"input":"10","output":20,"cacheRead":3,"cacheWrite":4}`),
    ]);
    const { parts } = readAll(reader, id);
    const byEntry = new Map(parts.map((p) => [p.entry, p]));
    for (const r of ["n.r1", "n.r2", "n.r3", "n.r4"]) {
      const part = byEntry.get(r)!;
      assert.equal(part.meta?.usage, undefined, r);
      assert.equal(part.meta?.model, "m", `${r}: the model is still shown`);
      const notices = part.blocks.filter(
        (b) => b.type === "notice" && b.code === "unknown-content",
      );
      assert.equal(notices.length, 1, r);
      assert.match(JSON.stringify(notices), /usage is left out/, r);
    }
    assert.match(
      JSON.stringify(byEntry.get("n.r2")?.blocks),
      /output token count \(-2\).*cache read token count \(Infinity\)/,
    );
    // Counts an older Pi did not write are 0; a count that is not a number at all is absent.
    assert.deepEqual(byEntry.get("n.r5")?.meta?.usage, {
      input: 10,
      output: 20,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0.25,
    });
    assert.deepEqual(byEntry.get("n.r6")?.meta?.usage, {
      input: 0,
      output: 20,
      cacheRead: 3,
      cacheWrite: 4,
      cost: null,
    });
  });

  it("leaves out a header timestamp over 256 characters from the catalogue's createdAt", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "long.jsonl", [
      header(p.projectRoot, { timestamp: `2026-01-01T00:00:00.000Z${" ".repeat(300)}` }),
      user("u", null, "hi"),
    ]);
    writeSession(p.sessionsDir, "ok.jsonl", [header(p.projectRoot), user("u", null, "hi")]);
    const reader = readerFor(p);
    const rows = reader.catalogue().conversations;
    assert.equal(rows.find((r) => r.fileName === "long.jsonl")?.createdAt, null);
    assert.equal(rows.find((r) => r.fileName === "ok.jsonl")?.createdAt, ts(0));
    expectOk(reader.open({ conversation: idOf(reader, "long.jsonl") }));
  });
});

describe("catalogue times", () => {
  it("leaves out a registration start time over 256 characters that Date.parse accepts", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot), user("u", null, "hi")]);
    const registration = (startedAt: string) => ({
      seat: p.seat,
      layout: "repo",
      project: p.projectRoot,
      sessionsDir: p.sessionsDir,
      harness: "pi",
      startedAt,
    });
    const long = `Dec 31 2025 (${"x".repeat(300)})`;
    assert.ok(!Number.isNaN(Date.parse(long)), "V8 takes the comment");
    const spec = { kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat };
    const reader = checkedReader(p.base, { roots: rootsOf([spec], [registration(long)]) });
    assert.equal(reader.catalogue().conversations[0]?.engineStartedAt, null);
    const fine = checkedReader(p.base, {
      roots: rootsOf([spec], [registration("2025-12-31T00:00:00.000Z")]),
    });
    assert.equal(fine.catalogue().conversations[0]?.engineStartedAt, "2025-12-31T00:00:00.000Z");
  });

  it("ignores a registration whose harness or seat is too long for a catalogue row", (t) => {
    const p = project(tempDir(t));
    const spec = { kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat };
    const placeholder = (seat: string, harness: string) => ({
      seat,
      layout: "repo",
      project: p.projectRoot,
      sessionsDir: `${p.projectRoot}/.pi/state/${seat}/sessions`,
      harness,
      startedAt: "2025-12-31T00:00:00.000Z",
    });
    const reader = checkedReader(p.base, {
      roots: rootsOf(
        [spec],
        [
          placeholder("claude", "h".repeat(300_000)),
          placeholder("s".repeat(2_000), "codex"),
          placeholder("ok", "codex"),
        ],
      ),
    });
    const rows = reader.catalogue().conversations.filter((r) => r.unsupportedReason !== null);
    assert.deepEqual(
      rows.map((r) => [r.seat, r.harness]),
      [["ok", "codex"]],
    );
  });
});

describe("bounded views", () => {
  it("lists at most 100 branches with the count, the page's branch always among them", (t) => {
    const roots = Array.from({ length: 20_000 }, (_, i) => user(`r${i}`, null, `root ${i}`, i));
    const { reader, id } = setup(t, roots);
    const first = expectOk(reader.open({ conversation: id }));
    assert.equal(first.view.branchCount, 20_000);
    assert.equal(first.view.branches.length, LIMITS.branchesPerView);
    assert.equal(first.view.defaultBranch, "b.r19999");
    assert.ok(Buffer.byteLength(JSON.stringify(first)) < 64 * 1024, "a page stays small");
    const far = expectOk(reader.open({ conversation: id, branch: "b.r12345" }));
    const names = far.view.branches.map((b) => b.name);
    assert.ok(names.includes("b.r12345"));
    assert.ok(names.includes("b.r19999"), "the default branch is listed");
    assert.ok(names.includes("main"));
    assert.equal(far.page.parts[0]?.entry, "n.r12345");
  });

  it("lists the branches a branch forks from and those forking from it", (t) => {
    // A chain of 300 entries, each with a second child: 301 branches, nested 300 deep.
    const lines: object[] = [];
    for (let i = 0; i < 300; i++) {
      lines.push(user(`c${i}`, i === 0 ? null : `c${i - 1}`, `chain ${i}`, i));
      lines.push(user(`f${i}`, `c${i}`, `fork ${i}`, i));
    }
    const { reader, id } = setup(t, lines);
    // f{i} is the first child of c{i}, so it continues that branch; c{i+1} forks from c{i}.
    const main = expectOk(reader.open({ conversation: id, branch: "main" }));
    assert.equal(main.view.branchCount, 300);
    const name = "b.c150";
    const mid = expectOk(reader.open({ conversation: id, branch: name }));
    const listed = new Map(mid.view.branches.map((b) => [b.name, b]));
    assert.equal(listed.get(name)?.forksFrom?.branch, "b.c149");
    assert.ok(listed.has("b.c149"), "the branch it forks from");
    assert.ok(listed.has("b.c151"), "the branch forking from it");
    assert.equal(listed.get(name)?.depth, 152);
    assert.ok(!listed.has("main"), "150 ancestors do not fit: the nearest are listed");
    const shallow = expectOk(reader.open({ conversation: id, branch: "b.c50" }));
    const near = shallow.view.branches.map((b) => b.name);
    for (let i = 1; i <= 51; i++) assert.ok(near.includes(`b.c${i}`), `b.c${i}`);
    assert.ok(near.includes("main"), "its root");
  });

  it("says in the command's header how many branches exist when not all are listed", (t) => {
    const roots = Array.from({ length: 250 }, (_, i) => user(`r${i}`, null, `root ${i}`, i));
    const { reader, id } = setup(t, roots);
    const r = expectOk(reader.open({ conversation: id, branch: "main" }));
    const lines = renderHeader(
      { conversation: id, branch: "main", view: r.view, row: undefined },
      100,
    );
    assert.ok(lines.includes("250 branches (* the one shown, 100 listed):"), lines.join("\n"));
  });

  it("indexes a comb of 20,000 forks in linear work (each fork's depth was walked from the root)", (t) => {
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const parent = i === 0 ? "null" : `"c${i - 1}"`;
      lines.push(
        `{"type":"message","id":"c${i}","parentId":${parent},"message":{"role":"user","content":""}}`,
      );
      lines.push(
        `{"type":"message","id":"f${i}","parentId":"c${i}","message":{"role":"user","content":""}}`,
      );
    }
    const { reader, id } = setup(t, lines);
    // CPU time, not wall time: the bound is about 100 times what a linear index takes and a
    // fifth of what the quadratic one took (21 s), so a busy machine does not make it flaky.
    const before = process.cpuUsage();
    const r = expectOk(reader.raw.open({ conversation: id }));
    const spent = process.cpuUsage(before);
    assert.equal(r.view.branchCount, 20_000);
    assert.ok(spent.user + spent.system < 5_000_000, `open took ${spent.user / 1000} ms of CPU`);
  });

  it("states the bound in the schema as LIMITS does", () => {
    const view = schema.$defs.view;
    assert.equal(view.properties.branches.maxItems, LIMITS.branchesPerView);
    assert.ok(view.required.includes("branchCount"));
    assertValid("view", {
      defaultBranch: "main",
      defaultLeaf: null,
      branches: [{ name: "main", leaf: null, start: null, forksFrom: null, depth: 0, label: null }],
      branchCount: 1,
      incomplete: false,
      forkedFromEarlierSession: false,
      forkedFrom: null,
      unreadableLines: 0,
    });
  });
});
