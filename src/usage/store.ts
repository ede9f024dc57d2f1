// The usage index on disk (node:sqlite), beside the search index in our cache directory: one
// row per session file read (its identity, how far it was read, hashes of the first and last
// bytes read, to notice a rewrite) and one row per spend found in it. It is a cache: a damaged
// or older one is dropped and built again, which costs one first run.
import type { DatabaseSync } from "node:sqlite";
import { type CacheLayout, openCacheDatabase } from "../fs/sqlite-cache.ts";
import type { IndexedFile } from "../search/file-change.ts";
import type { Spend } from "./lines.ts";

/** Bumped when the layout or what a spend holds changes (a price, a key): rebuilt. */
export const USAGE_INDEX_VERSION = 1;

export type FileRow = IndexedFile & {
  /** Bytes read: the end of the last whole line. */
  end: number;
  lastModel: string;
};

export type UsageStore = {
  fileByPath(path: string): FileRow | undefined;
  allFiles(): FileRow[];
  /** Inserts or replaces the file's row; returns its id. */
  putFile(row: Omit<FileRow, "id">): number;
  dropFile(id: number): void;
  addSpends(file: number, spends: readonly Spend[]): void;
  /** Every spend of the files in `ids`, each with its file id. */
  spendsOf(): { file: number; spend: Spend }[];
  transaction<T>(fn: () => T): T;
  close(): void;
};

/**
 * Opens the usage index at `path` (src/fs/sqlite-cache.ts, the search index's rule: private
 * files, never through a link; a damaged file or another version is built again).
 */
export function openUsageStore(path: string): UsageStore {
  return openCacheDatabase(path, LAYOUT, wrap);
}

const LAYOUT: CacheLayout = {
  version: USAGE_INDEX_VERSION,
  words: {
    what: "the usage index file",
    instead:
      "set XDG_CACHE_HOME to a folder of your own (the index is $XDG_CACHE_HOME/mosaic-conversation, else ~/.cache/mosaic-conversation)",
  },
  configure: (db) => db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"),
  tables:
    "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, dev TEXT, ino TEXT, size INTEGER, ctime TEXT, end_at INTEGER, head TEXT, tail TEXT, last_model TEXT);" +
    "CREATE TABLE spends (file INTEGER NOT NULL, key TEXT, ms INTEGER, model TEXT, input INTEGER, output INTEGER, cache_read INTEGER, cache_write INTEGER, cost REAL, unpriced INTEGER);" +
    "CREATE INDEX spends_file ON spends(file);",
  probe: "SELECT count(*) FROM files",
};

/** A `files` row as SQLite names its columns. */
type RawFile = IndexedFile & { end_at: number; last_model: string };

function fileOf(r: RawFile): FileRow {
  return {
    id: r.id,
    path: r.path,
    dev: r.dev,
    ino: r.ino,
    size: r.size,
    ctime: r.ctime,
    end: r.end_at,
    head: r.head,
    tail: r.tail,
    lastModel: r.last_model,
  };
}

function wrap(db: DatabaseSync): UsageStore {
  const byPath = db.prepare("SELECT * FROM files WHERE path = ?");
  const all = db.prepare("SELECT * FROM files");
  const put = db.prepare(
    "INSERT INTO files (path, dev, ino, size, ctime, end_at, head, tail, last_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) " +
      "ON CONFLICT(path) DO UPDATE SET dev = excluded.dev, ino = excluded.ino, size = excluded.size, ctime = excluded.ctime, end_at = excluded.end_at, head = excluded.head, tail = excluded.tail, last_model = excluded.last_model RETURNING id",
  );
  const delFile = db.prepare("DELETE FROM files WHERE id = ?");
  const delSpends = db.prepare("DELETE FROM spends WHERE file = ?");
  const insert = db.prepare(
    "INSERT INTO spends (file, key, ms, model, input, output, cache_read, cache_write, cost, unpriced) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  );
  const every = db.prepare(
    "SELECT file, key, ms, model, input, output, cache_read, cache_write, cost, unpriced FROM spends ORDER BY rowid",
  );
  // Rows as arrays: building an object per row costs more than the rest of the read.
  every.setReturnArrays(true);
  let depth = 0;
  return {
    fileByPath: (path) => {
      const r = byPath.get(path) as RawFile | undefined;
      return r ? fileOf(r) : undefined;
    },
    allFiles: () => (all.all() as RawFile[]).map(fileOf),
    putFile: (row) =>
      (
        put.get(
          row.path,
          row.dev,
          row.ino,
          row.size,
          row.ctime,
          row.end,
          row.head,
          row.tail,
          row.lastModel,
        ) as { id: number }
      ).id,
    dropFile: (id) => {
      delSpends.run(id);
      delFile.run(id);
    },
    addSpends: (file, spends) => {
      for (const s of spends) {
        insert.run(
          file,
          s.key,
          s.ms,
          s.model,
          s.input,
          s.output,
          s.cacheRead,
          s.cacheWrite,
          s.cost,
          s.unpriced ? 1 : 0,
        );
      }
    },
    spendsOf: () =>
      (every.all() as unknown as unknown[][]).map((r) => ({
        file: r[0] as number,
        spend: {
          key: r[1] as string | null,
          ms: r[2] as number,
          model: r[3] as string,
          input: r[4] as number,
          output: r[5] as number,
          cacheRead: r[6] as number,
          cacheWrite: r[7] as number,
          cost: r[8] as number,
          unpriced: r[9] === 1,
        },
      })),
    transaction: (fn) => {
      if (depth > 0) return fn();
      depth++;
      db.exec("BEGIN");
      try {
        const out = fn();
        db.exec("COMMIT");
        return out;
      } catch (e) {
        db.exec("ROLLBACK");
        throw e;
      } finally {
        depth--;
      }
    },
    close: () => db.close(),
  };
}
