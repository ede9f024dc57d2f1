// The `conversation` command: catalogue, read, follow and serve over the reader (issue 3 §3),
// and `control` (control.ts), the only command that runs Pi. Exit status 0 ok, 1
// refused or failed (a reader refusal is printed on stderr as `refused: <code>: <message>`;
// a catalogue with a refused root prints what it could read and exits 1), 2 usage error. Text
// is for people (80 columns when not a terminal), --json for scripts. Help and hints name the
// command as it is run from here (invocation.ts).
import { dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DeviceLinks } from "../board/device-links.ts";
import type { ProxyConfig } from "../board/identity.ts";
import { liveConversations, markLive } from "../control/registry/live-catalogue.ts";
import { placesFor } from "../control/registry/places.ts";
import { listControllers, type RegistryEntry } from "../control/registry/registry.ts";
import {
  createReader,
  isFileRoot,
  type Page,
  type Reader,
  type ReadResult,
  type RefusalRecord,
  rootsFromSpecs,
} from "../index.ts";
import { makeVisible } from "../present/visible.ts";
import { expandRoots } from "../reader/expand.ts";
import { type Command, DEFAULT_HOST, HELP, parseCommand } from "./args.ts";
import { runAttach } from "./attach.ts";
import { runAudit } from "./audit.ts";
import { DEFAULT_SEAT, resolveSources, type SourceFlags, type Sources } from "./config.ts";
import { runControl } from "./control.ts";
import { listRunning } from "./controllers.ts";
import { DEFAULT_GRANTS, readGrantsFile } from "./grants-file.ts";
import { runInbox } from "./inbox.ts";
import { asInvoked, commandLine, commandPrefix, withDocsPlace } from "./invocation.ts";
import { runLogins } from "./logins.ts";
import { qrLines } from "./qr.ts";
import { createPartPrinter, renderCatalogue, renderHeader } from "./render.ts";
import { checkHost, nextLoginLine, startServing, whenAborted } from "./serve.ts";
import { proxyConfigOf } from "./serve-proxy.ts";
import {
  defaultView,
  refuseOpen,
  reportRefusedRoots,
  seatsOf,
  sourceArgs,
} from "./source-hints.ts";

export const EXIT = { ok: 0, refused: 1, usage: 2 } as const;
/** How often `follow` asks the reader for what was appended. */
export const FOLLOW_POLL_MS = 500;

import { refuseAmbiguous, resolveConversation } from "./ids.ts";
import type { Io } from "./io.ts";

export type { Io };

type Ok = Extract<ReadResult, { ok: true }>;

/** Runs one command line; resolves to the exit status. `signal` ends follow and serve. */
export async function main(argv: string[], io: Io, signal: AbortSignal): Promise<number> {
  const parsed = parseCommand(argv);
  if (!parsed.ok) return usageError(io, parsed.error, parsed.usage, parsed.more);
  const cmd = parsed.command;
  if (cmd.name === "help") {
    io.out(withDocsPlace(asInvoked(cmd.text)));
    return EXIT.ok;
  }
  if (cmd.name === "control") {
    if (cmd.grants === undefined) return runControl(cmd, DEFAULT_GRANTS, io, signal, argv);
    const grants = readGrantsFile(cmd.grants);
    if (!grants.ok) return usageError(io, grants.error, HELP.control);
    return runControl(cmd, grants.value, io, signal, argv);
  }
  if (cmd.name === "attach") return runAttach(cmd, io.err, signal);
  if (cmd.name === "controllers") return listRunning(cmd, io);
  if (cmd.name === "audit") return runAudit(cmd, io);
  if (cmd.name === "logins") return runLogins(cmd, io);
  if (cmd.name === "inbox") return runInbox(cmd, io, signal);
  const flags = expandSeats(cmd.sources);
  if (!flags.ok) return usageError(io, flags.error, HELP[cmd.name]);
  const sources = resolveSources(flags.value);
  if (!sources.ok) return usageError(io, sources.error, HELP[cmd.name]);
  if (sources.value.notice !== null) io.err(`${sources.value.notice}\n`);
  // No source named: Pi's default store, which a new user may not have yet (see catalogue).
  const implicit = sources.value.notice !== null;
  return run(cmd, sources.value.sources, io, signal, implicit);
}

