// Where the page is, in its URL: `#c=<conversation>&b=<branch>&e=<entry>`, or `#v=usage` for
// the Usage view, so a reload or a shared link opens the same place. Only values of the
// board's id shape (and the views' names) are read from it.
import { isId } from "./api.js";

let onRoute = async () => {};

/** The conversation, branch and entry the URL names (each undefined when absent or not an id). */
export function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const pick = (k) => (isId(p.get(k)) ? p.get(k) : undefined);
  const v = p.get("v") === "usage" ? "usage" : undefined;
  return { c: pick("c"), b: pick("b"), e: pick("e"), v };
}

/** Goes to `{ c, b, e }`: the URL changes, and the page follows it (again, if it is the same). */
export function navigate(target) {
  const p = new URLSearchParams();
  for (const k of ["c", "b", "e"]) if (target[k]) p.set(k, target[k]);
  const hash = `#${p}`;
  if (location.hash === hash) void onRoute();
  else location.hash = hash;
}

/** Calls `route()` whenever the URL's place changes (a link, back, forward, navigate). */
export function listenRoutes(route) {
  onRoute = route;
  window.addEventListener("hashchange", () => void route());
}
