// Review of the in-place follow (tree.ts extendSession, items.ts extendBranchItems, snapshot.ts
// extendWith): a seeded, adversarial differential test at the reader's API. Several cursors are
// pinned at different snapshots of one growing file (page cursors part way through a branch,
// follow cursors at branch ends, on main and on forks) while random lines are appended:
// continuations, forks off old entries, new roots, duplicates, missing and forward parents, the
// missing parent found later, malformed lines, second headers, ids that need hashing, and a
// partial last line completed later. Every page served, whichever snapshot it is on and however
// late it is read, must equal what a fresh reader serves for a file holding exactly that
// snapshot's bytes (the oracle), and a follow must serve exactly the oracle's continuation.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { emptyTags } from "../../src/reader/block-tags.ts";
import { parseHeader } from "../../src/reader/harness/pi/pi.ts";
import { parsePiSession } from "../../src/reader/harness/pi/rows.ts";
import { ParseCache } from "../../src/reader/parse-cache.ts";
import type { Reader, ReadResult } from "../../src/reader/reader.ts";
import {
  assistant,
  entriesOf,
  expectOk,
  header,
  idOf,
  type Project,
  project,
  readAll,
  readerFor,
  tempDir,
  user,
} from "../helpers/reader.ts";

type Ok = Extract<ReadResult, { ok: true }>;
type Part = Ok["page"]["parts"][number];

const line = (obj: object | string): string =>
  `${typeof obj === "string" ? obj : JSON.stringify(obj)}\n`;

/** The view without `incomplete` (the oracle's file has no partial last line). */
function viewOf(r: Ok) {
  const { incomplete: _, ...rest } = r.view;
  return rest;
}

/**
 * A seeded writer and checker of one session file `name` in project `p`, read through `reader`
 * (which may read other files too); `oracleTag` names its oracle's directory (one character).
 */
