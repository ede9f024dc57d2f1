// Full-text search over every branch of every conversation in the roots: `createSearch` keeps
// an index in a cache directory of ours (never in a source), catches up before each query
// (an unchanged file costs an lstat, a grown one only its appended bytes), and proves each hit
// current by re-reading its line and comparing its hash: a file rewritten since it was indexed
// is indexed again, and the query runs again, so a hit never shows text the file no longer has.
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Catalogue, CatalogueRow } from "../protocol/chat-01.ts";
import { listRoot } from "../reader/catalogue.ts";
import { expandRoots } from "../reader/pi-store.ts";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, type OpenFile, openSessionFile, readRange } from "../reader/safe-fs.ts";
import { conversationIdOf, type PiRoot, type Root } from "../reader/sources.ts";
import { defaultCacheDir, prepareCacheDir } from "./cache-dir.ts";
import {
  type CatchUp,
  catchUpFile,
  dropFile,
  type Identity,
  isUnchanged,
  textOf,
} from "./indexer.ts";
import {
  holdsPhrases,
  matchExpression,
  needsCheck,
  QUERY_MAX_CHARS,
  snippetOf,
  type Term,
  termsOf,
} from "./query.ts";
import { inTransaction, openStore } from "./store.ts";

export { defaultCacheDir } from "./cache-dir.ts";

export const SEARCH_LIMIT_MAX = 1000;
const BATCH_FILES = 64;
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

export type RefreshStats = Record<CatchUp, number> & { removed: number };

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
};

type Located = { root: PiRoot; name: string; conversation: string };

/** Opens (or creates) the index; a refusal when the cache directory is not a safe place. */
export function createSearch(
  options: SearchOptions,
): { ok: true; search: Search } | { ok: false; reason: string } {
  const place = prepareCacheDir(options.cacheDir ?? defaultCacheDir(), options.roots());
  if (!place.ok) return place;
  const store = openStore(join(place.dir, "search-v1.sqlite"));
  let located = new Map<string, Located>();

  function refresh(): RefreshStats {
    const stats: RefreshStats = { unchanged: 0, appended: 0, indexed: 0, refused: 0, removed: 0 };
    const seen = new Map<string, Located>();
    const pending: { root: PiRoot; name: string }[] = [];
    // Every file's identity in one read: the common case is that none changed.
    const indexed = new Map(
      (store.allFiles.all() as (Identity & { id: number; path: string })[]).map((f) => [f.path, f]),
    );
    for (const root of expandRoots(options.roots())) {
      // A store that could not be listed, or another harness: no hits (the catalogue says why).
      if (root.kind !== "pi") continue;
      let names: string[];
      try {
        names = listRoot(root).names;
      } catch (e) {
        // A refused root (gone, unsafe) has no hits; the catalogue says why.
        if (!isRefusal(e)) throw e;
        continue;
      }
      for (const name of names) {
        const path = join(root.sessionsDir, name);
        seen.set(path, {
          root,
          name,
          conversation: conversationIdOf(root, name),
        });
        if (!isUnchanged(path, indexed.get(path))) pending.push({ root, name });
        else stats.unchanged++;
      }
    }
    // One transaction for many files, committed every BATCH_FILES: a commit per file costs
    // more than a small file's rows, and readers (WAL) see the index as of the last commit.
    for (let i = 0; i < pending.length; i += BATCH_FILES) {
      inTransaction(store, () => {
        for (const { root, name } of pending.slice(i, i + BATCH_FILES)) {
          stats[catchUpFile(store, root, name)]++;
        }
      });
    }
    const gone = [...indexed.values()].filter((f) => !seen.has(f.path));
    if (gone.length) {
      inTransaction(store, () => {
        for (const f of gone) dropFile(store, f.id);
      });
    }
    stats.removed = gone.length;
    located = seen;
    return stats;
  }

  function search(query: string, limit: number): SearchResult {
    if (query.length > QUERY_MAX_CHARS) {
      return refusal("bad-query", `A query is at most ${QUERY_MAX_CHARS} characters.`);
    }
    const terms = termsOf(query);
    if (terms === null) return refusal("bad-query", "The query has no word to search for.");
    const n = Math.max(1, Math.min(SEARCH_LIMIT_MAX, Math.trunc(limit)));
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
   * Newest entries first (FTS5 walks rowids in order, so a common word costs no more than a
   * rare one), in batches: a phrase is checked on each candidate's text, so more candidates
   * may be read than hits kept, up to CANDIDATES_MAX. "stale" when a file changed under a hit.
   */
  function collect(
    terms: Term[],
    n: number,
    rows: Map<string, CatalogueRow>,
  ): SearchHit[] | "stale" {
    const hits: SearchHit[] = [];
    const check = needsCheck(terms);
    const open = new Map<string, OpenFile | null>();
    try {
      return collectFrom(terms, n, rows, hits, check, open);
    } finally {
      for (const f of open.values()) if (f) closeFile(f);
    }
  }

  function collectFrom(
    terms: Term[],
    n: number,
    rows: Map<string, CatalogueRow>,
    hits: SearchHit[],
    check: boolean,
    open: Map<string, OpenFile | null>,
  ): SearchHit[] | "stale" {
    const batch = check ? Math.max(50, n * 4) : n;
    let below = Number.MAX_SAFE_INTEGER;
    for (let read = 0; hits.length < n && read < CANDIDATES_MAX; ) {
      const found = store.query.all(matchExpression(terms), below, batch) as HitRow[];
      read += found.length;
      for (const h of found) {
        below = h.rowid;
        const where = located.get(h.path);
        if (!where) continue;
        if (!open.has(h.path)) open.set(h.path, openLocated(where));
        const text = currentText(open.get(h.path) ?? null, h);
        if (text === null) {
          // Drop the file's rows so the catch-up reads it whole, as it is now.
          inTransaction(store, () => {
            dropFile(store, h.file);
            catchUpFile(store, where.root, where.name);
          });
          return "stale";
        }
        if (check && !holdsPhrases(text, terms)) continue;
        const row = rows.get(where.conversation);
        hits.push({
          conversation: where.conversation,
          branch: h.branch,
          entry: h.entry,
          ...snippetOf(text, terms),
          title: row?.title ?? null,
          project: where.root.project,
          seat: where.root.seat,
          timestamp: h.ts,
        });
        if (hits.length === n) break;
      }
      if (found.length < batch) break;
    }
    return hits;
  }

  return { ok: true, search: { refresh, search, close: () => store.close() } };
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

/** The entry's text as the file holds it now, or null when its line is not what was indexed. */
function currentText(file: OpenFile | null, h: HitRow): string | null {
  if (file === null) return null;
  const line = readRange(file.fd, h.start, h.end - h.start);
  const digest = createHash("sha256").update(line).digest("hex").slice(0, 32);
  if (line.length !== h.end - h.start || digest !== h.hash) return null;
  return textOf(JSON.parse(line.toString("utf8")) as Record<string, unknown>);
}

function refusal(code: SearchRefusalCode, message: string): SearchResult {
  return { ok: false, refusal: { code, reconcile: false, message } };
}
