// Full-text search over every branch of every conversation in the roots: `createSearch` keeps
// an index in a cache directory of ours (never in a source), catches up before each query
// (an unchanged file costs an lstat, a grown one only its appended bytes), and proves each hit
// current by re-reading its line and comparing its hash: a file rewritten since it was indexed
// is indexed again, and the query runs again, so a hit never shows text the file no longer has.
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { plainText } from "../present/plain-text.ts";
import type { Catalogue, CatalogueRow } from "../protocol/chat-01.ts";
import { listedSessions } from "../reader/catalogue.ts";
import { harnessOf } from "../reader/harness/index.ts";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, type OpenFile, openSessionFile, readRange } from "../reader/safe-fs.ts";
import { conversationIdOf, type FileRoot, type Root } from "../reader/sources.ts";
import { defaultCacheDir, prepareCacheDir, whyNot } from "./cache-dir.ts";
import { type CatchUp, catchUpFile, dropFile, type Identity, textOf } from "./indexer.ts";
import {
  firstMatchAt,
  holdsPhrases,
  matchExpression,
  needsCheck,
  parseQuery,
  snippetOf,
  type Term,
} from "./query.ts";
import {
  catchUpShards,
  IndexBusy,
  identityOf,
  type PendingFile,
  SHARDS,
  type ShardTuning,
  shardFile,
  shardOf,
} from "./shards.ts";
import {
  inTransaction,
  isBusy,
  openStore,
  purgeDeleted,
  type Store,
  UnsafeIndexFile,
} from "./store.ts";

export { defaultCacheDir } from "./cache-dir.ts";

export const SEARCH_LIMIT_MAX = 1000;
/** At most this many candidates are read for one phrase query (each is re-read and checked). */
const CANDIDATES_MAX = 2000;

export type SearchHit = {
  conversation: string;
  branch: string;
  /** The CHAT-01 entry id (`n.<id>`): `#c=<conversation>&b=<branch>&e=<entry>` opens it. */
  entry: string;
  snippet: string;
  /** `[from, to)` of each match in `snippet`. */
  matches: [number, number][];
  title: string | null;
  project: string;
  seat: string;
  timestamp: string | null;
};

export type SearchRefusalCode = "bad-query" | "search-unavailable";

export type SearchResult =
  | { ok: true; query: string; hits: SearchHit[] }
  | { ok: false; refusal: { code: SearchRefusalCode; reconcile: false; message: string } };

/** Files by what catching up did to them, files removed, and worker threads it started. */
export type RefreshStats = Record<CatchUp, number> & { removed: number; workers: number };

export type Search = {
  /** Brings the index up to date with the roots now. */
  refresh(): RefreshStats;
  search(query: string, limit: number): SearchResult;
  close(): void;
};

export type SearchOptions = {
  roots: () => Root[];
  /** Titles for hits; the reader's catalogue. */
  catalogue?: () => Catalogue;
  /** Default: $XDG_CACHE_HOME/mosaic-conversation (else ~/.cache/mosaic-conversation). */
  cacheDir?: string;
  /** `parallelMinBytes`: a catch-up with this many bytes to read uses a worker (16 MiB). */
  shardTuning?: ShardTuning;
};

type Located = { root: FileRoot; name: string; conversation: string };