/** `--seat '*'` stands for every seat of --project (as listed now). */
function expandSeats(
  flags: SourceFlags,
): { ok: true; value: SourceFlags } | { ok: false; error: string } {
  if (!flags.seat?.includes("*")) return { ok: true, value: flags };
  if (flags.project === undefined) return { ok: false, error: "--seat '*' goes with --project" };
  const seats = seatsOf(flags.project);
  if (seats.length === 0) {
    const where = join(resolve(flags.project), ".pi", "state");
    return { ok: false, error: `--seat '*': no seats in ${where}` };
  }
  const named = flags.seat.filter((s) => s !== "*");
  return { ok: true, value: { ...flags, seat: [...new Set([...named, ...seats])] } };
}

async function run(
  cmd: Exclude<
    Command,
    { name: "help" | "control" | "attach" | "controllers" | "audit" | "logins" | "inbox" }
  >,
  sources: Sources,
  io: Io,
  signal: AbortSignal,
  implicit = false,
): Promise<number> {
  const roots = () => rootsOf(sources);
  const reader = createReader({
    roots,
  });
  if (cmd.name === "read" || cmd.name === "follow" || cmd.name === "export") {
    const named = resolveConversation(cmd.id, () => reader.catalogue().conversations);
    if (named.kind === "ambiguous") return refuseAmbiguous(io, cmd.id, named.rows);
    if (named.kind === "id" && named.id !== cmd.id)
      return run({ ...cmd, id: named.id }, sources, io, signal, implicit);
  }
  switch (cmd.name) {
    case "catalogue": {
      const registry = placesFor(cmd.stateDir).registry;
      const catalogue = markLive(reader.catalogue(), liveConversations(registry));
      if (cmd.json) io.out(`${JSON.stringify(catalogue)}\n`);
      else {
        // Refused roots go to stderr below, once, with the other refusals.
        const readable = { ...catalogue, refusedRoots: [] };
        io.out(`${renderCatalogue(readable, io.width).join("\n")}\n`);
      }
      return reportRefusedRoots(io, catalogue.refusedRoots, implicit);
    }
    case "read":
      return read(reader, cmd, io, sources);
    case "follow":
      return follow(reader, cmd, io, signal, sources);
    case "serve":
      return serve(sources, cmd, io, signal, implicit);
    // Loaded only when used: node:sqlite and the Markdown bundle stay out of other commands.
    case "search": {
      const { runSearch } = await import("./search.ts");
      return runSearch(roots, () => reader.catalogue(), cmd, io, implicit);
    }
    case "usage": {
      const { runUsage } = await import("./usage.ts");
      return runUsage(roots, () => reader.catalogue(), cmd, io, implicit);
    }
    case "export": {
      const { runExport } = await import("./export.ts");
      return runExport(reader, roots(), cmd, io, signal);
    }
    default:
      return unreachable(cmd);
  }
}

type ReadCommand = Extract<Command, { name: "read" }>;
type FollowCommand = Extract<Command, { name: "follow" }>;

function openBranch(reader: Reader, cmd: ReadCommand | FollowCommand): ReadResult {
  return reader.open(
    cmd.branch === undefined
      ? { conversation: cmd.id }
      : { conversation: cmd.id, branch: cmd.branch },
  );
}

/** Every page of the branch from one snapshot, in order; `onPage` sees each as it comes. */
function readPages(
  reader: Reader,
  first: Ok,
  onPage: (page: Page) => void,
): { ok: true; last: Ok } | { ok: false; refusal: RefusalRecord } {
  let r: ReadResult = first;
  onPage(r.page);
  while (r.cursor) {
    r = reader.next({
      cursor: r.cursor.id,
      conversation: r.page.conversation,
      branch: r.page.branch,
    });
    if (!r.ok) return r;
    onPage(r.page);
  }
  return { ok: true, last: r };
}

