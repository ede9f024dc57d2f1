// `conversation search <query> [sources] [--json] [--limit N]`: full-text search (src/search)
// over every branch of every conversation in the sources. Text output: one hit per block
// (title, where, the snippet with matches in [brackets], and the command that reads it).
import type { Catalogue } from "../protocol/chat-01.ts";
import type { Root } from "../reader/sources.ts";
import { createSearch, type SearchHit } from "../search/index.ts";
import type { SourceFlags } from "./config.ts";
import { commandPrefix } from "./invocation.ts";
import type { Io } from "./io.ts";
import { makeVisible } from "./visible.ts";

export type SearchCommand = {
  name: "search";
  sources: SourceFlags;
  query: string;
  json: boolean;
  limit: number;
};

/** Exit status 0 (hits or none), 1 refused (a bad query, an unusable cache directory). */
export function runSearch(
  roots: () => Root[],
  catalogue: () => Catalogue,
  cmd: SearchCommand,
  io: Io,
): number {
  const opened = createSearch({ roots, catalogue });
  if (!opened.ok) {
    io.err(`refused: search-unavailable: ${makeVisible(opened.reason, { showNewlines: true })}\n`);
    return 1;
  }
  try {
    const result = opened.search.search(cmd.query, cmd.limit);
    if (!result.ok) {
      const { code, message } = result.refusal;
      io.err(`refused: ${code}: ${makeVisible(message, { showNewlines: true })}\n`);
      return 1;
    }
    if (cmd.json) {
      io.out(`${JSON.stringify(result.hits)}\n`);
      return 0;
    }
    if (result.hits.length === 0) {
      io.out("No match.\n");
      return 0;
    }
    io.out(`${result.hits.map(hitText).join("\n")}`);
    return 0;
  } finally {
    opened.search.close();
  }
}

function hitText(hit: SearchHit): string {
  const one = (s: string) => makeVisible(s, { showNewlines: true });
  let marked = "";
  let at = 0;
  for (const [from, to] of hit.matches) {
    marked += `${hit.snippet.slice(at, from)}[${hit.snippet.slice(from, to)}]`;
    at = to;
  }
  marked += hit.snippet.slice(at);
  return [
    one(hit.title ?? hit.conversation),
    `  ${one(`${hit.project} / ${hit.seat} · branch ${hit.branch} · entry ${hit.entry}${hit.timestamp ? ` · ${hit.timestamp}` : ""}`)}`,
    `  ${one(marked)}`,
    `  ${commandPrefix()} read ${hit.conversation} --branch ${one(hit.branch)}`,
    "",
  ].join("\n");
}
