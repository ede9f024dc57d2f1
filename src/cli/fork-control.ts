// What `conversation control` says and does around a fork of Pi's store (issue 24 item 7): the
// `--fork-from` conversation found in the store (an id or a unique prefix), and, for a
// `--session` that is a file of a Pi store, the refusal naming the `--fork-from` line that
// works, as printed. The store is a live root the controller never writes; forking is how it is
// continued under control.
import { basename, dirname } from "node:path";
import type { CatalogueRow } from "../protocol/chat-01.ts";
import {
  defaultPiSessionsDir,
  isStoreDirName,
  storeDirRoot,
} from "../reader/harness/pi/pi-store.ts";
import { createReader } from "../reader/reader.ts";
import { conversationIdOf, rootsFromSpecs } from "../reader/sources.ts";
import type { ControlCommand } from "./control-args.ts";
import { type Forked, forkIntoSeat } from "./fork.ts";
import { resolveConversation } from "./ids.ts";
import { commandLine } from "./invocation.ts";

export type ForkOutcome =
  | { ok: true; forked: Forked }
  | {
      ok: false;
      ambiguous: { typed: string; rows: CatalogueRow[] };
    }
  | { ok: false; code: string; message: string; todo: string };

/** Forks the store conversation `typed` names into the seat's sessions folder. */
export async function forkFromStore(
  typed: string,
  store: string | undefined,
  projectRoot: string,
  sessionsDir: string,
): Promise<ForkOutcome> {
  const from = store ?? defaultPiSessionsDir();
  const reader = createReader({
    roots: () => rootsFromSpecs([{ kind: "pi-agent", sessionsDir: from }], []),
  });
  const catalogue = reader.catalogue();
  const list = commandLine([
    "catalogue",
    ...(store === undefined ? ["--pi"] : ["--pi-sessions", store]),
  ]);
  const named = resolveConversation(typed, () => catalogue.conversations);
  if (named.kind === "ambiguous") return { ok: false, ambiguous: { typed, rows: named.rows } };
  const row = catalogue.conversations.find(
    (r) => named.kind === "id" && r.conversation === named.id,
  );
  if (row === undefined) {
    const refused = catalogue.refusedRoots[0];
    return {
      ok: false,
      code: "unknown-conversation",
      message:
        `Pi's session store ${from} has no conversation ${typed}` +
        (refused === undefined ? "" : ` (${refused.code}: ${refused.message})`),
      todo: `list the conversations it has with "${list}" and give one of their ids to --fork-from`,
    };
  }
  if (row.unsupportedReason !== null) {
    return {
      ok: false,
      code: row.unsupportedReason,
      message: `${row.conversation} in ${from} can't be read, so it can't be forked`,
      todo: `"${list}" says which conversations can be read`,
    };
  }
  const forked = await forkIntoSeat({ store: from, row, projectRoot, sessionsDir });
  if (!forked.ok) {
    return {
      ok: false,
      code: "configuration",
      message: forked.error,
      todo: "check the conversation with the catalogue, then start again",
    };
  }
  return { ok: true, forked: forked.value };
}

/**
 * For a `--session` inside a Pi store (a `--…--` folder of Pi's default store, or of any
 * `sessions` folder laid out as one): the refusal, with the command that forks it into the
 * seat and controls the fork, the other flags kept. Null for any other file.
 */
export function storeSessionRefusal(
  cmd: ControlCommand,
  project: string,
): { message: string; todo: string } | null {
  if (cmd.target.kind !== "session") return null;
  const file = cmd.target.file;
  const folder = dirname(file);
  const store = dirname(folder);
  const isDefault = store === defaultPiSessionsDir();
  if (!isStoreDirName(basename(folder)) || !(isDefault || basename(store) === "sessions")) {
    return null;
  }
  const id = conversationIdOf(storeDirRoot(store, basename(folder)), basename(file));
  const kept: string[] = [];
  const keep = (flag: string, v: string | undefined) => {
    if (v !== undefined) kept.push(flag, v);
  };
  keep("--model", cmd.model);
  keep("--provider", cmd.provider);
  keep("--thinking", cmd.thinking);
  keep("--agent-from", cmd.agentFrom);
  keep("--agent-dir", cmd.agentDir);
  keep("--grants", cmd.grants);
  keep("--state-dir", cmd.stateDir);
  keep("--pi-version", cmd.piVersion);
  const line = commandLine([
    "control",
    "--fork-from",
    id,
    ...(isDefault ? [] : ["--pi-sessions", store]),
    "--project",
    project,
    "--seat",
    cmd.seat,
    ...kept,
  ]);
  return {
    message: `${file} is a conversation of Pi's own session store ${store}, which Pi itself writes; a controller never writes there`,
    todo: `continue it as Pi continues a session elsewhere, in a fork of it in this seat (Pi writes the fork and names this conversation its parent; the store is only read): ${line}`,
  };
}
