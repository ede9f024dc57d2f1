// The search index on disk (node:sqlite, FTS5): one row per indexed file (its identity and how
// far it was read), the tree state needed to name the branch of an appended entry, and one
// row per entry with text (where its line is, a hash of that line) in a contentless FTS5
// table without positions (detail=none). The text itself is not stored: a hit re-reads its
// line, which proves it current and lets phrases be checked.
import { rmSync } from "node:fs";
import { DatabaseSync, type StatementSync } from "node:sqlite";

/** Bumped when the layout or what is indexed changes: an old index is dropped and rebuilt. */
export const INDEX_VERSION = 3;

export type FileRow = {
  id: number;
  path: string;
  dev: string;
  ino: string;
  size: number;
  ctime: string;
  head: string;
  tail: string;
  roots: number;
  lastId: string | null;
};

export type Store = {
  db: DatabaseSync;
  fileByPath: StatementSync;
  insertFile: StatementSync;
  updateFile: StatementSync;
  deleteFile: StatementSync;
  allFiles: StatementSync;
  node: StatementSync;
  putNode: StatementSync;
  markChild: StatementSync;
  deleteNodes: StatementSync;
  insertEntry: StatementSync;
  insertText: StatementSync;
  entryIdsOfFile: StatementSync;
  deleteEntries: StatementSync;
  deleteText: StatementSync;
  query: StatementSync;
  close(): void;
};

/** SQLite's result codes for "another connection holds the lock" (SQLITE_BUSY, SQLITE_LOCKED). */
export function isBusy(e: unknown): boolean {
  const code = (e as { errcode?: unknown } | null)?.errcode;
  return code === 5 || code === 6;
}

/** SQLite's result codes for a file that is not (or no longer) a sound database. */
function isDamaged(e: unknown): boolean {
  const code = (e as { errcode?: unknown } | null)?.errcode;
  return code === 11 || code === 26;
}

/**
 * Opens the index at `path`. A file there that is not a sound database (damaged, truncated,
 * something else) is deleted and the index built again: it is a cache, and losing it costs
 * only a re-index.
 */
export function openStore(path: string): Store {
  try {
    return openSound(path);
  } catch (e) {
    if (!isDamaged(e)) throw e;
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    return openSound(path);
  }
}

function openSound(path: string): Store {
  const db = new DatabaseSync(path, { timeout: 5000 });
  let version: number;
  try {
    // WAL: a search reads while another process indexes. NORMAL: a crash may lose the last
    // commits of a cache, never corrupt it. A larger checkpoint interval for bulk indexing.
    db.exec(
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 16384; PRAGMA cache_size = -65536;",
    );
    version = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
    if (version === INDEX_VERSION) db.prepare("SELECT count(*) FROM files").get();
  } catch (e) {
    db.close();
    throw e;
  }
  if (version !== INDEX_VERSION) {
    db.exec(`
      DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS nodes; DROP TABLE IF EXISTS entries;
      DROP TABLE IF EXISTS texts;
      CREATE TABLE files (
        id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, dev TEXT NOT NULL, ino TEXT NOT NULL,
        size INTEGER NOT NULL, ctime TEXT NOT NULL, head TEXT NOT NULL, tail TEXT NOT NULL,
        roots INTEGER NOT NULL, last_id TEXT
      );
      CREATE TABLE nodes (
        file INTEGER NOT NULL, id TEXT NOT NULL, branch TEXT NOT NULL, has_child INTEGER NOT NULL,
        PRIMARY KEY (file, id)
      ) WITHOUT ROWID;
      CREATE TABLE entries (
        rowid INTEGER PRIMARY KEY, file INTEGER NOT NULL, entry TEXT NOT NULL,
        branch TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL, hash TEXT NOT NULL,
        ts TEXT
      );
      CREATE INDEX entries_file ON entries (file);
      CREATE VIRTUAL TABLE texts USING fts5(
        text, content = '', contentless_delete = 1, detail = none,
        tokenize = 'unicode61 remove_diacritics 2'
      );
      PRAGMA user_version = ${INDEX_VERSION};
    `);
  }
  return {
    db,
    fileByPath: db.prepare(
      "SELECT id, path, dev, ino, size, ctime, head, tail, roots, last_id AS lastId FROM files WHERE path = ?",
    ),
    insertFile: db.prepare(
      "INSERT INTO files (path, dev, ino, size, ctime, head, tail, roots, last_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    updateFile: db.prepare(
      "UPDATE files SET dev = ?, ino = ?, size = ?, ctime = ?, head = ?, tail = ?, roots = ?, last_id = ? WHERE id = ?",
    ),
    deleteFile: db.prepare("DELETE FROM files WHERE id = ?"),
    allFiles: db.prepare("SELECT id, path, dev, ino, size, ctime FROM files"),
    node: db.prepare("SELECT branch, has_child AS hasChild FROM nodes WHERE file = ? AND id = ?"),
    putNode: db.prepare(
      "INSERT OR REPLACE INTO nodes (file, id, branch, has_child) VALUES (?, ?, ?, 0)",
    ),
    markChild: db.prepare("UPDATE nodes SET has_child = 1 WHERE file = ? AND id = ?"),
    deleteNodes: db.prepare("DELETE FROM nodes WHERE file = ?"),
    insertEntry: db.prepare(
      "INSERT INTO entries (file, entry, branch, start, end, hash, ts) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    insertText: db.prepare("INSERT INTO texts (rowid, text) VALUES (?, ?)"),
    entryIdsOfFile: db.prepare("SELECT rowid FROM entries WHERE file = ?"),
    deleteEntries: db.prepare("DELETE FROM entries WHERE file = ?"),
    deleteText: db.prepare("DELETE FROM texts WHERE rowid = ?"),
    // The FTS5 scan stays a subquery so it walks rowids newest first and stops at the limit;
    // joined directly, SQLite may collect every match of a common word and sort them.
    query: db.prepare(`
      SELECT e.rowid AS rowid, e.file AS file, f.path AS path, e.entry AS entry,
             e.branch AS branch, e.start AS start, e.end AS end, e.hash AS hash, e.ts AS ts
      FROM (SELECT rowid FROM texts WHERE texts MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT ?) m
      JOIN entries e ON e.rowid = m.rowid JOIN files f ON f.id = e.file
      ORDER BY m.rowid DESC`),
    close: () => db.close(),
  };
}

/** Runs `fn` in one transaction (rolled back if it throws). */
export function inTransaction<T>(store: Store, fn: () => T): T {
  store.db.exec("BEGIN IMMEDIATE");
  try {
    const out = fn();
    store.db.exec("COMMIT");
    return out;
  } catch (e) {
    store.db.exec("ROLLBACK");
    throw e;
  }
}
