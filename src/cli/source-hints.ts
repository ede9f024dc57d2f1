// What the reading commands (catalogue, read, follow, search, export) say about their sources
// in a shell: the source flags as shell words for the command lines they print, the refused
// roots of a catalogue, and an unknown conversation with where it was looked for and the lines
// that widen the search. One place, so every command says it the same way.
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { branchTitle } from "../present/labels.ts";
import { makeVisible } from "../present/visible.ts";
import type { Catalogue, RefusalRecord, View } from "../protocol/chat-01.ts";
import type { Reader } from "../reader/reader.ts";
import { type Root, rootDirOf } from "../reader/sources.ts";
import { DEFAULT_SEAT, type SourceFlags } from "./config.ts";
import { commandLine, commandPrefix, shellWord } from "./invocation.ts";
import type { Io } from "./io.ts";

const SEAT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Every seat of a project: the names under <project>/.pi/state, sorted. */
export function seatsOf(project: string): string[] {
  const state = join(resolve(project), ".pi", "state");
  // A seat folder holding only Claude Code's config folder is a Claude seat: it has no Pi
  // sessions folder to read, and is read through its controller's registration (sources.ts
  // seatOn), so `--seat '*'` does not name it as a Pi seat whose folder is missing.
  const claudeOnly = (seat: string) =>
    existsSync(join(state, seat, "claude")) && !existsSync(join(state, seat, "sessions"));
  try {
    return readdirSync(state, { withFileTypes: true })
      .filter((d) => d.isDirectory() && SEAT.test(d.name) && !claudeOnly(d.name))
      .map((d) => d.name)
      .sort();
  } catch {
    // No state folder (or unreadable): no seats to list; the reader says why when it reads.
    return [];
  }
}

/** The source flags as arguments, in the order --help lists them (for commandLine). */
export function sourceArgs(flags: SourceFlags): string[] {
  const args: string[] = [];
  if (flags.config !== undefined) args.push("--config", flags.config);
  if (flags.project !== undefined) args.push("--project", flags.project);
  for (const seat of flags.seat ?? []) args.push("--seat", seat);
  if (flags.pi === true) args.push("--pi");
  if (flags.piSessions !== undefined) args.push("--pi-sessions", flags.piSessions);
  if (flags.claude === true) args.push("--claude");
  if (flags.claudeProjects !== undefined) args.push("--claude-projects", flags.claudeProjects);
  return args;
}

/** The source flags as shell words, to print in a command line. */
export function sourceWords(flags: SourceFlags): string {
  return sourceArgs(flags).map(shellWord).join(" ");
}

/**
 * The catalogue's refused roots on stderr, one `refused: <code>: root …` line each; the exit
 * status (0 none, 1 some). `implicit` (no source named) and Pi's default store not there yet is
 * a note and 0: a new user has nothing wrong, there is nothing yet.
 */
export function reportRefusedRoots(
  io: Io,
  refusedRoots: Catalogue["refusedRoots"],
  implicit: boolean,
): 0 | 1 {
  const [only] = refusedRoots;
  if (implicit && refusedRoots.length === 1 && only?.code === "unavailable") {
    const store = makeVisible(only.project, { showNewlines: true });
    io.err(
      `${store}: Pi's session store does not exist yet (Pi writes it when it saves a ` +
        "session); name a source: --project DIR, --config FILE or --pi-sessions DIR\n",
    );
    return 0;
  }
  for (const r of refusedRoots) {
    const root = makeVisible(`${r.project}/${r.seat}`, { showNewlines: true });
    const message = makeVisible(r.message, { showNewlines: true });
    io.err(`refused: ${makeVisible(r.code)}: root ${root}: ${message}\n`);
  }
  return refusedRoots.length === 0 ? 0 : 1;
}

/** A command that names one conversation: what to print to run it again more widely. */
export type NamedConversation = {
  name: string;
  id: string;
  sources: SourceFlags;
  /** Its other arguments, to repeat in the printed line (`--format md` for export). */
  rest?: readonly string[];
};

