// The Console's requests: same-origin GETs for reading, and the POSTs that log in and act.
// Every answer is a value: the body the board sent (a catalogue, a read result, or `{ ok:
// false, refusal }`), or a local refusal when the board could not be reached or sent something
// that is not JSON. A login is a key the board hands the login page once; it is kept in
// sessionStorage (this origin and this tab only) and sent with each action in a header of its
// own, never in a cookie (docs/board.md, "Login and CSRF rules").

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

function localRefusal(code, message) {
  return { ok: false, refusal: { code, reconcile: true, message } };
}

/** Where this tab keeps its login key. */
const LOGIN_STORE = "board-login";
/** The header that carries it (auth.ts's LOGIN_HEADER). */
const LOGIN_HEADER = "X-Board-Login";

async function getJson(path) {
  return requestJson(path, { headers: { Accept: "application/json" } });
}

async function postJson(path, body, headers = {}) {
  return requestJson(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function requestJson(path, init) {
  let res;
  try {
    res = await fetch(path, { ...init, cache: "no-store" });
  } catch (e) {
    return localRefusal("board-unreachable", `The board did not answer (${e.message}).`);
  }
  let body;
  try {
    body = await res.json();
  } catch {
    return localRefusal("bad-response", `The board answered ${res.status} without JSON.`);
  }
  if (typeof body !== "object" || body === null || typeof body.ok !== "boolean") {
    return localRefusal("bad-response", `The board answered ${res.status} with another shape.`);
  }
  if (!body.ok && !isRefusal(body.refusal)) {
    return localRefusal("bad-response", `The board answered ${res.status} without a refusal.`);
  }
  return body;
}

function isRefusal(r) {
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.code === "string" &&
    typeof r.message === "string" &&
    typeof r.reconcile === "boolean"
  );
}

export function isId(value) {
  return typeof value === "string" && ID.test(value);
}

export function fetchCatalogue() {
  return getJson("/api/conversations");
}

/** `open` (no cursor) or `next` (a cursor with its branch). */
export function fetchPage(conversation, branch, cursor) {
  const query = new URLSearchParams();
  if (branch) query.set("branch", branch);
  if (cursor) query.set("cursor", cursor);
  const q = query.toString();
  return getJson(`/api/conversations/${encodeURIComponent(conversation)}/page${q ? `?${q}` : ""}`);
}

/** Full-text search over every branch of every conversation: `{ ok, hits, ... }` or a refusal. */
export function fetchSearch(query, limit) {
  const q = new URLSearchParams({ q: query });
  if (limit) q.set("limit", String(limit));
  return getJson(`/api/search?${q}`);
}

/** Usage totals (GET /api/usage): `q` is { by, since?, until?, tz? }. */
export function fetchUsage(q) {
  return getJson(`/api/usage?${new URLSearchParams(q)}`);
}

/** Where a branch's export is served, as a download (Content-Disposition: attachment). */
export function exportPath(conversation, branch, format) {
  const q = new URLSearchParams({ format });
  if (branch) q.set("branch", branch);
  return `/api/conversations/${encodeURIComponent(conversation)}/export?${q}`;
}

/**
 * Trades the login link's token for this tab's login key (the login page does it once). The
 * answer is the board's, `{ ok: true }` once the key is kept, or a refusal.
 */
export async function logIn(token) {
  const answer = await postJson("/login", { token });
  if (!answer.ok) return answer;
  if (typeof answer.key !== "string") {
    return localRefusal("bad-response", "The board's login answer holds no key.");
  }
  try {
    sessionStorage.setItem(LOGIN_STORE, answer.key);
  } catch (e) {
    return localRefusal(
      "no-storage",
      `This browser does not let the board keep a login in this tab (${e.message}): allow site data for it, then open a new login link.`,
    );
  }
  return { ok: true };
}

/** One steering call (`{ op, ...fields }`) with this tab's login key, when it has one. */
export function postControl(conversation, body) {
  return postLoggedIn(`/api/conversations/${encodeURIComponent(conversation)}/control`, body);
}

/** Whether this tab holds a login key (the board still judges it). */
export function isLoggedIn() {
  return loginKey() !== null;
}

/** A POST that acts, with this tab's login key when it has one (push.js, postControl). */
export function postLoggedIn(path, body) {
  const key = loginKey();
  return postJson(path, body, key === null ? {} : { [LOGIN_HEADER]: key });
}

/** A GET of the board's JSON (`{ ok, ... }` or a refusal). */
export function fetchJson(path) {
  return getJson(path);
}

function loginKey() {
  try {
    return sessionStorage.getItem(LOGIN_STORE);
  } catch {
    // No storage: no login, and the board says so (not-logged-in).
    return null;
  }
}

/** Whether this tab holds a login key (a login link was opened here); the board still decides. */
export function hasLogin() {
  try {
    return sessionStorage.getItem(LOGIN_STORE) !== null;
  } catch {
    return false;
  }
}
