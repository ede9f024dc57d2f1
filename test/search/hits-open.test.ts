// Every search hit opens in the reader (issue 14, item 1): for Pi-written sessions, hand-made
// irregular files (a child before its parent, duplicate ids, missing parents, cycles, forks at
// many levels, several roots), Pi v1 files (no ids) and mutated files from the fuzz suite's
// generator, each hit's (conversation, branch) opens, its entry is on that branch's pages, and
// that entry's text holds the word. And the other way: every entry the reader shows with the
// word, on any branch, is a hit. Appends (regular, irregular, to a v1 file) keep both true.
import assert from "node:assert/strict";
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { createReader, type Reader, rootsFromSpecs } from "../../src/index.ts";
import { LIMITS, type Part } from "../../src/protocol/chat-01.ts";
import { createSearch, type Search, type SearchHit } from "../../src/search/index.ts";
import { blockText } from "../../src/search/indexer.ts";
import { tokensOf } from "../../src/search/query.ts";
import { makeProject, writeLongSession, writeRichSession } from "../helpers/pi-sessions.ts";
import { header, readAll, tempDir, ts } from "../helpers/reader.ts";
import { appendix, mutate, type Rng, seededRng } from "../reader/fuzz-mutations.ts";

type Fixture = {
  sessionsDir: string;
  projectRoot: string;
  reader: Reader;
  search: Search;
  /** Conversation id of a file name. */
  idOf(name: string): string;
};

function fixture(t: TestContext): Fixture {
  const base = tempDir(t, "hits-open-");
  const p = makeProject(base);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  const roots = () => rootsFromSpecs(specs, []);
  const reader = createReader({ roots });
  const opened = createSearch({
    roots,
    catalogue: () => reader.catalogue(),
    cacheDir: tempDir(t, "hits-open-cache-"),
  });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  return {
    ...p,
    reader,
    search: opened.search,
    idOf(name) {
      const row = reader.catalogue().conversations.find((r) => r.fileName === name);
      assert.ok(row, `no catalogue row for ${name}`);
      return row.conversation;
    },
  };
}

/** What the index holds of a part: the blocks textOf keeps, long strings rejoined. */
function addText(parts: Part[], into: Map<string, string>): void {
  for (const part of parts) {
    if (!part.entry.startsWith("n.")) continue;
    let text = into.get(part.entry) ?? "";
    for (const b of part.blocks) {
      // The index's own rule for a block (shared, so this test is about branches and
      // entries, not about which blocks count).
      const piece = blockText(b);
      if (piece === "") continue;
      const continues = "fragment" in b && b.fragment !== undefined && b.fragment.index > 0;
      text += continues ? piece : `\n${piece}`;
    }
    into.set(part.entry, text);
  }
}

/** Whether `text` holds a token starting with `word` (a typed word is a prefix). */
function holds(text: string, word: string): boolean {
  const [w] = tokensOf(word);
  assert.ok(w);
  return tokensOf(text).some((t) => t.startsWith(w));
}

/** Reads branches through the reader, each once per check. */
class ReaderOracle {
  readonly #reader: Reader;
  readonly #branches = new Map<string, Map<string, string>>();
  constructor(reader: Reader) {
    this.#reader = reader;
  }

