// The search cache is private and forgets what was deleted (issue 22 item 4; src/search/
// cache-dir.ts, store.ts). The index keeps every word of every conversation, so: its folder
// follows the private-folder rule up to `/`, a shard (or its -wal, -shm) that is a link or has
// a second name is never opened, the files are 0600, and a deleted or rewritten conversation's
// words leave the files (read raw, and through fts5vocab). The planted cache is made by a real
// other user (uid 65534).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, it, type TestContext } from "node:test";
import { createReader, rootsFromSpecs } from "../../src/index.ts";

import { createSearch, type Search } from "../../src/search/index.ts";
import { openUsage, USAGE_FILE } from "../../src/usage/index.ts";
import { OTHER_UID, startAsOtherUser, whyNoOtherUser } from "../helpers/other-user.ts";
import { assistant, header, project, user, writeSession } from "../helpers/reader.ts";

const ATTACKER = new URL("./attacker-cache.ts", import.meta.url).pathname;
const SECRET = "zqxsecretvocable";
const SHARDS = ["search-0-of-2.sqlite", "search-1-of-2.sqlite"];

/** A base uid 65534 may enter (0755), with one project of two conversations. */
function fixture(t: TestContext) {
  const base = mkdtempSync("/tmp/scache-");
  chmodSync(base, 0o755);
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const p = project(base, "demo");
  const secret = writeSession(p.sessionsDir, "secret.jsonl", [
    header(p.projectRoot),
    user("u1", null, `the password is ${SECRET} keep it`, 1),
    assistant("a1", "u1", "noted, and forgotten", 2),
  ]);
  const other = writeSession(p.sessionsDir, "other.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-000000000002" }),
    user("v1", null, "tidy the parser please", 1),
  ]);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: "main" }];
  return { base, secret, other, roots: () => rootsFromSpecs(specs, []) };
}

function open(t: TestContext, roots: ReturnType<typeof fixture>["roots"], cacheDir: string) {
  const opened = createSearch({ roots, cacheDir });
  if (opened.ok) t.after(() => opened.search.close());
  return opened;
}

function hits(search: Search, q: string): number {
  const r = search.search(q, 20);
  assert.ok(r.ok, JSON.stringify(r));
  return r.hits.length;
}

/** A database the person owns elsewhere, and its bytes' digest. */
function victim(base: string): { path: string; digest: () => string } {
  const path = join(base, "victim.sqlite");
  const db = new DatabaseSync(path);
  db.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');");
  db.close();
  return {
    path,
    digest: () => createHash("sha256").update(readFileSync(path)).digest("hex"),
  };
}

/** Every byte of every file in the cache folder (shards, -wal, -shm). */
function rawBytes(cacheDir: string): Buffer {
  return Buffer.concat(readdirSync(cacheDir).map((f) => readFileSync(join(cacheDir, f))));
}

/** The terms FTS5 lists for `word` in each shard, read through fts5vocab. */
function vocab(cacheDir: string, word: string): string[] {
  const found: string[] = [];
  for (const shard of SHARDS) {
    const db = new DatabaseSync(join(cacheDir, shard), { readOnly: true });
    try {
      db.exec("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, texts, 'row')");
      const rows = db.prepare("SELECT term FROM temp.v WHERE term = ?").all(word) as {
        term: string;
      }[];
      found.push(...rows.map((r) => `${shard}: ${r.term}`));
    } finally {
      db.close();
    }
  }
  return found;
}

