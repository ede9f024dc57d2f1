// Full-text search over every branch of every conversation (GET /api/search): the hits with
// title, where and when, the snippet with the matched words marked; each opens its branch at
// its entry. "Show more matches" asks the same words again with a larger limit (50 → 200 →
// 1000), appending when the hits shown are still the first ones of the answer.
import { fetchSearch, isId } from "./api.js";
import { refusalBox } from "./controls.js";
import { navigate } from "./routing.js";
import { el, textEl, timeEl } from "./text.js";

/**
 * How many hits a search asks for, then each "Show more matches" (the route has no offset, so
 * more is the same query with a larger limit); the last is the route's maximum.
 */
const SEARCH_LIMITS = [50, 200, 1000];

const $ = (id) => document.getElementById(id);

/** The search box and its results; returns `{ input }`, the box the `/` key focuses. */
export function createSearch() {
  const ui = {
    search: $("search"),
    form: $("search-form"),
    results: $("search-results"),
    title: $("search-title"),
    note: $("search-note"),
    hits: $("hits"),
    more: $("search-more"),
  };
  /**
   * The search on show: its words, the step in SEARCH_LIMITS it asked for, the keys of the hits
   * listed (in order), and a counter so an answer to an older search or click is dropped.
   */
  const shown = { q: "", step: 0, keys: [], gen: 0 };

  /** Searches every conversation and lists the hits; each opens its branch at its entry. */
  async function run(query) {
    const q = query.trim();
    const gen = ++shown.gen;
    Object.assign(shown, { q, step: 0, keys: [] });
    ui.results.hidden = false;
    ui.more.hidden = true;
    ui.hits.replaceChildren();
    if (q === "") {
      ui.results.hidden = true;
      return;
    }
    ui.title.replaceChildren(textEl("span", "", `Search: ${q}`, true));
    // The heading stops after a few lines (console.css); the whole query is on hover.
    ui.title.title = `Search: ${q}`;
    ui.note.textContent = "Searching…";
    const result = await fetchSearch(q, SEARCH_LIMITS[0]);
    if (gen !== shown.gen || ui.search.value.trim() !== q) return;
    if (!result.ok) {
      ui.note.replaceChildren(refusalBox(result.refusal, () => run(q)));
      return;
    }
    for (const hit of result.hits) ui.hits.append(hitItem(hit));
    shown.keys = result.hits.map(hitKey);
    showCount();
  }

  /**
   * Asks the same words again with the next limit. When the hits already listed are still the
   * answer's first ones, only the rest is appended (the list's scroll position and everything
   * above stay as they were); otherwise the list is replaced, since a hit must not show text its
   * file no longer holds. Focus goes to the first hit not listed before.
   */
  async function showMore() {
    const { q, step, keys } = shown;
    if (q === "" || step + 1 >= SEARCH_LIMITS.length || ui.more.getAttribute("aria-busy")) {
      return;
    }
    const gen = ++shown.gen;
    ui.more.setAttribute("aria-busy", "true");
    ui.more.textContent = "Loading more matches…";
    const result = await fetchSearch(q, SEARCH_LIMITS[step + 1]);
    ui.more.removeAttribute("aria-busy");
    ui.more.textContent = "Show more matches";
    if (gen !== shown.gen || ui.search.value.trim() !== q) return;
    if (!result.ok) {
      // The hits listed stay, and so does the button: pressing it again asks for more again
      // (a search refusal, busy index or bad query, has no "read again" of its own).
      ui.note.replaceChildren(refusalBox(result.refusal, () => void showMore()));
      return;
    }
    const next = result.hits.map(hitKey);
    const before = new Set(keys);
    const items = result.hits.map(hitItem);
    if (keys.every((k, i) => next[i] === k)) {
      ui.hits.append(...items.slice(keys.length));
    } else {
      ui.hits.replaceChildren(...items);
    }
    shown.step = step + 1;
    shown.keys = next;
    showCount();
    const fresh = items[next.findIndex((k) => !before.has(k))] ?? items[items.length - 1];
    const button = fresh?.querySelector("button");
    if (button) {
      // Scrolled only as far as needed, so the hits above stay in view where they fit.
      button.focus({ preventScroll: true });
      button.scrollIntoView({ block: "nearest" });
    } else {
      ui.search.focus();
    }
  }

  /** The note under the heading and whether "Show more matches" is offered. */
  function showCount() {
    const n = shown.keys.length;
    const limit = SEARCH_LIMITS[shown.step];
    const last = shown.step === SEARCH_LIMITS.length - 1;
    let note;
    if (n === 0) note = "No match.";
    else if (n === 1) note = "1 match.";
    else if (n < limit) note = shown.step === 0 ? `${n} matches.` : `All ${n} matches.`;
    else if (!last) note = `First ${n} matches.`;
    else note = `The first ${n} matches; refine the words to see others.`;
    ui.note.textContent = note;
    // As many as asked for: more may exist, unless the route's maximum was asked.
    ui.more.hidden = !(n === limit && !last);
    ui.more.title = last ? "" : `Show up to ${SEARCH_LIMITS[shown.step + 1]} matches`;
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    void run(ui.search.value);
  });
  ui.more.addEventListener("click", () => void showMore());
  return { input: ui.search };
}

/** One hit's identity and text: equal keys in order mean the list on show is still the answer. */
function hitKey(hit) {
  return JSON.stringify([hit.conversation, hit.branch, hit.entry, hit.snippet]);
}

function hitItem(hit) {
  const li = el("li", "");
  const button = el("button", "hit");
  button.type = "button";
  button.append(textEl("span", "hit-title", hit.title ?? hit.conversation, true));
  const where = el("span", "hit-where");
  where.append(textEl("span", "", `${hit.project} / ${hit.seat} · ${hit.branch} · `, true));
  where.append(timeEl(hit.timestamp, ""));
  button.append(where);
  const snippet = el("span", "hit-snippet");
  let at = 0;
  for (const [from, to] of hit.matches ?? []) {
    if (from < at || to > hit.snippet.length) continue;
    snippet.append(textEl("span", "", hit.snippet.slice(at, from), true));
    snippet.append(textEl("mark", "", hit.snippet.slice(from, to), true));
    at = to;
  }
  snippet.append(textEl("span", "", hit.snippet.slice(at), true));
  button.append(snippet);
  if (isId(hit.conversation) && isId(hit.branch) && isId(hit.entry)) {
    button.addEventListener("click", () =>
      navigate({ c: hit.conversation, b: hit.branch, e: hit.entry }),
    );
  } else {
    button.disabled = true;
  }
  li.append(button);
  return li;
}
