// The Console: the catalogue (refreshed while the page is visible), one conversation's branch
// tree and history, paging, live follow, deep links (`#c=<conversation>&b=<branch>&e=<entry>`),
// themes and keys. Every refusal is shown with its code. Conversation text reaches the page
// only through text.js, markup.js and render.js, as text nodes.
import { exportPath, fetchCatalogue, fetchPage, fetchSearch, isId } from "./api.js";
import { createLiveRun } from "./live-run.js";
import { formatTokens, harnessLabel, usageText } from "./present.js";
import { createHistory } from "./render.js";
import { el, formatSize, textEl, timeEl } from "./text.js";

const FOLLOW_INTERVAL_MS = 1000;
/** How often the catalogue is read again while the page is visible. */
const CATALOGUE_REFRESH_MS = 5000;
const THEME_KEY = "conversation-console-theme";
/** Pages read at most while looking for a deep-linked entry. */
const REVEAL_MAX_PAGES = 50;
const NEAR_BOTTOM_PX = 48;

const $ = (id) => document.getElementById(id);
const ui = {
  filterProject: $("f-project"),
  filterSeat: $("f-seat"),
  filterTitle: $("f-title"),
  rows: $("rows"),
  catalogueNote: $("catalogue-note"),
  refusedRoots: $("refused-roots"),
  empty: $("conv-empty"),
  conv: $("conv"),
  title: $("conv-title"),
  meta: $("conv-meta"),
  flags: $("conv-flags"),
  totals: $("conv-totals"),
  branches: $("branches"),
  refusal: $("conv-refusal"),
  scroller: $("history"),
  parts: $("parts"),
  loadMore: $("load-more"),
  followStatus: $("follow-status"),
  resume: $("resume"),
  jumpEnd: $("jump-end"),
  themeToggle: $("theme-toggle"),
  keys: $("keys"),
  search: $("search"),
  searchForm: $("search-form"),
  searchResults: $("search-results"),
  searchTitle: $("search-title"),
  searchNote: $("search-note"),
  hits: $("hits"),
  searchMore: $("search-more"),
  exports: $("conv-exports"),
};
/**
 * How many hits a search asks for, then each "Show more matches" (the route has no offset, so
 * more is the same query with a larger limit); the last is the route's maximum.
 */
const SEARCH_LIMITS = [50, 200, 1000];
const EXPORT_FORMATS = [
  ["md", "Markdown"],
  ["html", "HTML"],
  ["json", "JSON"],
];

let rows = [];
let catalogueSignature = "";
/** Branch names in tree order, for [ and ]. */
let branchOrder = [];
let conv = null;
let generation = 0;
let pollTimer = 0;
let lastScrollTop = 0;
/** Set by [ and ]: the branch they open gets focus on its first own message once it shows. */
let focusBranchOnOpen = false;
/** A button that copies `getText()` to the clipboard and says whether it worked. */
function copyButton(getText, label) {
  const button = el("button", "copy", "Copy");
  button.type = "button";
  button.title = label;
  button.setAttribute("aria-label", label);
  let timer = 0;
  button.addEventListener("click", async () => {
    clearTimeout(timer);
    try {
      await navigator.clipboard.writeText(getText());
      button.textContent = "Copied";
    } catch {
      // The browser refused (no permission, not a secure context): say so, nothing else to do.
      button.textContent = "Copy failed";
    }
    timer = setTimeout(() => {
      button.textContent = "Copy";
    }, 1500);
  });
  return button;
}

const timeline = createHistory(
  ui.parts,
  (entry) => {
    if (conv) navigate({ c: conv.id, b: conv.branch, e: entry });
  },
  copyButton,
);

function refusalBox(refusal, onReconcile) {
  const box = el("div", "refusal");
  box.setAttribute("role", "alert");
  box.append(
    textEl("strong", "code", refusal.code, true),
    textEl("span", "", ` ${refusal.message}`),
  );
  if (refusal.reconcile && onReconcile) {
    const again = el("button", "reconcile", "Read again from the start");
    again.type = "button";
    again.addEventListener("click", onReconcile);
    box.append(again);
  }
  return box;
}

