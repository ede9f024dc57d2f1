// The Console's two requests, both same-origin GETs. Every answer is a value: the body the
// board sent (a catalogue, a read result, or `{ ok: false, refusal }`), or a local refusal
// when the board could not be reached or sent something that is not JSON.

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

function localRefusal(code, message) {
  return { ok: false, refusal: { code, reconcile: true, message } };
}

async function getJson(path) {
  let res;
  try {
    res = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
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

/** Where a branch's export is served, as a download (Content-Disposition: attachment). */
export function exportPath(conversation, branch, format) {
  const q = new URLSearchParams({ format });
  if (branch) q.set("branch", branch);
  return `/api/conversations/${encodeURIComponent(conversation)}/export?${q}`;
}
