// Text for the Console: every string from a conversation reaches the page through these
// helpers, as text nodes only. Controls that could hide or reorder text (C0, C1, DEL, bidi
// controls, invisible characters) are shown as visible markers, as the terminal shows them.

/** Creates an element with fixed classes (never from conversation text) and text content. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** How a code point is shown, or null when it is shown as itself. */
function markerFor(cp, oneLine) {
  if (cp === 0x0a) return oneLine ? "^J" : null;
  if (cp === 0x09) return oneLine ? "^I" : null;
  if (cp < 0x20) return `^${String.fromCharCode(cp + 0x40)}`;
  if (cp === 0x7f) return "^?";
  if (
    (cp >= 0x80 && cp <= 0x9f) ||
    cp === 0x061c ||
    cp === 0x200b ||
    cp === 0x200e ||
    cp === 0x200f ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0xfeff ||
    // A lone surrogate (codePointAt gives it alone): the terminal and the exports mark it too.
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0xe0000 && cp <= 0xe007f)
  ) {
    return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
  }
  return null;
}

/**
 * Appends `text` to `parent` as text nodes, with each control shown as a marker span. With
 * `oneLine`, LF and tab are markers too (titles, table cells). CR before LF passes.
 */
export function appendText(parent, text, oneLine = false) {
  let run = "";
  let i = 0;
  while (i < text.length) {
    const cp = text.codePointAt(i);
    const width = cp > 0xffff ? 2 : 1;
    const isCrlf = cp === 0x0d && !oneLine && text.charCodeAt(i + 1) === 0x0a;
    const marker = isCrlf ? null : markerFor(cp, oneLine);
    if (marker === null) {
      run += text.slice(i, i + width);
    } else {
      if (run) parent.append(document.createTextNode(run));
      run = "";
      parent.append(el("span", "ctl", marker));
    }
    i += width;
  }
  if (run) parent.append(document.createTextNode(run));
  return parent;
}

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

export function formatSize(bytes) {
  if (typeof bytes !== "number") return "—";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