/** Reads the catalogue; a refresh that finds nothing new leaves the page (and focus) alone. */
async function loadCatalogue() {
  const c = await fetchCatalogue();
  if (!c.ok) {
    catalogueSignature = "";
    ui.catalogueNote.replaceChildren(refusalBox(c.refusal, () => loadCatalogue()));
    return;
  }
  const signature = JSON.stringify([c.conversations, c.refusedRoots]);
  if (signature === catalogueSignature) {
    refreshTimes();
    return;
  }
  catalogueSignature = signature;
  ui.catalogueNote.replaceChildren();
  rows = [...c.conversations].sort((a, b) =>
    String(b.modifiedAt ?? "").localeCompare(String(a.modifiedAt ?? "")),
  );
  fillFilter(
    ui.filterProject,
    "All projects",
    rows.map((r) => r.project),
  );
  fillFilter(
    ui.filterSeat,
    "All seats",
    rows.map((r) => r.seat),
  );
  renderRows();
  ui.refusedRoots.replaceChildren();
  for (const root of c.refusedRoots) {
    const li = el("li", "");
    li.append(textEl("span", "", `${root.project} / ${root.seat}: `, true));
    li.append(refusalBox(root, null));
    ui.refusedRoots.append(li);
  }
  if (conv) renderConvHead();
}

/** Each filter's distinct values; options are indices, so no value attribute carries file text. */
const filterValues = new Map();

function fillFilter(select, allLabel, values) {
  const chosen = chosenValue(select);
  const distinct = [...new Set(values)].sort();
  filterValues.set(select, distinct);
  select.replaceChildren(el("option", "", allLabel));
  select.options[0].value = "";
  distinct.forEach((v, i) => {
    const option = textEl("option", "", v, true);
    option.value = String(i + 1);
    select.append(option);
    if (v === chosen) select.selectedIndex = i + 1;
  });
}

function chosenValue(select) {
  const distinct = filterValues.get(select);
  return distinct && select.selectedIndex > 0 ? distinct[select.selectedIndex - 1] : null;
}

/** The open button of each shown row, by conversation: focus survives a refresh. */
let rowButtons = new Map();

function refreshTimes() {
  for (const row of rows) {
    const button = rowButtons.get(row.conversation);
    const cell = button?.closest("tr")?.querySelector("td.when");
    if (cell) cell.replaceChildren(timeEl(row.modifiedAt, ""));
  }
}

function renderRows() {
  let focused = null;
  for (const [id, button] of rowButtons) if (button === document.activeElement) focused = id;
  rowButtons = new Map();
  const project = chosenValue(ui.filterProject);
  const seat = chosenValue(ui.filterSeat);
  const text = ui.filterTitle.value.trim().toLowerCase();
  ui.rows.replaceChildren();
  // Grouped by project (in Pi's own store, the session's cwd); rows are newest first, so each
  // group comes in the order of its newest row.
  const groups = new Map();
  for (const row of rows) {
    if (project !== null && row.project !== project) continue;
    if (seat !== null && row.seat !== seat) continue;
    const title = row.title ?? row.fileName ?? "";
    if (text && !title.toLowerCase().includes(text)) continue;
    if (!groups.has(row.project)) groups.set(row.project, []);
    groups.get(row.project).push(row);
  }
  let shown = 0;
  for (const [name, list] of groups) {
    const th = textEl("th", "", `${name} (${list.length})`, true);
    th.colSpan = 5;
    th.scope = "colgroup";
    const head = el("tr", "group");
    head.append(th);
    ui.rows.append(head);
    for (const row of list) ui.rows.append(rowElement(row));
    shown += list.length;
  }
  if (shown === 0) {
    const td = el("td", "none", rows.length ? "No conversation matches." : "No conversations.");
    td.colSpan = 5;
    const tr = el("tr", "");
    tr.append(td);
    ui.rows.append(tr);
  }
  if (focused !== null) rowButtons.get(focused)?.focus();
}

