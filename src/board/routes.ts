// The board's request handling, without sockets: checks every request (target length, Host,
// method), then routes it to the Console's files or one of the two GET routes. The reader is
// called as `local-operator` for `history` only; a conversation id is the only thing taken
// from a path, and the reader resolves it by listing its roots again.
import { ACTOR, PURPOSE, type Reader } from "../reader/reader.ts";
import type { Asset } from "./assets.ts";
import { readExport } from "./export-route.ts";
import { ALLOW, assetReply, boardRefusal, jsonReply, type Reply, readReply } from "./reply.ts";
import { type BoardSearch, readSearch } from "./search-route.ts";
import { type BoardUsage, readUsage } from "./usage-route.ts";

/** Longest request target served; a longer one is refused 414 before it is parsed. */
export const MAX_TARGET_LENGTH = 8 * 1024;

export type BoardRequest = {
  method: string;
  target: string;
  host: string | undefined;
  /** The request's `If-None-Match`, for the Console's files a browser revalidates. */
  ifNoneMatch?: string | undefined;
};

export type Handler = (request: BoardRequest) => Reply;

export type HandlerOptions = {
  reader: Reader;
  assets: ReadonlyMap<string, Asset>;
  /** `Host` header values that name the bound address, lowercase (`127.0.0.1:8080`). */
  hosts: ReadonlySet<string>;
  /** Where a bug is reported; the client gets a generic 500. */
  log: (line: string) => void;
  /** Full-text search behind GET /api/search, when the board has an index. */
  search?: BoardSearch;
  /** Usage totals behind GET /api/usage, when the board has a usage index. */
  usage?: BoardUsage;
};

const PAGE_ROUTE = /^\/api\/conversations\/([^/]+)\/page$/;
const EXPORT_ROUTE = /^\/api\/conversations\/([^/]+)\/export$/;

/** A handler that never throws: a reader exception is a bug, logged, and answered 500. */
export function createHandler(options: HandlerOptions): Handler {
  return (request) => {
    try {
      return handle(options, request);
    } catch (e) {
      const where = `${request.method} ${request.target.split("?", 1)[0]?.slice(0, 200)}`;
      options.log(`board: internal error on ${where}: ${e instanceof Error ? e.stack : e}`);
      return boardRefusal("internal-error", "The board failed on this request; see its log.");
    }
  };
}

function handle(options: HandlerOptions, request: BoardRequest): Reply {
  const refused = checkRequest(options.hosts, request);
  if (refused !== null) return refused;
  const { target } = request;
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? "" : target.slice(q + 1);

  const asset = options.assets.get(path);
  if (asset) return assetReply(asset, request.ifNoneMatch);

  if (path === "/api/conversations") {
    const params = readParams(query, []);
    if (typeof params === "string") return boardRefusal("bad-request", params);
    return jsonReply(200, options.reader.catalogue());
  }
  if (path === "/api/search") {
    const params = readParams(query, ["q", "limit"]);
    if (typeof params === "string") return boardRefusal("bad-request", params);
    return readSearch(options.search, params);
  }
  if (path === "/api/usage") {
    const params = readParams(query, ["by", "since", "until", "tz"]);
    if (typeof params === "string") return boardRefusal("bad-request", params);
    return readUsage(options.usage, params);
  }
  const match = PAGE_ROUTE.exec(path);
  if (match?.[1] !== undefined) return readPage(options.reader, match[1], query);
  const exporting = EXPORT_ROUTE.exec(path);
  if (exporting?.[1] !== undefined) {
    const conversation = decodeId(exporting[1]);
    if (conversation === null) {
      return boardRefusal("bad-request", "The conversation id is not valid percent-encoding.");
    }
    const params = readParams(query, ["branch", "format"]);
    if (typeof params === "string") return boardRefusal("bad-request", params);
    return readExport(options.reader, conversation, params, options.log);
  }
  return boardRefusal("not-found", "No such route on this board.");
}

/**
 * What every route refuses before it is routed (the live route too, which is answered on the
 * request loop, live.ts): an overlong target, a missing or foreign Host, another method, a
 * target that is not a path. Null when the request passes.
 */
export function checkRequest(
  hosts: ReadonlySet<string>,
  { method, target, host }: BoardRequest,
): Reply | null {
  if (target.length > MAX_TARGET_LENGTH) {
    return boardRefusal("uri-too-long", `Request targets are limited to ${MAX_TARGET_LENGTH}.`);
  }
  if (host === undefined || host === "") {
    return boardRefusal("bad-request", "The request has no Host header.");
  }
  if (!hosts.has(host.toLowerCase())) {
    return boardRefusal(
      "misdirected-request",
      "The Host header does not name this board's loopback address and port.",
    );
  }
  if (method !== "GET" && method !== "HEAD") {
    return boardRefusal("method-not-allowed", "The board serves GET and HEAD only.", {
      Allow: ALLOW,
    });
  }
  // Origin-form only: an absolute URI or `*` names no path of ours.
  if (!target.startsWith("/")) {
    return boardRefusal("bad-request", "The request target must be a path.");
  }
  return null;
}

/** `open` without a cursor, `next` with one; a cursor needs the branch it was issued for. */
function readPage(reader: Reader, rawId: string, query: string): Reply {
  let conversation: string;
  try {
    conversation = decodeURIComponent(rawId);
  } catch {
    // Not valid percent-encoding: it cannot name a conversation, and nothing is lost.
    return boardRefusal("bad-request", "The conversation id is not valid percent-encoding.");
  }
  const params = readParams(query, ["branch", "cursor"]);
  if (typeof params === "string") return boardRefusal("bad-request", params);
  const { branch, cursor } = params;
  const audience = { actor: ACTOR, purpose: PURPOSE };
  if (cursor === undefined) {
    return readReply(
      reader.open(
        branch === undefined
          ? { conversation, ...audience }
          : { conversation, branch, ...audience },
      ),
    );
  }
  if (branch === undefined) {
    return boardRefusal(
      "bad-request",
      "A cursor is bound to a branch: pass branch= with the page's branch.",
    );
  }
  return readReply(reader.next({ cursor, conversation, branch, ...audience }));
}

/** A path segment decoded, or null when it is not valid percent-encoding. */
function decodeId(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    // Not valid percent-encoding: it cannot name a conversation, and nothing is lost.
    return null;
  }
}

/**
 * The query's parameters, each at most once and non-empty, only the allowed names; else the
 * reason it is refused. A repeated parameter is ambiguous, so it is refused, not guessed.
 */
export function readParams(
  query: string,
  allowed: readonly string[],
): Partial<Record<string, string>> | string {
  const out: Partial<Record<string, string>> = {};
  if (query === "") return out;
  const search = new URLSearchParams(query);
  for (const [name, value] of search) {
    if (!allowed.includes(name)) {
      const known = allowed.length === 0 ? "none" : allowed.join(", ");
      return `Unknown query parameter ${JSON.stringify(name.slice(0, 40))} (known: ${known}).`;
    }
    if (out[name] !== undefined || search.getAll(name).length > 1) {
      return `The query parameter ${name} is repeated.`;
    }
    if (value === "") return `The query parameter ${name} is empty.`;
    out[name] = value;
  }
  return out;
}
