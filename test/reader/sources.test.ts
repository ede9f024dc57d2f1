import assert from "node:assert/strict";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  conversationId,
  rootsFromSpecs,
  type SeatRegistration,
  sessionsDirOf,
} from "../../src/index.ts";
import {
  assistant,
  checkedReader,
  expectOk,
  expectRefusal,
  header,
  project,
  rootsOf,
  tempDir,
  ts,
  user,
  writeSession,
} from "../helpers/reader.ts";

function reg(
  p: { projectRoot: string },
  seat: string,
  extra: Partial<SeatRegistration> = {},
): SeatRegistration {
  return {
    seat,
    layout: "repo",
    project: "demo",
    sessionsDir: sessionsDirOf(p.projectRoot, seat),
    harness: "pi",
    startedAt: ts(0),
    ...extra,
  };
}

describe("sources", () => {
  it("makes one root per repository spec and never a root from fleet or connector specs", (t) => {
    const p = project(tempDir(t));
    const roots = rootsFromSpecs(
      [
        { kind: "repository", projectRoot: p.projectRoot, seat: "main" },
        { kind: "repository", projectRoot: `${p.projectRoot}/`, seat: "main" },
        { kind: "fleet", projectRoot: p.projectRoot, seat: "other" },
        { kind: "connector", path: "/" },
        { kind: "repository", projectRoot: p.projectRoot, seat: "../../escape" },
      ],
      [],
    );
    assert.deepEqual(roots, [
      {
        kind: "pi",
        projectRoot: p.projectRoot,
        project: "demo",
        seat: "main",
        sessionsDir: p.sessionsDir,
        engineStarts: [],
      },
    ]);
  });

  it("counts a registration only when seat, layout, project and directory all match", (t) => {
    const p = project(tempDir(t));
    const spec = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: "main" }];
    const claude = { harness: "codex" };
    for (const ignored of [
      reg(p, "main", { ...claude, layout: "fleet" }),
      reg(p, "main", { ...claude, project: "other" }),
      reg(p, "main", { ...claude, sessionsDir: "/somewhere/else" }),
      reg(p, "other", { ...claude, sessionsDir: p.sessionsDir }),
    ]) {
      assert.equal(rootsFromSpecs(spec, [ignored])[0]?.kind, "pi", JSON.stringify(ignored));
    }
    // samePath: a link to the same directory matches.
    const alias = join(p.base, "alias");
    symlinkSync(p.projectRoot, alias);
    const viaAlias = reg(p, "main", { ...claude, sessionsDir: sessionsDirOf(alias, "main") });
    assert.equal(rootsFromSpecs(spec, [viaAlias])[0]?.kind, "unsupported");
  });

  it("shows a non-Pi seat as one unsupported-harness row and never reads its directory", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot), user("u", null, "q")]);
    const reader = checkedReader(p.base, {
      roots: rootsOf(
        [{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }],
        [reg(p, "main", { harness: "codex" })],
      ),
    });
    const cat = reader.catalogue();
    assert.equal(cat.conversations.length, 1);
    const row = cat.conversations[0];
    assert.equal(row?.unsupportedReason, "unsupported-harness");
    assert.equal(row?.harness, "codex");
    assert.equal(row?.fileName, null);
    const r = reader.open({ conversation: row?.conversation ?? "" });
    expectRefusal(r, "unsupported-harness");
    assert.equal(r.ok ? null : r.refusal.reconcile, false);
    expectRefusal(
      reader.open({ conversation: conversationId(p.projectRoot, "main", "s.jsonl") }),
      "unknown-conversation",
    );
  });

  it("adds a placeholder row for a seat on another harness under an approved project only", (t) => {
    const p = project(tempDir(t));
    const spec = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: "main" }];
    const rocko = reg(p, "rocko", { harness: "codex" });
    const roots = rootsFromSpecs(spec, [rocko]);
    assert.deepEqual(
      roots.map((r) => ["seat" in r ? r.seat : r.storeDir, r.kind]),
      [
        ["main", "pi"],
        ["rocko", "unsupported"],
      ],
    );
    const elsewhere = reg({ projectRoot: "/not/approved/demo" }, "rocko", {
      harness: "claude-code",
    });
    assert.equal(rootsFromSpecs(spec, [elsewhere]).length, 1);
    const piSeat = reg(p, "extra", { harness: "pi" });
    assert.equal(rootsFromSpecs(spec, [piSeat]).length, 1, "a registration never adds a Pi root");
  });

  it("supplies engineStartedAt for conversations created at or after the registration's start", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "before.jsonl", [
      header(p.projectRoot, { timestamp: ts(5) }),
      user("u", null, "q"),
    ]);
    writeSession(p.sessionsDir, "after.jsonl", [
      header(p.projectRoot, { timestamp: ts(20) }),
      user("u", null, "q"),
    ]);
    const reader = checkedReader(p.base, {
      roots: rootsOf(
        [{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }],
        [reg(p, "main", { startedAt: ts(10) })],
      ),
    });
    const rows = reader.catalogue().conversations;
    assert.deepEqual(
      rows.map((r) => [r.fileName, r.engineStartedAt]),
      [
        ["after.jsonl", ts(10)],
        ["before.jsonl", null],
      ],
    );
  });

  it("derives conversation ids from project root, seat and file name", () => {
    const a = conversationId("/p/demo", "main", "s.jsonl");
    assert.match(a, /^pi-[0-9a-f]{40}$/);
    assert.equal(a, conversationId("/p/demo/", "main", "s.jsonl"));
    assert.notEqual(a, conversationId("/p/demo", "other", "s.jsonl"));
    assert.notEqual(a, conversationId("/p/demo", "main", "t.jsonl"));
    assert.notEqual(a, conversationId("/q/demo", "main", "s.jsonl"));
  });
});

