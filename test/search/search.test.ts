// Full-text search (src/search): hits on every branch with deep-link ids the reader agrees
// with, catching up after an append, re-indexing a rewritten or replaced file so no hit shows
// text the file no longer holds, the cache directory never inside a source, and queries that
// cannot be FTS5 syntax.
import assert from "node:assert/strict";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { createSearch, type Search } from "../../src/search/index.ts";
import {
  matchExpression,
  QUERY_MAX_PREFIXES,
  QUERY_MAX_TOKENS,
  termsOf,
} from "../../src/search/query.ts";
import { swapFile } from "../board/fixture.ts";
import { writeReadingFixture } from "../board/reading-fixture.ts";
import { fingerprintTree } from "../helpers/fingerprint.ts";
import { assistant, header, project, tempDir, user } from "../helpers/reader.ts";

function line(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

function open(t: TestContext, fx: ReturnType<typeof writeReadingFixture>): Search {
  const cacheDir = tempDir(t, "search-cache-");
  const reader = fx.reader();
  const specs = [
    { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
  ];
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, []),
    catalogue: () => reader.catalogue(),
    cacheDir,
  });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  return opened.search;
}

function hitsOf(search: Search, q: string, limit = 20) {
  const r = search.search(q, limit);
  assert.ok(r.ok, JSON.stringify(r));
  return r.hits;
}

