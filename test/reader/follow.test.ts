import assert from "node:assert/strict";
import {
  appendFileSync,
  closeSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import type { ReaderOptions } from "../../src/index.ts";
import {
  assistant,
  entriesOf,
  expectOk,
  expectRefusal,
  header,
  idOf,
  type Project,
  project,
  readAll,
  readerFor as readerWith,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";

function line(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

function setupWith(t: TestContext, options: Partial<ReaderOptions>) {
  const p = project(tempDir(t));
  const file = writeSession(p.sessionsDir, "s.jsonl", [
    header(p.projectRoot),
    user("u1", null, "q"),
    assistant("a1", "u1", "x"),
  ]);
  const reader = readerWith(p, options);
  return { p, file, reader, id: idOf(reader, "s.jsonl") };
}

// Every rule holds both when the change time may prove a file untouched and when it may not.
for (const prefixCheck of ["auto", "bytes"] as const)
  describe(`snapshots, cursors and follow (prefixCheck ${prefixCheck})`, () => {
    const readerFor = (p: Project, extra: Partial<ReaderOptions> = {}) =>
      readerWith(p, { prefixCheck, ...extra });
    const setup = (t: TestContext, extra: Partial<ReaderOptions> = {}) =>
      setupWith(t, { prefixCheck, ...extra });
    it("returns only what was appended to the branch since the follow cursor", (t) => {
      const { file, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      assert.ok(first.follow && first.cursor === null && first.page.nextCursor === null);
      appendFileSync(file, line(user("u2", "a1", "more")) + line(assistant("a2", "u2", "done")));
      const r = expectOk(
        reader.next({ cursor: first.follow.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(entriesOf(r.page.parts), ["n.u2", "n.a2"]);
      assert.equal(r.page.sourceEpoch, first.page.sourceEpoch, "growth keeps the epoch");
      assert.notEqual(r.page.snapshot.digest, first.page.snapshot.digest);
      assert.ok(r.follow);
      const quiet = expectOk(
        reader.next({ cursor: r.follow.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(quiet.page.parts, []);
    });

    it("returns an empty page when the conversation continued on another branch, and names the new default", (t) => {
      const { file, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      appendFileSync(file, line(assistant("alt", "u1", "elsewhere")));
      const r = expectOk(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(r.page.parts, []);
      assert.equal(r.page.branch, "main");
      assert.equal(r.view.defaultBranch, "b.alt");
    });

    it("appends a new malformed line to every branch as a notice after the leaf", (t) => {
      const { file, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      appendFileSync(file, "{oops\n");
      const r = expectOk(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(entriesOf(r.page.parts), ["x.line-4"]);
    });

    it("ignores a trailing partial line until it is complete", (t) => {
      const { file, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      const whole = line(user("u2", "a1", "more"));
      appendFileSync(file, whole.slice(0, 10));
      const r = expectOk(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(r.page.parts, []);
      assert.equal(r.view.incomplete, true);
      appendFileSync(file, whole.slice(10));
      const r2 = expectOk(reader.next({ cursor: r.follow!.id, conversation: id, branch: "main" }));
      assert.deepEqual(entriesOf(r2.page.parts), ["n.u2"]);
      assert.equal(r2.view.incomplete, false);
    });

    it("refuses source-replaced when a byte of the pinned prefix is rewritten in place, same length and inode", (t) => {
      const { file, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      const text = readFileSync(file, "utf8");
      const at = text.indexOf('"q"') + 1;
      const fd = openSync(file, "r+");
      writeSync(fd, "Q", at);
      closeSync(fd);
      const r = reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" });
      expectRefusal(r, "source-replaced");
      assert.equal(r.ok ? null : r.refusal.reconcile, true);
    });

    it("refuses source-replaced after a rename-over (new inode) and after a truncation", (t) => {
      const { p, file, reader, id } = setup(t);
      const a = expectOk(reader.open({ conversation: id }));
      const copy = join(p.sessionsDir, "copy.tmp");
      writeFileSync(copy, readFileSync(file));
      renameSync(copy, file);
      expectRefusal(
        reader.next({ cursor: a.follow!.id, conversation: id, branch: "main" }),
        "source-replaced",
      );
      const b = expectOk(reader.open({ conversation: id }));
      truncateSync(file, 10);
      expectRefusal(
        reader.next({ cursor: b.follow!.id, conversation: id, branch: "main" }),
        "source-replaced",
      );
    });

    it("refuses source-replaced when a later duplicate id replaces an entry the view already showed", (t) => {
      const { file, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      appendFileSync(file, line(user("u1", null, "replaced")));
      expectRefusal(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
        "source-replaced",
      );
    });

    it("refuses source-replaced when a missing parent turns up later", (t) => {
      const p = project(tempDir(t));
      const file = writeSession(p.sessionsDir, "s.jsonl", [
        header(p.projectRoot),
        user("u2", "late", "orphan"),
      ]);
      const reader = readerFor(p);
      const id = idOf(reader, "s.jsonl");
      const first = expectOk(reader.open({ conversation: id }));
      assert.equal(first.page.parts[0]?.entry, "x.missing-parent-u2");
      appendFileSync(file, line(user("late", null, "the parent")));
      expectRefusal(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
        "source-replaced",
      );
    });

    it("keeps reading a page cursor's snapshot while the file grows, then follows the growth", (t) => {
      const p = project(tempDir(t));
      const lines: object[] = [header(p.projectRoot)];
      let parent: string | null = null;
      for (let i = 0; i < 150; i++) {
        lines.push(user(`u${i}`, parent, `message ${i}`));
        parent = `u${i}`;
      }
      const file = writeSession(p.sessionsDir, "s.jsonl", lines);
      const reader = readerFor(p);
      const id = idOf(reader, "s.jsonl");
      const first = expectOk(reader.open({ conversation: id }));
      assert.equal(first.page.parts.length, 100);
      assert.ok(first.cursor && first.page.nextCursor === first.cursor.id && first.follow === null);
      appendFileSync(file, line(user("new", parent, "appended")));
      const second = expectOk(
        reader.next({ cursor: first.cursor.id, conversation: id, branch: "main" }),
      );
      assert.equal(second.page.parts.length, 50);
      assert.deepEqual(second.page.snapshot, first.page.snapshot);
      const third = expectOk(
        reader.next({ cursor: second.follow!.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(entriesOf(third.page.parts), ["n.new"]);
    });

    it("refuses source-replaced for a page cursor when the pinned prefix changed", (t) => {
      const p = project(tempDir(t));
      const lines: object[] = [header(p.projectRoot)];
      for (let i = 0; i < 120; i++) lines.push(user(`u${i}`, i ? `u${i - 1}` : null, `m${i}`));
      const file = writeSession(p.sessionsDir, "s.jsonl", lines);
      const reader = readerFor(p);
      const id = idOf(reader, "s.jsonl");
      const first = expectOk(reader.open({ conversation: id }));
      const fd = openSync(file, "r+");
      writeSync(fd, "X", readFileSync(file, "utf8").lastIndexOf("m119"));
      closeSync(fd);
      expectRefusal(
        reader.next({ cursor: first.cursor!.id, conversation: id, branch: "main" }),
        "source-replaced",
      );
    });

    it("refuses cursor-unknown for a cursor never issued or already used", (t) => {
      const { file, reader, id } = setup(t);
      expectRefusal(
        reader.next({ cursor: "c-nope", conversation: id, branch: "main" }),
        "cursor-unknown",
      );
      const first = expectOk(reader.open({ conversation: id }));
      appendFileSync(file, line(user("u2", "a1", "more")));
      expectOk(reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }));
      expectRefusal(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
        "cursor-unknown",
      );
    });

    it("refuses cursor-expired after ten minutes", (t) => {
      let now = Date.parse("2026-02-01T00:00:00Z");
      const { reader, id } = setup(t, { now: () => now });
      const first = expectOk(reader.open({ conversation: id }));
      assert.equal(first.follow?.expiresAt, "2026-02-01T00:10:00.000Z");
      now += 10 * 60 * 1000;
      const r = reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" });
      expectRefusal(r, "cursor-expired");
      assert.equal(r.ok ? null : r.refusal.reconcile, true);
    });

    it("refuses cursor-foreign for another conversation or branch without consuming the cursor", (t) => {
      const { p, reader, id } = setup(t);
      writeSession(p.sessionsDir, "other.jsonl", [header(p.projectRoot), user("o", null, "other")]);
      const other = idOf(reader, "other.jsonl");
      const first = expectOk(reader.open({ conversation: id }));
      const cursor = first.follow!.id;
      expectRefusal(reader.next({ cursor, conversation: other, branch: "main" }), "cursor-foreign");
      expectRefusal(reader.next({ cursor, conversation: id, branch: "b.x" }), "cursor-foreign");
      expectOk(reader.next({ cursor, conversation: id, branch: "main" }));
    });

    it("evicts the least recently used cursor past the cap", (t) => {
      const { reader, id } = setup(t, { cursorCap: 3 });
      const cursors = [0, 1, 2, 3].map(
        () => expectOk(reader.open({ conversation: id })).follow!.id,
      );
      expectRefusal(
        reader.next({ cursor: cursors[0]!, conversation: id, branch: "main" }),
        "cursor-unknown",
      );
      expectOk(reader.next({ cursor: cursors[3]!, conversation: id, branch: "main" }));
    });

    it("refuses unknown-actor and unsupported-purpose", (t) => {
      const { reader, id } = setup(t);
      expectRefusal(reader.open({ conversation: id, actor: "mallory" }), "unknown-actor");
      expectRefusal(reader.open({ conversation: id, purpose: "training" }), "unsupported-purpose");
      const first = expectOk(
        reader.open({ conversation: id, actor: "local-operator", purpose: "history" }),
      );
      expectRefusal(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main", actor: "x" }),
        "unknown-actor",
      );
    });

    it("refuses unknown-branch and unknown-conversation", (t) => {
      const { reader, id } = setup(t);
      expectRefusal(reader.open({ conversation: id, branch: "b.nothere" }), "unknown-branch");
      expectRefusal(
        reader.open({ conversation: "pi-0000000000000000000000000000000000000000" }),
        "unknown-conversation",
      );
      expectRefusal(reader.open({ conversation: "../../etc/passwd" }), "unknown-conversation");
    });

    it("refuses unavailable when the session root no longer exists", (t) => {
      const { p, reader, id } = setup(t);
      expectOk(reader.open({ conversation: id }));
      rmSync(join(p.projectRoot, ".pi"), { recursive: true });
      const r = reader.open({ conversation: id });
      expectRefusal(r, "unavailable");
      assert.equal(r.ok ? null : r.refusal.reconcile, false);
      assert.deepEqual(
        reader.catalogue().refusedRoots.map((x) => x.code),
        ["unavailable"],
      );
    });

    it("refuses unsafe-path when a directory above the file is swapped for a symlink", (t) => {
      const { p, reader, id } = setup(t);
      const first = expectOk(reader.open({ conversation: id }));
      const state = join(p.projectRoot, ".pi", "state");
      renameSync(state, join(p.projectRoot, ".pi", "moved"));
      symlinkSync(join(p.projectRoot, ".pi", "moved"), state);
      expectRefusal(reader.open({ conversation: id }), "unsafe-path");
      expectRefusal(
        reader.next({ cursor: first.follow!.id, conversation: id, branch: "main" }),
        "unsafe-path",
      );
      assert.deepEqual(
        reader.catalogue().refusedRoots.map((x) => x.code),
        ["unsafe-path"],
      );
    });

    it("pages every branch of a conversation from two cursors independently", (t) => {
      const { file, reader, id } = setup(t);
      appendFileSync(file, line(assistant("alt", "u1", "elsewhere")));
      const a = readAll(reader, id, "main");
      const b = readAll(reader, id, "b.alt");
      assert.deepEqual(entriesOf(a.parts), ["n.u1", "n.a1"]);
      assert.deepEqual(entriesOf(b.parts), ["n.u1", "n.alt"]);
    });
  });
