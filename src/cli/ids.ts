// A conversation named by a unique prefix of its id (issue 24 item 11): ids are `pi-` and 40
// hex characters, which nobody types. `read`, `follow` and `export` take any prefix that one
// readable conversation of the sources has (with or without `pi-`); a prefix several have is
// refused with the candidates listed, so the person can pick one. A whole id is used as it is,
// without a catalogue: the prefix rule costs only those who use it.

import { makeVisible } from "../present/visible.ts";
import type { CatalogueRow } from "../protocol/chat-01.ts";
import type { Io } from "./io.ts";

/** The CLI's own refusal codes (the reader's are printed as the reader says them). */
export type CliRefusalCode = "ambiguous-conversation";

/** A whole conversation id, as the reader mints it (reader/sources.ts). */
const WHOLE_ID = /^[a-z]+-[0-9a-f]{40}$/;
/** How many candidates an ambiguous prefix lists before "and N more". */
const LISTED = 10;

export type Resolved =
  | { kind: "id"; id: string }
  | { kind: "ambiguous"; rows: CatalogueRow[] }
  | { kind: "none" };

/**
 * What `typed` names among `rows()`: the id itself when whole or when nothing starts with it
 * (the reader then says it is unknown), the one row it is a prefix of, or the rows it is
 * ambiguous between.
 */
export function resolveConversation(typed: string, rows: () => readonly CatalogueRow[]): Resolved {
  if (WHOLE_ID.test(typed) || typed === "") return { kind: "id", id: typed };
  const all = rows();
  if (all.some((r) => r.conversation === typed)) return { kind: "id", id: typed };
  const lower = typed.toLowerCase();
  const hits = all.filter((r) => {
    if (r.unsupportedReason !== null) return false;
    const id = r.conversation;
    const dash = id.indexOf("-");
    return id.startsWith(lower) || (dash > 0 && id.slice(dash + 1).startsWith(lower));
  });
  if (hits.length === 1) return { kind: "id", id: (hits[0] as CatalogueRow).conversation };
  if (hits.length > 1) return { kind: "ambiguous", rows: hits };
  return { kind: "none" };
}

/** `refused: ambiguous-conversation: …` with the candidates, each with its title. Exit 1. */
export function refuseAmbiguous(io: Io, typed: string, rows: readonly CatalogueRow[]): 1 {
  const lines = [
    `${rows.length} conversations have ids starting with ${typed}; type more of the id, one of:`,
    ...rows
      .slice(0, LISTED)
      .map(
        (r) =>
          `  ${r.conversation}  ${makeVisible(r.title ?? "(untitled)", { showNewlines: true })}`,
      ),
  ];
  if (rows.length > LISTED) lines.push(`  and ${rows.length - LISTED} more`);
  const code: CliRefusalCode = "ambiguous-conversation";
  io.err(`refused: ${code}: ${makeVisible(lines.join("\n"), { showNewlines: false })}\n`);
  return 1;
}