describe("search", () => {
  it("finds words on every branch with ids the reader opens at that entry", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    const [hit, ...rest] = hitsOf(search, "zanzib");
    assert.equal(rest.length, 0);
    assert.ok(hit);
    assert.equal(hit.conversation, fx.conversation);
    assert.equal(hit.branch, "main");
    assert.equal(hit.entry, "n.u1");
    assert.equal(hit.title, "Reading fixture");
    assert.equal(hit.project, "gamma");
    assert.equal(hit.snippet, "Please tidy the parser; mention zanzibarite once.");
    assert.deepEqual(hit.matches, [[32, 38]]);

    const lexer = hitsOf(search, "lexer approach");
    assert.equal(lexer.length, 1);
    const other = lexer[0]!;
    assert.match(other.branch, /^b\./, "a hit on the other branch names that branch");
    const page = fx.reader().open({ conversation: other.conversation, branch: other.branch });
    assert.ok(page.ok);
    assert.ok(
      page.page.parts.some((p) => p.entry === other.entry),
      "the entry is on the branch",
    );
    assert.ok(page.view.branches.some((b) => b.name === other.branch));

    assert.equal(hitsOf(search, '"the answer"').length, 1, "a phrase in a code block");
    assert.equal(hitsOf(search, "seq").length, 1, "a tool call's arguments are searched");
    assert.equal(hitsOf(search, "nothingmatchesthis").length, 0);
  });

  it("catches up from the appended bytes when one entry is appended", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    assert.deepEqual(search.refresh(), {
      unchanged: 0,
      appended: 0,
      indexed: 1,
      refused: 0,
      removed: 0,
      workers: 0,
    });
    assert.deepEqual(search.refresh(), {
      unchanged: 1,
      appended: 0,
      indexed: 0,
      refused: 0,
      removed: 0,
      workers: 0,
    });
    appendFileSync(fx.file, line(user("u10", "a9", "appended quetzalcoatlite text", 20)));
    assert.deepEqual(search.refresh(), {
      unchanged: 0,
      appended: 1,
      indexed: 0,
      refused: 0,
      removed: 0,
      workers: 0,
    });
    const [hit] = hitsOf(search, "quetzalcoatlite");
    assert.equal(hit?.entry, "n.u10");
    assert.equal(
      hit?.branch,
      hitsOf(search, "lexer approach")[0]?.branch,
      "continues its parent's branch",
    );
    // A fork appended at an older entry starts a branch named as the reader names it.
    appendFileSync(fx.file, line(user("u11", "a1", "second fork ptarmiganite", 21)));
    const fork = hitsOf(search, "ptarmiganite")[0];
    assert.equal(fork?.branch, "b.u11");
    const read = fx.reader().open({ conversation: fx.conversation, branch: "b.u11" });
    assert.ok(read.ok);
    // A partial line is not indexed until it is finished.
    appendFileSync(
      fx.file,
      '{"type":"message","id":"u12","parentId":"u11","timestamp":"2026-01-01T00:01:00Z","message":{"role":"user","content":"half written okapi',
    );
    assert.equal(hitsOf(search, "okapi").length, 0);
    appendFileSync(fx.file, ' text","timestamp":1}}\n');
    assert.equal(hitsOf(search, "okapi")[0]?.entry, "n.u12");
    assert.equal(hitsOf(search, "zanzibarite").length, 1, "earlier hits are still there");
  });

  it("never shows text a rewritten or replaced file no longer holds", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    assert.equal(hitsOf(search, "zanzibarite").length, 1);
    // Rewritten in place (same inode), longer than before: the head no longer matches.
    const cwd = join(fx.base, "gamma");
    writeFileSync(
      fx.file,
      [
        header(cwd, { id: "01a00000-0000-7000-8000-0000000000a1", extra: "x".repeat(50) }),
        user("z1", null, "rewritten: only wombatite now", 1),
        assistant("z2", "z1", "x".repeat(20_000), 2),
      ]
        .map(line)
        .join(""),
    );
    assert.equal(hitsOf(search, "zanzibarite").length, 0, "the old text is gone");
    assert.equal(hitsOf(search, "wombatite")[0]?.entry, "n.z1");
    // Replaced by a new inode.
    swapFile(fx.file, [
      header(cwd, { id: "01a00000-0000-7000-8000-0000000000a1" }),
      user("y1", null, "replaced: capybarite", 1),
    ]);
    assert.equal(hitsOf(search, "wombatite").length, 0);
    assert.equal(hitsOf(search, "capybarite")[0]?.entry, "n.y1");
    // Removed: no hit.
    swapFile(fx.file, [header(cwd, { id: "01a00000-0000-7000-8000-0000000000a1" })]);
    assert.equal(hitsOf(search, "capybarite").length, 0);
  });

  it("indexes again a file rewritten in place at the same length", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    assert.equal(hitsOf(search, "zanzibarite").length, 1);
    // Same length, same inode: only the bytes of one indexed line differ.
    const before = readFileSync(fx.file, "utf8");
    writeFileSync(fx.file, before.replace("zanzibarite", "aardvarkite"));
    assert.equal(hitsOf(search, "zanzibarite").length, 0);
    assert.equal(hitsOf(search, "aardvarkite").length, 1);
  });

  it("keeps its index in its cache directory and never writes inside a source", (t) => {
    const fx = writeReadingFixture(t);
    const before = fingerprintTree(fx.base);
    const cacheDir = tempDir(t, "search-cache-");
    const specs = [
      { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
    ];
    const roots = () => rootsFromSpecs(specs, []);
    const opened = createSearch({ roots, cacheDir: join(cacheDir, "deeper") });
    assert.ok(opened.ok);
    t.after(() => opened.search.close());
    assert.equal(hitsOf(opened.search, "zanzibarite").length, 1);
    assert.deepEqual(fingerprintTree(fx.base), before, "nothing in the sources changed");
    assert.ok(readdirSync(join(cacheDir, "deeper")).includes("search-0-of-2.sqlite"));

    const inside = createSearch({ roots, cacheDir: join(fx.sessionsDir, "cache") });
    assert.equal(inside.ok, false);
    assert.match(inside.ok ? "" : inside.reason, /inside the source/);
    assert.ok(!existsSync(join(fx.sessionsDir, "cache")), "and it was not created");
  });

  it("refuses a query with no word and treats FTS5 syntax as words", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    for (const q of ["", "   ", '""', "*", "- ( )"]) {
      const r = search.search(q, 10);
      assert.equal(r.ok ? "ok" : r.refusal.code, "bad-query", JSON.stringify(q));
    }
    const long = search.search("a".repeat(501), 10);
    assert.equal(long.ok ? "ok" : long.refusal.code, "bad-query");
    for (const q of [
      "NEAR(parser tidy)",
      'parser OR "',
      "text: parser",
      "parser*",
      "^parser",
      "zanzibarite AND",
    ]) {
      const r = search.search(q, 10);
      assert.ok(r.ok, `${q}: ${JSON.stringify(r)}`);
    }
    assert.equal(hitsOf(search, "text:zanzibarite").length, 0, "no column filter from a query");
    assert.equal(hitsOf(search, "PARSER tidy").length, 1, "case-insensitive, all words");
  });

  it("bounds what one query may cost: repeated words once, short words whole, at most so many", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    // The probe: 250 one-letter prefixes. A repeated token is one lookup, and a
    // one-letter word is a whole word, not the start of every word with that letter.
    const terms = termsOf(Array.from({ length: 250 }, (_, i) => "abcdefghij"[i % 10]).join(" "));
    assert.ok(terms);
    assert.equal(matchExpression(terms), '"a" "b" "c" "d" "e" "f" "g" "h" "i" "j"');
    assert.equal(matchExpression(termsOf("za zanzib za") ?? []), '"za"* "zanzib"*');
    assert.equal(hitsOf(search, "z").length, 0, "one letter matches only that word");
    assert.equal(hitsOf(search, "za").length, 1, "two letters are a prefix");
    const words = (n: number, quoted: boolean) =>
      Array.from({ length: n }, (_, i) => (quoted ? `"w${i}x"` : `w${i}x`)).join(" ");
    const refusalOf = (q: string) => {
      const r = search.search(q, 10);
      return r.ok ? "" : `${r.refusal.code}: ${r.refusal.message}`;
    };
    assert.equal(refusalOf(words(QUERY_MAX_PREFIXES, false)), "");
    assert.match(
      refusalOf(words(QUERY_MAX_PREFIXES + 1, false)),
      new RegExp(
        `^bad-query: A query matches at most ${QUERY_MAX_PREFIXES} words as beginnings of words; this one has ${QUERY_MAX_PREFIXES + 1}\\. Put the others in "quotes"`,
      ),
    );
    assert.equal(refusalOf(words(QUERY_MAX_TOKENS, true)), "", "quoted words are whole words");
    assert.match(
      refusalOf(words(QUERY_MAX_TOKENS + 1, true)),
      new RegExp(
        `^bad-query: A query holds at most ${QUERY_MAX_TOKENS} different words; this one has ${QUERY_MAX_TOKENS + 1}\\. Leave some out\\.$`,
      ),
    );
    assert.equal(
      refusalOf(`${words(QUERY_MAX_TOKENS, true)} ${words(4, true)}`),
      "",
      "repeats count once",
    );
  });

  it("indexes a second project and drops files that left the roots", (t) => {
    const base = tempDir(t, "search-two-");
    const a = project(base, "one", "main");
    const b = project(base, "two", "main");
    writeFileSync(
      join(a.sessionsDir, "a.jsonl"),
      [header(a.projectRoot), user("a1", null, "shared llamaite one", 1)].map(line).join(""),
    );
    writeFileSync(
      join(b.sessionsDir, "b.jsonl"),
      [header(b.projectRoot), user("b1", null, "shared llamaite two", 1)].map(line).join(""),
    );
    let specs = [a, b].map((p) => ({
      kind: "repository" as const,
      projectRoot: p.projectRoot,
      seat: p.seat,
    }));
    const opened = createSearch({
      roots: () => rootsFromSpecs(specs, []),
      cacheDir: tempDir(t, "sc-"),
    });
    assert.ok(opened.ok);
    t.after(() => opened.search.close());
    assert.deepEqual(
      hitsOf(opened.search, "llamaite")
        .map((h) => h.project)
        .sort(),
      ["one", "two"],
    );
    specs = specs.slice(0, 1);
    assert.deepEqual(
      hitsOf(opened.search, "llamaite").map((h) => h.project),
      ["one"],
    );
    assert.equal(opened.search.refresh().removed, 0, "already swept");
  });
});