function rowElement(row) {
  const tr = el("tr", `row${conv?.id === row.conversation ? " selected" : ""}`);
  tr.append(textEl("td", "project", row.project, true), textEl("td", "seat", row.seat, true));
  const titleCell = el("td", "title");
  const open = el("button", "open");
  open.type = "button";
  open.append(
    row.title !== null
      ? textEl("span", "", row.title, true)
      : textEl("span", "muted", row.fileName ?? "(no title)", true),
  );
  open.addEventListener("click", () => navigate({ c: row.conversation }));
  rowButtons.set(row.conversation, open);
  titleCell.append(open);
  // A running controller serves it (the board joins the registry: docs/control-cli.md).
  if (row.live === true) {
    const badge = el("span", "badge ok live", "live");
    badge.title = "A controller is running this conversation";
    titleCell.append(" ", badge);
  }
  // Pi is the default; a row another harness wrote says which.
  if (row.harness !== null && row.harness !== "pi" && row.unsupportedReason === null) {
    const badge = el("span", "badge harness", harnessLabel(row.harness));
    badge.title = `Written by ${harnessLabel(row.harness)}`;
    titleCell.append(" ", badge);
  }
  if (row.unsupportedReason !== null) {
    const reason = el("span", "reason");
    reason.append(textEl("code", "", row.unsupportedReason, true));
    if (row.harness) reason.append(textEl("span", "", ` (${row.harness})`, true));
    titleCell.append(reason);
  }
  tr.append(titleCell);
  const when = el("td", "when");
  when.append(timeEl(row.modifiedAt, ""));
  tr.append(when);
  tr.append(el("td", "size", formatSize(row.size)));
  return tr;
}

function rowOf(id) {
  return rows.find((r) => r.conversation === id) ?? null;
}

function renderConvHead() {
  const row = rowOf(conv.id);
  ui.title.replaceChildren(textEl("span", "", row?.title ?? row?.fileName ?? "Conversation", true));
  ui.meta.replaceChildren();
  if (row) ui.meta.append(textEl("span", "", `${row.project} / ${row.seat}`, true));
  if (row?.harness && row.harness !== "pi") {
    ui.meta.append(el("span", "badge harness", harnessLabel(row.harness)));
  }
  ui.meta.append(textEl("code", "conv-id", conv.id, true));
  renderTotals();
}

/**
 * What the conversation head shows now, as a key: a follow page that changes nothing in it
 * redraws nothing, so a keyboard user's focus on an export link or a branch stays put.
 */
let exportsShown = "";
let viewShown = "";

/** Export links for the branch shown: downloads, so nothing of the export runs in this page. */
function renderExports() {
  const key = conv?.branch ? `${conv.id} ${conv.branch}` : "";
  if (key === exportsShown) return;
  exportsShown = key;
  const focused = focusKeyIn(ui.exports);
  ui.exports.replaceChildren();
  if (!conv?.branch) return;
  ui.exports.append(el("span", "", "Export this branch:"));
  for (const [format, label] of EXPORT_FORMATS) {
    const a = el("a", "export", label);
    a.href = exportPath(conv.id, conv.branch, format);
    a.setAttribute("download", "");
    a.setAttribute("aria-label", `Export this branch as ${label}`);
    a.dataset.focusKey = `export ${format}`;
    ui.exports.append(a);
  }
  refocus(ui.exports, focused);
}

/** The focus key (data-focus-key) of the control inside `container` that has focus, if any. */
function focusKeyIn(container) {
  const a = document.activeElement;
  return a instanceof HTMLElement && container.contains(a) ? (a.dataset.focusKey ?? null) : null;
}

/** Gives focus back to the redrawn control with `key`: a redraw does not drop the person's place. */
function refocus(container, key) {
  if (key === null) return;
  for (const e of container.querySelectorAll("[data-focus-key]")) {
    if (e instanceof HTMLElement && e.dataset.focusKey === key) {
      e.focus({ preventScroll: true });
      return;
    }
  }
}

/** The branch's usage so far (the pages read): tokens and cost summed over its replies. */
function renderTotals() {
  const t = timeline.totals();
  ui.totals.replaceChildren();
  if (!t) return;
  const n = t.messages === 1 ? "1 reply" : `${t.messages} replies`;
  ui.totals.append(el("span", "", `Branch usage (${n} read): ${usageText(t)}`));
  ui.totals.title = `${t.input + t.output + t.cacheRead + t.cacheWrite} tokens in all (${formatTokens(t.input + t.output)} in + out)`;
}

function renderView(view) {
  const key = JSON.stringify([
    conv.branch,
    view.branches,
    view.defaultBranch,
    view.branchCount,
    view.incomplete,
    view.forkedFromEarlierSession,
    view.unreadableLines,
  ]);
  if (key === viewShown) return;
  viewShown = key;
  const focused = focusKeyIn(ui.branches);
  ui.flags.replaceChildren();
  if (view.incomplete) ui.flags.append(el("span", "flag", "The last line is still being written."));
  if (view.forkedFromEarlierSession) {
    ui.flags.append(el("span", "flag", "Forked from an earlier session, which is not opened."));
  }
  if (view.unreadableLines > 0) {
    ui.flags.append(
      el("span", "flag warn", `${view.unreadableLines} unreadable line(s), shown as notices.`),
    );
  }
  renderBranchTree(view);
  refocus(ui.branches, focused);
}

