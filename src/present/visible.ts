// The one rule for visible text (seed: The terminal), shared by the terminal, the Console and
// the exports: every character that could drive or spoof a terminal, or hide or reorder what a
// person reads, is shown as a marker, so content can never move the cursor, set a title, write
// the clipboard or reverse a file name. Where each sink differs is an option, not a second rule:
// LF and TAB (one-line fields), and a CR before LF (harmless in the Console's text nodes).

export type VisibleOptions = {
  /** Show LF as `^J` too, so a header, notice or status stays on one line. */
  showNewlines?: boolean;
  /** Show TAB as `^I` too (the Console's one-line fields); elsewhere it only moves right. */
  showTabs?: boolean;
  /** Let a CR that comes just before a LF pass (the Console's text nodes show it as nothing). */
  passCrlf?: boolean;
};

/** A character to show as `marker`: `s.slice(start, end)` is what it stands for. */
export type Marked = { start: number; end: number; marker: string };

/**
 * The first character at or after `from` that is shown as a marker, or null: C0 controls as
 * caret notation (`^@`…`^_`, ESC as `^[`), DEL as `^?`, and C1 controls, U+2028/U+2029, bidi
 * controls, invisible characters, tag characters and lone surrogates as `<U+XXXX>`. LF and TAB
 * pass unless the options say otherwise; ZWJ and ZWNJ always pass (they join scripts and emoji).
 */
export function nextMarked(s: string, from: number, opts: VisibleOptions = {}): Marked | null {
  for (let i = from; i < s.length; i++) {
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
    const isCrlf = cp === 0x0d && opts.passCrlf === true && s.charCodeAt(i + 1) === 0x0a;
    const marker = isCrlf ? null : markerFor(cp, opts);
    if (marker !== null) return { start: i, end: i + width, marker };
    i += width - 1;
  }
  return null;
}

/** `s` with every character `nextMarked` finds replaced by its marker (`s` itself if none). */
export function makeVisible(s: string, opts: VisibleOptions = {}): string {
  let out = "";
  let from = 0;
  for (let m = nextMarked(s, 0, opts); m !== null; m = nextMarked(s, m.end, opts)) {
    out += s.slice(from, m.start) + m.marker;
    from = m.end;
  }
  return from === 0 ? s : out + s.slice(from);
}

/** The marker for one code point (a lone surrogate counts as one), or null when it passes. */
export function markerFor(cp: number, opts: VisibleOptions = {}): string | null {
  if (cp < 0x20) {
    if (cp === 0x09 && opts.showTabs !== true) return null;
    if (cp === 0x0a && opts.showNewlines !== true) return null;
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