describe("search queries", () => {
  it("checks phrases on the text and finds words that are several tokens", (t) => {
    const fx = writeReadingFixture(t);
    const search = open(t, fx);
    assert.equal(hitsOf(search, '"the answer"').length, 1);
    assert.equal(hitsOf(search, '"answer the"').length, 0, "order matters in a phrase");
    assert.equal(hitsOf(search, '"tidy parser"').length, 0, "adjacency matters");
    assert.deepEqual(
      hitsOf(search, "src/parser.ts").map((h) => h.entry),
      ["n.r1", "n.a2"],
      "a path is a phrase of tokens; newest first",
    );
    assert.equal(hitsOf(search, "zanzibärite")[0]?.entry, "n.u1", "diacritics are folded");
  });
});

describe("search over Pi's own store", () => {
  it("finds text in a store's project directories with the catalogue's conversation ids", (t) => {
    const base = tempDir(t, "search-store-");
    const store = join(base, "sessions");
    const cwd = join(base, "work", "app");
    const dir = join(store, encodeCwd(cwd));
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "2026-01-01_x.jsonl"),
      [header(cwd), user("s1", null, "store text gazelleite", 1)].map(line).join(""),
    );
    const specs = [{ kind: "pi-agent" as const, sessionsDir: store }];
    const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
    const opened = createSearch({
      roots: () => rootsFromSpecs(specs, []),
      catalogue: () => reader.catalogue(),
      cacheDir: tempDir(t, "sc-"),
    });
    assert.ok(opened.ok);
    t.after(() => opened.search.close());
    const [hit] = hitsOf(opened.search, "gazelleite");
    const row = reader.catalogue().conversations[0];
    assert.equal(hit?.conversation, row?.conversation);
    assert.ok(reader.open({ conversation: hit?.conversation ?? "", branch: "main" }).ok);
    const inside = createSearch({
      roots: () => rootsFromSpecs(specs, []),
      cacheDir: join(store, "c"),
    });
    assert.equal(inside.ok, false, "never a cache inside the store");
  });
});