function read(reader: Reader, cmd: ReadCommand, io: Io, sources: Sources): number {
  const first = openBranch(reader, cmd);
  if (!first.ok) {
    return refuseOpen(io, first.refusal, cmd, rootsOf(sources), defaultView(reader, cmd.id));
  }
  const { conversation, branch } = first.page;
  if (cmd.json) {
    const pages: string[] = [];
    const done = readPages(reader, first, (page) => pages.push(JSON.stringify(page)));
    if (!done.ok) return refused(io, done.refusal);
    // Each page is serialized once, as it comes; the document is assembled around them.
    const head = JSON.stringify({ conversation, branch, view: first.view }).slice(0, -1);
    io.out(`${head},"pages":[${pages.join(",")}]}\n`);
    return EXIT.ok;
  }
  const row = reader.catalogue().conversations.find((r) => r.conversation === conversation);
  io.out(`${renderHeader({ conversation, branch, view: first.view, row }, io.width).join("\n")}\n`);
  const printer = createPartPrinter(io.out, io.width);
  let parts = 0;
  let pages = 0;
  const done = readPages(reader, first, (page) => {
    pages++;
    parts += page.parts.length;
    for (const part of page.parts) printer.print(part);
  });
  printer.finish();
  if (!done.ok) return refused(io, done.refusal);
  const tally = `${parts} part${parts === 1 ? "" : "s"}, ${pages} page${pages === 1 ? "" : "s"}`;
  io.out(`\n${makeVisible(`(end of branch ${branch}: ${tally})`, { showNewlines: true })}\n`);
  return EXIT.ok;
}

async function follow(
  reader: Reader,
  cmd: FollowCommand,
  io: Io,
  signal: AbortSignal,
  sources: Sources,
): Promise<number> {
  const first = openBranch(reader, cmd);
  if (!first.ok) {
    return refuseOpen(io, first.refusal, cmd, rootsOf(sources), defaultView(reader, cmd.id));
  }
  const { conversation, branch } = first.page;
  const printer = createPartPrinter(io.out, io.width);
  const show = (page: Page) => {
    if (page.parts.length === 0) return;
    if (cmd.json) io.out(`${JSON.stringify(page)}\n`);
    else for (const part of page.parts) printer.print(part);
  };
  let done = readPages(reader, first, cmd.fromStart ? show : () => {});
  if (!done.ok) return refused(io, done.refusal);
  let defaultBranch = first.view.defaultBranch;
  io.err(`following ${conversation} on branch ${makeVisible(branch)}; Ctrl-C to stop\n`);
  while (await pause(FOLLOW_POLL_MS, signal)) {
    const cursor = done.last.follow;
    if (!cursor) throw new Error("the last page of a branch carries no follow cursor");
    const r = reader.next({ cursor: cursor.id, conversation, branch });
    if (!r.ok) {
      printer.finish();
      return refused(io, r.refusal);
    }
    done = readPages(reader, r, show);
    if (!done.ok) {
      printer.finish();
      return refused(io, done.refusal);
    }
    if (r.view.defaultBranch !== defaultBranch) {
      defaultBranch = r.view.defaultBranch;
      const shown = makeVisible(defaultBranch, { showNewlines: true });
      if (defaultBranch !== branch) {
        io.err(`Pi's default branch is now ${shown}; follow it with --branch ${shown}\n`);
      }
    }
  }
  printer.finish();
  return EXIT.ok;
}