/** Opens (or creates) the index; a refusal when the cache directory is not a safe place. */
export function createSearch(
  options: SearchOptions,
): { ok: true; search: Search } | { ok: false; reason: string } {
  const place = prepareCacheDir(options.cacheDir ?? defaultCacheDir(), options.roots());
  if (!place.ok) return place;
  const dbFiles = Array.from({ length: SHARDS }, (_, k) => shardFile(place.dir, k));
  const stores: Store[] = [];
  try {
    removeOldLayout(place.dir);
    for (const f of dbFiles) stores.push(openStore(f));
  } catch (e) {
    // A folder we may not write in (or a full disk): search is off, said in words, not a crash.
    for (const s of stores) s.db.close();
    if (e instanceof UnsafeIndexFile) return { ok: false, reason: `${e.message}.` };
    const code = (e as NodeJS.ErrnoException | null)?.code;
    const why =
      typeof code === "string" && /^E[A-Z0-9]+$/.test(code)
        ? whyNot(code)
        : `${e instanceof Error ? e.message : String(e)}; check the files in that folder, or set XDG_CACHE_HOME to another folder`;
    return { ok: false, reason: `The search index in ${place.dir} cannot be opened: ${why}.` };
  }
  let located = new Map<string, Located>();

  function refresh(): RefreshStats {
    const stats: RefreshStats = {
      unchanged: 0,
      appended: 0,
      indexed: 0,
      refused: 0,
      removed: 0,
      workers: 0,
    };
    const seen = new Map<string, Located>();
    const pending: PendingFile[][] = stores.map(() => []);
    // Every file's identity in one read per shard: the common case is that none changed.
    const indexed = new Map<string, Identity & { id: number; shard: number }>();
    stores.forEach((store, shard) => {
      for (const f of store.allFiles.all() as (Identity & { id: number; path: string })[]) {
        indexed.set(f.path, { ...f, shard });
      }
    });
    // A store that could not be listed, another harness, a refused root: no hits (the
    // catalogue says why).
    for (const { root, name, path } of listedSessions(options.roots())) {
      seen.set(path, { root, name, conversation: conversationIdOf(root, name) });
      const now = identityOf(path);
      const known = indexed.get(path);
      if (now && known && sameIdentity(now, known)) {
        stats.unchanged++;
        continue;
      }
      const bytes = now
        ? Math.max(0, now.size - (known && now.ino === known.ino ? known.size : 0))
        : 0;
      pending[shardOf(path)]?.push({ root, name, path, bytes, mtimeMs: now?.mtimeMs ?? 0 });
    }
    const counts = catchUpShards(stores, dbFiles, pending, options.shardTuning);
    for (const k of ["unchanged", "appended", "indexed", "refused", "workers"] as const) {
      stats[k] += counts[k];
    }
    const gone = [...indexed.entries()].filter(([path]) => !seen.has(path));
    stores.forEach((store, shard) => {
      const mine = gone.filter(([, f]) => f.shard === shard);
      if (mine.length === 0) return;
      inTransaction(store, () => {
        for (const [, f] of mine) dropFile(store, f.id);
      });
    });
    // A conversation deleted (or moved out of the roots) leaves the index's files too.
    for (const store of stores) purgeDeleted(store);
    stats.removed = gone.length;
    located = seen;
    return stats;
  }

  function search(query: string, limit: number): SearchResult {
    const parsed = parseQuery(query);
    if (!parsed.ok) return refusal("bad-query", parsed.message);
    const n = Math.max(1, Math.min(SEARCH_LIMIT_MAX, Math.trunc(limit)));
    try {
      return searchNow(query, parsed.terms, n);
    } catch (e) {
      if (!(e instanceof IndexBusy) && !isBusy(e)) throw e;
      return refusal(
        "search-unavailable",
        "Another process is updating the search index right now (a first indexing can take a minute); search again shortly.",
      );
    }
  }

  function searchNow(query: string, terms: Term[], n: number): SearchResult {
    refresh();
    const rows = new Map<string, CatalogueRow>();
    for (const r of options.catalogue?.().conversations ?? []) rows.set(r.conversation, r);
    // A stale hit re-indexes its file; a second pass finds the file as it is now.
    for (let pass = 0; pass < 2; pass++) {
      const found = collect(terms, n, rows);
      if (found !== "stale" || pass === 1)
        return { ok: true, query, hits: found === "stale" ? [] : found };
    }
    return { ok: true, query, hits: [] };
  }

  /**
   * Up to `n` hits from each shard, newest entries first (FTS5 walks rowids in order, so a
   * common word costs no more than a rare one; files are indexed oldest first, appends come
   * last), then the shards' hits merged by the entries' timestamps, newest first. "stale" when
   * a file changed under a hit.
   */
  function collect(
    terms: Term[],
    n: number,
    rows: Map<string, CatalogueRow>,
  ): SearchHit[] | "stale" {
    const check = needsCheck(terms);
    const open = new Map<string, OpenFile | null>();
    try {
      const merged: SearchHit[] = [];
      for (const store of stores) {
        const found = collectFrom(store, terms, n, rows, check, open);
        if (found === "stale") return "stale";
        merged.push(...found);
      }
      // A stable sort: hits of one shard without timestamps keep their order.
      merged.sort((a, b) => byNewest(a.timestamp, b.timestamp));
      return merged.slice(0, n);
    } finally {
      for (const f of open.values()) if (f) closeFile(f);
    }
  }

  /**
   * One shard's hits, in batches: a phrase is checked on each candidate's text, so more
   * candidates may be read than hits kept, up to CANDIDATES_MAX.
   */
  function collectFrom(
    store: Store,
    terms: Term[],
    n: number,
    rows: Map<string, CatalogueRow>,
    check: boolean,
    open: Map<string, OpenFile | null>,
  ): SearchHit[] | "stale" {
    const hits: SearchHit[] = [];
    const batch = check ? Math.max(50, n * 4) : n;
    let below = Number.MAX_SAFE_INTEGER;
    // The candidates budget is the query's, shared by the shards: a phrase re-reads each one.
    for (let read = 0; hits.length < n && read < CANDIDATES_MAX / SHARDS; ) {
      const found = store.query.all(matchExpression(terms), below, batch) as HitRow[];
      read += found.length;
      for (const h of found) {
        below = h.rowid;
        const where = located.get(h.path);
        if (!where) continue;
        if (!open.has(h.path)) open.set(h.path, openLocated(where));
        const entry = currentEntry(open.get(h.path) ?? null, h);
        if (entry === null) {
          // Drop the file's rows so the catch-up reads it whole, as it is now.
          inTransaction(store, () => {
            dropFile(store, h.file);
            catchUpFile(store, where.root, where.name);
          });
          purgeDeleted(store);
          return "stale";
        }
        if (check && !holdsPhrases(textOf(entry, where.root), terms)) continue;
        const row = rows.get(where.conversation);
        hits.push({
          conversation: where.conversation,
          branch: h.branch,
          entry: h.entry,
          // The snippet is cut from what a person sees of the entry, not from its raw text.
          ...snippetOf(shownText(entry, where.root, terms), terms),
          title: row?.title ?? null,
          // As the catalogue names it (in Pi's store: the session's cwd, not its folder's name).
          project: row?.project ?? where.root.project,
          seat: row?.seat ?? where.root.seat,
          timestamp: h.ts,
        });
        if (hits.length === n) break;
      }
      if (found.length < batch) break;
    }
    return hits;
  }

  const close = () => {
    for (const store of stores) store.close();
  };
  return { ok: true, search: { refresh, search, close } };
}