  /** Entry → text on the branch's pages; fails when the reader refuses to open it. */
  branch(conversation: string, branch: string): Map<string, string> {
    const key = `${conversation}\u0000${branch}`;
    let known = this.#branches.get(key);
    if (!known) {
      known = new Map();
      addText(readAll(this.#reader, conversation, branch).parts, known);
      this.#branches.set(key, known);
    }
    return known;
  }

  /**
   * Entry → text over every branch of a conversation; null when the reader refuses the file or
   * lists only some of its branches (over 100).
   */
  all(conversation: string): Map<string, string> | null {
    const first = this.#reader.open({ conversation });
    if (!first.ok || first.view.branchCount > first.view.branches.length) return null;
    const all = new Map<string, string>();
    for (const b of first.view.branches) {
      for (const [e, text] of this.branch(conversation, b.name)) all.set(e, text);
    }
    return all;
  }
}

/**
 * Searches each word and checks both ways against the reader: every hit opens at an entry that
 * holds the word, and in each of `conversations` the hits are exactly the entries the reader
 * shows with it. Returns the number of hits checked.
 */
function checkWords(
  f: Fixture,
  words: string[],
  conversations: string[],
  why: (conversation: string) => string = (c) => c,
): number {
  const oracle = new ReaderOracle(f.reader);
  const everything = new Map(conversations.map((c) => [c, oracle.all(c)]));
  let checked = 0;
  for (const word of words) {
    const r = f.search.search(word, 1000);
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok(r.hits.length < 1000, `"${word}": the check needs every hit, not the first 1000`);
    const found = new Map<string, Set<string>>();
    for (const hit of r.hits) {
      checkHit(oracle, hit, word, why);
      const set = found.get(hit.conversation) ?? new Set<string>();
      found.set(hit.conversation, set);
      assert.ok(!set.has(hit.entry), `"${word}": ${hit.entry} is one hit, not two`);
      set.add(hit.entry);
      checked++;
    }
    for (const [c, all] of everything) {
      if (all === null) {
        assert.equal(found.get(c)?.size ?? 0, 0, `${why(c)}: no hit in a file the reader refuses`);
        continue;
      }
      const shown = [...all].filter(([, text]) => holds(text, word)).map(([e]) => e);
      assert.deepEqual(
        [...(found.get(c) ?? [])].sort(),
        shown.sort(),
        `${why(c)}: "${word}" is found in exactly the entries the reader shows with it`,
      );
    }
  }
  return checked;
}

function checkHit(
  oracle: ReaderOracle,
  hit: SearchHit,
  word: string,
  why: (c: string) => string,
): void {
  const where = `${why(hit.conversation)}: hit ${hit.entry} on ${hit.branch} for "${word}"`;
  let entries: Map<string, string>;
  try {
    entries = oracle.branch(hit.conversation, hit.branch);
  } catch (e) {
    assert.fail(`${where}: the reader does not open it (${(e as Error).message})`);
  }
  const text = entries.get(hit.entry);
  assert.ok(text !== undefined, `${where}: the entry is not on the branch's pages`);
  assert.ok(holds(text, word), `${where}: the entry's text does not hold the word`);
}

function line(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

/** A user message with `id` and `parentId` as given (undefined: no such key). */
function msg(id: unknown, parentId: unknown, text: string, n = 1): Record<string, unknown> {
  const out: Record<string, unknown> = {
    type: "message",
    timestamp: ts(n),
    message: { role: "user", content: text, timestamp: n },
  };
  if (id !== undefined) out.id = id;
  if (parentId !== undefined) out.parentId = parentId;
  return out;
}

function reply(id: unknown, parentId: unknown, text: string, n = 2): Record<string, unknown> {
  return {
    ...msg(id, parentId, "", n),
    message: {
      role: "assistant",
      content: [{ type: "text", text }],
      stopReason: "stop",
      timestamp: n,
    },
  };
}

function writeLines(f: Fixture, name: string, lines: (object | string)[]): string {
  const path = join(f.sessionsDir, name);
  writeFileSync(path, lines.map((l) => (typeof l === "string" ? `${l}\n` : line(l))).join(""));
  return path;
}

/** The (branch, entry) of the one hit for a word. */
function only(f: Fixture, word: string): { branch: string; entry: string } {
  const r = f.search.search(word, 10);
  assert.ok(r.ok);
  assert.equal(r.hits.length, 1, `one hit for ${word}: ${JSON.stringify(r.hits)}`);
  return { branch: r.hits[0]!.branch, entry: r.hits[0]!.entry };
}

function hitCount(f: Fixture, word: string): number {
  const r = f.search.search(word, 10);
  assert.ok(r.ok);
  return r.hits.length;
}

/** Words <prefix>x<n>, one per entry of the hand-made files. */
function words(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}x${String(i + 1).padStart(2, "0")}`);
}

describe("search hits open in the reader", () => {
  it("on sessions Pi wrote, with forks, a second root, compactions and tool calls", async (t) => {
    const f = fixture(t);
    await writeRichSession(f.sessionsDir, "rich", f.projectRoot);
    await writeLongSession(f.sessionsDir, "long", f.projectRoot, {
      targetBytes: 64 * 1024,
      branches: true,
      compactionEveryBytes: 24 * 1024,
    });
    const convs = [f.idOf("rich.jsonl"), f.idOf("long.jsonl")];
    const n = checkWords(
      f,
      ["hello", "bonjour", "pixel", "project", "aborted", "ls", "snapshot", "compile", "cursor"],
      convs,
    );
    assert.ok(n > 20, `hits were checked (${n})`);
    const fork = only(f, "bonjour");
    assert.match(fork.branch, /^b\./, "the fork's reply is on the fork's branch");
  });

  it("on files whose lines are not in tree order or whose ids repeat or are missing", (t) => {
    const f = fixture(t);
    const cwd = f.projectRoot;
    const w = (p: string) => words(p, 12);
    const [a, b, c, d, e, g, h, k] = ["za", "zb", "zc", "zd", "ze", "zg", "zh", "zk"].map(w);
    // A child before its parent, and a grandchild before both.
    writeLines(f, "before.jsonl", [
      header(cwd),
      reply("c1", "p1", `child first ${a![0]}`),
      msg("g1", "c1", `grandchild ${a![1]}`),
      msg("p1", null, `parent later ${a![2]}`),
      msg("c2", "p1", `second child ${a![3]}`),
      reply("r2", null, `another root ${a![4]}`),
    ]);
    // Duplicate ids: the later copy wins and adopts the earlier copy's children.
    writeLines(f, "dups.jsonl", [
      header(cwd),
      msg("x", null, `first copy ${b![0]}`),
      reply("y", "x", `child of x ${b![1]}`),
      msg("z", null, `a root ${b![2]}`),
      msg("x", "z", `second copy ${b![3]}`),
      reply("w", "x", `later child ${b![4]}`),
      msg("y", "w", `y again ${b![5]}`),
    ]);
    // Parents that never appear, a parentId of "", odd ids the reader skips.
    writeLines(f, "missing.jsonl", [
      header(cwd),
      msg("m1", "nowhere", `orphan ${c![0]}`),
      reply("m2", "m1", `orphan's child ${c![1]}`),
      msg("m3", "", `empty parent is a root ${c![2]}`),
      msg("", null, `empty id is no entry ${c![3]}`),
      msg(7, null, `number id is no entry ${c![4]}`),
      msg("m4", "gone-too", `another orphan ${c![5]}`),
      "{not json at all",
      { type: "session", id: "second-header", cwd },
      msg("m5", "m4", `after the noise ${c![6]}`),
    ]);
    // Cycles: a three-cycle, a self-parent, with a root; a child of the cycle.
    writeLines(f, "cycles.jsonl", [
      header(cwd),
      msg("k1", "k3", `cycle one ${d![0]}`),
      reply("k2", "k1", `cycle two ${d![1]}`),
      msg("k3", "k2", `cycle three ${d![2]}`),
      msg("self", "self", `own parent ${d![3]}`),
      msg("root", null, `the root ${d![4]}`),
      reply("k4", "k2", `fork off the cycle ${d![5]}`),
    ]);
    // Forks at many levels, written in tree order (regular), then the same tree reversed.
    const tree = [
      msg("t1", null, `level one ${e![0]}`),
      reply("t2", "t1", `level two ${e![1]}`),
      msg("t3", "t2", `level three ${e![2]}`),
      reply("t4", "t3", `level four ${e![3]}`),
      msg("f2", "t2", `fork at two ${e![4]}`),
      msg("f3", "t3", `fork at three ${e![5]}`),
      reply("f31", "f3", `under the fork ${e![6]}`),
      msg("f32", "f3", `fork of the fork ${e![7]}`),
      msg("f1", "t1", `fork at one ${e![8]}`),
      msg("f4", "t4", `fork at the leaf ${e![9]}`),
    ];
    writeLines(f, "forks.jsonl", [header(cwd), ...tree]);
    // The same tree with its lines reversed: every child before its parent.
    writeLines(f, "reversed.jsonl", [
      header(cwd),
      ...[...tree].reverse().map((x, i) => {
        const m = x.message as { role: string };
        const text = `reversed ${g![i]}`;
        return m.role === "assistant" ? reply(x.id, x.parentId, text) : msg(x.id, x.parentId, text);
      }),
    ]);
    // Several roots, hashed ids (a|b, h-…), a root whose id is "main".
    writeLines(f, "roots.jsonl", [
      header(cwd),
      msg("main", null, `root called main ${h![0]}`),
      msg("a|b", null, `pipe id root ${h![1]}`),
      reply("h-123", "a|b", `hashed child ${h![2]}`),
      msg("r3", null, `third root ${h![3]}`),
      reply("r3c", "r3", `third root's child ${h![4]}`),
      msg("r3d", "r3", `third root's fork ${h![5]}`),
      msg("b.x", "main", `odd id under main ${h![6]}`),
    ]);
    // Regular up to the end, where a later line names a parent that comes after it.
    writeLines(f, "late.jsonl", [
      header(cwd),
      msg("l1", null, `regular start ${k![0]}`),
      reply("l2", "l1", `regular reply ${k![1]}`),
      msg("l3", "l2", `regular again ${k![2]}`),
      reply("l4", "l5", `names a later parent ${k![3]}`),
      msg("l5", "l1", `the later parent ${k![4]}`),
    ]);
    const names = ["before", "dups", "missing", "cycles", "forks", "reversed", "roots", "late"];
    const convs = names.map((n) => f.idOf(`${n}.jsonl`));
    const name = (c: string) => names[convs.indexOf(c)] ?? c;
    const all = [a, b, c, d, e, g, h, k].flatMap((x) => x!.slice(0, 10));
    checkWords(f, all, convs, name);