describe("catalogue", () => {
  it("lists each session with project, seat, session id, created time, size, last modified and a title", (t) => {
    const p = project(tempDir(t));
    const file = writeSession(p.sessionsDir, "s.jsonl", [
      header(p.projectRoot),
      user("u", null, "  Fix   the\nlogin bug please  "),
      assistant("a", "u", "ok"),
    ]);
    const reader = checkedReader(p.base, {
      roots: rootsOf([{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }]),
    });
    const [row] = reader.catalogue().conversations;
    assert.ok(row);
    assert.equal(row.project, "demo");
    assert.equal(row.seat, "main");
    assert.equal(row.fileName, "s.jsonl");
    assert.equal(row.sessionId, "01a00000-0000-7000-8000-000000000001");
    assert.equal(row.createdAt, ts(0));
    assert.equal(row.size, readFileSync(file).length);
    assert.equal(row.title, "Fix the login bug please");
    assert.equal(row.unsupportedReason, null);
    expectOk(reader.open({ conversation: row.conversation }));
  });

  it("titles a session by its latest session_info name, even one far past the head", (t) => {
    const p = project(tempDir(t));
    const lines: object[] = [header(p.projectRoot), user("u0", null, "first question")];
    lines.push({
      type: "session_info",
      id: "i1",
      parentId: "u0",
      timestamp: ts(2),
      name: "Early name",
    });
    let parent = "i1";
    for (let i = 1; i < 300; i++) {
      lines.push(user(`u${i}`, parent, "x".repeat(1000)));
      parent = `u${i}`;
    }
    lines.push({
      type: "session_info",
      id: "i2",
      parentId: parent,
      timestamp: ts(3),
      name: "Late\nname ",
    });
    writeSession(p.sessionsDir, "s.jsonl", lines);
    const reader = checkedReader(p.base, {
      roots: rootsOf([{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }]),
    });
    assert.equal(reader.catalogue().conversations[0]?.title, "Late name");
  });

  it("clips a long title on a code point boundary", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "s.jsonl", [
      header(p.projectRoot),
      user("u", null, "😀".repeat(200)),
    ]);
    const reader = checkedReader(p.base, {
      roots: rootsOf([{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }]),
    });
    const title = reader.catalogue().conversations[0]?.title ?? "";
    assert.equal(title, `${"😀".repeat(120)}…`);
  });

  it("marks rows it cannot open with the refusal code instead of dropping them", (t) => {
    const p = project(tempDir(t));
    writeSession(p.sessionsDir, "foreign.jsonl", [header("/elsewhere"), user("u", null, "q")]);
    writeSession(p.sessionsDir, "garbage.jsonl", ["not json"]);
    writeFileSync(join(p.sessionsDir, "notes.txt"), "ignored: not *.jsonl");
    const reader = checkedReader(p.base, {
      roots: rootsOf([{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }]),
    });
    assert.deepEqual(
      reader.catalogue().conversations.map((r) => [r.fileName, r.unsupportedReason]),
      [
        ["foreign.jsonl", "foreign-project"],
        ["garbage.jsonl", "not-a-pi-session"],
      ],
    );
  });

  it("reads only the head and tail of a large file, and nothing of an unchanged one", (t) => {
    const p = project(tempDir(t));
    const lines: object[] = [header(p.projectRoot)];
    let parent: string | null = null;
    for (let i = 0; i < 2000; i++) {
      lines.push(user(`u${i}`, parent, "y".repeat(5000)));
      parent = `u${i}`;
    }
    writeSession(p.sessionsDir, "big.jsonl", lines);
    const reader = checkedReader(p.base, {
      roots: rootsOf([{ kind: "repository", projectRoot: p.projectRoot, seat: "main" }]),
    }).raw;
    const rchar = () => Number(/rchar: (\d+)/.exec(readFileSync("/proc/self/io", "utf8"))?.[1]);
    const io0 = rchar();
    reader.catalogue();
    const io1 = rchar();
    reader.catalogue();
    const io2 = rchar();
    // /proc/self/io itself is read between the marks; allow for it.
    assert.ok(io1 - io0 < 200 * 1024, `first listing read ${io1 - io0} bytes of a 10 MB file`);
    assert.ok(io2 - io1 < 8 * 1024, `second listing read ${io2 - io1} bytes`);
  });
});
