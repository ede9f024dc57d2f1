// What `search` and `usage` share: each opens an index kept beside the search cache over the
// sources' catalogue, read once for the run (its refused roots are reported, its titles name
// what is printed), refuses `<what>-unavailable` in words when the index cannot be opened, and
// closes the index however the command ends. One place, so both say and do it the same way.
import { makeVisible } from "../present/visible.ts";
import type { Catalogue } from "../protocol/chat-01.ts";
import type { Io } from "./io.ts";

/** An index as a command opens it: the index, or why it cannot be opened. */
export type OpenedIndex<T> = { ok: true; index: T } | { ok: false; reason: string };

/**
 * Opens an index with `open` (given the run's one catalogue), runs `use` on it and closes it.
 * Exit status `use`'s, or 1 (`refused: <code>: <reason>` on stderr) when it cannot be opened.
 */
export function runOverIndex<T extends { close(): void }>(
  catalogue: () => Catalogue,
  open: (catalogue: () => Catalogue) => OpenedIndex<T>,
  code: "search-unavailable" | "usage-unavailable",
  io: Io,
  use: (index: T, catalogue: () => Catalogue) => number,
): number {
  let listed: Catalogue | undefined;
  const once = () => {
    listed ??= catalogue();
    return listed;
  };
  const opened = open(once);
  if (!opened.ok) {
    io.err(`refused: ${code}: ${makeVisible(opened.reason, { showNewlines: true })}\n`);
    return 1;
  }
  try {
    return use(opened.index, once);
  } finally {
    opened.index.close();
  }
}
