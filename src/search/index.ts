// Full-text search over every branch of every conversation in the roots: `createSearch` keeps
// an index in a cache directory of ours (never in a source), catches up before each query
// (an unchanged file costs an lstat, a grown one only its appended bytes), and proves each hit
// current by re-reading its line and comparing its hash: a file rewritten since it was indexed
// is indexed again, and the query runs again, so a hit never shows text the file no longer has.
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Catalogue, CatalogueRow } from "../protocol/chat-01.ts";
import { listRoot } from "../reader/catalogue.ts";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, openSessionFile, readRange } from "../reader/safe-fs.ts";
import { conversationId, type PiRoot, type Root } from "../reader/sources.ts";
import { defaultCacheDir, prepareCacheDir } from "./cache-dir.ts";
import { type CatchUp, catchUpFile, dropFile, textOf } from "./indexer.ts";
import { matchExpression, QUERY_MAX_CHARS, snippetOf, termsOf } from "./query.ts";
import { inTransaction, openStore } from "./store.ts";

export { defaultCacheDir } from "./cache-dir.ts";

export const SEARCH_LIMIT_MAX = 1000;
const BATCH_FILES = 64;

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
    for (const root of options.roots()) {
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
          conversation: conversationId(root.projectRoot, root.seat, name),
        });
        pending.push({ root, name });
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
    const gone = (store.allFiles.all() as { id: number; path: string }[]).filter(
      (f) => !seen.has(f.path),
    );
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
      const found = store.query.all(matchExpression(terms), n) as HitRow[];
      const hits: SearchHit[] = [];
      let stale = false;
      for (const h of found) {
        const where = located.get(h.path);
        if (!where) continue;
        const text = currentText(where, h);
        if (text === null) {
          stale = true;
          // Drop the file's rows so the catch-up reads it whole, as it is now.
          inTransaction(store, () => {
            dropFile(store, h.file);
            catchUpFile(store, where.root, where.name);
          });
          continue;
        }
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
      }
      if (!stale || pass === 1) return { ok: true, query, hits };
    }
    return { ok: true, query, hits: [] };
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

/** The entry's text as the file holds it now, or null when its line is not what was indexed. */
function currentText(where: Located, h: HitRow): string | null {
  let file: ReturnType<typeof openSessionFile>;
  try {
    file = openSessionFile(where.root.projectRoot, where.root.sessionsDir, where.name);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    return null;
  }
  try {
    const line = readRange(file.fd, h.start, h.end - h.start);
    const digest = createHash("sha256").update(line).digest("hex").slice(0, 32);
    if (line.length !== h.end - h.start || digest !== h.hash) return null;
    return textOf(JSON.parse(line.toString("utf8")) as Record<string, unknown>);
  } finally {
    closeFile(file);
  }
}

function refusal(code: SearchRefusalCode, message: string): SearchResult {
  return { ok: false, refusal: { code, reconcile: false, message } };
}
