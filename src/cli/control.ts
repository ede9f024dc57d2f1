// `conversation control`: one controller on one session of a project (issue 6 §13, issue 13).
// It takes the writer claim, launches the pinned Pi sealed, runs the K8 load check, registers
// itself in the registry of running controllers and serves the socket until SIGINT or SIGTERM,
// then stops the engine with `Controller.stop()` and removes its registry entry. Sessions are
// vouched for by RepositoryVerifier (the project's seat), or FixtureVerifier under
// `--fixture-root` (tests). Claims, sockets, the registry and private agent directories live in
// the places of registry/places.ts. Flags (control-args.ts) and the grants file (grants-file.ts)
// are checked before it runs (usage errors); what it prints is control-report.ts's, refusals
// as `refused: <code>: <message>` and a line saying what to do. The control modules are loaded
// only when the command runs.
import { randomUUID } from "node:crypto";
import { chmodSync, copyFileSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { LedgerAction } from "../audit/ledger-line.ts";
import type { Controller } from "../control/controller/controller.ts";
import { HARNESS_LABELS, type HarnessName } from "../control/engine/harness.ts";
import type { Grant } from "../control/protocol.ts";
import { placesFor } from "../control/registry/places.ts";
import type { Registration } from "../control/registry/registry.ts";
import { checkPrivateFolder } from "../fs/private-folder.ts";
import { sessionsDirOf } from "../reader/sources.ts";
import { type Checked, fail } from "./config.ts";
import type { ControlCommand } from "./control-args.ts";
import {
  type AttachHow,
  describeStarted,
  describeStopped,
  failed,
  loadWarning,
  refused,
  visible,
} from "./control-report.ts";
import { credentialWarning } from "./credentials.ts";
import type { Io } from "./io.ts";
import { whenAborted } from "./serve.ts";

/**
 * Starts the controller, registers it, prints how to reach it, and stops it when `signal`
 * aborts. Resolves to 0 after a stop, 1 when the controller refused or failed to start or stop.
 */
export async function runControl(
  cmd: ControlCommand,
  grants: readonly Grant[],
  io: Io,
  signal: AbortSignal,
  argv: readonly string[] = [],
): Promise<number> {
  const undo: (() => void)[] = [];
  const undoAll = () => {
    for (const u of undo.splice(0).reverse()) u();
  };
  try {
    return await controlUntilStopped(cmd, grants, io, signal, undo, argv);
  } finally {
    undoAll();
  }
}

async function controlUntilStopped(
  cmd: ControlCommand,
  grants: readonly Grant[],
  io: Io,
  signal: AbortSignal,
  undo: (() => void)[],
  argv: readonly string[],
): Promise<number> {
  const { Controller } = await import("../control/controller/controller.ts");
  const { LiveSessionGuard } = await import("../control/engine/guard.ts");
  const { FixtureVerifier, RepositoryVerifier } = await import("../control/controller/records.ts");
  const { chooseLauncher } = await import("../control/cohort/cohort.ts");
  const { ensurePrivateDir } = await import("../control/registry/registry.ts");
  const { registerStarted } = await import("./registration.ts");
  const { AuditLedger } = await import("../audit/ledger.ts");
  const leftovers = await import("../control/registry/leftovers.ts");
  const { controlPlace } = await import("../control/registry/private-dirs.ts");
  const places = placesFor(cmd.stateDir);
  let ctl: Controller;
  let sessionFile: string;
  let engineAgentDir: string | null = null;
  try {
    const project = cmd.project ?? projectOfSession(cmd);
    const badProject = checkProject(project);
    if (badProject !== null) return refused(io, "configuration", badProject);
    const guard = new LiveSessionGuard({ fixtureRoot: cmd.fixtureRoot ?? project });
    const live = cmd.agentDir === undefined ? null : guard.liveRootOf(cmd.agentDir);
    if (live !== null) {
      return refused(
        io,
        "live-session-refused",
        `--agent-dir is inside the live root ${live}`,
        cmd.stateDir,
        false,
        HARNESS_LABELS[cmd.harness],
      );
    }
    const sessions = sessionsDirOf(project, cmd.seat);
    const claude = cmd.harness === "claude-code";
    const { CLAUDE_SESSION_PLACE, claudeSessionFile } = await import(
      "../control/engine/claude-code/claude-files.ts"
    );
    if (claude && cmd.target.kind === "session" && cmd.fixtureRoot === undefined) {
      if (CLAUDE_SESSION_PLACE.projectOf(cmd.target.file, cmd.seat) !== resolve(project)) {
        return refused(
          io,
          "configuration",
          `${cmd.target.file} is not a Claude Code session of seat ${cmd.seat} of this project ` +
            `(${CLAUDE_SESSION_PLACE.describe(cmd.seat)}); a controller runs only that seat's sessions`,
        );
      }
    } else if (cmd.target.kind === "session" && cmd.fixtureRoot === undefined) {
      if (dirname(cmd.target.file) !== sessions) {
        return refused(
          io,
          "configuration",
          `${cmd.target.file} is not in ${sessions}, the sessions directory of seat ` +
            `${cmd.seat} of this project; a controller runs only that seat's sessions`,
        );
      }
    }
    const claimRoot = cmd.claimRoot ?? places.claims;
    // The state dir the person named is private like every folder in it (issue 22 item 2).
    if (cmd.stateDir !== undefined) ensurePrivateDir(cmd.stateDir, controlPlace("the state dir"));
    ensurePrivateDir(places.registry, controlPlace("the registry of running controllers"));
    let socketDir = cmd.socketDir;
    if (socketDir === undefined) {
      const made = leftovers.makeSocketDir(places.sockets);
      undo.push(() => rmSync(made, { recursive: true, force: true }));
      socketDir = made;
    }
    const badDir = checkSocketDir(socketDir);
    if (badDir !== null) return refused(io, "configuration", badDir);
    let agentDir = cmd.agentDir;
    if (cmd.agentFrom !== undefined) {
      const made = leftovers.makeAgentCopyDir(places.agents);
      // It holds a copy of the credentials: it goes with the controller, however it ends; so
      // does the copy of Claude Code's OAuth credentials placed in the seat's config folder.
      const { seatCredentials } = await import(
        "../control/engine/claude-code/claude-credentials.ts"
      );
      const guard = leftovers.guardUntilGone(
        made,
        claude ? [seatCredentials(project, cmd.seat)] : [],
      );
      undo.push(() => {
        rmSync(made, { recursive: true, force: true });
        guard.release();
      });
      const copied = copyAgentFiles(cmd.agentFrom, made, cmd.harness);
      if (!copied.ok) return refused(io, "configuration", copied.error);
      agentDir = made;
    }
    if (claude && cmd.target.kind === "new") {
      // Claude Code writes the file at the first turn, under the id the controller gives it.
      sessionFile = claudeSessionFile(project, cmd.seat, randomUUID());
      const { CLAUDE_ENGINE } = await import("../control/engine/claude-code/claude-engine.ts");
      CLAUDE_ENGINE.command({ sessionFile, projectRoot: project, extraArgs: cmd.engineArgs });
      io.out(`New conversation: Claude Code writes ${visible(sessionFile)} at its first turn\n`);
    } else if (cmd.target.kind === "new") {
      // The seal and the pin first: a refused flag must not leave a new conversation behind.
      const { engineCommand, sealedArgv } = await import("../control/engine/pi/pi-pin.ts");
      engineCommand({
        argv: sealedArgv({
          sessionFile: join(sessions, "new.jsonl"),
          extraArgs: cmd.engineArgs,
          piVersion: cmd.piVersion,
        }),
        piVersion: cmd.piVersion,
      });
      // The seat's claim next: a seat another controller holds refuses here, before a file is
      // written, not at start with an empty conversation left behind (issue 24 item 8).
      const { ClaimStore } = await import("../control/claim/claim.ts");
      const { ControlRefusal } = await import("../control/refusal.ts");
      const seatKey = { projectRoot: dirname(dirname(dirname(dirname(sessions)))), seat: cmd.seat };
      // No session has this key (a new one gets Pi's header id): only the seat can block.
      const view = await new ClaimStore({ root: claimRoot }).inspect({
        seatKey,
        sessionKey: "not-yet-written",
      });
      if (view.verdict !== "free") throw new ControlRefusal(view.verdict, view.why);
      const { writeNewSession } = await import("./new-session.ts");
      sessionFile = await writeNewSession({
        projectRoot: project,
        sessionsDir: sessions,
        ...(cmd.target.title === undefined ? {} : { title: cmd.target.title }),
        ...(cmd.model === undefined ? {} : { model: cmd.model }),
        ...(cmd.provider === undefined ? {} : { provider: cmd.provider }),
        ...(cmd.thinking === undefined ? {} : { thinking: cmd.thinking }),
      });
      io.out(`New conversation written by Pi's SessionManager: ${visible(sessionFile)}\n`);
    } else {
      sessionFile = cmd.target.file;
    }
    engineAgentDir = agentDir ?? null;
    const choice = await chooseLauncher();
    const specs = [{ kind: "repository" as const, projectRoot: project, seat: cmd.seat }];
    const verifier =
      cmd.fixtureRoot === undefined
        ? new RepositoryVerifier({ specs })
        : new FixtureVerifier({ fixtureRoot: cmd.fixtureRoot });
    let registration: Registration | null = null;
    let ledger: { append(action: LedgerAction): unknown } | null = null;
    ctl = new Controller({
      fixtureRoot: cmd.fixtureRoot ?? project,
      claimRoot,
      socketDir,
      sessionFile,
      seat: cmd.seat,
      verifier,
      grants: grants.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
      launcher: choice.launcher,
      launcherReason: choice.reason,
      engine: { extraArgs: cmd.engineArgs },
      harness: cmd.harness,
      ...(agentDir === undefined ? {} : { agentDir }),
      ...(cmd.piVersion === undefined ? {} : { piVersion: cmd.piVersion }),
      ...(cmd.budget === undefined ? {} : { budget: cmd.budget }),
      // A binding record marks each execution (a recovery mints a new one): keep the entry true.
      audit: (record) => {
        if (record.kind !== "binding") return;
        registration?.update({ execution: record.execution }).catch((e: unknown) => {
          // The entry keeps the previous execution; attach finds the controller by its
          // conversation and socket, which have not changed. Say so, and go on.
          io.err(`warning: the registry entry was not updated: ${visible(String(e))}\n`);
        });
      },
      // Every act, with who did it and what came of it (docs/remote.md, The audit ledger).
      actions: (action) => {
        if (ledger === null) throw new Error("the audit ledger is not open");
        ledger.append(action);
      },
    });
    const opened = AuditLedger.open(places.audit, ctl.conversation);
    if (!opened.ok) return refused(io, "audit", opened.message);
    ledger = opened.ledger;
    // `start` stops whatever it started before it rethrows.
    await ctl.start();
    registration = await registerStarted(
      places.registry,
      ctl,
      grants.map((g) => g.id),
      cmd.agentFrom !== undefined && agentDir !== undefined ? { agentCopy: agentDir } : {},
    );
    const reg = registration;
    // Removed at a normal stop; also when the process ends some other way while Node runs.
    const onExit = () => reg.remove();
    process.once("exit", onExit);
    undo.push(() => {
      reg.remove();
      process.off("exit", onExit);
    });
  } catch (e) {
    const engine = HARNESS_LABELS[cmd.harness];
    return failed(
      io,
      "cannot start the controller",
      e,
      cmd.stateDir,
      cmd.target.kind === "new",
      engine,
    );
  }
  const how: AttachHow =
    cmd.stateDir === undefined ? { by: "registry" } : { by: "registry", stateDir: cmd.stateDir };
  io.out(describeStarted(ctl, grants, how));
  const named =
    cmd.agentFrom !== undefined
      ? { named: "agent-from" as const, given: cmd.agentFrom }
      : cmd.agentDir !== undefined
        ? { named: "agent-dir" as const, given: cmd.agentDir }
        : { named: "none" as const };
  const controlArgv = ["control", ...argv.slice(argv[0] === "control" ? 1 : 0)];
  const { claudeCredentialWarning } = await import("./credentials-claude.ts");
  const credentials =
    cmd.harness === "claude-code"
      ? claudeCredentialWarning({ agentDir: engineAgentDir, ...named, argv: controlArgv })
      : credentialWarning({
          agentDir: engineAgentDir,
          ...named,
          ...providerOf(cmd),
          argv: controlArgv,
          ...(cmd.target.kind === "new" ? { written: sessionFile } : {}),
        });
  if (credentials !== null) io.err(credentials);
  const warning = loadWarning(ctl);
  if (warning !== null) io.err(`${warning}\n`);
  void ctl.execution?.link.exited.then((exit) => {
    if (signal.aborted) return;
    const how = exit.spawnError ?? exit.signal ?? `code ${exit.exitCode}`;
    const tail = ctl.execution?.link.stderr().text.trim() ?? "";
    const label = ctl.engineLabel;
    const said = tail === "" ? "" : `; ${label} said: ${visible(tail.slice(-500))}`;
    io.err(
      `${label} exited (${visible(how)})${said}. Watchers can still read the conversation, but ` +
        "nothing can be prompted; Ctrl-C stops the controller.\n",
    );
  });
  await whenAborted(signal);
  io.err("Stopping the engine...\n");
  try {
    await ctl.stop();
  } catch (e) {
    return failed(io, "the stop failed", e);
  }
  io.out(`${describeStopped(ctl)}\n`);
  return 0;
}

/** The provider the person chose: --provider, else the `provider/` of --model. */
function providerOf(cmd: ControlCommand): { provider?: string } {
  if (cmd.provider !== undefined) return { provider: cmd.provider };
  const slash = cmd.model?.indexOf("/") ?? -1;
  return slash > 0 ? { provider: (cmd.model as string).slice(0, slash) } : {};
}

/** The project of a fixture session path: `<project>/.pi/state/<seat>/sessions/<file>`. */
function projectOfSession(cmd: ControlCommand): string {
  if (cmd.target.kind !== "session") throw new Error("--new always names --project");
  return dirname(dirname(dirname(dirname(dirname(cmd.target.file)))));
}

function checkProject(project: string): string | null {
  try {
    if (statSync(project).isDirectory()) return null;
    return `the project ${project} is not a directory`;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    return code === "ENOENT"
      ? `the project ${project} does not exist`
      : `the project ${project} can't be read (${code})`;
  }
}

/** The files `--agent-from` copies: Pi's model list, its settings and its credentials. */
export const AGENT_FILES = ["models.json", "settings.json", "auth.json"] as const;
/** Claude Code's: its settings (an `env` with the API key, say) and its OAuth credentials. */
export const CLAUDE_AGENT_FILES = ["settings.json", ".credentials.json"] as const;
const AGENT_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Copies the agent files of `harness` that exist in `from` into `to` (0600). Only reads `from`:
 * no lock, no write, no new file there (Pi's own readers would take a lock on auth.json; this
 * does not), and nothing is ever copied back.
 */
export function copyAgentFiles(
  from: string,
  to: string,
  harness: HarnessName = "pi",
): Checked<string[]> {
  const names: readonly string[] = harness === "claude-code" ? CLAUDE_AGENT_FILES : AGENT_FILES;
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(from);
  } catch (e) {
    return fail(`--agent-from ${from}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  if (!st.isDirectory()) return fail(`--agent-from ${from} is not a directory`);
  const copied: string[] = [];
  for (const name of names) {
    const source = join(from, name);
    let file: ReturnType<typeof statSync>;
    try {
      file = statSync(source);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
      return fail(`--agent-from: ${source}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
    }
    if (!file.isFile()) return fail(`--agent-from: ${source} is not a regular file`);
    if (file.size > AGENT_FILE_MAX_BYTES) return fail(`--agent-from: ${source} is over 16 MiB`);
    // COPYFILE_EXCL: the private directory is fresh; anything already there is not ours.
    copyFileSync(source, join(to, name), 1);
    chmodSync(join(to, name), 0o600);
    copied.push(name);
  }
  if (copied.length === 0) {
    return fail(
      `--agent-from ${from} has none of ${names.join(", ")}; ` +
        (harness === "claude-code"
          ? "name Claude Code's config folder (usually ~/.claude), or one holding a settings.json"
          : "name Pi's agent directory (usually ~/.pi/agent)"),
    );
  }
  return { ok: true, value: copied };
}

/**
 * The controller's socket-directory rule (docs/controller.md, The socket), checked before the
 * claim: the controller checks it only after launching, and a refusal there would leave the
 * claim uncertain (the process-group launcher can't prove the stop), blocking the next start.
 */
function checkSocketDir(dir: string): string | null {
  const socket = join(dir, "control.sock");
  if (Buffer.byteLength(socket) > 107) {
    return (
      `the socket path ${socket} is over the 107 bytes a Unix socket allows; ` +
      "choose a shorter --state-dir (or set XDG_RUNTIME_DIR)"
    );
  }
  const check = checkPrivateFolder(dir, {
    what: "the socket folder",
    instead: "choose another with --state-dir (or --socket-dir)",
  });
  // Absent: the controller creates it (0700) when it listens.
  if (check.ok || check.problem.code === "missing") return null;
  return check.problem.message;
}
