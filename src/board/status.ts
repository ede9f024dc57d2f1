// HTTP statuses for the board's two GET routes: one table for every reader refusal code, and a
// closed set of the board's own codes for what the HTTP layer refuses before the reader is asked.
// The refusal code in the body is the contract; the status is for people and tools (curl, logs).
import { CONTROL_REFUSAL_CODES, type ControlRefusalCode } from "../control/refusal.ts";
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
 * - `usage-unavailable` 503: GET /api/usage on a board with no usage index, or whose cache
 *   directory cannot hold one (the reason says which); `bad-query` 400 for a group, day or
 *   zone that is not one (usage-route.ts).
 * - `board-busy` 503: the read lane this request goes to already holds LANE_QUEUE_MAX
 *   requests (read-pool.ts); answered at once, nothing queued. Try again in a moment.
 * - `board-starting` 503 with `Retry-After`: the port listens before the read workers run
 *   (they need the bound port for the Host check); a request in between is told to come back.
 * - `http-version-not-supported` 505: a request line that is not HTTP/1.0 or HTTP/1.1. A 5xx
 *   because HTTP says so (RFC 9110 §15.6.6), not because anything failed.
 * - Acting (issue 15, issue 22; auth.ts), all 403 and all answered before a body is read:
 *   `login-refused` (a token that is not the current login link's, or one already used),
 *   `peer-refused` (the connection belongs to another user of this machine),
 *   `origin-refused` (a POST without an Origin, or from another origin — another port of
 *   127.0.0.1 included; and any request another site's page made to the API, the streams or
 *   the exports, by its `Sec-Fetch-Site`: fetch-site.ts), `content-type-refused` (a POST that
 *   is not `application/json`: every HTML form), `not-logged-in` (no login key of this board,
 *   or one signed out to make room). `payload-too-large` 413: a POST body over 64 KiB.
 * - People behind the trusted proxy (identity.ts, roles.ts; docs/remote.md):
 *   `identity-required` 401 (a request from the trusted proxy with no identity header: the
 *   proxy must authenticate every request), `identity-refused` 403 (an identity header from
 *   anyone but the trusted proxy, or from a local user other than the board's), `unknown-identity`
 *   403 (an identity the roles file does not name), `role-refused` 403 (the person's role may
 *   not do this: an observer steering, an operator force-stopping).
 * - `too-many-streams` 503: the board holds MAX_STREAMS live streams already (live.ts); the
 *   Console reads every second instead.
 * - Steering (control-route.ts): `no-controller` 404 (the registry names no running controller
 *   for this conversation now), `outcome-unknown` 502 (the request reached the controller and
 *   its reply was lost: never resent; look at the transcript).
 * - Web Push (push/hub.ts, docs/push.md): `bad-subscription` 400 (a subscribe body that is not a
 *   browser's PushSubscription: keys not a P-256 point and a 16-byte secret),
 *   `endpoint-refused` 403 (an endpoint that is not https to a browser's push service, nor an
 *   origin the board was started with: the board never POSTs where a page tells it to),
 *   `too-many-subscriptions` 409 (the person's 8, or the board's 64, are kept already),
 *   `push-unavailable` 503 (the push folder or a file in it cannot be used; the message says
 *   why and what to do).
 */
export const BOARD_REFUSAL_STATUS = {
  "bad-request": 400,
  "not-found": 404,
  "method-not-allowed": 405,
  "uri-too-long": 414,
  "misdirected-request": 421,
  "internal-error": 500,
  "http-version-not-supported": 505,
  "login-refused": 403,
  "origin-refused": 403,
  "content-type-refused": 403,
  "not-logged-in": 403,
  "peer-refused": 403,
  "identity-required": 401,
  "identity-refused": 403,
  "unknown-identity": 403,
  "role-refused": 403,
  "too-many-streams": 503,
  "payload-too-large": 413,
  "no-controller": 404,
  "outcome-unknown": 502,
  "bad-query": 400,
  "search-unavailable": 503,
  "usage-unavailable": 503,
  "board-busy": 503,
  "board-starting": 503,
  "bad-subscription": 400,
  "endpoint-refused": 403,
  "too-many-subscriptions": 409,
  "push-unavailable": 503,
} as const satisfies Record<string, number>;

export type BoardRefusalCode = keyof typeof BOARD_REFUSAL_STATUS;

/**
 * The HTTP status of each controller refusal, for `POST /api/conversations/:id/control`
 * (control-route.ts). The code in the body is the contract, as for the reader's.
 *
 * - 400: the request itself is wrong (`malformed`, `unsupported-capability`, `text-policy`).
 * - 403: this grant or this host may not (`grant`, `scope`, `mapping`, `capability`,
 *   `foreign-host`, `unsealed-engine`).
 * - 409: the controller's state says no now, and another step may change it: not the
 *   controller, a newer generation, busy, a confirmation missing or used, a run already
 *   active, a replacement that would not be safe, the budget reached (`budget`: a raise
 *   lets it go on)…
 * - 410 `cursor`: the observe cursor is gone, as the reader's `cursor-*`.
 * - 503: the controller cannot act at all now (`channel`: its connection is down; `audit`:
 *   it cannot write its evidence; `configuration`: it is set up wrong) — not the caller's
 *   fault, and not a bug of the board either.
 */
export const CONTROL_REFUSAL_STATUS: Record<ControlRefusalCode, number> = {
  malformed: 400,
  grant: 403,
  channel: 503,
  "unsupported-capability": 400,
  scope: 403,
  mapping: 403,
  audit: 503,
  capability: 403,
  target: 409,
  generation: 409,
  controller: 409,
  "conflicting-request": 409,
  "stale-incarnation": 409,
  fenced: 409,
  busy: 409,
  "text-policy": 400,
  draft: 409,
  "no-turn": 409,
  dialog: 409,
  budget: 409,
  "already-controller": 409,
  "controller-present": 409,
  confirmation: 409,
  "stop-proof": 409,
  preflight: 409,
  cursor: 410,
  eligibility: 409,
  "already-active": 409,
  "unsafe-replacement": 409,
  "foreign-host": 403,
  "live-session-refused": 409,
  "unsealed-engine": 403,
  "engine-pin-mismatch": 409,
  configuration: 503,
};

const CONTROL_CODES: ReadonlySet<string> = new Set(CONTROL_REFUSAL_CODES);

function isControlCode(code: string): code is ControlRefusalCode {
  return CONTROL_CODES.has(code);
}

/** The status of any refusal code the board can send: the reader's, the controller's or its own. */
export function statusOf(code: string): number {
  if (isReaderCode(code)) return REFUSAL_STATUS[code];
  if (isControlCode(code)) return CONTROL_REFUSAL_STATUS[code];
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
