import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  linkSync,
  mkdirSync,
  renameSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { conversationId } from "../../src/index.ts";
import { isSessionFileName } from "../../src/reader/safe-fs.ts";
import { runWithoutDacOverride, whyNoDacDrop } from "../helpers/no-dac.ts";
import {
  checkedReader,
  expectOk,
  expectRefusal,
  header,
  idOf,
  project,
  readerFor,
  rootsOf,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";

const ROOT_OF_REPO = new URL("../../", import.meta.url).pathname;

describe("safe-fs", () => {
  it("accepts only *.jsonl names directly in the root", () => {
    assert.ok(isSessionFileName("2026-01-01_abc.jsonl"));
    for (const bad of [
      ".jsonl",
      "a.json",
      "a/b.jsonl",
      "../a.jsonl",
      "a\0.jsonl",
      `${"x".repeat(250)}.jsonl`,
    ]) {
      assert.equal(isSessionFileName(bad), false, bad);
    }
  });

  it("refuses unsafe-path for a symlinked session file and never follows it", (t) => {
    const p = project(tempDir(t));
    const outside = join(p.base, "outside.jsonl");
    writeSession(p.base, "outside.jsonl", [header(p.projectRoot), user("u", null, "secret")]);
    symlinkSync(outside, join(p.sessionsDir, "link.jsonl"));
    const reader = readerFor(p);
    const row = reader.catalogue().conversations.find((r) => r.fileName === "link.jsonl");
    assert.equal(row?.unsupportedReason, "unsafe-path");
    assert.equal(row?.title, null);
    expectRefusal(reader.open({ conversation: idOf(reader, "link.jsonl") }), "unsafe-path");
  });

  it("refuses unsafe-path for a directory or a FIFO named *.jsonl, without blocking", (t) => {
    const p = project(tempDir(t));
    mkdirSync(join(p.sessionsDir, "dir.jsonl"));
    execFileSync("mkfifo", [join(p.sessionsDir, "pipe.jsonl")]);
    const reader = readerFor(p);
    for (const f of ["dir.jsonl", "pipe.jsonl"]) {
      const row = reader.catalogue().conversations.find((r) => r.fileName === f);
      assert.equal(row?.unsupportedReason, "unsafe-path", f);
      expectRefusal(reader.open({ conversation: idOf(reader, f) }), "unsafe-path");
    }
  });

  for (const component of [".pi", "state", "main", "sessions"]) {
    it(`refuses unsafe-path when ${component} is a symlink`, (t) => {
      const p = project(tempDir(t));
      writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot), user("u", null, "q")]);
      const id = conversationId(p.projectRoot, p.seat, "s.jsonl");
      const parts = [".pi", "state", "main", "sessions"];
      const at = join(p.projectRoot, ...parts.slice(0, parts.indexOf(component) + 1));
      renameSync(at, `${at}.real`);
      symlinkSync(`${at}.real`, at);
      const reader = readerFor(p);
      const cat = reader.catalogue();
      assert.deepEqual(
        cat.refusedRoots.map((r) => r.code),
        ["unsafe-path"],
      );
      assert.equal(cat.conversations.length, 0);
      expectRefusal(reader.open({ conversation: id }), "unknown-conversation");
    });
  }

  it("follows a symlinked project root (the compatibility path) but nothing below it", (t) => {
    const base = tempDir(t);
    const p = project(base, "real");
    writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot), user("u", null, "q")]);
    const alias = join(base, "alias");
    symlinkSync(p.projectRoot, alias);
    const reader = checkedReader(base, {
      roots: rootsOf([{ kind: "repository", projectRoot: alias, seat: "main" }]),
    });
    const row = reader.catalogue().conversations[0];
    assert.equal(row?.project, "alias");
    expectOk(reader.open({ conversation: row?.conversation ?? "" }));
  });

  it("refuses too-large over 256 MiB without reading the file", (t) => {
    const p = project(tempDir(t));
    const file = writeSession(p.sessionsDir, "big.jsonl", [header(p.projectRoot)]);
    truncateSync(file, 256 * 1024 * 1024 + 1);
    const reader = readerFor(p);
    const row = reader.catalogue().conversations[0];
    assert.equal(row?.unsupportedReason, "too-large");
    const r = reader.open({ conversation: idOf(reader, "big.jsonl") });
    expectRefusal(r, "too-large");
    assert.equal(r.ok ? null : r.refusal.reconcile, false);
  });

  it("refuses unreadable for a file, and lists a root it cannot read, when permission is denied", async (t) => {
    const why = whyNoDacDrop();
    if (why && process.env.CI) assert.fail(why);
    if (why) return t.skip(why);
    const base = tempDir(t);
    chmodSync(base, 0o755);
    const p = project(base);
    writeSession(p.sessionsDir, "ok.jsonl", [header(p.projectRoot), user("u", null, "q")]);
    const locked = writeSession(p.sessionsDir, "locked.jsonl", [
      header(p.projectRoot),
      user("u", null, "q"),
    ]);
    chmodSync(locked, 0o000);
    const q = project(base, "closed");
    writeSession(q.sessionsDir, "x.jsonl", [header(q.projectRoot)]);
    chmodSync(q.sessionsDir, 0o000);
    const script = join(base, "child.ts");
    writeFileSync(
      script,
      `import { createReader, rootsFromSpecs } from ${JSON.stringify(join(ROOT_OF_REPO, "src/index.ts"))};
const specs = JSON.parse(process.argv[2]);
const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
const cat = reader.catalogue();
const open = cat.conversations.map((r) => [r.fileName, reader.open({ conversation: r.conversation })]);
console.log(JSON.stringify({ cat, open }));
`,
    );
    chmodSync(script, 0o644);
    const specs = [
      { kind: "repository", projectRoot: p.projectRoot, seat: "main" },
      { kind: "repository", projectRoot: q.projectRoot, seat: "main" },
    ];
    const out = await runWithoutDacOverride(script, [JSON.stringify(specs)]);
    assert.equal(out.code, 0, out.stderr);
    const { cat, open } = JSON.parse(out.stdout) as {
      cat: {
        conversations: { fileName: string; unsupportedReason: string | null }[];
        refusedRoots: { code: string; project: string }[];
      };
      open: [string, { ok: boolean; refusal?: { code: string } }][];
    };
    assert.deepEqual(
      cat.refusedRoots.map((r) => [r.project, r.code]),
      [["closed", "unreadable"]],
    );
    assert.deepEqual(
      cat.conversations.map((r) => [r.fileName, r.unsupportedReason]),
      [
        ["locked.jsonl", "unreadable"],
        ["ok.jsonl", null],
      ],
    );
    assert.deepEqual(
      open.map(([f, r]) => [f, r.ok ? "ok" : r.refusal?.code]),
      [
        ["locked.jsonl", "unreadable"],
        ["ok.jsonl", "ok"],
      ],
    );
    chmodSync(q.sessionsDir, 0o755);
  });
});

describe("one inode, two projects", () => {
  it("checks the header against each project it is read through, even after a cached parse", (t) => {
    const base = tempDir(t);
    const a = project(base, "alpha");
    const b = project(base, "beta");
    const file = writeSession(a.sessionsDir, "s.jsonl", [
      header(a.projectRoot),
      user("u", null, "q"),
    ]);
    linkSync(file, join(b.sessionsDir, "s.jsonl"));
    const reader = checkedReader(base, {
      roots: rootsOf([
        { kind: "repository", projectRoot: a.projectRoot, seat: "main" },
        { kind: "repository", projectRoot: b.projectRoot, seat: "main" },
      ]),
    });
    const viaA = conversationId(a.projectRoot, "main", "s.jsonl");
    const viaB = conversationId(b.projectRoot, "main", "s.jsonl");
    expectOk(reader.open({ conversation: viaA }));
    expectRefusal(reader.open({ conversation: viaB }), "foreign-project");
    expectOk(reader.open({ conversation: viaA }));
  });
});
