// A person's query as FTS5 syntax, phrase checks, and a hit's snippet. The index keeps no
// positions (detail=none: smaller, faster to build), so a query asks FTS5 for entries holding
// every word, and a "quoted phrase" (or a word that is several tokens, like foo.bar) is then
// checked against the entry's text, re-read from the file. Nothing the person types is FTS5
// syntax: every token is quoted, so no query can be malformed or reach another column.

export const QUERY_MAX_CHARS = 500;
const SNIPPET_CHARS = 180;

/** One thing to find: its tokens, whether they must be adjacent, whether the last is a prefix. */
export type Term = { text: string; tokens: string[]; phrase: boolean; prefix: boolean };

/** Tokens as FTS5's unicode61 tokenizer (remove_diacritics 2) makes them, near enough. */
export function tokensOf(text: string): string[] {
  return text
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t !== "");
}

/** The terms of `query`, or null when it holds no word. */
export function termsOf(query: string): Term[] | null {
  const terms: Term[] = [];
  for (const m of query.matchAll(/"([^"]*)"|(\S+)/g)) {
    const quoted = m[1];
    const text = (quoted ?? m[2] ?? "").trim();
    const tokens = tokensOf(text);
    if (tokens.length === 0) continue;
    const isPhrase = quoted !== undefined || tokens.length > 1;
    terms.push({ text, tokens, phrase: isPhrase, prefix: quoted === undefined });
  }
  return terms.length ? terms : null;
}

/** The FTS5 MATCH expression: every token of every term, ANDed; a typed word is a prefix. */
export function matchExpression(terms: readonly Term[]): string {
  const parts: string[] = [];
  for (const t of terms) {
    t.tokens.forEach((tok, i) => {
      const last = i === t.tokens.length - 1;
      parts.push(`"${tok.replaceAll('"', '""')}"${t.prefix && last ? "*" : ""}`);
    });
  }
  return parts.join(" ");
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

/**
 * A window of `text` around the first match of any term, and where each match in it is
 * (`[from, to)` in the snippet). Matching here is case-insensitive on the words as typed.
 */
export function snippetOf(
  text: string,
  terms: readonly Term[],
): { snippet: string; matches: [number, number][] } {
  const flat = text.replace(/\s+/g, " ");
  const lower = flat.toLowerCase();
  const needles = terms.map((t) => t.text.toLowerCase()).filter((n) => n !== "");
  let first = -1;
  for (const n of needles) {
    const i = lower.indexOf(n);
    if (i >= 0 && (first < 0 || i < first)) first = i;
  }
  const from = first < 0 ? 0 : Math.max(0, first - 60);
  const to = Math.min(flat.length, from + SNIPPET_CHARS);
  const head = from > 0 ? "…" : "";
  const snippet = `${head}${flat.slice(from, to)}${to < flat.length ? "…" : ""}`;
  const matches: [number, number][] = [];
  const window = lower.slice(from, to);
  for (const n of needles) {
    for (let i = window.indexOf(n); i >= 0; i = window.indexOf(n, i + n.length)) {
      matches.push([head.length + i, head.length + i + n.length]);
    }
  }
  matches.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const m of matches) {
    const last = merged.at(-1);
    if (last && m[0] <= last[1]) last[1] = Math.max(last[1], m[1]);
    else merged.push([m[0], m[1]]);
  }
  return { snippet, matches: merged };
}