function fuzzer(seed: number, base: string, p: Project, name: string, oracleTag: string) {
  let state = seed >>> 0;
  const rand = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const cwd = p.projectRoot;
  const file = join(p.sessionsDir, name);
  // The file's content, as written (whole lines plus maybe a partial last line).
  let content = line(header(cwd));
  const ids: string[] = [];
  const leaves: string[] = [];
  for (let i = 0; i < 230; i++) {
    const id = `e${i}`;
    const e = user(id, i === 0 ? null : `e${i - 1}`, `q ${i}`);
    content += line(e);
    ids.push(id);
  }
  leaves.push("e229");
  writeFileSync(file, content);
  let partial = "";
  let k = 0;
  const nextId = () => {
    k++;
    const r = rand(10);
    // Ids that CHAT-01 must hash (spaces, too long), so hashed branch names are exercised.
    if (r === 0) return `id with space ${k}`;
    if (r === 1) return `long${"x".repeat(140)}${k}`;
    return `a${k}`;
  };
  const randomLine = (): string => {
    const pick = rand(100);
    const any = () => ids[rand(ids.length)]!;
    if (pick < 35) {
      const li = rand(leaves.length);
      const id = nextId();
      const parent = leaves[li]!;
      leaves[li] = id;
      ids.push(id);
      return line(assistant(id, parent, `cont ${k}`));
    }
    if (pick < 55) {
      const id = nextId();
      leaves.push(id);
      ids.push(id);
      return line(user(id, any(), `fork ${k}`));
    }
    if (pick < 60) {
      const id = nextId();
      leaves.push(id);
      ids.push(id);
      return line(user(id, null, `root ${k}`));
    }
    if (pick < 66) return line(user(any(), any(), `dup ${k}`));
    if (pick < 70) {
      const id = nextId();
      ids.push(id);
      return line(user(id, `missing-${rand(4)}`, `orphan ${k}`));
    }
    if (pick < 74) {
      // The parent of an earlier orphan appears.
      const id = `missing-${rand(4)}`;
      ids.push(id);
      return line(user(id, any(), `found ${k}`));
    }
    if (pick < 78) {
      const id = nextId();
      ids.push(id);
      return line(user(id, `ahead-${k + 1}`, `forward ${k}`));
    }
    if (pick < 81) {
      ids.push(`ahead-${k}`);
      return line(user(`ahead-${k}`, any(), `ahead ${k}`));
    }
    if (pick < 88) return line(`{broken ${k}`);
    if (pick < 91) return line(header(cwd));
    const id = nextId();
    ids.push(id);
    return line(user(id, leaves[0]!, `main ${k}`));
  };

  // Oracle: a fresh reader over a file holding exactly a snapshot's bytes, per (snapshot, branch).
  // Each snapshot's file is the only one in a project of its own: a fresh reader's catalogue
  // then reads that one file, not every earlier snapshot's too (all of them in one directory
  // made the oracle quadratic: most of this file's minutes).
  const snapshots = new Map<string, string>();
  const oracle = new Map<string, { pages: Ok[]; parts: Part[] } | "no-branch">();
  const oracleFiles = new Map<string, { dir: Project; name: string }>();
  const oracleFileOf = (digest: string) => {
    const known = oracleFiles.get(digest);
    if (known) return known;
    const bytes = snapshots.get(digest);
    assert.ok(bytes !== undefined, `a snapshot the test saw: ${digest}`);
    const n = oracleFiles.size;
    assert.ok(n < 10_000, "at most 9,999 snapshots a fuzzer");
    // Same path length as the project's root, so the header is rewritten byte for byte in size.
    const dir = project(join(base, `o${oracleTag}${String(n).padStart(4, "0")}`));
    assert.equal(
      dir.projectRoot.length,
      cwd.length,
      "the oracle's root is as long as the project's",
    );
    const name = `o${n}.jsonl`;
    // The header must name the oracle's project root (the header check).
    const nl = bytes.indexOf("\n");
    const head = bytes.slice(0, nl).replace(JSON.stringify(cwd), JSON.stringify(dir.projectRoot));
    writeFileSync(join(dir.sessionsDir, name), head + bytes.slice(nl));
    const file = { dir, name };
    oracleFiles.set(digest, file);
    return file;
  };
  const oracleOf = (digest: string, branch: string) => {
    const key = `${digest}/${branch}`;
    const known = oracle.get(key);
    if (known) return known;
    const { dir, name: oracleName } = oracleFileOf(digest);
    const fresh = readerFor(dir).raw;
    const conv = idOf(fresh, oracleName);
    const first = fresh.open({ conversation: conv, branch });
    if (!first.ok) {
      assert.equal(first.refusal.code, "unknown-branch");
      oracle.set(key, "no-branch");
      return "no-branch";
    }
    const pages = [first];
    let r: ReadResult = first;
    while (r.ok && r.cursor) {
      r = fresh.next({ cursor: r.cursor.id, conversation: conv, branch });
      assert.ok(r.ok);
      pages.push(r);
    }
    const value = { pages, parts: pages.flatMap((x) => x.page.parts) };
    oracle.set(key, value);
    return value;
  };
  /** Records the snapshot the file holds now: its whole lines. */
  const noteSnapshot = (digest: string, bytes: number) => {
    const whole = content.slice(0, content.lastIndexOf("\n") + 1);
    const buf = Buffer.from(whole);
    assert.ok(buf.length >= bytes);
    if (!snapshots.has(digest)) snapshots.set(digest, buf.subarray(0, bytes).toString());
  };

  let reader: Reader;
  let conv = "";
  type PageCur = { kind: "page"; id: string; branch: string; digest: string; page: number };
  type FollowCur = { kind: "follow"; id: string; branch: string; parts: Part[] };
  const pool: (PageCur | FollowCur)[] = [];

  const checkPage = (r: Ok, branch: string, pageIndex: number, what: string) => {
    const o = oracleOf(r.page.snapshot.digest, branch);
    assert.notEqual(o, "no-branch", `${what}: the oracle has branch ${branch}`);
    if (o === "no-branch") return;
    const want = o.pages[pageIndex]!;
    assert.ok(want, `${what}: the oracle has page ${pageIndex + 1}`);
    assert.deepEqual(r.page.parts, want.page.parts, `${what}: parts of page ${pageIndex + 1}`);
    assert.equal(r.cursor !== null, want.cursor !== null, `${what}: a next page`);
    assert.deepEqual(viewOf(r), viewOf(want), `${what}: view`);
  };
  const take = (r: Ok, branch: string, page: number) => {
    if (r.cursor)
      pool.push({ kind: "page", id: r.cursor.id, branch, digest: r.page.snapshot.digest, page });
    // A follow is issued on a branch's last page: what was read is the whole branch then.
    const o = oracleOf(r.page.snapshot.digest, branch);
    if (r.follow && o !== "no-branch")
      pool.push({ kind: "follow", id: r.follow.id, branch, parts: o.parts });
  };

  const openSome = (round: number) => {
    const r0 = reader.open({ conversation: conv });
    assert.ok(r0.ok, "open");
    noteSnapshot(r0.page.snapshot.digest, r0.page.snapshot.bytes);
    checkPage(r0, r0.page.branch, 0, `round ${round} open default`);
    take(r0, r0.page.branch, 1);
    // A few branches by name, the way a Console would: from the view.
    const names = r0.view.branches.map((b) => b.name);
    for (let j = 0; j < 3 && names.length > 0; j++) {
      const branch = names[rand(names.length)]!;
      const r = reader.open({ conversation: conv, branch });
      assert.ok(r.ok, `open ${branch}`);
      assert.equal(r.page.snapshot.digest, r0.page.snapshot.digest);
      checkPage(r, branch, 0, `round ${round} open ${branch}`);
      take(r, branch, 1);
    }
    const main = reader.open({ conversation: conv, branch: "main" });
    assert.ok(main.ok);
    take(main, "main", 1);
  };

  const useSome = (round: number) => {
    for (let j = 0; j < 6 && pool.length > 0; j++) {
      const c = pool.splice(rand(pool.length), 1)[0]!;
      const r = reader.next({ cursor: c.id, conversation: conv, branch: c.branch });
      const what = `round ${round} ${c.kind} cursor on ${c.branch}`;
      if (c.kind === "page") {
        assert.ok(r.ok, `${what}: a page cursor is served (${r.ok ? "" : r.refusal.code})`);
        assert.equal(r.page.snapshot.digest, c.digest, `${what}: on its snapshot`);
        checkPage(r, c.branch, c.page, what);
        take(r, c.branch, c.page + 1);
        continue;
      }
      if (!r.ok) {
        // Refused only when the branch's earlier history really changed (or it is gone).
        assert.equal(r.refusal.code, "source-replaced", what);
        const now = reader.open({ conversation: conv, branch: c.branch });
        if (!now.ok) continue;
        noteSnapshot(now.page.snapshot.digest, now.page.snapshot.bytes);
        const o = oracleOf(now.page.snapshot.digest, c.branch);
        if (o === "no-branch") continue;
        const same =
          o.parts.length >= c.parts.length &&
          JSON.stringify(o.parts.slice(0, c.parts.length)) === JSON.stringify(c.parts);
        assert.ok(!same, `${what}: refused though its earlier history is unchanged`);
        continue;
      }
      noteSnapshot(r.page.snapshot.digest, r.page.snapshot.bytes);
      const o = oracleOf(r.page.snapshot.digest, c.branch);
      assert.notEqual(o, "no-branch", what);
      if (o === "no-branch") continue;
      // The follow serves exactly what follows what was read, and the view of its snapshot.
      let parts = [...c.parts, ...r.page.parts];
      let last: Ok = r;
      while (last.cursor) {
        const more = reader.next({ cursor: last.cursor.id, conversation: conv, branch: c.branch });
        assert.ok(more.ok, what);
        parts = [...parts, ...more.page.parts];
        last = more;
      }
      assert.deepEqual(parts, o.parts, `${what}: the read so far plus the follow`);
      assert.deepEqual(viewOf(r), viewOf(o.pages[0]!), `${what}: view`);
      if (last.follow) pool.push({ kind: "follow", id: last.follow.id, branch: c.branch, parts });
    }
  };

  const round = (round: number) => {
    if (rand(3) !== 0) openSome(round);
    let add = partial;
    partial = "";
    for (let j = rand(4); j >= 0; j--) add += randomLine();
    if (rand(5) === 0) {
      const l = randomLine();
      const cut = 1 + rand(l.length - 2);
      add += l.slice(0, cut);
      partial = l.slice(cut);
    }
    appendFileSync(file, add);
    content += add;
    useSome(round);
    if (pool.length > 40) pool.splice(0, pool.length - 40);
  };
  const finish = () => {
    // The last word: the reader's own whole read of every branch equals the oracle's.
    const final = readAll(reader, conv, "main");
    noteSnapshot(final.last.page.snapshot.digest, final.last.page.snapshot.bytes);
    const o = oracleOf(final.last.page.snapshot.digest, "main");
    assert.ok(o !== "no-branch");
    assert.deepEqual(final.parts, o.parts, "the final read of main");
  };
  const start = (r: Reader) => {
    reader = r;
    conv = idOf(reader, name);
  };
  return { start, round, finish };
}

