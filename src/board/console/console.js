// The Console: the catalogue, one conversation's branches and history, paging, live follow
// and deep links (`#c=<conversation>&b=<branch>&e=<entry>`). Every refusal is shown with its
// code. Conversation text reaches the page only through text.js and render.js, as text.
import { fetchCatalogue, fetchPage, isId } from "./api.js";
import { createHistory } from "./render.js";
import { el, formatSize, formatTime, textEl } from "./text.js";

const FOLLOW_INTERVAL_MS = 1000;
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
  branches: $("branches"),
  refusal: $("conv-refusal"),
  scroller: $("history"),
  parts: $("parts"),
  loadMore: $("load-more"),
  followStatus: $("follow-status"),
  resume: $("resume"),
};

let rows = [];
let conv = null;
let generation = 0;
let pollTimer = 0;
let lastScrollTop = 0;
const timeline = createHistory(ui.parts, (entry) => {
  if (conv) navigate({ c: conv.id, b: conv.branch, e: entry });
});

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

async function loadCatalogue() {
  const c = await fetchCatalogue();
  ui.catalogueNote.replaceChildren();
  if (!c.ok) {
    ui.catalogueNote.append(refusalBox(c.refusal, () => loadCatalogue()));
    return;
  }
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

function renderRows() {
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
  titleCell.append(open);
  // A running controller serves it (the board joins the registry: docs/control-cli.md).
  if (row.live === true) {
    const badge = el("span", "badge ok live", "live");
    badge.title = "A controller is running this conversation";
    titleCell.append(" ", badge);
  }
  if (row.unsupportedReason !== null) {
    const reason = el("span", "reason");
    reason.append(textEl("code", "", row.unsupportedReason, true));
    if (row.harness) reason.append(textEl("span", "", ` (${row.harness})`, true));
    titleCell.append(reason);
  }
  tr.append(titleCell);
  tr.append(textEl("td", "when", formatTime(row.modifiedAt), true));
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
  ui.meta.append(textEl("code", "conv-id", conv.id, true));
}

function renderView(view) {
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
  ui.branches.replaceChildren();
  for (const b of view.branches) {
    const li = el("li", `branch${b.name === conv.branch ? " current" : ""}`);
    const pick = el("button", "pick");
    pick.type = "button";
    pick.append(textEl("span", "name", b.name, true));
    if (b.name === conv.branch) pick.setAttribute("aria-current", "true");
    pick.addEventListener("click", () => navigate({ c: conv.id, b: b.name }));
    li.append(pick);
    if (b.name === view.defaultBranch) li.append(el("span", "badge default", "default"));
    if (b.forksFrom) {
      const at = el("button", "forks");
      at.type = "button";
      at.append(
        textEl("span", "", `forks from ${b.forksFrom.branch} at ${b.forksFrom.entry}`, true),
      );
      const { branch, entry } = b.forksFrom;
      at.addEventListener("click", () => navigate({ c: conv.id, b: branch, e: entry }));
      li.append(at);
    } else {
      li.append(el("span", "root", "root"));
    }
    li.append(el("span", "depth", b.depth === 1 ? "1 entry" : `${b.depth} entries`));
    ui.branches.append(li);
  }
  // A view lists at most 100 branches (around the one shown); say how many more exist.
  const unlisted = (view.branchCount ?? view.branches.length) - view.branches.length;
  if (unlisted > 0) {
    ui.branches.append(
      el("li", "branch more", `${unlisted} more branch${unlisted === 1 ? "" : "es"} not listed`),
    );
  }
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
  updateFoot();
  return true;
}

async function openConversation(id, branch, entry) {
  const gen = ++generation;
  clearTimeout(pollTimer);
  conv = { id, branch: branch ?? null, next: null, follow: null, paused: false, refused: null };
  ui.empty.hidden = true;
  ui.conv.hidden = false;
  ui.refusal.hidden = true;
  ui.refusal.replaceChildren();
  ui.branches.replaceChildren();
  ui.flags.replaceChildren();
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
  if (gen === generation) schedulePoll();
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
  pollTimer = setTimeout(() => void poll(gen), FOLLOW_INTERVAL_MS);
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
window.addEventListener("hashchange", () => void applyHash());

await loadCatalogue();
await applyHash();