/** The branches as a tree (as Pi's /tree shows them): each under the branch it forks from. */
function renderBranchTree(view) {
  const known = new Set(view.branches.map((b) => b.name));
  const children = new Map();
  for (const b of view.branches) {
    const parent = b.forksFrom && known.has(b.forksFrom.branch) ? b.forksFrom.branch : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(b);
  }
  branchOrder = [];
  const seen = new Set();
  const fill = (ul, parent) => {
    for (const b of children.get(parent) ?? []) {
      if (seen.has(b.name)) continue;
      seen.add(b.name);
      branchOrder.push(b.name);
      const li = branchItem(b, view);
      if (children.has(b.name)) {
        const sub = el("ul", "");
        fill(sub, b.name);
        li.append(sub);
      }
      ul.append(li);
    }
  };
  ui.branches.replaceChildren();
  fill(ui.branches, null);
  // A view lists at most 100 branches (around the one shown); say how many more exist.
  const unlisted = (view.branchCount ?? view.branches.length) - view.branches.length;
  if (unlisted > 0) {
    ui.branches.append(
      el("li", "branch more", `${unlisted} more branch${unlisted === 1 ? "" : "es"} not listed`),
    );
  }
}

function branchItem(b, view) {
  const li = el("li", `branch${b.name === conv.branch ? " current" : ""}`);
  const row = el("div", "branch-row");
  const pick = el("button", "pick");
  pick.type = "button";
  pick.dataset.focusKey = `pick ${b.name}`;
  if (b.label !== null && b.label !== undefined)
    pick.append(textEl("span", "branch-label", b.label, true));
  pick.append(textEl("span", "name", b.name, true));
  if (b.name === conv.branch) pick.setAttribute("aria-current", "true");
  pick.addEventListener("click", () => navigate({ c: conv.id, b: b.name }));
  row.append(pick);
  if (b.name === view.defaultBranch) row.append(el("span", "badge default", "default"));
  if (b.forksFrom) {
    const at = el("button", "forks");
    at.type = "button";
    at.dataset.focusKey = `forks ${b.name}`;
    at.append(textEl("span", "", `forks from ${b.forksFrom.branch} at ${b.forksFrom.entry}`, true));
    const { branch, entry } = b.forksFrom;
    at.addEventListener("click", () => navigate({ c: conv.id, b: branch, e: entry }));
    row.append(at);
  } else {
    row.append(el("span", "root", "root"));
  }
  row.append(el("span", "depth", b.depth === 1 ? "1 entry" : `${b.depth} entries`));
  li.append(row);
  return li;
}

function showConvRefusal(refusal) {
  ui.refusal.replaceChildren(refusalBox(refusal, () => reread(refusal)));
  ui.refusal.hidden = false;
}

function reread(refusal) {
  if (!conv) return;
  void loadCatalogue();
  const branch = refusal.code === "unknown-branch" ? undefined : conv.branch;
  void openConversation(conv.id, branch, undefined);
}

/** Takes a read result's page into the view; false when it was a refusal. */
function takeResult(result) {
  if (!result.ok) {
    conv.next = null;
    conv.follow = null;
    conv.refused = result.refusal;
    showConvRefusal(result.refusal);
    updateFoot();
    return false;
  }
  conv.next = result.page.nextCursor;
  conv.follow = result.follow ? result.follow.id : null;
  timeline.append(result.page.parts);
  renderView(result.view);
  renderTotals();
  renderExports();
  updateFoot();
  return true;
}

async function openConversation(id, branch, entry) {
  const gen = ++generation;
  // Taken now: a refused or superseded open must not leave it set for a later one.
  const focusStart = focusBranchOnOpen;
  focusBranchOnOpen = false;
  clearTimeout(pollTimer);
  stopListening(conv);
  conv = { id, branch: branch ?? null, next: null, follow: null, paused: false, refused: null };
  ui.empty.hidden = true;
  ui.conv.hidden = false;
  ui.refusal.hidden = true;
  ui.refusal.replaceChildren();
  ui.branches.replaceChildren();
  ui.flags.replaceChildren();
  viewShown = "";
  timeline.clear();
  lastScrollTop = ui.scroller.scrollTop;
  renderConvHead();
  ui.followStatus.textContent = "Reading…";
  const result = await fetchPage(id, branch, undefined);
  if (gen !== generation) return;
  if (result.ok) conv.branch = result.page.branch;
  if (!takeResult(result)) return;
  if (entry) await revealEntry(entry, gen);
  else scrollToBottom();
  if (gen !== generation) return;
  if (focusStart) focusBranchStart(result.view);
  schedulePoll();
}