/** Waits `ms`; false when `signal` aborted first. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch (e) {
    if (signal.aborted) return false;
    throw e;
  }
}

async function serve(
  sources: Sources,
  cmd: Extract<Command, { name: "serve" }>,
  io: Io,
  signal: AbortSignal,
  implicit: boolean,
): Promise<number> {
  const badHost = await checkHost(cmd.host);
  if (badHost !== null) return usageError(io, badHost, HELP.serve);
  const { proxy: proxyFlags, phone, ...plain } = cmd;
  let proxy: ProxyConfig | undefined;
  if (proxyFlags !== undefined) {
    const checked = await proxyConfigOf(proxyFlags);
    if (!checked.ok) return usageError(io, checked.error, HELP.serve);
    proxy = checked.value;
  }
  // The catalogue route marks conversations a running controller serves (`live`): the read
  // workers join their catalogue with this registry (registry/live-catalogue.ts).
  const liveRegistry = placesFor(cmd.stateDir).registry;
  const started = await startServing({
    // The board's search index lives in the XDG cache (docs/board.md).
    reading: {
      sources: {
        specs: sources.specs,
        registrations: sources.registrations,
        liveRegistry,
        search: {},
      },
    },
    ...plain,
    ...(proxy === undefined ? {} : { proxy }),
    ...(phone === undefined ? {} : { devices: new DeviceLinks(placesFor(cmd.stateDir).board) }),
    // Web Push keeps its key pair and subscriptions beside the logins (docs/push.md).
    push: { dir: placesFor(cmd.stateDir).board },
    // Each link logs in once: the next one is printed as the first was (docs/board.md).
    onLoginLinkUsed: (next) => io.out(nextLoginLine(next)),
  });
  if (!started.ok) {
    io.err(`conversation: cannot serve: ${started.error}\n`);
    return EXIT.refused;
  }
  const { board } = started;
  io.out(`The board is serving on ${board.url}\nOpen it in a browser; Ctrl-C stops it.\n`);
  if (proxy !== undefined) {
    io.out(
      `Behind the proxy at ${proxy.origin}: people open ${proxy.origin}/login to log in, as the roles in ${proxy.rolesFile} allow;\n` +
        `only connections from ${proxy.proxyAddress} may name them (${proxy.header}).\n`,
    );
  }
  // To stdout for the operator, once; never to a log (the token is the key to acting). Always
  // printed: a controller may start while the board serves, and the token is fresh per start.
  // With none running now, say first that reading needs none (docs/board.md, "Login").
  if (liveConversations(liveRegistry).size > 0) {
    io.out(`To act (steer a run) from the Console, log in with: ${board.loginUrl}\n`);
  } else {
    io.out(
      `Reading needs no login. No controller runs now (see "${commandLine(["control", "--help"])}");\n` +
        `once one does, log in to steer it from the Console: ${board.loginUrl}\n`,
    );
  }
  for (const line of unreadControllers(liveRegistry, sources, cmd, implicit)) io.out(`${line}\n`);
  if (phone !== undefined) {
    const who = phone.for ?? "local-operator";
    if (proxy !== undefined && !proxy.roles.has(who)) {
      io.err(
        `conversation: --phone-for ${makeVisible(who)}: not in the roles file ${proxy.rolesFile}\n`,
      );
    } else {
      const link = board.mintDeviceLink(who);
      const revoke = commandLine(["logins", "--revoke", link.id, ...stateDirOption(cmd)]);
      io.out(
        `A device login link for ${makeVisible(who)} (${link.id}: once, until ${link.expiresAt}; \`${revoke}\` revokes it):\n${link.url}\n${qrLines(link.url).join("\n")}\n`,
      );
      // A loopback address names the phone itself: the link only works in this machine's
      // browser until the board is served behind a proxy on an address the phone can reach.
      if (proxy === undefined) {
        io.out(
          `This link is on loopback: only a browser on this machine opens it. For a phone, serve the board behind a proxy with --public-origin (docs/remote.md, "Behind a proxy").\n`,
        );
      }
    }
  }
  await whenAborted(signal);
  await board.close();
  return EXIT.ok;
}

/**
 * A line for each running controller whose session this board does not read (its sources do
 * not hold that sessions directory): the Console would never show it, and the person started
 * `serve` to watch it. The line is the whole `serve` command to run instead: what this one
 * reads and its options kept (Pi's default store named with `--pi` when it was read because no
 * source was named), the controller's seat added (issue 24 item 6).
 */
function unreadControllers(
  registryDir: string,
  sources: Sources,
  cmd: Extract<Command, { name: "serve" }>,
  implicit: boolean,
): string[] {
  const read = new Set<string>();
  for (const root of expandRoots(rootsOf(sources))) {
    if (isFileRoot(root)) read.add(resolve(root.sessionsDir));
  }
  let live: RegistryEntry[];
  try {
    live = listControllers(registryDir).live;
  } catch {
    // An unreadable registry marks nothing live (live-catalogue.ts): nothing to say here either.
    return [];
  }
  return live
    .filter((e) => !read.has(resolve(dirname(e.sessionFile))))
    .map((e) => {
      const what = `Not on this board: a controller runs ${e.conversation} in ${e.project} (seat ${e.seat}); `;
      const wider = widenedSources({ ...cmd.sources, ...(implicit ? { pi: true } : {}) }, e);
      const how =
        wider === null
          ? "a board reads one --project, so add its seat to a --config file's specs (see --help), " +
            `or watch it on a second board: ${commandLine(["serve", "--project", e.project, "--seat", e.seat, "--port", "0", ...stateDirOption(cmd)])}`
          : `to watch and steer it here with what this board shows, run: ${commandLine(["serve", ...sourceArgs(wider), ...serveOptions(cmd)])}`;
      return makeVisible(what + how, { showNewlines: true });
    });
}

