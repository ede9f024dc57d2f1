// What one search may cost (issue 22 item 3, src/search/query.ts), for search.bench.ts. The
// cost of a prefix is the posting lists of every word it starts, so it shows only with a
// vocabulary like a real store's: this corpus is sessions of pseudo-words drawn from 60,000
// with Zipf's law (a few very common, most rare), about QUERY_COST_MIB MiB (45 by default, the
// issue's store). Measured: the probe (250 one-letter words), the costliest query the
// bound allows (eight of the commonest two-letter prefixes and 24 common whole words), and one
// common word, the baseline of the ratios. Beside them, FTS5 alone (its MATCH on the shards,
// no catch-up, no re-read): the probe as the old rule sent it (250 one-letter prefixes) and
// as the bound sends it, so the saving is FTS5's own cost, not a guess.
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { rootsFromSpecs } from "../src/index.ts";
import { createSearch } from "../src/search/index.ts";
import {
  matchExpression,
  QUERY_MAX_PREFIXES,
  QUERY_MAX_TOKENS,
  termsOf,
} from "../src/search/query.ts";
import { SHARDS, shardFile } from "../src/search/shards.ts";
import { assistant, header, project, user, writeSession } from "../test/helpers/reader.ts";
import { mib } from "./report.ts";
import { type Series, summarize, timed } from "./stats.ts";

const VOCABULARY = 60_000;
const MESSAGES_PER_FILE = 400;
const LETTERS = "abcdefghijklmnopqrstuvwxyz";

export type QueryCost = { corpusBytes: number; runs: number; series: Record<string, Series> };

export function measureQueryCost(tmp: string, totalMib: number, runs: number): QueryCost {
  let seed = 7;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const vocab = Array.from({ length: VOCABULARY }, () => {
    let w = "";
    for (let k = 2 + Math.floor(rand() * 9); k > 0; k--) w += LETTERS[Math.floor(rand() * 26)];
    return w;
  });
  // Zipf: rank r drawn with probability about 1/r.
  const word = () => vocab[Math.floor(Math.exp(rand() * Math.log(VOCABULARY))) - 1] ?? "";
  const base = join(tmp, "query-cost");
  mkdirSync(base, { recursive: true });
  const p = project(base, "words", "main");
  let bytes = 0;
  for (let f = 0; bytes < totalMib * 1024 * 1024; f++) {
    const lines: object[] = [
      header(p.projectRoot, { id: `01c00000-0000-7000-8000-${String(f).padStart(12, "0")}` }),
    ];
    let parent: string | null = null;
    for (let m = 0; m < MESSAGES_PER_FILE; m++) {
      const text = Array.from({ length: 20 + Math.floor(rand() * 200) }, word).join(" ");
      const id = `m${m}`;
      lines.push(m % 2 ? assistant(id, parent, text, m + 1) : user(id, parent, text, m + 1));
      parent = id;
    }
    bytes += statSync(writeSession(p.sessionsDir, `w${f}.jsonl`, lines)).size;
  }
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: "main" }];
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, []),
    cacheDir: join(base, "cache"),
  });
  if (!opened.ok) throw new Error(opened.reason);
  const search = opened.search;
  search.refresh();
  // The beginnings that start the most use of words, weighted as the words are drawn.
  const weight = new Map<string, number>();
  for (const [i, w] of vocab.entries()) {
    weight.set(w.slice(0, 2), (weight.get(w.slice(0, 2)) ?? 0) + 1 / (i + 1));
  }
  const prefixes = [...weight.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, QUERY_MAX_PREFIXES)
    .map(([k]) => k);
  const whole = vocab.slice(0, QUERY_MAX_TOKENS - QUERY_MAX_PREFIXES).map((w) => `"${w}"`);
  const queries: Record<string, string> = {
    "one common word": `"${vocab[0]}"`,
    "the probe: 250 one-letter words": Array.from({ length: 250 }, (_, i) => LETTERS[i % 26]).join(
      " ",
    ),
    [`the bound: ${QUERY_MAX_PREFIXES} prefixes + ${whole.length} whole words`]: [
      ...prefixes,
      ...whole,
    ].join(" "),
  };
  const series: Record<string, Series> = {};
  for (const [name, q] of Object.entries(queries)) {
    search.search(q, 20);
    const samples: number[] = [];
    for (let r = 0; r < runs; r++) {
      const t = timed(() => search.search(q, 20));
      if (!t.value.ok) throw new Error(`${name}: ${JSON.stringify(t.value)}`);
      samples.push(t.ms);
    }
    series[name] = summarize(samples);
  }
  search.close();
  const expressions: Record<string, string> = {
    "FTS5 alone: the probe as the old rule sent it (250 prefixes)": Array.from(
      { length: 250 },
      (_, i) => `"${LETTERS[i % 26]}"*`,
    ).join(" "),
  };
  for (const [name, q] of Object.entries(queries)) {
    const terms = termsOf(q);
    if (terms !== null && name !== "one common word") {
      expressions[`FTS5 alone: ${name.replace(/^the /, "")}`] = matchExpression(terms);
    }
  }
  const shards = Array.from({ length: SHARDS }, (_, k) => {
    const db = new DatabaseSync(shardFile(join(base, "cache"), k), { readOnly: true });
    return {
      db,
      match: db.prepare("SELECT rowid FROM texts WHERE texts MATCH ? ORDER BY rowid DESC LIMIT 20"),
    };
  });
  for (const [name, expression] of Object.entries(expressions)) {
    const samples: number[] = [];
    for (let r = 0; r < runs; r++) {
      samples.push(timed(() => shards.map((s) => s.match.all(expression))).ms);
    }
    series[name] = summarize(samples);
  }
  for (const s of shards) s.db.close();
  process.stdout.write(`query cost corpus: ${mib(bytes)} MiB of Zipf-distributed words\n`);
  return { corpusBytes: bytes, runs, series };
}
