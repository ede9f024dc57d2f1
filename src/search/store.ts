// The search index on disk (node:sqlite, FTS5): one row per indexed file (its identity and how
// far it was read), the tree state needed to name the branch of an appended entry, and one
// row per entry with text (where its line is, a hash of that line) in a contentless FTS5
// table without positions (detail=none). The text itself is not stored, but FTS5 keeps every
// word of it as a term: the files are as private as the sessions (0600 in a 0700 folder of
// ours, lstat'ed before they are opened, never through a link), and the words of what was
// deleted are purged from them (purgeDeleted).
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { type CacheLayout, isBusy, openCacheDatabase } from "../fs/sqlite-cache.ts";
import type { IndexedFile } from "./file-change.ts";

export { isBusy, UnsafeIndexFile } from "../fs/sqlite-cache.ts";

/** Bumped when the layout or what is indexed changes: an old index is dropped and rebuilt. */
export const INDEX_VERSION = 4;

export type FileRow = IndexedFile & { roots: number; lastId: string | null };

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
  /** Entries' texts deleted since the last purge: their words are still in the file. */
  unpurged: number;
  /** A purge whose WAL could not be emptied yet (a reader held it): tried again. */
  checkpointDue: boolean;
  close(): void;
};

/**
 * Opens the index at `path` (src/fs/sqlite-cache.ts: private files, never through a link; a
 * damaged file or another layout is built again from a new file).
 */
export function openStore(path: string): Store {
  return openCacheDatabase(path, LAYOUT, statementsOf);
}

function statementsOf(db: DatabaseSync): Store {
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
    unpurged: 0,
    checkpointDue: false,
    close: () => db.close(),
  };
}

/**
 * WAL: a search reads while another process indexes. NORMAL: a crash may lose the last commits
 * of a cache, never corrupt it. A larger checkpoint interval for bulk indexing. secure_delete:
 * what SQLite frees (a deleted row, a merged FTS5 segment) is overwritten with zeros, so the
 * words of a deleted conversation are not left in free pages. temp_store in memory: no words in
 * temporary files.
 */
function configure(db: DatabaseSync): void {
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 16384; PRAGMA cache_size = -65536; PRAGMA secure_delete = ON; PRAGMA temp_store = MEMORY;",
  );
}

const TABLES = `
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
`;

const LAYOUT: CacheLayout = {
  version: INDEX_VERSION,
  words: {
    what: "the search index file",
    instead:
      "set XDG_CACHE_HOME to a folder of your own (the index is $XDG_CACHE_HOME/mosaic-conversation, else ~/.cache/mosaic-conversation)",
  },
  configure,
  tables: TABLES,
  probe: "SELECT count(*) FROM files",
};

/**
 * Makes the words of deleted entries leave the files. FTS5 marks a deleted row of a
 * contentless table with a tombstone and keeps its terms in the segment until that segment
 * is merged: `optimize` merges every segment into one, dropping them, and secure_delete zeroes
 * the pages it frees; a TRUNCATE checkpoint then empties the WAL, which held copies of those
 * pages. A no-op when nothing was deleted. A busy database (another process indexing) leaves
 * the purge for the next call.
 */
export function purgeDeleted(store: Store): void {
  if (store.unpurged === 0 && !store.checkpointDue) return;
  try {
    if (store.unpurged > 0) {
      store.db.exec("INSERT INTO texts(texts) VALUES ('optimize')");
      store.unpurged = 0;
      store.checkpointDue = true;
    }
    const r = store.db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number };
    store.checkpointDue = r.busy !== 0;
  } catch (e) {
    // Another connection holds the lock: the counts stay, the next catch-up purges.
    if (!isBusy(e)) throw e;
  }
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