    // The names themselves, where the reader's rules decide them.
    assert.deepEqual(only(f, a![2]!), { branch: "main", entry: "n.p1" }, "the root is main");
    assert.deepEqual(only(f, a![0]!), { branch: "main", entry: "n.c1" });
    assert.deepEqual(only(f, a![3]!), { branch: "b.c2", entry: "n.c2" }, "a later child forks");
    assert.equal(hitCount(f, b![0]!), 0, "a losing duplicate's text is not shown, so not found");
    assert.deepEqual(only(f, b![2]!), { branch: "main", entry: "n.z" }, "the only winning root");
    assert.deepEqual(only(f, b![3]!), { branch: "main", entry: "n.x" });
    assert.equal(hitCount(f, b![1]!), 0);
    assert.deepEqual(only(f, b![5]!), { branch: "main", entry: "n.y" }, "y's later copy");
    assert.deepEqual(only(f, c![0]!), { branch: "main", entry: "n.m1" }, "an orphan is a root");
    assert.equal(hitCount(f, c![3]!), 0, "an empty id is no entry");
    assert.deepEqual(only(f, k![3]!), { branch: "b.l5", entry: "n.l4" }, "under its later parent");
  });

  it("on Pi v1 files (no ids) and v2 files, numbered as the reader numbers them", (t) => {
    const f = fixture(t);
    const cwd = f.projectRoot;
    const v1 = { type: "session", id: "v1-session", timestamp: ts(0), cwd };
    writeLines(f, "v1.jsonl", [
      v1,
      msg(undefined, undefined, "first vone words"),
      reply(undefined, undefined, "vone reply"),
      "",
      "{torn line",
      msg(undefined, undefined, "after a gap vone again"),
      msg("has-an-id", null, "an id is ignored in vone"),
    ]);
    writeLines(f, "v1-string.jsonl", [
      { ...v1, version: "1" },
      msg(undefined, undefined, "stringly vone"),
    ]);
    writeLines(f, "v2.jsonl", [
      { ...header(cwd), version: 2 },
      msg("u1", null, "vtwo question"),
      {
        type: "message",
        id: "h1",
        parentId: "u1",
        timestamp: ts(3),
        message: { role: "hookMessage", customType: "note", content: "vtwo hook text" },
      },
    ]);
    const convs = ["v1", "v1-string", "v2"].map((n) => f.idOf(`${n}.jsonl`));
    assert.ok(checkWords(f, ["vone", "vtwo"], convs) >= 7);
    assert.deepEqual(only(f, "first"), { branch: "main", entry: "n.line-2" });
    assert.deepEqual(only(f, "gap"), { branch: "main", entry: "n.line-6" });
    assert.deepEqual(only(f, "ignored"), { branch: "main", entry: "n.line-7" });
    assert.deepEqual(only(f, "stringly"), { branch: "main", entry: "n.line-2" });
    assert.deepEqual(only(f, "hook"), { branch: "main", entry: "n.h1" });
  });

  it("after appends to regular, irregular and v1 files", (t) => {
    const f = fixture(t);
    const cwd = f.projectRoot;
    const irregular = writeLines(f, "irregular.jsonl", [
      header(cwd),
      reply("c1", "p1", "child first appendword one"),
      msg("p1", null, "parent later appendword two"),
    ]);
    const regular = writeLines(f, "regular.jsonl", [
      header(cwd),
      msg("a1", null, "regular appendword three"),
      reply("a2", "a1", "regular reply appendword four"),
    ]);
    const v1 = writeLines(f, "v1.jsonl", [
      { type: "session", id: "v1-session", timestamp: ts(0), cwd },
      msg(undefined, undefined, "vone appendword five"),
    ]);
    const convs = ["irregular", "regular", "v1"].map((n) => f.idOf(`${n}.jsonl`));
    const check = () => checkWords(f, ["appendword"], convs);
    assert.equal(check(), 5);
    const steps: [string, object[] | string][] = [
      // Regular against the reader's tree of an irregular file: read line by line.
      [
        irregular,
        [
          msg("c2", "c1", "under the early child appendword"),
          reply("p2", "p1", "appendword fork of the later parent"),
        ],
      ],
      // A regular file turns irregular: a duplicate id, then a child of a missing parent.
      [
        regular,
        [msg("a1", null, "a1 again appendword"), reply("a3", "a1", "appendword under the new a1")],
      ],
      [regular, [msg("o1", "ghost", "appendword orphan")]],
      // The missing parent arrives: its orphan moves under it.
      [regular, [msg("ghost", "a2", "appendword the ghost arrives")]],
      [irregular, [msg("c1", null, "appendword c1 copied")]],
      // A v1 file grows: a partial line first, then the rest of it.
      [
        v1,
        '{"type":"message","timestamp":"x","message":{"role":"user","content":"vone partial appendword',
      ],
      [v1, ' done"}}\n'],
      [v1, [reply(undefined, undefined, "vone appended appendword reply")]],
    ];
    for (const [path, add] of steps) {
      appendFileSync(path, typeof add === "string" ? add : add.map(line).join(""));
      check();
    }
    assert.deepEqual(only(f, "ghost"), { branch: "main", entry: "n.ghost" });
    assert.deepEqual(only(f, "orphan"), { branch: "main", entry: "n.o1" });
    assert.deepEqual(only(f, "partial"), { branch: "main", entry: "n.line-3" });
    assert.equal(only(f, "copied").entry, "n.c1");
  });

  it("not in a file the reader refuses as too large", (t) => {
    const f = fixture(t);
    const path = writeLines(f, "big.jsonl", [header(f.projectRoot), msg("u1", null, "bigword")]);
    const conversation = f.idOf("big.jsonl");
    assert.equal(checkWords(f, ["bigword"], [conversation]), 1);
    // Grown past the reader's limit (sparse: no bytes written): the reader refuses it now.
    truncateSync(path, LIMITS.fileBytes + 1);
    const r = f.reader.open({ conversation });
    assert.equal(r.ok ? "ok" : r.refusal.code, "too-large");
    assert.equal(hitCount(f, "bigword"), 0, "a hit would not open");
  });

  // A longer run: SEARCH_FUZZ_CASES=600 SEARCH_FUZZ_SEED=n node --test test/search/hits-open.test.ts
  it("on 60 mutated Pi sessions from the fuzz generator, and after appends to them", async (t) => {
    const f = fixture(t);
    const seedsDir = join(f.projectRoot, "..", "seeds");
    mkdirSync(seedsDir);
    const rich = await writeRichSession(seedsDir, "rich", f.projectRoot);
    const long = await writeLongSession(seedsDir, "long", f.projectRoot, {
      targetBytes: 32 * 1024,
      branches: true,
      compactionEveryBytes: 16 * 1024,
    });
    const seeds = [readFileSync(rich.path), readFileSync(long.path)];
    const CASES = Number(process.env.SEARCH_FUZZ_CASES ?? 60);
    const SEED = Number(process.env.SEARCH_FUZZ_SEED ?? 14);
    const rngOf = (i: number): Rng =>
      seededRng(Math.imul(SEED ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(i + 1, 0xc2b2ae35));
    const wordList = ["hello", "pixel", "bonjour", "aborted", "snapshot", "cursor", "ls"];
    // In batches, removed after their check: every word's hits stay under the search's limit.
    const BATCH = 30;
    let checked = 0;
    for (let from = 0; from < CASES; from += BATCH) {
      const applied = new Map<string, string>();
      const made: { path: string; file: Buffer; rng: Rng; name: string }[] = [];
      for (let i = from; i < Math.min(CASES, from + BATCH); i++) {
        const rng = rngOf(i);
        const m = mutate(rng.pick(seeds), rng);
        const name = `fuzz-${String(i).padStart(3, "0")}.jsonl`;
        const path = join(f.sessionsDir, name);
        writeFileSync(path, m.file);
        applied.set(name, m.applied.join(", "));
        made.push({ path, file: m.file, rng, name });
      }
      const byConv = new Map(
        f.reader.catalogue().conversations.map((r) => [r.conversation, r.fileName]),
      );
      const convs = [...byConv.keys()];
      const why = (c: string) => {
        const name = byConv.get(c) ?? c;
        return `${name} (seed ${SEED}: ${applied.get(name)})`;
      };
      checked += checkWords(f, wordList, convs, why);
      // Appended mutated lines, as the reader's fuzz follows: the index catches up from them.
      for (const m of made) {
        if (m.rng.next() < 0.7) {
          const more = appendix(m.rng, m.file);
          appendFileSync(m.path, more);
          applied.set(m.name, `${applied.get(m.name)}, then appended ${more.length} bytes`);
        }
      }
      checked += checkWords(f, wordList, convs, why);
      for (const m of made) unlinkSync(m.path);
    }
    assert.ok(checked > CASES * 3, `hits were checked (${checked})`);
  });
});
