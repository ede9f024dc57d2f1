// What the board sends back: a status, headers and a body, built in one place so every
// response carries the same security headers and no response ever carries a CORS header.
import { STATUS_CODES } from "node:http";
import type { ReadResult } from "../reader/reader.ts";
import type { Asset } from "./assets.ts";
import { type BoardRefusalCode, statusOf } from "./status.ts";
import type { ReplyStream } from "./stream-reply.ts";

export type Reply = {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Set when the body is a view of shared memory (body-slab.ts): call once it is sent. */
  release?: () => void;
  /** Set when the body is sent as it is made (stream-reply.ts); `body` is then empty. */
  stream?: ReplyStream;
};

/** The Console page: its own scripts and styles only, images only as `data:` URLs. */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src data:",
  "connect-src 'self'",
  // The web app manifest (installing the Console, docs/push.md), from the board only.
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  // Chromium then throws on any string assigned to innerHTML and its kin: a second lock
  // behind the Console's rule of inserting conversation text as text only.
  "require-trusted-types-for 'script'",
  // One policy, push.js's, which turns exactly "/sw.js" into a script URL so the service
  // worker can be registered; it makes no HTML, so innerHTML and its kin still throw.
  "trusted-types console-sw",
].join("; ");

/** Everything that is not the page: nothing may load, run or frame it. */
export const OTHER_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox";

/** Sent on every response, the refusals included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
};

export const ALLOW = "GET, HEAD";

/** An HTML page: the Console's CSP and COOP are its, and it is never kept by a browser. */
function isPageType(contentType: string): boolean {
  return contentType.startsWith("text/html");
}

export function reply(
  status: number,
  contentType: string,
  body: Buffer,
  extra: Record<string, string> = {},
): Reply {
  const isPage = isPageType(contentType);
  return {
    status,
    headers: {
      ...SECURITY_HEADERS,
      "Content-Security-Policy": isPage ? PAGE_CSP : OTHER_CSP,
      ...(isPage ? { "Cross-Origin-Opener-Policy": "same-origin" } : {}),
      "Content-Type": contentType,
      "Content-Length": String(body.length),
      ...extra,
    },
    body,
  };
}

/**
 * A Console file. One a browser may keep goes with its tag and `Cache-Control: no-cache` in
 * place of `no-store`: the browser keeps it but asks each time, and a tag it already holds is
 * answered 304 with no body. A phone on a remote board then reloads the Console without
 * fetching its 0.5 MB of script again; every request still reaches the board and its checks.
 */
export function assetReply(asset: Asset, ifNoneMatch: string | undefined): Reply {
  // The two pages are never kept: a login link's token is in `/login`'s URL, and a kept answer
  // is kept under its URL.
  if (isPageType(asset.contentType)) return reply(200, asset.contentType, asset.body);
  const headers = { "Cache-Control": "no-cache", ETag: asset.etag };
  if (ifNoneMatch === undefined || !tagMatches(ifNoneMatch, asset.etag)) {
    return reply(200, asset.contentType, asset.body, headers);
  }
  const { "Content-Length": _, ...notModified } = reply(
    304,
    asset.contentType,
    EMPTY,
    headers,
  ).headers;
  return { status: 304, headers: notModified, body: EMPTY };
}

const EMPTY = Buffer.alloc(0);

/** RFC 9110's weak comparison of If-None-Match's list (or `*`) with one tag. */
function tagMatches(ifNoneMatch: string, etag: string): boolean {
  return ifNoneMatch
    .split(",")
    .map((t) => t.trim())
    .some((t) => t === "*" || (t.startsWith("W/") ? t.slice(2) : t) === etag);
}

export function jsonReply(status: number, value: unknown, extra?: Record<string, string>): Reply {
  return reply(
    status,
    "application/json; charset=utf-8",
    Buffer.from(JSON.stringify(value), "utf8"),
    extra,
  );
}

/** A refusal of the board's own, in the reader's refusal shape; never reconciled. */
export function boardRefusal(
  code: BoardRefusalCode,
  message: string,
  extra?: Record<string, string>,
): Reply {
  return jsonReply(
    statusOf(code),
    { ok: false, refusal: { code, reconcile: false, message } },
    extra,
  );
}

/** A reader result as it is: 200 with the page, or the refusal's status from REFUSAL_STATUS. */
export function readReply(result: ReadResult): Reply {
  if (result.ok) return jsonReply(200, result);
  return jsonReply(statusOf(result.refusal.code), result);
}

/**
 * A reply as the bytes of a whole HTTP/1.1 response, for a socket node:http has handed over
 * (CONNECT, a request line it could not parse). The connection is closed after it: the bytes
 * that follow on such a socket are not a request we can frame.
 */
export function rawResponse(out: Reply): Buffer {
  const lines = [`HTTP/1.1 ${out.status} ${STATUS_CODES[out.status] ?? ""}`];
  for (const [name, value] of Object.entries(out.headers)) lines.push(`${name}: ${value}`);
  lines.push("Connection: close", "", "");
  return Buffer.concat([Buffer.from(lines.join("\r\n"), "latin1"), out.body]);
}
