// The index's two shards (src/search/shards.ts): a large catch-up runs one shard on a worker
// thread and gives exactly the hits one thread gives; small catch-ups stay on the calling
// thread; a shard locked by another process is a clear refusal, not a crash, and nothing is
// lost once it is free; a damaged or old-layout cache file is rebuilt, not fatal.
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, it, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import { rootsFromSpecs } from "../../src/index.ts";
import { createSearch, type Search, type SearchHit } from "../../src/search/index.ts";
import { SHARDS, type ShardTuning, shardFile, shardOf } from "../../src/search/shards.ts";
import { assistant, header, project, tempDir, user, writeSession } from "../helpers/reader.ts";

const FILES = 12;
const WORDS = ["marmotite", "ocelotite", "pangolinite"];

/** A project of FILES conversations, every one holding each of WORDS, and one word of its own. */
function corpus(t: TestContext) {
  const p = project(tempDir(t, "shards-"));
  const files: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const name = `s-${String(i).padStart(2, "0")}.jsonl`;
    files.push(
      writeSession(p.sessionsDir, name, [
        header(p.projectRoot, { id: `01a00000-0000-7000-8000-0000000000${10 + i}` }),
        user(`u${i}`, null, `${WORDS.join(" ")} own${i}word`, 1),
        assistant(`a${i}`, `u${i}`, `a reply about ${WORDS[i % WORDS.length]}`, 2),
      ]),
    );
  }
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  return { p, files, roots: () => rootsFromSpecs(specs, []) };
}

function open(
  t: TestContext,
  roots: ReturnType<typeof corpus>["roots"],
  parallelMinBytes: number,
  cacheDir = tempDir(t, "shards-cache-"),
  tuning: ShardTuning = {},
): Search {
  const opened = createSearch({ roots, cacheDir, shardTuning: { parallelMinBytes, ...tuning } });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  return opened.search;
}

function hitsOf(search: Search, q: string): SearchHit[] {
  const r = search.search(q, 100);
  assert.ok(r.ok, JSON.stringify(r));
  return r.hits;
}

const key = (h: SearchHit) => `${h.conversation} ${h.branch} ${h.entry} ${h.snippet}`;

describe("search shards", () => {
  it("the corpus lands in both shards (else the tests below prove nothing)", (t) => {
    const { files } = corpus(t);
    assert.equal(new Set(files.map(shardOf)).size, SHARDS);
  });

  it("a large catch-up indexes one shard on a worker, with exactly the hits of one thread", (t) => {
    const { roots } = corpus(t);
    const cacheDir = tempDir(t, "shards-cache-");
    const parallel = open(t, roots, 0, cacheDir);
    const inline = open(t, roots, Number.POSITIVE_INFINITY);
    const first = parallel.refresh();
    assert.equal(first.workers, 1);
    assert.equal(first.indexed, FILES);
    const alone = inline.refresh();
    assert.equal(alone.workers, 0);
    assert.equal(alone.indexed, FILES);
    for (const q of [...WORDS, "own7word", "reply"]) {
      const a = hitsOf(parallel, q);
      const b = hitsOf(inline, q);
      assert.ok(a.length > 0, q);
      assert.deepEqual(a.map(key).sort(), b.map(key).sort(), q);
    }
    assert.equal(hitsOf(parallel, "marmotite").length, FILES + FILES / WORDS.length);
    // Both shard files hold rows: the worker wrote its own.
    for (let k = 0; k < SHARDS; k++) {
      const db = new DatabaseSync(shardFile(cacheDir, k), { readOnly: true });
      const { n } = db.prepare("SELECT count(*) AS n FROM files").get() as { n: number };
      db.close();
      assert.ok(n > 0, `shard ${k} has files`);
    }
  });

  it("an append after it is caught up on the calling thread, from the appended bytes", (t) => {
    const { roots, files } = corpus(t);
    const search = open(t, roots, 0);
    assert.equal(search.refresh().workers, 1);
    appendFileSync(
      files[5] as string,
      `${JSON.stringify(user("z1", "a5", "appended yakite", 3))}\n`,
    );
    const stats = search.refresh();
    assert.equal(stats.workers, 0);
    assert.equal(stats.appended, 1);
    assert.equal(stats.unchanged, FILES - 1);
    const [hit] = hitsOf(search, "yakite");
    assert.equal(hit?.entry, "n.z1");
  });

  it("a worker that cannot start is not waited for: its shard is indexed on the calling thread", (t) => {
    const { roots } = corpus(t);
    const dir = tempDir(t, "shards-worker-");
    const broken = join(dir, "broken-worker.mjs");
    writeFileSync(broken, "throw new Error('this worker cannot load');\n");
    const search = open(t, roots, 0, undefined, { startMs: 300, workerUrl: pathToFileURL(broken) });
    const stats = search.refresh();
    assert.equal(stats.workers, 0);
    assert.equal(stats.indexed, FILES);
    assert.equal(hitsOf(search, "marmotite").length, FILES + FILES / WORDS.length);
  });

  it("hits are newest first across the shards", (t) => {
    const { roots } = corpus(t);
    const search = open(t, roots, 0);
    const stamps = hitsOf(search, "marmotite").map((h) => h.timestamp ?? "");
    assert.deepEqual(stamps, [...stamps].sort().reverse());
  });

  it("a shard another process holds locked is refused search-unavailable; nothing is lost after", (t) => {
    const { roots } = corpus(t);
    const cacheDir = tempDir(t, "shards-cache-");
    const search = open(t, roots, 0, cacheDir);
    // Another process (here another connection) in the middle of writing shard 1.
    const other = new DatabaseSync(shardFile(cacheDir, 1));
    other.exec("BEGIN IMMEDIATE");
    const r = search.search("marmotite", 10);
    other.exec("ROLLBACK");
    other.close();
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.refusal.code === "search-unavailable");
    assert.match(!r.ok ? r.refusal.message : "", /another process .* search again/i);
    // Once free, every file is found (shard 0's committed work is kept, shard 1 catches up).
    assert.equal(hitsOf(search, "marmotite").length, FILES + FILES / WORDS.length);
  });

  it("a damaged index file is rebuilt, and an index of the old layout is removed", (t) => {
    const { roots } = corpus(t);
    const cacheDir = tempDir(t, "shards-cache-");
    open(t, roots, 0, cacheDir).refresh();
    writeFileSync(shardFile(cacheDir, 1), "this is not a database, it is a damaged cache file\n");
    writeFileSync(join(cacheDir, "search-v1.sqlite"), "an index of the one-file layout");
    const search = open(t, roots, 0, cacheDir);
    assert.equal(existsSync(join(cacheDir, "search-v1.sqlite")), false);
    assert.equal(hitsOf(search, "marmotite").length, FILES + FILES / WORDS.length);
    assert.deepEqual(
      readdirSync(cacheDir)
        .filter((n) => n.endsWith(".sqlite"))
        .sort(),
      [shardFile(cacheDir, 0), shardFile(cacheDir, 1)].map((f) => f.slice(cacheDir.length + 1)),
    );
  });
});
