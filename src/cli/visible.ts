// Makes conversation text safe to print in a terminal (seed: The terminal). Every character
// that could drive or spoof the terminal is replaced by a visible marker, so content can never
// move the cursor, set a title, write the clipboard or reorder what the reader sees.
// TAB passes: it only moves the cursor right (the wrapper expands it to spaces).

export type VisibleOptions = {
  /** Show LF as `^J` too, so a header, notice or status stays on one line. */
  showNewlines?: boolean;
};

/**
 * `s` with C0 controls as caret notation (`^@`…`^_`, ESC as `^[`), DEL as `^?`, and C1
 * controls, U+2028/U+2029, bidi controls, invisible characters, tag characters and lone
 * surrogates as `<U+XXXX>`. LF passes unless `showNewlines`; TAB, ZWJ and ZWNJ always pass.
 */
export function makeVisible(s: string, opts: VisibleOptions = {}): string {
  const showNewlines = opts.showNewlines ?? false;
  let out = "";
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // Fast path: printable ASCII and most of the BMP pass without a lookup.
    if (c >= 0x20 && c < 0x7f) continue;
    let cp = c;
    let width = 1;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        cp = (c - 0xd800) * 0x400 + (d - 0xdc00) + 0x10000;
        width = 2;
      }
    }
    const marker = markerFor(cp, showNewlines);
    if (marker !== null) {
      out += s.slice(from, i) + marker;
      from = i + width;
    }
    i += width - 1;
  }
  return from === 0 ? s : out + s.slice(from);
}

/** The marker for one code point (a lone surrogate counts as one), or null when it passes. */
export function markerFor(cp: number, showNewlines = false): string | null {
  if (cp < 0x20) {
    if (cp === 0x09) return null;
    if (cp === 0x0a && !showNewlines) return null;
    return `^${String.fromCharCode(cp + 0x40)}`;
  }
  if (cp === 0x7f) return "^?";
  return isHidden(cp) ? codePointMarker(cp) : null;
}

/** `<U+XXXX>`: at least four upper-case hex digits. */
export function codePointMarker(cp: number): string {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/** C1 controls, line and paragraph separators, bidi controls, invisibles, tags, surrogates. */
function isHidden(cp: number): boolean {
  return (
    (cp >= 0x80 && cp <= 0x9f) ||
    cp === 0x061c ||
    cp === 0x200b ||
    cp === 0x200e ||
    cp === 0x200f ||
    (cp >= 0x2028 && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0xfeff ||
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0xe0000 && cp <= 0xe007f)
  );
}