describe("search cache: private", () => {
  it("refuses a cache folder another user made first, and never follows its shard's link", {
    skip: whyNoOtherUser() || false,
  }, async (t) => {
    const f = fixture(t);
    const target = victim(f.base);
    const before = target.digest();
    // XDG_CACHE_HOME is a shared folder (sticky, as /tmp); the other user got there first.
    const xdg = join(f.base, "xdg");
    mkdirSync(xdg);
    chmodSync(xdg, 0o1777);
    const cacheDir = join(xdg, "mosaic-conversation");
    const attacker = startAsOtherUser(t, ATTACKER, ["plant", cacheDir, SHARDS[0]!, target.path]);
    assert.equal(await attacker.exited(), 0);
    assert.equal(statSync(cacheDir).uid, OTHER_UID);

    const opened = open(t, f.roots, cacheDir);
    assert.equal(target.digest(), before, "the other database was not touched");
    assert.equal(opened.ok, false);
    assert.match(
      opened.ok ? "" : opened.reason,
      new RegExp(
        `^the search cache ${cacheDir} belongs to uid ${OTHER_UID}, not to you.*XDG_CACHE_HOME`,
      ),
    );
  });

  it("never opens a shard that is a link or has a second name, even in a private folder", (t) => {
    const f = fixture(t);
    const target = victim(f.base);
    const before = target.digest();
    const cacheDir = join(f.base, "cache");
    mkdirSync(cacheDir, { mode: 0o700 });
    symlinkSync(target.path, join(cacheDir, SHARDS[0]!));
    const linked = open(t, f.roots, cacheDir);
    assert.equal(linked.ok, false);
    assert.match(linked.ok ? "" : linked.reason, /search-0-of-2\.sqlite is a symbolic link/);
    rmSync(join(cacheDir, SHARDS[0]!));
    symlinkSync(target.path, join(cacheDir, `${SHARDS[1]!}-wal`));
    const wal = open(t, f.roots, cacheDir);
    assert.match(wal.ok ? "" : wal.reason, /search-1-of-2\.sqlite-wal is a symbolic link/);
    // Shard 0 was opened (and made) before shard 1's -wal was refused: start again empty.
    for (const file of readdirSync(cacheDir)) rmSync(join(cacheDir, file));
    linkSync(target.path, join(cacheDir, SHARDS[0]!));
    const twice = open(t, f.roots, cacheDir);
    assert.match(twice.ok ? "" : twice.reason, /has 2 names \(hard links\)/);
    assert.equal(target.digest(), before);
  });

  it("never opens the usage index through a link either, and narrows an old 0644 one", (t) => {
    const f = fixture(t);
    const target = victim(f.base);
    const before = target.digest();
    const cacheDir = join(f.base, "cache");
    mkdirSync(cacheDir, { mode: 0o700 });
    const openIt = () => {
      const catalogue = () => createReader({ roots: f.roots }).catalogue();
      const opened = openUsage({ roots: f.roots, catalogue, cacheDir });
      if (opened.ok) opened.usage.close();
      return opened;
    };
    symlinkSync(target.path, join(cacheDir, USAGE_FILE));
    const linked = openIt();
    assert.match(linked.ok ? "" : linked.reason, /usage\.sqlite is a symbolic link/);
    assert.equal(target.digest(), before);
    rmSync(join(cacheDir, USAGE_FILE));
    assert.equal(openIt().ok, true);
    chmodSync(join(cacheDir, USAGE_FILE), 0o644);
    assert.equal(openIt().ok, true);
    assert.equal(statSync(join(cacheDir, USAGE_FILE)).mode & 0o777, 0o600);
  });

  it("refuses a cache folder others can write to, or under a folder they can", (t) => {
    const f = fixture(t);
    const loose = join(f.base, "loose");
    mkdirSync(loose);
    chmodSync(loose, 0o777);
    const own = open(t, f.roots, loose);
    assert.match(own.ok ? "" : own.reason, /is writable by others \(mode 777\).*chmod 700/);
    const under = open(t, f.roots, join(loose, "mosaic-conversation"));
    assert.match(
      under.ok ? "" : under.reason,
      new RegExp(`${loose}, above the search cache .* is writable by others.*chmod go-w`),
    );
  });

  it("keeps its files 0600 in a 0700 folder, out of another user's reach", {
    skip: whyNoOtherUser() || false,
  }, async (t) => {
    const f = fixture(t);
    const cacheDir = join(f.base, "cache", "mosaic-conversation");
    const opened = open(t, f.roots, cacheDir);
    assert.ok(opened.ok, opened.ok ? "" : opened.reason);
    assert.equal(hits(opened.search, SECRET), 1);
    assert.equal(statSync(cacheDir).mode & 0o777, 0o700);
    const files = readdirSync(cacheDir).sort();
    assert.deepEqual(
      files,
      SHARDS.flatMap((s) => [s, `${s}-shm`, `${s}-wal`]),
    );
    for (const file of files) {
      assert.equal(statSync(join(cacheDir, file)).mode & 0o777, 0o600, file);
    }
    const reader = startAsOtherUser(t, ATTACKER, [
      "read",
      ...files.map((file) => join(cacheDir, file)),
    ]);
    assert.equal(await reader.exited(), 0);
    assert.doesNotMatch(reader.output(), / read$/m);
    assert.equal(reader.output().match(/ EACCES$/gm)?.length, files.length);
  });

  it("narrows an older version's 0644 index files to 0600", (t) => {
    const f = fixture(t);
    const cacheDir = join(f.base, "cache");
    mkdirSync(cacheDir, { mode: 0o700 });
    for (const name of [SHARDS[0]!, `${SHARDS[0]!}-wal`]) {
      writeFileSync(join(cacheDir, name), "", { mode: 0o644 });
      chmodSync(join(cacheDir, name), 0o644);
    }
    const opened = open(t, f.roots, cacheDir);
    assert.ok(opened.ok, opened.ok ? "" : opened.reason);
    assert.equal(hits(opened.search, "parser"), 1);
    for (const file of readdirSync(cacheDir)) {
      assert.equal(statSync(join(cacheDir, file)).mode & 0o777, 0o600, file);
    }
  });
});

describe("search cache: deleted conversations", () => {
  it("removes a deleted conversation's words from the files, raw and in fts5vocab", (t) => {
    const f = fixture(t);
    const cacheDir = join(f.base, "cache");
    const opened = open(t, f.roots, cacheDir);
    assert.ok(opened.ok, opened.ok ? "" : opened.reason);
    assert.equal(hits(opened.search, SECRET), 1);
    // The probes see the word while its conversation exists: they can see it.
    assert.equal(vocab(cacheDir, SECRET).length, 1);
    assert.ok(rawBytes(cacheDir).includes(SECRET));

    rmSync(f.secret);
    assert.equal(hits(opened.search, SECRET), 0);
    assert.deepEqual(vocab(cacheDir, SECRET), []);
    assert.equal(rawBytes(cacheDir).includes(SECRET), false, "no byte of the word is left");
    assert.equal(hits(opened.search, "parser"), 1, "the other conversation is still found");
  });

  it("removes the old words of a conversation rewritten without them", (t) => {
    const f = fixture(t);
    const cacheDir = join(f.base, "cache");
    const opened = open(t, f.roots, cacheDir);
    assert.ok(opened.ok, opened.ok ? "" : opened.reason);
    assert.equal(hits(opened.search, SECRET), 1);
    const text = readFileSync(f.secret, "utf8");
    writeFileSync(f.secret, text.replace(SECRET, "redacted"));
    assert.equal(hits(opened.search, "redacted"), 1);
    assert.equal(hits(opened.search, SECRET), 0);
    assert.deepEqual(vocab(cacheDir, SECRET), []);
    assert.equal(rawBytes(cacheDir).includes(SECRET), false);
  });
});
