// The CLI names a fork's parent (issue 24 item 14), and a hostile header's parentSession is
// never followed: pointing outside the approved roots, at a link, at a FIFO, at a folder, at a
// file that is not a session, or climbing out with `..`, it names no parent and the path it
// names is never opened (strace: traceOpens sees every open, even as root).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { CatalogueRow } from "../../src/index.ts";
import { assertNeverOpened, skipWithoutStrace, traceOpens } from "../helpers/open-trace.ts";
import { assistant, header, project, tempDir, user, writeSession } from "../helpers/reader.ts";
import { MAIN, runCli } from "./run-cli.ts";

function fixture(base: string) {
  const p = project(base, "app");
  const outside = join(base, "outside");
  mkdirSync(outside);
  const secret = join(outside, "secret.jsonl");
  const titled = (cwd: string, title: string, extra: Record<string, unknown> = {}) => [
    header(cwd, extra),
    {
      type: "session_info",
      id: "i1",
      parentId: null,
      timestamp: "2026-01-01T00:00:01.000Z",
      name: title,
    },
    user("u1", "i1", `asked in ${title}`, 2),
    assistant("a1", "u1", "answered", 3),
  ];
  writeSession(outside, "secret.jsonl", titled(outside, "Outside secret"));
  const s = p.sessionsDir;
  writeSession(s, "good.jsonl", titled(p.projectRoot, "Good parent"));
  symlinkSync(secret, join(s, "link.jsonl"));
  const fifo = join(s, "fifo.jsonl");
  assert.equal(spawnSync("mkfifo", [fifo]).status, 0);
  const folder = join(s, "folder.jsonl");
  mkdirSync(folder);
  const notes = join(s, "notes.txt");
  writeFileSync(notes, "not a session\n");
  const forks: Record<string, string> = {
    "fork-good.jsonl": join(s, "good.jsonl"),
    "fork-outside.jsonl": secret,
    "fork-link.jsonl": join(s, "link.jsonl"),
    "fork-fifo.jsonl": fifo,
    "fork-folder.jsonl": folder,
    "fork-notes.jsonl": notes,
    "fork-dots.jsonl": `${s}/../../../../../outside/secret.jsonl`,
    "fork-relative.jsonl": "outside/secret.jsonl",
  };
  for (const [name, parentSession] of Object.entries(forks)) {
    writeSession(s, name, titled(p.projectRoot, name, { parentSession }));
  }
  return { p, secret, fifo, folder, notes };
}

describe("conversation fork parents", () => {
  it("prints the parent of a fork in the catalogue and in read when it is an approved session", async (t) => {
    const f = fixture(tempDir(t));
    const json = await runCli(t, ["catalogue", "--json", "--project", f.p.projectRoot]);
    assert.equal(json.code, 0, json.stderr);
    const rows: CatalogueRow[] = JSON.parse(json.stdout).conversations;
    const good = rows.find((r) => r.fileName === "good.jsonl");
    const fork = rows.find((r) => r.fileName === "fork-good.jsonl");
    assert.ok(good && fork);
    assert.deepEqual(fork.forkedFrom, { conversation: good.conversation, title: "Good parent" });
    const text = await runCli(t, ["catalogue", "--project", f.p.projectRoot]);
    assert.match(text.stdout, new RegExp(`forked from “Good parent” \\(${good.conversation}\\)`));
    const read = await runCli(t, ["read", fork.conversation, "--project", f.p.projectRoot]);
    assert.equal(read.code, 0, read.stderr);
    assert.match(
      read.stdout,
      new RegExp(`notes: forked from “Good parent” \\(${good.conversation}\\)`),
    );
  });

  it("names no parent and never opens what a hostile parentSession points at", {
    skip: skipWithoutStrace(),
  }, async (t) => {
    const f = fixture(tempDir(t));
    const trace = await traceOpens(MAIN, ["catalogue", "--json", "--project", f.p.projectRoot]);
    assert.equal(trace.code, 0, trace.stderr);
    const rows: CatalogueRow[] = JSON.parse(trace.stdout).conversations;
    for (const row of rows) {
      if (row.fileName === "fork-good.jsonl") assert.notEqual(row.forkedFrom, null);
      else assert.equal(row.forkedFrom, null, `${row.fileName} names a parent`);
    }
    assertNeverOpened(trace.opened, [f.secret, f.fifo, f.folder, f.notes]);
    // Reading each hostile fork opens nothing of what its header names either.
    for (const name of ["fork-outside", "fork-link", "fork-fifo", "fork-dots", "fork-folder"]) {
      const id = rows.find((r) => r.fileName === `${name}.jsonl`)?.conversation;
      assert.ok(id, name);
      const read = await traceOpens(MAIN, ["read", id, "--json", "--project", f.p.projectRoot]);
      assert.equal(read.code, 0, read.stderr);
      const view = JSON.parse(read.stdout.split("\n")[0] ?? "").view;
      assert.equal(view.forkedFromEarlierSession, true, name);
      assert.equal(view.forkedFrom, null, name);
      assertNeverOpened(read.opened, [f.secret, f.fifo, f.folder, f.notes]);
    }
  });
});
