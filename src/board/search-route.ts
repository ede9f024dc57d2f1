// GET /api/search?q=<query>[&limit=N]: full-text search (src/search) as JSON, read-only.
// `{ ok: true, query, hits }`, or a refusal: bad-query 400, search-unavailable 503.
import type { SearchResult } from "../search/index.ts";
import { boardRefusal, jsonReply, type Reply } from "./reply.ts";

/** What the board needs of a search: one call per request. */
export type BoardSearch = { search(query: string, limit: number): SearchResult };

export const DEFAULT_LIMIT = 20;

export function readSearch(
  search: BoardSearch | undefined,
  params: Partial<Record<string, string>>,
): Reply {
  if (!search) {
    return boardRefusal(
      "search-unavailable",
      "This board was started without a search index; the catalogue and pages still work.",
    );
  }
  const { q, limit } = params;
  if (q === undefined) return boardRefusal("bad-query", "Give the words to search for as q=.");
  let n = DEFAULT_LIMIT;
  if (limit !== undefined) {
    n = /^\d{1,4}$/.test(limit) ? Number(limit) : 0;
    if (n < 1 || n > 1000) return boardRefusal("bad-query", "limit= is a number from 1 to 1000.");
  }
  const result = search.search(q, n);
  if (!result.ok) return boardRefusal(result.refusal.code, result.refusal.message);
  return jsonReply(200, result);
}
