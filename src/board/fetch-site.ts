// Requests another site's page makes (issue 22 item 3). A page on another origin can make the
// browser send GETs it cannot read, and time them: a search that matches answers slower than
// one that does not, so `no-cors` fetches of /api/search read a secret prefix by prefix. The
// browser says who asked in `Sec-Fetch-Site`; the board answers its API, live streams, exports
// and every POST only to its own pages (`same-origin`) and to what a person opens directly
// (`none`: a typed or pasted URL, a bookmark). The Console (`/`, its files) and the login page
// stay open to any navigation: a link from a terminal or a chat opens them, and they hold no
// data of their own. A browser that sends no `Sec-Fetch-Site` (an old one, curl) is not judged
// by it; the query cost bound (search/query.ts) keeps what timing can tell small anyway.
import type { IncomingHttpHeaders } from "node:http";
import { boardRefusal, type Reply } from "./reply.ts";

const ALLOWED = new Set(["same-origin", "none"]);

/** The refusal for a request another site's page made, or null when it may be answered. */
export function refuseCrossSite(
  method: string,
  target: string,
  headers: IncomingHttpHeaders,
): Reply | null {
  const site = headers["sec-fetch-site"];
  if (site === undefined || ALLOWED.has(site)) return null;
  const guarded = target.startsWith("/api/") || (method !== "GET" && method !== "HEAD");
  if (!guarded) return null;
  return boardRefusal(
    "origin-refused",
    `This request was made by a page of another origin (Sec-Fetch-Site: ${site.slice(0, 40)}): the board answers its API only to its own pages. Open the board's address itself.`,
  );
}