/** Newest first by ISO timestamp (Pi writes them all in UTC, so text order is time order); none last. */
function byNewest(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? 1 : -1;
}

/** An index written before the shards (one `search-v1.sqlite`) is removed: it is never read again. */
function removeOldLayout(dir: string): void {
  for (const suffix of ["", "-wal", "-shm"]) {
    rmSync(join(dir, `search-v1.sqlite${suffix}`), { force: true });
  }
}

function sameIdentity(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.ctime === b.ctime;
}

type HitRow = {
  rowid: number;
  file: number;
  path: string;
  entry: string;
  branch: string;
  start: number;
  end: number;
  hash: string;
  ts: string | null;
};

/** The file opened as the reader opens it, or null when the reader would refuse it now. */
function openLocated(where: Located): OpenFile | null {
  try {
    return openSessionFile(where.root.projectRoot, where.root.sessionsDir, where.name);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    return null;
  }
}

/** The entry as the file holds it now, or null when its line is not what was indexed. */
function currentEntry(file: OpenFile | null, h: HitRow): Record<string, unknown> | null {
  if (file === null) return null;
  const line = readRange(file.fd, h.start, h.end - h.start);
  const digest = createHash("sha256").update(line).digest("hex").slice(0, 32);
  if (line.length !== h.end - h.start || digest !== h.hash) return null;
  const entry: unknown = JSON.parse(line.toString("utf8"));
  return typeof entry === "object" && entry !== null && !Array.isArray(entry)
    ? (entry as Record<string, unknown>)
    : null;
}

/** What a person sees of an entry (present/plain-text.ts), a long block from around its match. */
function shownText(entry: Record<string, unknown>, root: FileRoot, terms: readonly Term[]): string {
  const draft = harnessOf(root).draftOf(entry);
  return draft ? plainText(draft.blocks, (raw) => firstMatchAt(raw, terms)) : "";
}

function refusal(code: SearchRefusalCode, message: string): SearchResult {
  return { ok: false, refusal: { code, reconcile: false, message } };
}
