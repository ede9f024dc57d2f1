// Text for the Console: every string from a conversation reaches the page through these
// helpers, as text nodes only. Controls that could hide or reorder text (C0, C1, DEL, bidi
// controls, invisible characters) are shown as visible markers, by the terminal's own rule.
import { formatSize as formatBytes, nextMarked } from "./present.js";

/** Creates an element with fixed classes (never from conversation text) and text content. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Appends `text` to `parent` as text nodes, with each control shown as a marker span (the one
 * rule of src/present/visible.ts). With `oneLine`, LF and tab are markers too (titles, table
 * cells); otherwise a CR before LF passes.
 */
export function appendText(parent, text, oneLine = false) {
  const opts = oneLine ? ONE_LINE : MULTI_LINE;
  let from = 0;
  for (let m = nextMarked(text, 0, opts); m !== null; m = nextMarked(text, m.end, opts)) {
    if (m.start > from) parent.append(document.createTextNode(text.slice(from, m.start)));
    parent.append(el("span", "ctl", m.marker));
    from = m.end;
  }
  if (from < text.length) parent.append(document.createTextNode(text.slice(from)));
  return parent;
}

const ONE_LINE = { showNewlines: true, showTabs: true };
const MULTI_LINE = { passCrlf: true };

/** An element holding `text` with controls made visible. */
export function textEl(tag, className, text, oneLine = false) {
  return appendText(el(tag, className), text, oneLine);
}

/** The local zone of `d` as "UTC", "UTC+2" or "UTC-3:30". */
function zoneOf(d) {
  const off = -d.getTimezoneOffset();
  if (off === 0) return "UTC";
  const h = Math.trunc(Math.abs(off) / 60);
  const m = Math.abs(off) % 60;
  return `UTC${off > 0 ? "+" : "-"}${h}${m ? `:${String(m).padStart(2, "0")}` : ""}`;
}

/** `2026-01-01 12:34 UTC+1` in local time with its zone, or "—". */
export function formatTime(iso) {
  if (typeof iso !== "string") return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso.slice(0, 40);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())} ${zoneOf(d)}`;
}

/** "just now", "5 min ago", "3 h ago", "2 days ago", or "" for a bad or future time. */
export function relativeTime(iso, now = Date.now()) {
  const t = new Date(typeof iso === "string" ? iso : "").getTime();
  if (Number.isNaN(t)) return "";
  const s = Math.round((now - t) / 1000);
  if (s < -60) return "";
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const days = Math.floor(s / 86400);
  return days === 1 ? "1 day ago" : `${days} days ago`;
}

/** A `<time>`: local date, time and zone, how long ago, and the full UTC time on hover. */
export function timeEl(iso, className = "when") {
  const node = el("time", className);
  if (typeof iso !== "string") {
    node.textContent = "—";
    return node;
  }
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return appendText(node, iso.slice(0, 40), true);
  node.dateTime = d.toISOString();
  node.title = `${d.toISOString().replace("T", " ").replace("Z", "")} UTC`;
  node.append(formatTime(iso));
  const ago = relativeTime(iso);
  if (ago) node.append(el("span", "ago", ` · ${ago}`));
  return node;
}

/** A catalogue row's size, or "—" when it has none. */
export function formatSize(bytes) {
  return typeof bytes === "number" ? formatBytes(bytes) : "—";
}
