// The catalogue: every conversation the board's sources hold, grouped by project, newest first,
// filtered by project, seat and title; read again every few seconds while the page is visible,
// redrawn only when something changed (focus stays on its row). Roots the board refused are
// listed with their refusal. A list people scan (issue 24 item 5): the group names the project
// once (no column repeats it), and the seat has a column only while the rows shown are of more
// than one seat (Pi's own store is one seat, "pi-agent", on every row).
import { fetchCatalogue } from "./api.js";
import { refusalBox } from "./controls.js";
import { forkedFromLabel, harnessLabel, messagesLabel, previewOf } from "./present.js";
import { navigate } from "./routing.js";
import { el, formatSize, textEl, timeEl } from "./text.js";

/** How often the catalogue is read again while the page is visible. */
const CATALOGUE_REFRESH_MS = 5000;

const $ = (id) => document.getElementById(id);

/**
 * The catalogue view. `selected()` is the conversation open (its row is marked); `onChange()`
 * is called after a read that changed the rows (the open conversation's head shows its row).
 * Returns `{ load(), render(), focusRow(id), rowOf(id) }`.
 */
export function createCatalogue({ selected, onChange }) {
  const ui = {
    filterProject: $("f-project"),
    filterSeat: $("f-seat"),
    filterTitle: $("f-title"),
    rows: $("rows"),
    seatColumn: $("seat-column"),
    note: $("catalogue-note"),
    refusedRoots: $("refused-roots"),
  };
  let rows = [];
  let signature = "";
  /** Each filter's distinct values; options are indices, so no value attribute carries file text. */
  const filterValues = new Map();
  /** The open button of each shown row, by conversation: focus survives a refresh. */
  let rowButtons = new Map();

  /** Reads the catalogue; a refresh that finds nothing new leaves the page (and focus) alone. */
  async function load() {
    const c = await fetchCatalogue();
    if (!c.ok) {
      signature = "";
      ui.note.replaceChildren(refusalBox(c.refusal, () => load()));
      return;
    }
    const next = JSON.stringify([c.conversations, c.refusedRoots]);
    if (next === signature) {
      refreshTimes();
      return;
    }
    signature = next;
    ui.note.replaceChildren();
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
    render();
    ui.refusedRoots.replaceChildren();
    for (const root of c.refusedRoots) {
      const li = el("li", "");
      li.append(textEl("span", "", `${root.project} / ${root.seat}: `, true));
      li.append(refusalBox(root, null));
      ui.refusedRoots.append(li);
    }
    onChange();
  }

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

  function refreshTimes() {
    for (const row of rows) {
      const button = rowButtons.get(row.conversation);
      const cell = button?.closest("tr")?.querySelector("td.when");
      if (cell) cell.replaceChildren(timeEl(row.modifiedAt, ""));
    }
  }

  function render() {
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
      // The filter finds a conversation by its title or by its first prompt.
      const words = `${row.title ?? row.fileName ?? ""}\n${row.preview ?? ""}`;
      if (text && !words.toLowerCase().includes(text)) continue;
      if (!groups.has(row.project)) groups.set(row.project, []);
      groups.get(row.project).push(row);
    }
    const seats = new Set([...groups.values()].flat().map((r) => r.seat));
    const withSeat = seats.size > 1;
    ui.seatColumn.hidden = !withSeat;
    const columns = withSeat ? 6 : 5;
    let shown = 0;
    for (const [name, list] of groups) {
      const th = textEl("th", "", `${name} (${list.length})`, true);
      th.colSpan = columns;
      th.scope = "colgroup";
      const head = el("tr", "group");
      head.append(th);
      ui.rows.append(head);
      for (const row of list) ui.rows.append(rowElement(row, withSeat));
      shown += list.length;
    }
    if (shown === 0) {
      const td = el("td", "none", rows.length ? "No conversation matches." : "No conversations.");
      td.colSpan = columns;
      const tr = el("tr", "");
      tr.append(td);
      ui.rows.append(tr);
    }
    if (focused !== null) rowButtons.get(focused)?.focus();
  }

  function rowElement(row, withSeat) {
    const tr = el("tr", `row${selected() === row.conversation ? " selected" : ""}`);
    if (withSeat) tr.append(textEl("td", "seat", row.seat, true));
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
    // The first prompt under the title when it says more (a session's name), on two lines at most.
    const preview = previewOf(row);
    if (preview !== null) titleCell.append(textEl("span", "preview", preview, true));
    // A fork names the conversation it came from, when that one is listed too (issue 24 item 14).
    if (row.forkedFrom) titleCell.append(forkedLink(row.forkedFrom));
    tr.append(titleCell);
    const when = el("td", "when");
    when.append(timeEl(row.modifiedAt, ""));
    tr.append(when);
    tr.append(el("td", "count", messagesLabel(row) ?? ""));
    tr.append(textEl("td", "model", row.model ?? "", true));
    tr.append(el("td", "size", formatSize(row.size)));
    return tr;
  }

  ui.filterProject.addEventListener("change", render);
  ui.filterSeat.addEventListener("change", render);
  ui.filterTitle.addEventListener("input", render);
  $("reload-catalogue").addEventListener("click", () => void load());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") void load();
  });
  setInterval(() => {
    if (document.visibilityState === "visible") void load();
  }, CATALOGUE_REFRESH_MS);

  /** Gives focus back to the row of `id` (the list shown again after its conversation). */
  function focusRow(id) {
    rowButtons.get(id)?.focus({ preventScroll: true });
  }

  return {
    load,
    render,
    focusRow,
    rowOf: (id) => rows.find((r) => r.conversation === id) ?? null,
  };
}

/** "forked from “Title”", a link that opens the parent conversation (Console and head alike). */
export function forkedLink(from) {
  const a = textEl("a", "forked-from", forkedFromLabel(from), true);
  a.href = `#c=${encodeURIComponent(from.conversation)}`;
  a.addEventListener("click", (e) => {
    e.preventDefault();
    navigate({ c: from.conversation });
  });
  return a;
}