type Options = { prefixCheck?: "auto" | "bytes"; racyWindowMs?: number };

function run(seed: number, rounds: number, base: string, options: Options = {}): void {
  // As long as each oracle's root (`o<tag><4 digits>`).
  const p = project(join(base, "s00000"));
  const a = fuzzer(seed, base, p, "a.jsonl", "a");
  const b = fuzzer(seed * 7919 + 1, base, p, "b.jsonl", "b");
  const reader = readerFor(p, options).raw;
  a.start(reader);
  b.start(reader);
  for (let i = 0; i < rounds; i++) {
    a.round(i);
    // A second conversation read through the same reader in between: nothing may be shared.
    if (i % 2 === 1) b.round(i);
  }
  a.finish();
  b.finish();
}

describe("follow in place, reviewed", () => {
  // A different seed per mode: about 40 appends each, a few seconds per mode.
  const modes: [string, Options, number][] = [
    ["bytes compared while racy", {}, 1],
    ["bytes always compared", { prefixCheck: "bytes" }, 2],
    ["change time trusted at once", { racyWindowMs: 0 }, 3],
  ];
  for (const [mode, options, seed] of modes) {
    it(`serves every snapshot's pages as a fresh read of it (${mode}), seed ${seed}`, (t) => {
      run(seed, 40, tempDir(t), options);
    });
  }
});

