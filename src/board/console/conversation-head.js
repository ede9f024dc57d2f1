// The head of an open conversation: its title and where it lives, the branch's usage so far,
// export links, the view's flags and the branch tree (as Pi's /tree shows it, each branch under
// the one it forks from). A follow page that changes nothing in it redraws nothing, so focus on
// an export link or a branch stays put; a redraw gives focus back to the same control.
import { exportPath } from "./api.js";
import { forkedLink } from "./catalogue.js";
import { focusKeyIn, refocus } from "./controls.js";
import { formatTokens, harnessLabel, usageText } from "./present.js";
import { navigate } from "./routing.js";
import { el, textEl } from "./text.js";

const EXPORT_FORMATS = [
  ["md", "Markdown"],
  ["html", "HTML"],
  ["json", "JSON"],
];

const $ = (id) => document.getElementById(id);

/**
 * The head's view. `rowOf(id)` is the catalogue's row; `totals()` the branch's usage so far.
 * Every call takes the open conversation `conv` (`{ id, branch }`).
 */
export function createConversationHead({ rowOf, totals }) {
  const ui = {
    title: $("conv-title"),
    meta: $("conv-meta"),
    flags: $("conv-flags"),
    totals: $("conv-totals"),
    branches: $("branches"),
    exports: $("conv-exports"),
  };
  /** What the head shows now, as keys: equal keys redraw nothing. */
  let exportsShown = "";
  let viewShown = "";
  /** Branch names in tree order, for [ and ]. */
  let branchOrder = [];

  function show(conv) {
    const row = rowOf(conv.id);
    ui.title.replaceChildren(
      textEl("span", "", row?.title ?? row?.fileName ?? "Conversation", true),
    );
    ui.meta.replaceChildren();
    if (row) ui.meta.append(textEl("span", "", `${row.project} / ${row.seat}`, true));
    if (row?.harness && row.harness !== "pi") {
      ui.meta.append(el("span", "badge harness", harnessLabel(row.harness)));
    }
    ui.meta.append(textEl("code", "conv-id", conv.id, true));
    showTotals();
  }

  /**
   * Export links for the branch shown: downloads, so nothing of the export runs in this page.
   * None while the page shows a refusal: an export reads the same file and would fail too.
   */
  function showExports(conv) {
    const key = conv?.branch && !conv.refused ? `${conv.id} ${conv.branch}` : "";
    if (key === exportsShown) return;
    exportsShown = key;
    const focused = focusKeyIn(ui.exports);
    ui.exports.replaceChildren();
    if (key === "") return;
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

  /** The branch's usage so far (the pages read): tokens and cost summed over its replies. */
  function showTotals() {
    const t = totals();
    ui.totals.replaceChildren();
    if (!t) return;
    const n = t.messages === 1 ? "1 reply" : `${t.messages} replies`;
    ui.totals.append(el("span", "", `Branch usage (${n} read): ${usageText(t)}`));
    ui.totals.title = `${t.input + t.output + t.cacheRead + t.cacheWrite} tokens in all (${formatTokens(t.input + t.output)} in + out)`;
  }

  function showView(conv, view) {
    const key = JSON.stringify([
      conv.branch,
      view.branches,
      view.defaultBranch,
      view.branchCount,
      view.incomplete,
      view.forkedFromEarlierSession,
      view.forkedFrom,
      view.unreadableLines,
    ]);
    if (key === viewShown) return;
    viewShown = key;
    const focused = focusKeyIn(ui.branches);
    ui.flags.replaceChildren();
    if (view.incomplete) {
      ui.flags.append(el("span", "flag", "The last line is still being written."));
    }
    if (view.forkedFrom) {
      const flag = el("span", "flag", "");
      flag.append(forkedLink(view.forkedFrom));
      ui.flags.append(flag);
    } else if (view.forkedFromEarlierSession) {
      ui.flags.append(el("span", "flag", "Forked from an earlier session, which is not opened."));
    }
    if (view.unreadableLines > 0) {
      ui.flags.append(
        el("span", "flag warn", `${view.unreadableLines} unreadable line(s), shown as notices.`),
      );
    }
    showBranchTree(conv, view);
    refocus(ui.branches, focused);
  }

  /** The branches as a tree (as Pi's /tree shows them): each under the branch it forks from. */
  function showBranchTree(conv, view) {
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
        const li = branchItem(conv, b, view);
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

  /** Empties what a view drew, for a conversation about to be read. */
  function clear() {
    ui.branches.replaceChildren();
    ui.flags.replaceChildren();
    ui.exports.replaceChildren();
    viewShown = "";
    exportsShown = "";
  }

  return { show, showExports, showTotals, showView, clear, branchOrder: () => branchOrder };
}

function branchItem(conv, b, view) {
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
