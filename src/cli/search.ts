// `conversation search <query> [sources] [--json] [--limit N]`: full-text search (src/search)
// over every branch of every conversation in the sources. Text output: one hit per block
// (title, where, the snippet with matches in [brackets], and the command that reads it).

import { formatTime } from "../present/time.ts";
import { makeVisible } from "../present/visible.ts";
import type { Catalogue } from "../protocol/chat-01.ts";
import type { Root } from "../reader/sources.ts";
import { createSearch, type Search, type SearchHit } from "../search/index.ts";
import type { SourceFlags } from "./config.ts";
import { type OpenedIndex, runOverIndex } from "./index-run.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";
import { reportRefusedRoots, sourceArgs } from "./source-hints.ts";
import { wrapText } from "./wrap.ts";

export type SearchCommand = {
  name: "search";
  sources: SourceFlags;
  query: string;
  json: boolean;
  limit: number;
};

/**
 * Exit status 0 (hits or none), 1 refused (a bad query, an unusable cache directory, a refused
 * source root: its hits are missing, so "No match." would mislead). Hits from the roots that
 * could be read are printed either way; refused roots go to stderr as `catalogue` says them.
 * `implicit`: no source was named (Pi's default store, which a new user may not have yet).
 */
export function runSearch(
  roots: () => Root[],
  catalogue: () => Catalogue,
  cmd: SearchCommand,
  io: Io,
  implicit = false,
): number {
  const open = (once: () => Catalogue): OpenedIndex<Search> => {
    const opened = createSearch({ roots, catalogue: once });
    return opened.ok ? { ok: true, index: opened.search } : opened;
  };
  return runOverIndex(catalogue, open, "search-unavailable", io, (search, once) => {
    const result = search.search(cmd.query, cmd.limit);
    if (!result.ok) {
      const { code, message } = result.refusal;
      io.err(`refused: ${code}: ${makeVisible(message, { showNewlines: true })}\n`);
      return 1;
    }
    if (cmd.json) io.out(`${JSON.stringify(result.hits)}\n`);
    else if (result.hits.length === 0) io.out("No match.\n");
    else {
      const readArgs = sourceArgs(cmd.sources);
      io.out(result.hits.map((hit) => hitText(hit, readArgs, io.width)).join("\n"));
    }
    return reportRefusedRoots(io, once().refusedRoots, implicit);
  });
}

/**
 * One hit as a block wrapped to `width`: title, where, the snippet with its matches in
 * [brackets], and the line that reads it with the search's own sources. That line is never
 * wrapped (as every command line we print): it must run when pasted.
 */
export function hitText(hit: SearchHit, sources: readonly string[], width: number): string {
  let marked = "";
  let at = 0;
  for (const [from, to] of hit.matches) {
    marked += `${hit.snippet.slice(at, from)}[${hit.snippet.slice(from, to)}]`;
    at = to;
  }
  marked += hit.snippet.slice(at);
  const when = hit.timestamp ? ` · ${formatTime(hit.timestamp)}` : "";
  const where = `${hit.project} / ${hit.seat} · branch ${hit.branch} · entry ${hit.entry}${when}`;
  const read = commandLine(["read", hit.conversation, "--branch", hit.branch, ...sources]);
  return [
    ...wrapText(hit.title ?? hit.conversation, { width, oneLine: true }),
    ...wrapText(where, { width, indent: 2, oneLine: true }),
    ...wrapText(marked, { width, indent: 2, oneLine: true }),
    `  ${read}`,
    "",
  ].join("\n");
}