describe("follow in place after a rewrite, reviewed", () => {
  const modes: [string, Options][] = [
    ["bytes compared while racy", {}],
    ["change time trusted at once", { racyWindowMs: 0 }],
  ];
  for (const [mode, options] of modes) {
    it(`refuses the newer snapshot's cursors and serves the older ones the new bytes (${mode})`, (t) => {
      const base = tempDir(t);
      const p = project(join(base, "s"));
      const file = join(p.sessionsDir, "s.jsonl");
      let body = line(header(p.projectRoot));
      for (let i = 0; i < 230; i++)
        body += line(user(`e${i}`, i === 0 ? null : `e${i - 1}`, `q ${i}`));
      writeFileSync(file, body);
      const reader = readerFor(p, options).raw;
      const id = idOf(reader, "s.jsonl");
      const fresh = (bytes: string) => {
        const o = project(join(base, `o${Math.random().toString(36).slice(2, 8)}`));
        writeFileSync(
          join(o.sessionsDir, "o.jsonl"),
          bytes.replace(JSON.stringify(p.projectRoot), JSON.stringify(o.projectRoot)),
        );
        const r = readerFor(o).raw;
        return readAll(r, idOf(r, "o.jsonl"), "main");
      };
      const s0 = body;
      const ref0 = fresh(s0);
      const first0 = expectOk(reader.open({ conversation: id, branch: "main" }));
      const f0 = readAll(reader, id, "main").last.follow!;
      // S1 (copied into a buffer with room), then S2 (appended in place).
      const x1 = line(assistant("x1", "e229", "first"));
      appendFileSync(file, x1);
      const s1 = s0 + x1;
      const f0first = expectOk(reader.next({ cursor: f0.id, conversation: id, branch: "main" }));
      assert.deepEqual(entriesOf(f0first.page.parts), ["n.x1"]);
      const first1 = expectOk(reader.open({ conversation: id, branch: "main" }));
      const f1 = readAll(reader, id, "main").last.follow!;
      const x2 = line(user("x2", "x1", "second, to be rewritten"));
      appendFileSync(file, x2);
      const f2 = expectOk(
        reader.next({ cursor: f0first.follow!.id, conversation: id, branch: "main" }),
      );
      assert.deepEqual(entriesOf(f2.page.parts), ["n.x2"]);
      const first2 = expectOk(reader.open({ conversation: id, branch: "main" }));

      // Rewritten past S1: S1's bytes stay, S2's last line is replaced by a longer one.
      const y2 = line(user("y2", "x1", "second, rewritten and longer than before"));
      writeFileSync(file, s1 + y2);
      const ref1 = fresh(s1);
      const refY = fresh(s1 + y2);

      // S1's follow first: it must not write the new bytes where S2's (still cached) are.
      const g1 = expectOk(reader.next({ cursor: f1.id, conversation: id, branch: "main" }));
      assert.deepEqual(entriesOf(g1.page.parts), ["n.y2"]);
      assert.deepEqual(g1.view, refY.last.view);
      // S2's cursors are refused; S1's and S0's serve as fresh reads of their bytes.
      const r2 = reader.next({ cursor: first2.cursor!.id, conversation: id, branch: "main" });
      assert.equal(r2.ok ? "served" : r2.refusal.code, "source-replaced");
      const r2f = reader.next({ cursor: f2.follow!.id, conversation: id, branch: "main" });
      assert.equal(r2f.ok ? "served" : r2f.refusal.code, "source-replaced");
      const p1 = expectOk(
        reader.next({ cursor: first1.cursor!.id, conversation: id, branch: "main" }),
      );
      const at1 = first1.page.parts.length;
      assert.deepEqual(p1.page.parts, ref1.parts.slice(at1, at1 + 100));
      assert.deepEqual(p1.view, ref1.last.view);
      const p0 = expectOk(
        reader.next({ cursor: first0.cursor!.id, conversation: id, branch: "main" }),
      );
      const at0 = first0.page.parts.length;
      assert.deepEqual(p0.page.parts, ref0.parts.slice(at0, at0 + 100));
      assert.deepEqual(p0.view, ref0.last.view);
      assert.deepEqual(readAll(reader, id, "main").parts, refY.parts);
      // And S1 extended again, in place where it can, after the rewrite.
      const y3 = line(assistant("y3", "y2", "third"));
      appendFileSync(file, y3);
      const g2 = expectOk(reader.next({ cursor: g1.follow!.id, conversation: id, branch: "main" }));
      assert.deepEqual(entriesOf(g2.page.parts), ["n.y3"]);
      assert.deepEqual(readAll(reader, id, "main").parts, fresh(s1 + y2 + y3).parts);
    });
  }
});