/**
 * A refusal opening a conversation, on stderr; exit status 1. `unknown-conversation` in a
 * shell: the reader's hint (reload the catalogue) is the Console's; here, say which session
 * folders were searched and print the lines that widen them.
 */
export function refuseOpen(
  io: Io,
  refusal: RefusalRecord,
  cmd: NamedConversation,
  roots: readonly Root[],
  branches?: () => View | null,
): 1 {
  if (refusal.code === "unknown-branch" && branches !== undefined) {
    const view = branches();
    if (view !== null) return refuseBranch(io, refusal, cmd, view);
  }
  if (refusal.code !== "unknown-conversation") {
    const message = makeVisible(refusal.message, { showNewlines: true });
    io.err(`refused: ${makeVisible(refusal.code)}: ${message}\n`);
    return 1;
  }
  const searched =
    roots.length === 0
      ? "no session folders (the sources name none)"
      : roots.map(rootDirOf).join(", ");
  const lines = [`no conversation ${cmd.id} in ${searched}.`];
  const project = cmd.sources.project;
  const prefix = commandPrefix();
  const again = (sources: SourceFlags) =>
    commandLine([cmd.name, cmd.id, ...sourceArgs(sources), ...(cmd.rest ?? [])], prefix);
  if (project !== undefined) {
    const seats = cmd.sources.seat ?? [DEFAULT_SEAT];
    const others = seatsOf(project).filter((s) => !seats.includes(s));
    const every = { ...cmd.sources, seat: ["*"] };
    lines.push(
      `Only seat ${seats.join(", ")} of ${project} was searched (--seat, default main)` +
        (others.length > 0 ? `; it also has ${others.join(", ")}.` : "."),
      `Search every seat: ${again(every)}`,
      `List them: ${commandLine(["catalogue", ...sourceArgs(every)], prefix)}`,
    );
  } else {
    lines.push(
      `List what these sources hold: ${commandLine(["catalogue", ...sourceArgs(cmd.sources)], prefix)}`,
    );
  }
  const text = makeVisible(lines.join("\n"), { showNewlines: false });
  io.err(`refused: unknown-conversation: ${text}\n`);
  return 1;
}

/**
 * `unknown-branch`: the reader's words, then the branches there are (as the header names
 * them, label and name) and the line that reads the default one, this command's options kept.
 */
const VERB: Readonly<Record<string, string>> = { read: "Read", follow: "Follow", export: "Export" };

function refuseBranch(io: Io, refusal: RefusalRecord, cmd: NamedConversation, view: View): 1 {
  const rest: string[] = [];
  const given = cmd.rest ?? [];
  for (let i = 0; i < given.length; i++) {
    if (given[i] === "--branch") i++;
    else rest.push(given[i] as string);
  }
  const again = commandLine([
    ...[cmd.name, cmd.id, ...sourceArgs(cmd.sources), ...rest],
    ...["--branch", view.defaultBranch],
  ]);
  const unlisted = view.branchCount - view.branches.length;
  const lines = [
    refusal.message,
    `It has ${view.branchCount === 1 ? "1 branch" : `${view.branchCount} branches`}${unlisted > 0 ? ` (${view.branches.length} listed)` : ""}:`,
    ...view.branches.map(
      (b) =>
        `  ${makeVisible(branchTitle(b), { showNewlines: true })}${b.name === view.defaultBranch ? " · default" : ""}`,
    ),
    `${VERB[cmd.name] ?? "Read"} the default one: ${again}`,
  ];
  const text = makeVisible(lines.join("\n"), { showNewlines: false });
  io.err(`refused: unknown-branch: ${text}\n`);
  return 1;
}

/** The view of a conversation's default branch, for a hint; null when it cannot be opened. */
export function defaultView(reader: Reader, conversation: string): () => View | null {
  return () => {
    const r = reader.open({ conversation });
    return r.ok ? r.view : null;
  };
}
