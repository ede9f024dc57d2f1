// The Usage view (`#v=usage`): what the agents spent, from GET /api/usage in the viewer's own
// time zone. Cost and tokens per day, each a stacked bar chart (by project or by model, the
// six largest and the rest as "Other") with the table of the same figures beside it, then the
// most expensive conversations, each a link that opens it. Figures are formatted by
// src/present/usage-report.ts, as the terminal's `conversation usage` prints them.
import { fetchUsage } from "./api.js";
import { refusalBox } from "./controls.js";
import { formatCount, formatUsd } from "./present.js";
import { el, textEl } from "./text.js";
import { PALETTE, stackedBars } from "./usage-chart.js";

const $ = (id) => document.getElementById(id);
/** Keys drawn on their own; the rest are summed as "Other". */
const STACKS = 6;
const TOP_CONVERSATIONS = 10;
/** The key of what the named keys leave. */
const OTHER = "Other";

/** The last `n` days' first day (YYYY-MM-DD) in the viewer's zone; null for "all". */
function sinceOf(n) {
  if (n === "all") return null;
  const d = new Date();
  d.setDate(d.getDate() - (Number(n) - 1));
  const p = (v) => String(v).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** `{ show, hide }` of the view; it loads each time it is shown or a control changes. */
export function createUsage() {
  const ui = {
    view: $("usage"),
    stack: $("u-stack"),
    range: $("u-range"),
    note: $("usage-note"),
    total: $("usage-total"),
    cost: $("u-cost"),
    tokens: $("u-tokens"),
    top: $("u-top"),
  };
  const charts = [];
  let gen = 0;

  async function load() {
    const mine = ++gen;
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const since = sinceOf(ui.range.value);
    const q = { tz, ...(since ? { since } : {}) };
    ui.note.textContent = "Counting…";
    const [days, top] = await Promise.all([
      fetchUsage({ ...q, by: "day" }),
      fetchUsage({ ...q, by: "conversation" }),
    ]);
    if (mine !== gen) return;
    for (const c of charts.splice(0)) c.destroy();
    for (const r of [days, top]) {
      if (!r.ok) {
        ui.note.replaceChildren(refusalBox(r.refusal, () => void load()));
        return;
      }
    }
    ui.note.textContent = "";
    const by = ui.stack.value === "model" ? "models" : "projects";
    const word = by === "models" ? "model" : "project";
    ui.total.textContent =
      `${formatUsd(days.totals.cost)} and ${formatCount(days.totals.total)} tokens in ` +
      `${formatCount(days.totals.requests)} requests, days in ${days.timeZone}` +
      (days.unpriced.length ? `; no price for ${days.unpriced.join(", ")} (counted as $0)` : "");
    // One order for both charts: the costliest first (then the most tokens), so a key has
    // the same place and colour in each.
    const sums = new Map();
    for (const r of days.rows) {
      for (const p of r[by]) {
        const had = sums.get(p.name) ?? { cost: 0, total: 0 };
        sums.set(p.name, { cost: had.cost + p.cost, total: had.total + p.total });
      }
    }
    const ranked = [...sums]
      .sort((a, b) => b[1].cost - a[1].cost || b[1].total - a[1].total)
      .map(([k]) => k);
    const named = ranked.length > STACKS + 1 ? ranked.slice(0, STACKS) : ranked;
    const keys = ranked.length > named.length ? [...named, OTHER] : named;
    block(ui.cost, days.rows, by, keys, named, "cost", formatUsd, "Cost per day (USD)", word);
    block(ui.tokens, days.rows, by, keys, named, "total", formatCount, "Tokens per day", word);
    topTable(top.rows.slice(0, TOP_CONVERSATIONS));
  }

  /**
   * One chart and its table: `field` of each day's parts (`by`), stacked in `keys` order (the
   * costliest first, the same order and colours in both charts).
   */
  function block(box, rows, by, keys, named, field, format, title, word) {
    const figureOf = (r, key) => {
      if (key !== OTHER) return r[by].find((p) => p.name === key)?.[field] ?? 0;
      return r[by].filter((p) => !named.includes(p.name)).reduce((n, p) => n + p[field], 0);
    };
    const stacks = keys.map((name) => ({ name, values: rows.map((r) => figureOf(r, name)) }));
    box.querySelector("h3").textContent = `${title}, by ${word}`;
    const chart = box.querySelector(".usage-chart");
    chart.setAttribute(
      "aria-label",
      `${title}, stacked by ${word}, ${rows.length} days. The table beside it has every figure.`,
    );
    if (rows.length === 0) {
      chart.replaceChildren(el("p", "usage-empty", "No usage recorded in these days."));
    } else {
      charts.push(
        stackedBars(
          chart,
          rows.map((r) => r.key),
          stacks,
          format,
        ),
      );
    }
    box.querySelector(".usage-legend").replaceChildren(...keys.map((k, i) => keyItem(k, i)));
    const head = el("tr");
    for (const h of ["Day", "Total", `By ${word}`]) {
      const th = el("th", "", h);
      th.scope = "col";
      head.append(th);
    }
    const body = [];
    for (let at = rows.length - 1; at >= 0; at--) {
      const r = rows[at];
      const tr = el("tr");
      const day = el("th", "", r.key);
      day.scope = "row";
      const parts = el("ul", "usage-parts");
      stacks.forEach((s, i) => {
        const v = s.values[at];
        if (v > 0) parts.append(keyItem(s.name, i, format(v)));
      });
      const cell = el("td");
      cell.append(parts);
      tr.append(day, el("td", "num", format(r[field])), cell);
      body.push(tr);
    }
    box
      .querySelector("table")
      .replaceChildren(
        textEl("caption", "", `${title}, by ${word}, newest first`, true),
        thead(head),
        tbody(body.length ? body : [emptyRow(3)]),
      );
  }

  function topTable(rows) {
    const head = el("tr");
    for (const h of ["Conversation", "Project", "Harness", "Last day", "Tokens", "Cost"]) {
      const th = el("th", "", h);
      th.scope = "col";
      head.append(th);
    }
    const body = rows.map((r) => {
      const tr = el("tr");
      const name = el("th");
      name.scope = "row";
      const link = textEl("a", "", r.conversation?.title ?? "(untitled)", true);
      link.href = `#c=${encodeURIComponent(r.key)}`;
      name.append(link);
      tr.append(
        name,
        textEl("td", "", r.conversation?.project ?? "", true),
        el("td", "", r.conversation?.harness === "claude-code" ? "Claude Code" : "Pi"),
        el("td", "", r.conversation?.lastDay ?? ""),
        el("td", "num", formatCount(r.total)),
        el("td", "num", formatUsd(r.cost)),
      );
      return tr;
    });
    ui.top.replaceChildren(
      el("caption", "", "The most expensive conversations in these days; each link opens it"),
      thead(head),
      tbody(body.length ? body : [emptyRow(6)]),
    );
  }

  ui.stack.addEventListener("change", () => void load());
  ui.range.addEventListener("change", () => void load());
  return {
    /** Shown over the whole width: `data-view="usage"` makes the list and conversation go. */
    show() {
      document.body.dataset.view = "usage";
      ui.view.hidden = false;
      void load();
    },
    /** Hidden; the route sets `data-view` to the screen it shows instead (list or detail). */
    hide() {
      ui.view.hidden = true;
    },
  };
}

/** A legend item: the key's colour, its name, and its figure when given. */
function keyItem(name, i, figure) {
  const item = el("li");
  const swatch = el("span", "swatch");
  swatch.style.background = PALETTE[i % PALETTE.length];
  item.append(swatch, textEl("span", "", name, true));
  if (figure !== undefined) item.append(el("span", "num", ` ${figure}`));
  return item;
}

function thead(row) {
  const h = el("thead");
  h.append(row);
  return h;
}

function tbody(rows) {
  const b = el("tbody");
  b.append(...rows);
  return b;
}

function emptyRow(span) {
  const tr = el("tr");
  const td = el("td", "usage-empty", "No usage recorded in these days.");
  td.colSpan = span;
  tr.append(td);
  return tr;
}
