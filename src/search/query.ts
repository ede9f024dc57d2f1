// A person's query as FTS5 syntax, phrase checks, and a hit's snippet. The index keeps no
// positions (detail=none: smaller, faster to build), so a query asks FTS5 for entries holding
// every word, and a "quoted phrase" (or a word that is several tokens, like foo.bar) is then
// checked against the entry's text, re-read from the file. Nothing the person types is FTS5
// syntax: every token is quoted, so no query can be malformed or reach another column.
//
// What one query may cost is bounded here (issue 22 item 3): FTS5 merges the posting lists
// of every word a prefix matches before it returns a row, so a one-letter prefix reads a good
// part of the index, and 250 of them took seconds. A word shorter than PREFIX_MIN_CHARS
// matches only itself; a repeated token is looked up once; a query holds at most
// QUERY_MAX_TOKENS tokens, of which at most QUERY_MAX_PREFIXES are prefixes.

export const QUERY_MAX_CHARS = 500;
/** Distinct tokens one query may hold: each is one posting list FTS5 reads. */
export const QUERY_MAX_TOKENS = 32;
/** Distinct prefixes one query may hold: each merges the lists of every word it starts. */
export const QUERY_MAX_PREFIXES = 8;
/** A typed word shorter than this (in characters) matches as a whole word, not as a prefix. */
export const PREFIX_MIN_CHARS = 2;
const SNIPPET_CHARS = 180;

/** One thing to find: its tokens, whether they must be adjacent, whether the last is a prefix. */
export type Term = { text: string; tokens: string[]; phrase: boolean; prefix: boolean };

/** A token of a text and where it is: `[from, to)` in the text as given, `token` folded. */
type Span = { token: string; from: number; to: number };

// Letters, digits and marks: marks are removed by the folding (remove_diacritics 2), so a
// decomposed "e\u0301" is one token "e", as FTS5 makes it; everything else separates tokens.
const WORDISH = /[\p{L}\p{N}\p{M}]+/gu;
const ASCII = /^[\0-\x7f]*$/;

/** A word as the index folds it: diacritics removed (NFD, marks dropped), then lower case. */
function fold(word: string): string {
  if (ASCII.test(word)) return word.toLowerCase();
  return word
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();
}

/** The tokens of `text` with their places in it, in order (one tokenizer for match and mark). */
function* spansOf(text: string): Generator<Span> {
  for (const m of text.matchAll(WORDISH)) {
    const from = m.index;
    const to = from + m[0].length;
    for (const token of fold(m[0]).split(/[^\p{L}\p{N}]+/u)) {
      if (token !== "") yield { token, from, to };
    }
  }
}

/** Tokens as FTS5's unicode61 tokenizer (remove_diacritics 2) makes them, near enough. */
export function tokensOf(text: string): string[] {
  return Array.from(spansOf(text), (s) => s.token);
}

/**
 * The terms of `query`, or null when it holds no word. A typed (unquoted) word is a prefix
 * when its last token has at least PREFIX_MIN_CHARS characters.
 */
export function termsOf(query: string): Term[] | null {
  const terms: Term[] = [];
  for (const m of query.matchAll(/"([^"]*)"|(\S+)/g)) {
    const quoted = m[1];
    const text = (quoted ?? m[2] ?? "").trim();
    const tokens = tokensOf(text);
    if (tokens.length === 0) continue;
    const isPhrase = quoted !== undefined || tokens.length > 1;
    const long = [...(tokens.at(-1) ?? "")].length >= PREFIX_MIN_CHARS;
    terms.push({ text, tokens, phrase: isPhrase, prefix: quoted === undefined && long });
  }
  return terms.length ? terms : null;
}

export type ParsedQuery = { ok: true; terms: Term[] } | { ok: false; message: string };

/**
 * A query's terms, or why it is refused (the message a person reads, in the Console and the
 * terminal alike): too long, no word, too many words or prefixes for one query.
 */
export function parseQuery(query: string): ParsedQuery {
  if (query.length > QUERY_MAX_CHARS) {
    return { ok: false, message: `A query is at most ${QUERY_MAX_CHARS} characters.` };
  }
  const terms = termsOf(query);
  if (terms === null) return { ok: false, message: "The query has no word to search for." };
  const parts = matchParts(terms);
  if (parts.size > QUERY_MAX_TOKENS) {
    return {
      ok: false,
      message: `A query holds at most ${QUERY_MAX_TOKENS} different words; this one has ${parts.size}. Leave some out.`,
    };
  }
  const prefixes = [...parts].filter((p) => p.endsWith("*")).length;
  if (prefixes > QUERY_MAX_PREFIXES) {
    return {
      ok: false,
      message: `A query matches at most ${QUERY_MAX_PREFIXES} words as beginnings of words; this one has ${prefixes}. Put the others in "quotes" to match them whole, or leave some out.`,
    };
  }
  return { ok: true, terms };
}

/** The FTS5 MATCH expression: every token of every term, ANDed; a typed word is a prefix. */
export function matchExpression(terms: readonly Term[]): string {
  return [...matchParts(terms)].join(" ");
}

/** Each distinct token to look up, as FTS5 syntax: a repeated one costs nothing more. */
function matchParts(terms: readonly Term[]): Set<string> {
  const parts = new Set<string>();
  for (const t of terms) {
    t.tokens.forEach((tok, i) => {
      const last = i === t.tokens.length - 1;
      parts.add(`"${tok.replaceAll('"', '""')}"${t.prefix && last ? "*" : ""}`);
    });
  }
  return parts;
}

/** Whether a query needs the text checked: a phrase's tokens must be adjacent, in order. */
export function needsCheck(terms: readonly Term[]): boolean {
  return terms.some((t) => t.phrase);
}

