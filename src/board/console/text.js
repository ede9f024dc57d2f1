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

/** `2026-01-01 12:34` in local time, or "—". */
export function formatTime(iso) {
  if (typeof iso !== "string") return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso.slice(0, 40);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function formatSize(bytes) {
  if (typeof bytes !== "number") return "—";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
