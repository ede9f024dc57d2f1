// Wraps conversation text for a terminal of a given width, making it visible on the way
// (src/present/visible.ts): markers like `^[` and `<U+202E>` are never cut, a grapheme cluster is never
// split, and nothing is clipped. Widths are a best effort: East Asian wide characters and
// emoji count two columns, everything else one.
import { makeVisible, markerFor } from "../present/visible.ts";

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const TAB_STOP = 8;
/**
 * Printable ASCII and Latin up to U+02FF, without a space: one code unit, one cluster and one
 * column per character, and nothing to make visible (C1 controls are below U+00A0).
 */
const PLAIN_WORD = /^[\x21-\x7e\u00a0-\u02ff]+$/;
const PLAIN_LINE = /^[\x20-\x7e\u00a0-\u02ff]*$/;
const EMOJI = /\p{Emoji_Presentation}|\p{Regional_Indicator}|\p{Extended_Pictographic}\uFE0F/u;

type Unit = { text: string; width: number };

export type WrapOptions = {
  /** Total columns, indent included. */
  width: number;
  /** Spaces before every line. */
  indent?: number;
  /** Show LF as `^J` and keep everything on one logical line (headers, notices). */
  oneLine?: boolean;
};

/**
 * The lines of `text` laid out in `width` columns: split on LF (unless `oneLine`), words
 * wrapped on spaces, a word longer than a line cut between clusters, TAB expanded to the next
 * 8-column stop of its source line. Leading spaces of a source line are kept, and its wrapped
 * lines go on under them (when they take at most half the line); spaces at a wrap are dropped;
 * trailing spaces are trimmed. Every line is already visible.
 */
export function wrapText(text: string, opts: WrapOptions): string[] {
  const indent = " ".repeat(opts.indent ?? 0);
  const room = Math.max(12, opts.width - indent.length);
  const sources = opts.oneLine ? [text] : text.split("\n");
  const out: string[] = [];
  for (const source of sources) {
    for (const line of layoutLine(source, room, opts.oneLine ?? false)) {
      out.push(line === "" ? "" : indent + line);
    }
  }
  return out;
}

function layoutLine(source: string, room: number, oneLine: boolean): string[] {
  const lines: string[] = [];
  const expanded = expandTabs(source);
  // A wrapped line goes on under its own indentation (code keeps its shape), unless that
  // indentation would leave less than half the line for the text.
  const lead = /^ */.exec(expanded)?.[0].length ?? 0;
  const hang = lead > 0 && room - lead >= Math.max(12, room / 2) ? " ".repeat(lead) : "";
  let line = "";
  let col = 0;
  let wrapped = false;
  const newLine = () => {
    lines.push(line.trimEnd());
    line = hang;
    col = hang.length;
    wrapped = true;
  };
  const put = (u: Unit) => {
    if (col + u.width > room && col > hang.length) newLine();
    line += u.text;
    col += u.width;
  };
  // Most lines are short and plain: nothing to wrap or make visible.
  if (source.length <= room && PLAIN_LINE.test(source)) return [source.trimEnd()];
  for (const token of tokenize(expanded, oneLine)) {
    if (token.space) {
      // Spaces at a wrap vanish; a source line's own indentation stays.
      if (wrapped && col === hang.length) continue;
      if (col + token.width > room) {
        newLine();
        continue;
      }
      line += token.units.map((u) => u.text).join("");
      col += token.width;
      continue;
    }
    if (col > hang.length && col + token.width > room && token.width <= room) newLine();
    if (!token.plain) {
      for (const u of token.units) put(u);
      continue;
    }
    // One column per character: cut a word longer than the line by slicing.
    let rest = token.units[0]?.text ?? "";
    while (rest.length > 0) {
      if (col >= room) newLine();
      const piece = rest.slice(0, room - col);
      line += piece;
      col += piece.length;
      rest = rest.slice(piece.length);
    }
  }
  lines.push(line.trimEnd());
  return lines;
}

/** A run of spaces, or a word; a plain word (PLAIN_WORD) is one unit. */
type Token = { space: boolean; plain: boolean; width: number; units: Unit[] };

function tokenize(source: string, oneLine: boolean): Token[] {
  const tokens: Token[] = [];
  for (const word of source.split(/( +)/)) {
    if (word === "") continue;
    if (word[0] === " ") {
      const units = [{ text: word, width: word.length }];
      tokens.push({ space: true, plain: true, width: word.length, units });
      continue;
    }
    if (PLAIN_WORD.test(word)) {
      const units = [{ text: word, width: word.length }];
      tokens.push({ space: false, plain: true, width: word.length, units });
      continue;
    }
    const units = unitsOf(word, oneLine);
    let width = 0;
    for (const u of units) width += u.width;
    tokens.push({ space: false, plain: false, width, units });
  }
  return tokens;
}

/** One unit per cluster, and one per marker inside a cluster that needs any. */
function unitsOf(word: string, oneLine: boolean): Unit[] {
  const units: Unit[] = [];
  for (const { segment } of graphemes.segment(word)) {
    if (makeVisible(segment, { showNewlines: oneLine }) === segment) {
      units.push({ text: segment, width: clusterWidth(segment) });
      continue;
    }
    let plain = "";
    const flush = () => {
      if (plain !== "") units.push({ text: plain, width: clusterWidth(plain) });
      plain = "";
    };
    for (const ch of segment) {
      const marker = markerFor(ch.codePointAt(0) ?? 0, { showNewlines: oneLine });
      if (marker === null) {
        plain += ch;
        continue;
      }
      flush();
      units.push({ text: marker, width: marker.length });
    }
    flush();
  }
  return units;
}

/**
 * TABs as spaces up to the next stop, counted in columns of the unwrapped source line. A TAB is
 * a grapheme cluster of its own (a control: clusters break before and after it), so the text
 * between two TABs is measured alone, once (measuring each cluster through textWidth made a
 * long tabbed line cost seconds).
 */
function expandTabs(source: string): string {
  if (!source.includes("\t")) return source;
  const pieces = source.split("\t");
  let out = pieces[0]!;
  let col = columnsOf(out);
  for (let i = 1; i < pieces.length; i++) {
    const piece = pieces[i]!;
    const n = TAB_STOP - (col % TAB_STOP);
    out += " ".repeat(n) + piece;
    col += n + columnsOf(piece);
  }
  return out;
}

/** textWidth, with plain text (one column per code unit) counted by its length. */
function columnsOf(text: string): number {
  return PLAIN_LINE.test(text) ? text.length : textWidth(text);
}

/** Columns a grapheme cluster takes: 2 for wide and emoji, else 1. */
export function clusterWidth(cluster: string): number {
  const cp = cluster.codePointAt(0) ?? 0;
  if (cp < 0x1100) return 1;
  if (isWide(cp) || EMOJI.test(cluster)) return 2;
  return 1;
}

/** East Asian Wide and Fullwidth blocks (Unicode EastAsianWidth W/F, the main ranges). */
function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0x33ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xa960 && cp <= 0xa97f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe10 && cp <= 0xfe19) ||
    (cp >= 0xfe30 && cp <= 0xfe6f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/** Display columns of a text, as the wrapper counts them (no LF expected). */
export function textWidth(text: string): number {
  let width = 0;
  for (const u of unitsOf(text, true)) width += u.width;
  return width;
}