/** Reads the next page; one read at a time, so a cursor is never used twice. */
async function loadMore(gen) {
  const c = conv;
  if (!c?.next || c.loading) return false;
  c.loading = true;
  updateFoot();
  const result = await fetchPage(c.id, c.branch, c.next);
  c.loading = false;
  if (gen !== generation) return false;
  const ok = takeResult(result);
  schedulePoll();
  return ok;
}

async function revealEntry(entry, gen) {
  let target = timeline.elementOf(entry);
  for (let i = 0; !target && conv.next && i < REVEAL_MAX_PAGES; i++) {
    if (!(await loadMore(gen)) || gen !== generation) return;
    target = timeline.elementOf(entry);
  }
  for (const old of ui.parts.querySelectorAll(".target")) old.classList.remove("target");
  if (!target) {
    ui.followStatus.textContent = `Entry ${entry} is not on this branch.`;
    return;
  }
  target.classList.add("target");
  target.scrollIntoView({ block: "start" });
  lastScrollTop = ui.scroller.scrollTop;
  if (!isNearBottom()) pause();
}

function schedulePoll() {
  clearTimeout(pollTimer);
  if (!conv?.follow || conv.paused || conv.refused) return;
  const gen = generation;
  // The board pushes appends on its live route; a poll is only the fallback for a board that
  // cannot watch (one given a reader without roots answers the route 404).
  if (!conv.noLive) {
    listen(gen);
    return;
  }
  pollTimer = setTimeout(() => void poll(gen), FOLLOW_INTERVAL_MS);
}

/** Follows the end over Server-Sent Events: each `page` event is a follow read's result. */
function listen(gen) {
  const c = conv;
  if (c.stream) return;
  const q = new URLSearchParams({ branch: c.branch, cursor: c.follow });
  const stream = new EventSource(`/api/conversations/${encodeURIComponent(c.id)}/live?${q}`);
  c.stream = stream;
  liveRun.attach(c.id);
  const relay = (name, fn) =>
    stream.addEventListener(name, (ev) => {
      if (gen === generation && c.stream === stream) fn(JSON.parse(ev.data));
    });
  relay("controller", (m) => liveRun.onController(m));
  relay("state", (m) => liveRun.onState(m));
  relay("event", (m) => liveRun.onEvent(m));
  relay("dialog", (m) => liveRun.onDialog(m));
  relay("seam", (m) => liveRun.onSeam(m));
  stream.addEventListener("page", (ev) => {
    if (gen !== generation || c.stream !== stream) return;
    const result = JSON.parse(ev.data);
    const stick = isNearBottom();
    // The board reads on to the end itself; the event's id is the cursor it will use next.
    c.next = null;
    c.follow = ev.lastEventId;
    timeline.append(result.page.parts);
    renderView(result.view);
    updateFoot();
    if (stick && !c.paused) scrollToBottom();
  });
  stream.addEventListener("refusal", (ev) => {
    if (gen !== generation || c.stream !== stream) return;
    stopListening(c);
    takeResult(JSON.parse(ev.data));
  });
  stream.addEventListener("error", () => {
    if (gen !== generation || c.stream !== stream) return;
    // CLOSED: the route answered with a refusal, not a stream. CONNECTING: EventSource
    // reconnects by itself, resuming from the last id.
    if (stream.readyState !== EventSource.CLOSED) return;
    stopListening(c);
    c.noLive = true;
    schedulePoll();
  });
}

const liveRun = createLiveRun();

function stopListening(c) {
  c?.stream?.close();
  if (c) c.stream = null;
}

async function poll(gen) {
  const c = conv;
  if (gen !== generation || !c.follow || c.paused || c.loading) return;
  c.loading = true;
  const stick = isNearBottom();
  let ok = true;
  // A follow page can be one of several when much was appended: read on to the new end.
  for (let cursor = c.follow; ok && cursor; cursor = c.next) {
    const result = await fetchPage(c.id, c.branch, cursor);
    if (gen !== generation) return;
    ok = takeResult(result);
  }
  c.loading = false;
  updateFoot();
  if (!ok) return;
  if (stick && !c.paused) scrollToBottom();
  schedulePoll();
}

