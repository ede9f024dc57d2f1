// A cache database of ours (node:sqlite) in our private cache folder: the search index's shards
// and the usage index. The rule for opening one lives here once: its file and its -wal and
// -shm are lstat'ed before SQLite opens them (a link, another user's file or a second name is
// refused, never followed: SQLite would follow or share it); an older version's 0644 is
// narrowed to 0600; a missing file is created empty with 0600 so SQLite gives its -wal and -shm
// the same mode; a file that is not a sound database is deleted and built again (a cache:
// losing it costs a re-index); another layout version starts from a new file rather than by
// dropping tables, so no page an older version freed (and did not zero) keeps what it held.
import { closeSync, constants, fchmodSync, openSync, rmSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { checkPrivateFile, type PlaceWords } from "./private-folder.ts";

/** A cache file (or its -wal, -shm) that is not a private file of ours: never opened. */
export class UnsafeIndexFile extends Error {}

export type CacheLayout = {
  /** PRAGMA user_version of this layout; another value means another layout. */
  version: number;
  /** What the file is, and what to do instead, for a refusal. */
  words: PlaceWords;
  /** PRAGMAs run on every connection (WAL and what else the cache needs). */
  configure(db: DatabaseSync): void;
  /** The tables of `version`, in an empty database. */
  tables: string;
  /** A query that fails on a database that only looks like this layout (read once at open). */
  probe?: string;
};

const SIDE_FILES = ["-wal", "-shm"] as const;

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
 * Opens the cache database at `path` in `layout` and hands it to `use` (which prepares its
 * statements: a damaged page may show only then), building it again when the file is damaged
 * or of another layout. Throws UnsafeIndexFile when the file or its -wal or -shm is not a
 * private file of ours.
 */
export function openCacheDatabase<T>(
  path: string,
  layout: CacheLayout,
  use: (db: DatabaseSync) => T,
): T {
  try {
    return usedOrClosed(openSound(path, layout), use);
  } catch (e) {
    if (!isDamaged(e)) throw e;
    removeCacheFiles(path);
    return usedOrClosed(openSound(path, layout), use);
  }
}

function usedOrClosed<T>(db: DatabaseSync, use: (db: DatabaseSync) => T): T {
  try {
    return use(db);
  } catch (e) {
    db.close();
    throw e;
  }
}

/** Deletes the database and its -wal and -shm. */
export function removeCacheFiles(path: string): void {
  for (const suffix of ["", ...SIDE_FILES]) rmSync(`${path}${suffix}`, { force: true });
}

function openSound(path: string, layout: CacheLayout): DatabaseSync {
  preparePrivateFiles(path, layout.words);
  let db = new DatabaseSync(path, { timeout: 5000 });
  let version: number;
  try {
    layout.configure(db);
    version = userVersion(db);
    if (version === layout.version && layout.probe !== undefined) db.prepare(layout.probe).get();
  } catch (e) {
    db.close();
    throw e;
  }
  if (version === layout.version) return db;
  try {
    if (version !== 0 || hasTables(db)) {
      db.close();
      removeCacheFiles(path);
      preparePrivateFiles(path, layout.words);
      db = new DatabaseSync(path, { timeout: 5000 });
      layout.configure(db);
    }
    createTables(db, layout);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

function userVersion(db: DatabaseSync): number {
  return (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
}

function hasTables(db: DatabaseSync): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema LIMIT 1").get() !== undefined;
}

/** The layout's tables in an empty database, once: another process may be at it too. */
function createTables(db: DatabaseSync, layout: CacheLayout): void {
  db.exec("BEGIN IMMEDIATE");
  try {
    if (userVersion(db) !== layout.version) {
      db.exec(layout.tables);
      db.exec(`PRAGMA user_version = ${layout.version}`);
    }
    db.exec("COMMIT");
  } catch (e) {
    db.exec("ROLLBACK");
    throw e;
  }
}

function preparePrivateFiles(path: string, words: PlaceWords): void {
  for (const file of [path, ...SIDE_FILES.map((s) => `${path}${s}`)]) {
    const check = checkPrivateFile(file, words);
    if (check.ok || check.problem.code === "missing") continue;
    if (check.problem.code !== "open") throw new UnsafeIndexFile(check.problem.message);
    // Ours, one name, in our private folder: only its bits were too wide (an older version).
    chmodPrivate(file);
  }
  if (checkPrivateFile(path, words).ok) return;
  // No database: a -wal or -shm left without one belongs to nothing and would be replayed.
  for (const s of SIDE_FILES) rmSync(`${path}${s}`, { force: true });
  const fd = openSync(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  closeSync(fd);
}

function chmodPrivate(file: string): void {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}
