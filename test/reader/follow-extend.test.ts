// A follow extends the cached parse in place (tree.ts extendSession, items.ts
// extendBranchItems, snapshot.ts followPinned): what users rely on is that the pages of the older
// snapshot, still being paged, read exactly as before, and that the follow reads exactly what a
// fresh reader of the grown file reads; and that a follow after a small append costs work in
// proportion to the append, counted (src/reader/work.ts), not timed.
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { describe, it, type TestContext } from "node:test";
import { work } from "../../src/reader/work.ts";
import {
  assistant,
  entriesOf,
  expectOk,
  header,
  idOf,
  project,
  readAll,
  readerFor,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";

const line = (obj: object | string): string =>
  `${typeof obj === "string" ? obj : JSON.stringify(obj)}\n`;

/** A chain of `n` entries on main (u0, a1, u2, …), a fork at entry 10 and a malformed line. */
function chainLines(n: number): (object | string)[] {
  const lines: (object | string)[] = [];
  for (let i = 0; i < n; i++) {
    const id = `e${i}`;
    const parent = i === 0 ? null : `e${i - 1}`;
    lines.push(
      i % 2 === 0 ? user(id, parent, `question ${i}`) : assistant(id, parent, `answer ${i}`),
    );
    if (i === 10) lines.push(user("fork1", "e9", "another way"));
    if (i === 20) lines.push("{not json");
  }
  return lines;
}

/** A page without its cursor id (random): whether it has a next page is kept. */
function pageOf(r: ReturnType<typeof expectOk>) {
  return { ...r.page, nextCursor: r.page.nextCursor !== null };
}

function setup(t: TestContext, n: number) {
  const p = project(tempDir(t));
  const file = writeSession(p.sessionsDir, "s.jsonl", [header(p.projectRoot), ...chainLines(n)]);
  return { p, file };
}

describe("follow extends the parse in place", () => {
  it("serves the older snapshot's pages exactly as before and the follow exactly as a fresh read", (t) => {
    const { p, file } = setup(t, 450);
    // The reference: every page of main and of the fork, read before anything is appended.
    const ref = readerFor(p);
    const id = idOf(ref, "s.jsonl");
    const refMain: ReturnType<typeof expectOk>[] = [];
    let r = expectOk(ref.open({ conversation: id, branch: "main" }));
    refMain.push(r);
    while (r.cursor) {
      r = expectOk(ref.next({ cursor: r.cursor.id, conversation: id, branch: "main" }));
      refMain.push(r);
    }
    assert.ok(refMain.length >= 4, "main spans several pages");

    const reader = readerFor(p);
    // A reader half way through main (page cursor on snapshot S1), with a follow cursor at the
    // end of main and one on the fork, all on S1.
    const first = expectOk(reader.open({ conversation: id, branch: "main" }));
    let paged = expectOk(
      reader.next({ cursor: first.cursor!.id, conversation: id, branch: "main" }),
    );
    const toEnd = readAll(reader, id, "main").last;
    const fork = expectOk(reader.open({ conversation: id, branch: "b.fork1" }));
    assert.ok(toEnd.follow && fork.follow);

    // Appended: a continuation of main, a malformed line, a continuation of the fork, a new
    // fork off an old entry, and a new root.
    appendFileSync(
      file,
      line(user("e450", "e449", "next question")) +
        line("{still not json") +
        line(assistant("fork2", "fork1", "fork answer")) +
        line(user("side", "e5", "a side question")) +
        line(user("root2", null, "a new start")) +
        line(assistant("e451", "e450", "next answer")),
    );

    const followed = expectOk(
      reader.next({ cursor: toEnd.follow.id, conversation: id, branch: "main" }),
    );
    const forkFollowed = expectOk(
      reader.next({ cursor: fork.follow.id, conversation: id, branch: "b.fork1" }),
    );

    // The older snapshot's remaining pages, read after the follow: exactly the reference pages.
    assert.deepEqual(pageOf(paged), pageOf(refMain[1]!));
    assert.deepEqual(paged.view, refMain[1]!.view);
    for (let k = 2; paged.cursor; k++) {
      paged = expectOk(reader.next({ cursor: paged.cursor.id, conversation: id, branch: "main" }));
      assert.deepEqual(pageOf(paged), pageOf(refMain[k]!), `page ${k + 1} of the older snapshot`);
      assert.deepEqual(paged.view, refMain[k]!.view, `view of page ${k + 1}`);
    }

    // The follows: exactly the tail a fresh reader of the grown file reads, with its view.
    const fresh = readerFor(p);
    const freshMain = readAll(fresh, id, "main");
    const freshFork = readAll(fresh, id, "b.fork1");
    // The whole of main read before the append, then the follow: the grown file's main.
    const before = refMain.flatMap((x) => x.page.parts);
    assert.deepEqual([...before, ...followed.page.parts], freshMain.parts);
    assert.deepEqual(
      entriesOf(followed.page.parts).filter((e) => e.startsWith("n.")),
      ["n.e450", "n.e451"],
    );
    assert.deepEqual(followed.view, freshMain.last.view);
    assert.equal(followed.view.branchCount, 4, "main, the fork, the side fork, the new root");
    assert.deepEqual([...fork.page.parts, ...forkFollowed.page.parts], freshFork.parts);
    assert.ok(entriesOf(forkFollowed.page.parts).includes("n.fork2"));
    assert.deepEqual(forkFollowed.view, freshFork.last.view);

    // A second follow from the first one's cursor sees the next append, and nothing else.
    appendFileSync(file, line(user("e452", "e451", "one more")));
    const again = expectOk(
      reader.next({ cursor: followed.follow!.id, conversation: id, branch: "main" }),
    );
    assert.deepEqual(entriesOf(again.page.parts), ["n.e452"]);
    assert.deepEqual(again.view, readAll(readerFor(p), id, "main").last.view);
  });

  it("reads right when the append changes earlier entries (a duplicate id) or two follows leave one snapshot", (t) => {
    const { p, file } = setup(t, 30);
    const reader = readerFor(p);
    const id = idOf(reader, "s.jsonl");
    const a = readAll(reader, id, "main").last;
    const b = expectOk(reader.open({ conversation: id, branch: "main" }));
    assert.ok(a.follow && b.follow);
    // Follow A takes S1 + one line (in place); then more is appended and follow B, pinned at S1
    // too, takes S1 + both: its parse cannot append to columns S2 already took.
    appendFileSync(file, line(user("e30", "e29", "x")));
    const fa = expectOk(reader.next({ cursor: a.follow.id, conversation: id, branch: "main" }));
    appendFileSync(file, line(assistant("e31", "e30", "y")));
    const fb = expectOk(reader.next({ cursor: b.follow.id, conversation: id, branch: "main" }));
    assert.deepEqual(entriesOf(fa.page.parts), ["n.e30"]);
    assert.deepEqual(entriesOf(fb.page.parts), ["n.e30", "n.e31"]);
    const fa2 = expectOk(reader.next({ cursor: fa.follow!.id, conversation: id, branch: "main" }));
    assert.deepEqual(entriesOf(fa2.page.parts), ["n.e31"]);
    assert.deepEqual(fa2.view, fb.view);

    // A later duplicate of e25 replaces it (SM:694), so e26 hangs under the new copy: main's
    // earlier history changed and its follow refuses; the fork's follow is served from a
    // whole parse (no in-place extension can re-parent earlier rows) exactly as a fresh read.
    const forkEnd = expectOk(reader.open({ conversation: id, branch: "b.fork1" }));
    appendFileSync(file, line(user("e25", "e24", "rewritten")));
    const dup = reader.next({ cursor: fa2.follow!.id, conversation: id, branch: "main" });
    assert.equal(dup.ok ? "served" : dup.refusal.code, "source-replaced");
    const forkAfter = expectOk(
      reader.next({ cursor: forkEnd.follow!.id, conversation: id, branch: "b.fork1" }),
    );
    assert.deepEqual(forkAfter.page.parts, []);
    const fresh = readerFor(p);
    assert.deepEqual(forkAfter.view, readAll(fresh, id, "b.fork1").last.view);
    const main = readAll(fresh, id, "main");
    assert.deepEqual(main.parts, readAll(reader, id, "main").parts);
    assert.equal(entriesOf(main.parts).filter((e) => e === "n.e25").length, 1);
  });

  it("costs work in proportion to the append, not to the file", (t) => {
    const n = 5_000;
    const { p, file } = setup(t, n);
    const reader = readerFor(p).raw;
    const id = idOf(reader, "s.jsonl");
    let last = readAll(reader, id, "main").last;
    const cost: Omit<typeof work, "bytesRead" | "bytesVerified">[] = [];
    for (let k = 0; k < 3; k++) {
      appendFileSync(file, line(user(`f${k}`, k === 0 ? `e${n - 1}` : `f${k - 1}`, `more ${k}`)));
      const before = { ...work };
      const r = expectOk(
        reader.next({ cursor: last.follow!.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(entriesOf(r.page.parts), [`n.f${k}`]);
      cost.push({
        rowsIndexed: work.rowsIndexed - before.rowsIndexed,
        rowsCopied: work.rowsCopied - before.rowsCopied,
        itemsListed: work.itemsListed - before.itemsListed,
        keysHashed: work.keysHashed - before.keysHashed,
      });
      last = r;
    }
    // No follow indexes, copies, lists or hashes an earlier row.
    for (const [k, c] of cost.entries()) {
      assert.deepEqual(
        c,
        { rowsIndexed: 1, rowsCopied: 0, itemsListed: 1, keysHashed: 1 },
        `follow ${k + 1}`,
      );
    }

    // Opening the grown file again extends the latest parse too, and reads as a fresh reader.
    appendFileSync(file, line(user("g", "f2", "again")));
    const before = work.rowsIndexed;
    const opened = readAll(reader, id, "main");
    assert.equal(work.rowsIndexed - before, 1);
    assert.deepEqual(opened.parts, readAll(readerFor(p), id, "main").parts);
    assert.deepEqual(entriesOf(opened.parts).slice(-2), ["n.f2", "n.g"]);
  });
});