/** Pauses following; before the last page is read there is nothing to follow yet. */
function pause() {
  if (!conv?.follow || conv.paused) return;
  conv.paused = true;
  clearTimeout(pollTimer);
  stopListening(conv);
  updateFoot();
}

function resume() {
  if (!conv) return;
  conv.paused = false;
  scrollToBottom();
  updateFoot();
  if (conv.follow) void poll(generation);
}

function updateFoot() {
  ui.loadMore.hidden = !conv?.next;
  ui.loadMore.disabled = Boolean(conv?.loading);
  ui.resume.hidden = !conv?.paused || Boolean(conv?.refused);
  ui.jumpEnd.hidden = !conv || Boolean(conv.refused) || (!conv.next && isNearBottom());
  let status;
  if (!conv) status = "";
  else if (conv.refused) status = `Stopped: ${conv.refused.code}.`;
  else if (conv.next) status = "More history: load it to reach the end and follow.";
  else if (conv.paused) status = "Following paused.";
  else if (conv.follow) status = "Following: new parts appear as they are written.";
  else status = "";
  ui.followStatus.textContent = status;
  ui.followStatus.className = conv?.follow && !conv.paused ? "live" : "";
}

function isNearBottom() {
  const s = ui.scroller;
  return s.scrollHeight - s.scrollTop - s.clientHeight <= NEAR_BOTTOM_PX;
}

function scrollToBottom() {
  ui.scroller.scrollTop = ui.scroller.scrollHeight;
  lastScrollTop = ui.scroller.scrollTop;
}

/** Scrolling up away from the end pauses following; coming back to the end resumes it. */
function onScroll() {
  const top = ui.scroller.scrollTop;
  const wentUp = top < lastScrollTop - 2;
  lastScrollTop = top;
  if (!conv || conv.refused) return;
  if (wentUp && !isNearBottom()) pause();
  else if (conv.paused && isNearBottom() && !conv.next) resume();
  ui.jumpEnd.hidden = Boolean(conv.refused) || (!conv.next && isNearBottom());
}

/**
 * The search on show: its words, the step in SEARCH_LIMITS it asked for, the keys of the hits
 * listed (in order), and a counter so an answer to an older search or click is dropped.
 */
const shownSearch = { q: "", step: 0, keys: [], gen: 0 };

/** One hit's identity and text: equal keys in order mean the list on show is still the answer. */
function hitKey(hit) {
  return JSON.stringify([hit.conversation, hit.branch, hit.entry, hit.snippet]);
}

/** Searches every conversation and lists the hits; each opens its branch at its entry. */
async function runSearch(query) {
  const q = query.trim();
  const gen = ++shownSearch.gen;
  Object.assign(shownSearch, { q, step: 0, keys: [] });
  ui.searchResults.hidden = false;
  ui.searchMore.hidden = true;
  ui.hits.replaceChildren();
  if (q === "") {
    ui.searchResults.hidden = true;
    return;
  }
  ui.searchTitle.replaceChildren(textEl("span", "", `Search: ${q}`, true));
  // The heading stops after a few lines (console.css); the whole query is on hover.
  ui.searchTitle.title = `Search: ${q}`;
  ui.searchNote.textContent = "Searching…";
  const result = await fetchSearch(q, SEARCH_LIMITS[0]);
  if (gen !== shownSearch.gen || ui.search.value.trim() !== q) return;
  if (!result.ok) {
    ui.searchNote.replaceChildren(refusalBox(result.refusal, () => runSearch(q)));
    return;
  }
  for (const hit of result.hits) ui.hits.append(hitItem(hit));
  shownSearch.keys = result.hits.map(hitKey);
  showSearchCount();
}

/**
 * Asks the same words again with the next limit. When the hits already listed are still the
 * answer's first ones, only the rest is appended (the list's scroll position and everything
 * above stay as they were); otherwise the list is replaced, since a hit must not show text its
 * file no longer holds. Focus goes to the first hit not listed before.
 */
