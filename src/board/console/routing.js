// Where the page is, in its URL: `#c=<conversation>&b=<branch>&e=<entry>`, so a reload or a
// shared link opens the same place. Only values of the board's id shape are read from it.
// Each history entry also remembers how many steps back the list is (no conversation open), so
// the Back control returns to the list itself, as the browser's Back does step by step, and the
// list comes back where it was (console.js keeps its scroll position and focus).
import { isId } from "./api.js";

let onRoute = async () => {};

/** The conversation, branch and entry the URL names (each undefined when absent or not an id). */
export function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const pick = (k) => (isId(p.get(k)) ? p.get(k) : undefined);
  return { c: pick("c"), b: pick("b"), e: pick("e") };
}

/**
 * How many entries back the list is from this one: 0 on the list, null when no list entry of
 * this page lies behind it (the page was opened on a conversation's link).
 */
function listDepth() {
  const d = history.state?.listDepth;
  if (Number.isSafeInteger(d) && d >= 0) return d;
  return readHash().c ? null : 0;
}

/** Goes to `{ c, b, e }`: the URL changes, and the page follows it (again, if it is the same). */
export function navigate(target) {
  const p = new URLSearchParams();
  for (const k of ["c", "b", "e"]) if (target[k]) p.set(k, target[k]);
  const hash = `#${p}`;
  if (location.hash === hash || (hash === "#" && location.hash === "")) {
    void onRoute();
    return;
  }
  const from = listDepth();
  const depth = !target.c ? 0 : from === null ? null : from + 1;
  location.hash = hash;
  // The assignment made the new entry (its hashchange comes later): it learns its depth now.
  history.replaceState({ ...history.state, listDepth: depth }, "");
}

/**
 * Back to the list: as many steps back as the list is (so Forward and the browser's Back go on
 * as before), or, when no list lies behind (a shared link), on to a new list entry.
 */
export function backToList() {
  const depth = listDepth();
  if (depth === 0) return;
  if (depth === null) navigate({});
  else history.go(-depth);
}

/** Calls `route()` whenever the URL's place changes (a link, back, forward, navigate). */
export function listenRoutes(route) {
  onRoute = route;
  // The entry the page opened on: the list, or a conversation with no list behind it.
  history.replaceState({ ...history.state, listDepth: readHash().c ? null : 0 }, "");
  window.addEventListener("hashchange", () => {
    // A hash typed or linked (not navigate's): an entry of its own, the list not behind it.
    if (!Object.hasOwn(history.state ?? {}, "listDepth")) {
      history.replaceState({ ...history.state, listDepth: readHash().c ? null : 0 }, "");
    }
    void route();
  });
}