describe("a partial last line, reviewed", () => {
  it("an open proved untouched by the change time still says the last line is incomplete", async (t) => {
    const p = project(tempDir(t));
    const file = join(p.sessionsDir, "s.jsonl");
    writeFileSync(file, line(header(p.projectRoot)) + line(user("e0", null, "hello")));
    const reader = readerFor(p, { racyWindowMs: 0 }).raw;
    const id = idOf(reader, "s.jsonl");
    const settle = () => new Promise((r) => setTimeout(r, 30));
    await settle();
    assert.equal(expectOk(reader.open({ conversation: id })).view.incomplete, false);
    // A writer is part way through the next line.
    appendFileSync(file, line(assistant("e1", "e0", "hi")).slice(0, 20));
    await settle();
    const partly = expectOk(reader.open({ conversation: id }));
    assert.equal(partly.view.incomplete, true, "the first open after the partial write");
    await settle();
    // Nothing changed since: the settled read before proves it, and the file still ends part
    // way through a line.
    const again = expectOk(reader.open({ conversation: id }));
    assert.equal(again.page.snapshot.digest, partly.page.snapshot.digest);
    assert.equal(again.view.incomplete, true, "an open of the unchanged file");
    await settle();
    const followed = expectOk(
      reader.next({ cursor: partly.follow!.id, conversation: id, branch: partly.page.branch }),
    );
    assert.deepEqual(followed.page.parts, []);
    assert.equal(followed.view.incomplete, true, "a follow of the unchanged file");
  });
});

describe("the parse cache's bound, reviewed", () => {
  it("counts the parse memory a file's snapshots hold, not the file: snapshots hold no bytes", () => {
    // Each parse: 2,000 rows, about 256 KiB as the cache estimates it (128 bytes a row), of a
    // 100 KiB file; a 1 MiB bound keeps three or four files' parses, whatever their bytes.
    const bound = 1024 * 1024;
    const cache = new ParseCache(bound);
    const text =
      line(header("/p")) +
      Array.from({ length: 2000 }, (_, i) => line(user(`u${i}`, i ? `u${i - 1}` : null, "x"))).join(
        "",
      );
    const buf = Buffer.from(text);
    const session = parsePiSession(buf, parseHeader(buf, false, { projectRoot: "/p" }));
    const stamp = { ctimeNs: 1n, size: buf.length, settled: false, whole: true };
    for (let f = 0; f < 10; f++) {
      const data = {
        bytes: buf.length,
        hash: createHash("sha256").update(buf),
        tags: emptyTags(),
        snapshot: { bytes: buf.length, digest: `${f}` },
        incomplete: false,
        dev: 1n,
        ino: BigInt(f),
        stamp,
        checkedAt: 0,
        checkMs: 0,
      };
      cache.put("/p", { data, session, items: new Map() });
    }
    assert.ok(cache.snapshots >= 3 && cache.snapshots <= 4, `${cache.snapshots} cached`);
    assert.ok(cache.latest("/p", 1n, 9n), "the newest file's parse is kept");
    assert.equal(cache.latest("/p", 1n, 0n), undefined, "the oldest went first");
  });
});