/** Whether `text` holds every phrase of `terms` as adjacent tokens. */
export function holdsPhrases(text: string, terms: readonly Term[]): boolean {
  const tokens = tokensOf(text);
  return terms.every((t) => !t.phrase || hasRun(tokens, t.tokens, t.prefix));
}

function hasRun(tokens: readonly string[], run: readonly string[], lastIsPrefix: boolean): boolean {
  const n = run.length;
  outer: for (let i = 0; i + n <= tokens.length; i++) {
    for (let k = 0; k < n; k++) {
      const tok = tokens[i + k]!;
      const want = run[k]!;
      const ok = lastIsPrefix && k === n - 1 ? tok.startsWith(want) : tok === want;
      if (!ok) continue outer;
    }
    return true;
  }
  return false;
}

const SNIPPET_LEAD = 60;
const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" });

/**
 * A window of `text` around the first match, and where each match in it is (`[from, to)` in
 * the snippet). Matches are found with the tokens the index matched on (same splitting, case
 * and diacritics folded), then mapped back to the text as written: "empty input" marks
 * "empty-input", "tokenizér" marks "tokenizer". A whole token is marked, except for a typed
 * prefix, where only the part it covers is (as typed: "zanzib" in "zanzibarite"). The window's
 * ends never split a character (a surrogate pair) or a letter from its marks.
 */
export function snippetOf(
  text: string,
  terms: readonly Term[],
): { snippet: string; matches: [number, number][] } {
  const flat = text.replace(/\s+/g, " ");
  const found = matchesIn(flat, terms);
  const first = found[0]?.[0] ?? -1;
  const from = first < 0 ? 0 : graphemeStart(flat, Math.max(0, first - SNIPPET_LEAD));
  const to = graphemeEnd(flat, Math.min(flat.length, from + SNIPPET_CHARS));
  const head = from > 0 ? "…" : "";
  const snippet = `${head}${flat.slice(from, to)}${to < flat.length ? "…" : ""}`;
  const matches: [number, number][] = [];
  for (const [a, b] of found) {
    const s = Math.max(a, from);
    const e = Math.min(b, to);
    if (s >= e) continue;
    const last = matches.at(-1);
    const at: [number, number] = [head.length + s - from, head.length + e - from];
    if (last && at[0] <= last[1]) last[1] = Math.max(last[1], at[1]);
    else matches.push(at);
  }
  return { snippet, matches };
}

/** Where the first match of `terms` in `text` starts, or -1. */
export function firstMatchAt(text: string, terms: readonly Term[]): number {
  return matchesIn(text, terms)[0]?.[0] ?? -1;
}

/**
 * Every match of `terms` in `text` (`[from, to)`, sorted) up to the end of the snippet window
 * that the first one opens: the rest of a long text is not tokenized.
 */
function matchesIn(text: string, terms: readonly Term[]): [number, number][] {
  const longest = Math.max(...terms.map((t) => t.tokens.length));
  const recent: Span[] = [];
  const out: [number, number][] = [];
  let stopAt = Number.POSITIVE_INFINITY;
  let past = 0;
  for (const span of spansOf(text)) {
    if (span.from >= stopAt && ++past > longest) break;
    recent.push(span);
    if (recent.length > longest) recent.shift();
    for (const t of terms) {
      const n = t.tokens.length;
      if (recent.length < n) continue;
      const run = recent.slice(recent.length - n);
      if (!run.every((s, k) => tokenMatches(s.token, t.tokens[k] ?? "", t.prefix && k === n - 1)))
        continue;
      const last = run[n - 1] ?? span;
      const want = t.tokens[n - 1] ?? "";
      const end = t.prefix && last.token !== want ? prefixEnd(text, last, want.length) : last.to;
      const start = run[0]?.from ?? span.from;
      out.push([start, end]);
      if (stopAt === Number.POSITIVE_INFINITY) {
        stopAt = Math.max(0, start - SNIPPET_LEAD) + SNIPPET_CHARS;
      }
    }
  }
  return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

function tokenMatches(token: string, want: string, prefix: boolean): boolean {
  return prefix ? token.startsWith(want) : token === want;
}

/**
 * Where the first `folded` characters of `span`'s token end in the text: code point by code
 * point, so "tokén" with prefix "toke" ends after "é" (and after any mark that follows it).
 */
function prefixEnd(text: string, span: Span, folded: number): number {
  const word = text.slice(span.from, span.to);
  // A word that folds to several tokens (rare) is marked whole: its pieces do not map back.
  if (fold(word) !== span.token) return span.to;
  let acc = 0;
  let at = 0;
  for (const cp of word) {
    if (acc >= folded && !/\p{M}/u.test(cp)) break;
    acc += fold(cp).length;
    at += cp.length;
  }
  return span.from + at;
}

/** The start of the character (grapheme) holding `i`: a window never opens mid-character. */
function graphemeStart(text: string, i: number): number {
  if (i <= 0 || i >= text.length) return i;
  const lo = Math.max(0, i - 64);
  let best = lo;
  for (const g of graphemes.segment(text.slice(lo, Math.min(text.length, i + 64)))) {
    if (lo + g.index > i) break;
    best = lo + g.index;
  }
  return best;
}

/** The end of the character (grapheme) holding `i - 1`: a window never closes mid-character. */
function graphemeEnd(text: string, i: number): number {
  if (i <= 0 || i >= text.length) return i;
  const lo = Math.max(0, i - 64);
  for (const g of graphemes.segment(text.slice(lo, Math.min(text.length, i + 64)))) {
    const end = lo + g.index + g.segment.length;
    if (end >= i) return end;
  }
  return i;
}
