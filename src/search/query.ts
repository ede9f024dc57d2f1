// A person's query as FTS5 syntax, and a hit's snippet. Every word becomes a quoted prefix
// term ("pars"* finds "parser"), a "quoted phrase" stays a phrase; terms are ANDed. Nothing
// the person types is FTS5 syntax, so no query can be malformed or reach another column.

export const QUERY_MAX_CHARS = 500;
const SNIPPET_CHARS = 180;

export type Term = { text: string; prefix: boolean };

/** The terms of `query`, or null when it holds no word. */
export function termsOf(query: string): Term[] | null {
  const terms: Term[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (const m of query.matchAll(re)) {
    const phrase = m[1];
    const word = m[2];
    if (phrase !== undefined) {
      if (/[\p{L}\p{N}]/u.test(phrase)) terms.push({ text: phrase.trim(), prefix: false });
    } else if (word !== undefined && /[\p{L}\p{N}]/u.test(word)) {
      terms.push({ text: word, prefix: true });
    }
  }
  return terms.length ? terms : null;
}

/** The FTS5 MATCH expression for `terms`. */
export function matchExpression(terms: readonly Term[]): string {
  return terms.map((t) => `"${t.text.replaceAll('"', '""')}"${t.prefix ? "*" : ""}`).join(" ");
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