/**
 * The source flags with a controller's seat added, or null when flags cannot say it: a
 * `--config` file, or `--project` naming another project (one `--project` per command).
 */
function widenedSources(
  flags: SourceFlags,
  e: { project: string; seat: string },
): SourceFlags | null {
  if (flags.config !== undefined) return null;
  if (flags.project === undefined) return { ...flags, project: e.project, seat: [e.seat] };
  if (resolve(flags.project) !== resolve(e.project)) return null;
  const seats = flags.seat ?? [DEFAULT_SEAT];
  return { ...flags, seat: seats.includes(e.seat) ? seats : [...seats, e.seat] };
}

/** The options of a `serve` command other than its sources, as it was given them. */
function serveOptions(cmd: Extract<Command, { name: "serve" }>): string[] {
  const out: string[] = [];
  if (cmd.host !== DEFAULT_HOST) out.push("--host", cmd.host);
  if (cmd.portGiven) out.push("--port", String(cmd.port));
  return [...out, ...stateDirOption(cmd)];
}

function stateDirOption(cmd: { stateDir?: string }): string[] {
  return cmd.stateDir === undefined ? [] : ["--state-dir", cmd.stateDir];
}

function rootsOf(sources: Sources) {
  return rootsFromSpecs(sources.specs, sources.registrations);
}

function refused(io: Io, refusal: RefusalRecord): number {
  const message = makeVisible(refusal.message, { showNewlines: true });
  io.err(`refused: ${makeVisible(refusal.code)}: ${message}\n`);
  return EXIT.refused;
}

/** A usage error on stderr: `error`, then each line of `more`, then where the help is. */
function usageError(io: Io, error: string, usage: string, more: string[] = []): number {
  const first = usage.split("\n", 1)[0] ?? "";
  const command = /^Usage: conversation( \w+)?/.exec(first)?.[1] ?? "";
  // Each line made visible on its own: a line break inside one (a typed argument) shows as ^J.
  const lines = [error, ...more].map((l) => makeVisible(l, { showNewlines: true }));
  io.err(`conversation: ${lines.join("\n")}\n`);
  io.err(`Run "${commandPrefix()}${command} --help" for usage.\n`);
  return EXIT.usage;
}

function unreachable(x: never): never {
  throw new Error(`unhandled command ${JSON.stringify(x)}`);
}

/** The process's own streams; text is laid out for the terminal, or 80 columns. */
export function processIo(): Io {
  const columns = process.stdout.isTTY ? process.stdout.columns : 80;
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    width: Math.min(160, Math.max(40, columns || 80)),
  };
}

/** Runs the process's command line (or `argv`): SIGINT and SIGTERM end follow, serve and
 * control (status 0); a second signal exits at once (130). */
export async function runProcess(argv: string[] = process.argv.slice(2)): Promise<void> {
  // `npm run conversation -- …` runs us in the package root; the paths a person typed are
  // relative to where they typed it, which npm keeps in INIT_CWD.
  const { npm_lifecycle_event: script, INIT_CWD: typedIn } = process.env;
  if (script === "conversation" && typedIn !== undefined && typedIn !== "") process.chdir(typedIn);
  const stop = new AbortController();
  // Listeners that stay for the whole run: once Pi's package is imported (`control --new`
  // writes with its SessionManager), its signal-exit dependency re-raises a signal no other
  // listener is left for, which would kill the process before the engine's stop ran.
  const abort = () => (stop.signal.aborted ? process.exit(130) : stop.abort());
  process.on("SIGINT", abort);
  process.on("SIGTERM", abort);
  // A reader of our output that went away (`| head`: EPIPE), or any other failed write, is a
  // request to stop, the orderly stop of a first SIGTERM: exiting here would skip a
  // controller's stop (its engine, scratch HOME and claim left behind). Later writes to that
  // stream go nowhere (Node drops writes to a stream that failed) and the status is the
  // command's own (0 after a stop), never a crash (docs/usage.md, Output).
  const closed = () => {
    if (!stop.signal.aborted) stop.abort();
  };
  process.stdout.on("error", closed);
  process.stderr.on("error", closed);
  try {
    process.exitCode = await main(argv, processIo(), stop.signal);
  } finally {
    process.off("SIGINT", abort);
    process.off("SIGTERM", abort);
  }
}

if (import.meta.main) await runProcess();
