// HTTP statuses for the board's two GET routes: one table for every reader refusal code, and a
// closed set of the board's own codes for what the HTTP layer refuses before the reader is asked.
// The refusal code in the body is the contract; the status is for people and tools (curl, logs).
import { READER_REFUSAL_CODES, type ReaderRefusalCode } from "../protocol/chat-01.ts";

/**
 * The HTTP status of each reader refusal. Every code is a 4xx: a refusal is an expected "no",
 * never a server fault, so only a bug (500) is a 5xx.
 *
 * - `unknown-conversation`, `unknown-branch` → 404: no such resource in the approved roots now.
 * - `unavailable` → 410: the root that held the conversation no longer exists; waiting does
 *   not bring it back (not 503: the board itself is fine).
 * - `unsafe-path`, `foreign-project`, `unreadable` → 403: the file exists, and the board will
 *   not read it (a link, a swap, a `cwd` outside the project, permission denied).
 * - `unsupported-harness`, `not-a-pi-session`, `too-large` → 422: the conversation exists but
 *   the reader cannot turn it into pages. Not 413: that status says the request was too big,
 *   and would tell a client to shrink something it never sent.
 * - `incomplete-header`, `source-replaced`, `cursor-foreign` → 409: the request conflicts
 *   with the file's current state (still being written, replaced) or with the cursor's
 *   binding; re-reading from the start resolves it (`reconcile: true`).
 * - `cursor-unknown`, `cursor-expired` → 410: the cursor is gone (used, evicted, expired).
 * - `unknown-actor` → 403 and `unsupported-purpose` → 400: the route fixes both, so neither
 *   can come from a request today; they are mapped so a future caller gets a status anyway.
 */
export const REFUSAL_STATUS: Record<ReaderRefusalCode, number> = {
  "unknown-conversation": 404,
  "unknown-branch": 404,
  unavailable: 410,
  "unsupported-harness": 422,
  "unsafe-path": 403,
  "foreign-project": 403,
  unreadable: 403,
  "not-a-pi-session": 422,
  "incomplete-header": 409,
  "too-large": 422,
  "cursor-unknown": 410,
  "cursor-expired": 410,
  "cursor-foreign": 409,
  "source-replaced": 409,
  "unknown-actor": 403,
  "unsupported-purpose": 400,
};

/**
 * The board's own refusals, for requests the reader never sees. Bodies have the same shape as
 * a reader refusal (`{ ok: false, refusal: { code, reconcile: false, message } }`).
 *
 * - `bad-request` 400: a cursor without its branch, an empty, repeated or unknown query
 *   parameter, a bad percent-encoding, a request target that is not a path, a missing or
 *   repeated `Host`.
 * - `not-found` 404: no such route. `method-not-allowed` 405: only GET and HEAD are served.
 * - `uri-too-long` 414. `misdirected-request` 421: the `Host` header does not name the bound
 *   loopback address and port (DNS rebinding). `internal-error` 500: a bug, logged to stderr.
 * - `http-version-not-supported` 505: a request line that is not HTTP/1.0 or HTTP/1.1. A 5xx
 *   because HTTP says so (RFC 9110 §15.6.6), not because anything failed.
 */
export const BOARD_REFUSAL_STATUS = {
  "bad-request": 400,
  "not-found": 404,
  "method-not-allowed": 405,
  "uri-too-long": 414,
  "misdirected-request": 421,
  "internal-error": 500,
  "http-version-not-supported": 505,
  "bad-query": 400,
  "search-unavailable": 503,
} as const satisfies Record<string, number>;

export type BoardRefusalCode = keyof typeof BOARD_REFUSAL_STATUS;

/** The status of any refusal code the board can send: the reader's or its own. */
export function statusOf(code: string): number {
  if (isReaderCode(code)) return REFUSAL_STATUS[code];
  if (isBoardCode(code)) return BOARD_REFUSAL_STATUS[code];
  // The reader's codes are a closed union; a code outside both tables is a broken invariant.
  throw new Error(`No HTTP status for refusal code ${JSON.stringify(code)}`);
}

const READER_CODES: ReadonlySet<string> = new Set(READER_REFUSAL_CODES);

function isReaderCode(code: string): code is ReaderRefusalCode {
  return READER_CODES.has(code);
}

function isBoardCode(code: string): code is BoardRefusalCode {
  return Object.hasOwn(BOARD_REFUSAL_STATUS, code);
}