async function showMoreHits() {
  const { q, step, keys } = shownSearch;
  if (q === "" || step + 1 >= SEARCH_LIMITS.length || ui.searchMore.getAttribute("aria-busy")) {
    return;
  }
  const gen = ++shownSearch.gen;
  ui.searchMore.setAttribute("aria-busy", "true");
  ui.searchMore.textContent = "Loading more matches…";
  const result = await fetchSearch(q, SEARCH_LIMITS[step + 1]);
  ui.searchMore.removeAttribute("aria-busy");
  ui.searchMore.textContent = "Show more matches";
  if (gen !== shownSearch.gen || ui.search.value.trim() !== q) return;
  if (!result.ok) {
    // The hits listed stay, and so does the button: pressing it again asks for more again
    // (a search refusal, busy index or bad query, has no "read again" of its own).
    ui.searchNote.replaceChildren(refusalBox(result.refusal, () => void showMoreHits()));
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
  shownSearch.step = step + 1;
  shownSearch.keys = next;
  showSearchCount();
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
function showSearchCount() {
  const n = shownSearch.keys.length;
  const limit = SEARCH_LIMITS[shownSearch.step];
  const last = shownSearch.step === SEARCH_LIMITS.length - 1;
  let note;
  if (n === 0) note = "No match.";
  else if (n === 1) note = "1 match.";
  else if (n < limit) note = shownSearch.step === 0 ? `${n} matches.` : `All ${n} matches.`;
  else if (!last) note = `First ${n} matches.`;
  else note = `The first ${n} matches; refine the words to see others.`;
  ui.searchNote.textContent = note;
  // As many as asked for: more may exist, unless the route's maximum was asked.
  ui.searchMore.hidden = !(n === limit && !last);
  ui.searchMore.title = last ? "" : `Show up to ${SEARCH_LIMITS[shownSearch.step + 1]} matches`;
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

/**
 * Reads every remaining page, then shows the end and follows it; the last message takes focus
 * (as g gives it the first), so j/k go on from the end, not from wherever focus was.
 */
async function jumpToEnd() {
  if (!conv) return;
  const gen = generation;
  while (conv?.next && gen === generation) {
    if (!(await loadMore(gen))) break;
  }
  if (gen !== generation || !conv || conv.refused) return;
  if (conv.paused) resume();
  else scrollToBottom();
  updateFoot();
  const articles = timeline.articles();
  if (articles.length > 0 && focusIsFree()) setCurrent(articles[articles.length - 1]);
}

/**
 * Whether focus may be moved after a read finishes: it is nowhere (its message was replaced,
 * or its button hid) or on a message or the floating buttons; not if the person went on to
 * the search box or another control while the pages were read.
 */
function focusIsFree() {
  const a = document.activeElement;
  return !a || a === document.body || ui.parts.contains(a) || a === ui.jumpEnd || a === ui.resume;
}

/** Marks `article` as the current message and focuses it without moving the view. */
function setCurrent(article) {
  for (const a of timeline.articles()) a.classList.remove("current");
  article.classList.add("current");
  article.focus({ preventScroll: true });
}

/**
 * After [ or ]: focus the branch's own first message, the one after the entry it forks at
 * (what differs from the branch before), shown in the view; a root branch, or one whose fork
 * is not on the pages read, gets its first message.
 */
function focusBranchStart(view) {
  const articles = timeline.articles();
  if (articles.length === 0 || !focusIsFree()) return;
  const fork = view.branches.find((b) => b.name === conv?.branch)?.forksFrom?.entry;
  const at = fork ? articles.indexOf(timeline.elementOf(fork)) : -1;
  const target = at >= 0 && at + 1 < articles.length ? articles[at + 1] : articles[0];
  setCurrent(target);
  target.scrollIntoView({ block: "nearest" });
}

/** Moves the current part by `step` (j/k) and shows it; the first press picks the nearest. */
function stepPart(step) {
  const articles = timeline.articles();
  if (articles.length === 0) return;
  let at = articles.findIndex((a) => a.classList.contains("current"));
  if (at < 0) {
    const top = ui.scroller.getBoundingClientRect().top;
    at = articles.findIndex((a) => a.getBoundingClientRect().bottom > top + 4);
    if (at < 0) at = articles.length - 1;
    at -= step;
  }
  const next = Math.min(articles.length - 1, Math.max(0, at + step));
  const target = articles[next];
  setCurrent(target);
  target.scrollIntoView({ block: "nearest" });
}

function stepBranch(step) {
  if (!conv || branchOrder.length < 2) return;
  const at = branchOrder.indexOf(conv.branch);
  const next = branchOrder[(at + step + branchOrder.length) % branchOrder.length];
  focusBranchOnOpen = true;
  navigate({ c: conv.id, b: next });
}

function goToStart() {
  if (!conv) return;
  ui.scroller.scrollTop = 0;
  onScroll();
  const first = timeline.articles()[0];
  if (first) setCurrent(first);
}

function onKey(e) {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
  if (ui.keys.open) return;
  const t = e.target;
  if (t instanceof Element && t.closest("input, textarea, select, [contenteditable]")) {
    if (e.key === "Escape" && t === ui.search) ui.search.blur();
    return;
  }
  const actions = {
    j: () => stepPart(1),
    k: () => stepPart(-1),
    "]": () => stepBranch(1),
    "[": () => stepBranch(-1),
    g: goToStart,
    G: () => void jumpToEnd(),
    "/": () => ui.search.focus(),
    "?": () => ui.keys.showModal(),
  };
  if (!Object.hasOwn(actions, e.key)) return;
  e.preventDefault();
  actions[e.key]();
}

/** The chosen theme ("light", "dark") or null to follow the system. */
function storedTheme() {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return v === "light" || v === "dark" ? v : null;
  } catch {
    // Storage disabled: the system's preference applies, nothing is lost.
    return null;
  }
}

const darkQuery = matchMedia("(prefers-color-scheme: dark)");

function applyTheme() {
  const chosen = storedTheme();
  if (chosen) document.documentElement.dataset.theme = chosen;
  else delete document.documentElement.dataset.theme;
  const dark = (chosen ?? (darkQuery.matches ? "dark" : "light")) === "dark";
  ui.themeToggle.setAttribute("aria-pressed", String(dark));
}

function toggleTheme() {
  const next = ui.themeToggle.getAttribute("aria-pressed") === "true" ? "light" : "dark";
  try {
    localStorage.setItem(THEME_KEY, next);
  } catch {
    // Storage disabled: the theme changes for this page, it is just not remembered.
  }
  document.documentElement.dataset.theme = next;
  ui.themeToggle.setAttribute("aria-pressed", String(next === "dark"));
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const pick = (k) => (isId(p.get(k)) ? p.get(k) : undefined);
  return { c: pick("c"), b: pick("b"), e: pick("e") };
}

function navigate(target) {
  const p = new URLSearchParams();
  for (const k of ["c", "b", "e"]) if (target[k]) p.set(k, target[k]);
  const hash = `#${p}`;
  if (location.hash === hash) void applyHash();
  else location.hash = hash;
}

async function applyHash() {
  const { c, b, e } = readHash();
  if (!c) {
    generation++;
    clearTimeout(pollTimer);
    stopListening(conv);
    conv = null;
    ui.conv.hidden = true;
    ui.empty.hidden = false;
    return;
  }
  if (!conv || conv.id !== c || (b !== undefined && conv.branch !== b)) {
    await openConversation(c, b, e);
  } else if (e) {
    await revealEntry(e, generation);
  }
  renderRows();
}

ui.filterProject.addEventListener("change", renderRows);
ui.filterSeat.addEventListener("change", renderRows);
ui.filterTitle.addEventListener("input", renderRows);
$("reload-catalogue").addEventListener("click", () => void loadCatalogue());
ui.loadMore.addEventListener("click", () => void loadMore(generation));
ui.resume.addEventListener("click", resume);
ui.scroller.addEventListener("scroll", onScroll, { passive: true });
ui.jumpEnd.addEventListener("click", () => void jumpToEnd());
ui.searchForm.addEventListener("submit", (e) => {
  e.preventDefault();
  void runSearch(ui.search.value);
});
ui.searchMore.addEventListener("click", () => void showMoreHits());
ui.themeToggle.addEventListener("click", toggleTheme);
$("keys-help").addEventListener("click", () => ui.keys.showModal());
$("keys-close").addEventListener("click", () => ui.keys.close());
darkQuery.addEventListener("change", applyTheme);
document.addEventListener("keydown", onKey);
window.addEventListener("hashchange", () => void applyHash());
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") void loadCatalogue();
});
setInterval(() => {
  if (document.visibilityState === "visible") void loadCatalogue();
}, CATALOGUE_REFRESH_MS);

applyTheme();
await loadCatalogue();
await applyHash();
