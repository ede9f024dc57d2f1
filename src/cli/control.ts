// `conversation control`: one controller on one session of a project (issue 6 §13, issue 13).
// It takes the writer claim, launches the pinned Pi sealed, runs the K8 load check, registers
// itself in the registry of running controllers and serves the socket until SIGINT or SIGTERM,
// then stops the engine with `Controller.stop()` and removes its registry entry. Sessions are
// vouched for by RepositoryVerifier (the project's seat), or FixtureVerifier under
// `--fixture-root` (tests). Claims, sockets, the registry and private agent directories live in
// the places of registry/places.ts. Flags and the grants file are checked here (usage errors);
// refusals print `refused: <code>: <message>` and a line saying what to do.
// The control modules are loaded only when the command runs.
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Controller } from "../control/controller/controller.ts";
import { isPiVersion, PI_VERSIONS } from "../control/engine/pi-pin.ts";
import { type Grant, OPERATIONS, type Operation } from "../control/protocol.ts";
import { isControlRefusal } from "../control/refusal.ts";
import { placesFor } from "../control/registry/places.ts";
import { makeVisible } from "../present/visible.ts";
import { ID_PATTERN } from "../protocol/chat-01.ts";
import { sessionsDirOf } from "../reader/sources.ts";
import type { Checked } from "./config.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";
import { whenAborted } from "./serve.ts";

export type ControlTarget = { kind: "session"; file: string } | { kind: "new"; title?: string };

export type ControlCommand = {
  name: "control";
  /** The project root; absent only with `fixtureRoot`, where the session path names it. */
  project?: string;
  seat: string;
  target: ControlTarget;
  /** Test hook: the guard's and FixtureVerifier's root instead of the project's. */
  fixtureRoot?: string;
  stateDir?: string;
  claimRoot?: string;
  socketDir?: string;
  /** The grants file, read when the command runs; absent: the default operator and observer. */
  grants?: string;
  /** Pi's `--model`, `--provider`, `--thinking`, in that order; the seal checks them. */
  engineArgs: string[];
  model?: string;
  provider?: string;
  thinking?: string;
  agentDir?: string;
  agentFrom?: string;
  /** Which pinned Pi runs (`--pi-version`); absent: the default, 0.85.1. */
  piVersion?: string;
};

export type ControlParsed =
  | { ok: true; command: ControlCommand | { name: "help"; text: string } }
  | { ok: false; error: string; usage: string };

export const CONTROL_HELP = `Usage: conversation control --project DIR --seat NAME
                            (--session FILE | --new [--title TEXT])
                            [--model M] [--provider P] [--thinking LEVEL]
                            [--agent-from DIR | --agent-dir DIR]
                            [--grants FILE] [--state-dir DIR]
                            [--pi-version 0.85.1|1.6.0]

Starts a controller on one conversation of a project: takes the writer
claim, launches the pinned Pi sealed (RPC mode, no extensions, offline),
checks that Pi loaded the session, and serves a Unix socket where clients
observe and, with a grant, steer it (docs/control-cli.md). It prints the
conversation id and how to attach. SIGINT or SIGTERM (Ctrl-C) stops Pi and
exits 0.

  --project DIR       the project root (Pi works in it)
  --seat NAME         the seat: sessions live in DIR/.pi/state/NAME/sessions
  --session FILE      an existing session (a .jsonl file in that directory)
  --new               start a new conversation there (written by Pi's own
                      SessionManager, with the model and thinking level)
  --title TEXT        the new conversation's title (with --new)
  --model M           Pi's --model, e.g. provider/id
  --provider P        Pi's --provider
  --thinking LEVEL    off, minimal, low, medium, high, xhigh or max
  --agent-from DIR    copy Pi's models.json, settings.json and auth.json from
                      DIR (e.g. ~/.pi/agent; only read) into a private agent
                      directory, removed when the controller stops
  --agent-dir DIR     use DIR as Pi's agent directory (outside ~/.pi); with
                      neither, Pi has no model or credentials
  --grants FILE       JSON: [{ "id": ..., "actor": ..., "capabilities":
                      [...] }]; capabilities: observe, takeover, release,
                      prompt, interrupt, confirm, force-stop, recover, launch.
                      Default: "operator" (every capability) and "observer"
  --state-dir DIR     keep claims, sockets and the registry of running
                      controllers under DIR (default: claims in
                      $XDG_STATE_HOME/mosaic-conversation, else
                      ~/.local/state/mosaic-conversation; sockets and the
                      registry in $XDG_RUNTIME_DIR/mosaic-conversation when
                      set, else there too)
  --pi-version V      which pinned Pi runs: 0.85.1 (the default) or 1.6.0,
                      each checked against its integrity (docs/seal-and-pin.md)
  -h, --help          this help

For tests: --fixture-root DIR (the session must be in DIR; fixtures only),
--claim-root DIR and --socket-dir DIR (override the state dir's places).

Exit status: 0 stopped by a signal; 1 refused or failed (stderr: "refused:
<code>: <message>" and what to do); 2 usage error. A stop the cgroup
launcher proves ends the claim. The process-group launcher can't prove a
stop, so after it the claim stays held, marked uncertain (docs/claim.md).
`;

const GRANTS_MAX_BYTES = 1024 * 1024;
/** The seat names the reader's sources accept (sources.ts SEAT_NAME). */
const SEAT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const GRANT_FIELDS = ["id", "actor", "capabilities"];
const PATH_FLAGS = [
  "project",
  "session",
  "fixture-root",
  "state-dir",
  "claim-root",
  "socket-dir",
  "grants",
  "agent-dir",
  "agent-from",
] as const;

/** Without --grants: one grant that may do everything, one that may only watch. */
export const DEFAULT_GRANTS: readonly Grant[] = [
  { id: "operator", actor: "local-operator", capabilities: [...OPERATIONS] },
  { id: "observer", actor: "local-observer", capabilities: ["observe"] },
];

/** Parses the flags after `control`; throws parseArgs' TypeError on an unknown flag. */
export function parseControl(args: string[]): ControlParsed {
  const bad = (error: string): ControlParsed => ({ ok: false, error, usage: CONTROL_HELP });
  const { values, positionals } = parseArgs({
    args,
    options: {
      project: { type: "string" },
      seat: { type: "string" },
      session: { type: "string" },
      new: { type: "boolean" },
      title: { type: "string" },
      "fixture-root": { type: "string" },
      "state-dir": { type: "string" },
      "claim-root": { type: "string" },
      "socket-dir": { type: "string" },
      grants: { type: "string" },
      model: { type: "string" },
      provider: { type: "string" },
      thinking: { type: "string" },
      "agent-dir": { type: "string" },
      "agent-from": { type: "string" },
      "pi-version": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { ok: true, command: { name: "help", text: CONTROL_HELP } };
  if (positionals.length > 0) return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const valued = [
    ...PATH_FLAGS,
    ...(["seat", "title", "model", "provider", "thinking", "pi-version"] as const),
  ];
  for (const flag of valued) {
    if (values[flag] === "") return bad(`--${flag} needs a value`);
  }
  const fixtureRoot = values["fixture-root"];
  const missing: string[] = [];
  if (values.project === undefined && fixtureRoot === undefined) missing.push("--project DIR");
  if (values.seat === undefined) missing.push("--seat NAME");
  if (values.session === undefined && values.new !== true) missing.push("--session FILE or --new");
  if (missing.length > 0) return bad(`missing ${missing.join(", ")}`);
  if (!SEAT_NAME.test(values.seat as string)) {
    // Checked before anything is created: `--new` makes the seat's directory.
    return bad(`--seat ${JSON.stringify(values.seat)} is not a seat name (letters, digits, . _ -)`);
  }
  if (values.session !== undefined && values.new === true) {
    return bad("--session and --new exclude each other: control an existing session, or a new one");
  }
  if (values.title !== undefined && values.new !== true) return bad("--title goes with --new");
  if (values.new === true && values.project === undefined) return bad("--new needs --project DIR");
  if (values["agent-dir"] !== undefined && values["agent-from"] !== undefined) {
    return bad("--agent-dir and --agent-from exclude each other");
  }
  const path = (flag: (typeof PATH_FLAGS)[number]) => {
    const v = values[flag];
    return v === undefined ? {} : { [camel(flag)]: resolve(v) };
  };
  const engineArgs: string[] = [];
  const engine: { model?: string; provider?: string; thinking?: string } = {};
  for (const flag of ["model", "provider", "thinking"] as const) {
    const v = values[flag];
    if (v === undefined) continue;
    engineArgs.push(`--${flag}`, v);
    engine[flag] = v;
  }
  const piVersion = values["pi-version"];
  if (piVersion !== undefined && !isPiVersion(piVersion)) {
    return bad(
      `--pi-version is one of ${PI_VERSIONS.join(", ")}, not ${JSON.stringify(piVersion)}`,
    );
  }
  const target: ControlTarget =
    values.session === undefined
      ? { kind: "new", ...(values.title === undefined ? {} : { title: values.title }) }
      : { kind: "session", file: resolve(values.session) };
  return {
    ok: true,
    command: {
      name: "control",
      seat: values.seat as string,
      target,
      engineArgs,
      ...engine,
      ...path("project"),
      ...path("fixture-root"),
      ...path("state-dir"),
      ...path("claim-root"),
      ...path("socket-dir"),
      ...path("agent-dir"),
      ...path("agent-from"),
      ...(values.grants === undefined ? {} : { grants: values.grants }),
      ...(piVersion === undefined ? {} : { piVersion }),
    },
  };
}

function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** Reads and checks a grants file; every problem is a message naming the file and field. */
export function readGrantsFile(file: string): Checked<Grant[]> {
  let text: string;
  try {
    const buf = readFileSync(file);
    if (buf.length > GRANTS_MAX_BYTES) return fail(`grants ${file}: larger than 1 MiB`);
    text = buf.toString("utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    return fail(`grants ${file}: cannot read it (${code})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return fail(`grants ${file}: not JSON (${(e as Error).message})`);
  }
  const parsed = parseGrants(value);
  return parsed.ok ? parsed : fail(`grants ${file}: ${parsed.error}`);
}

/** `[{ id, actor, capabilities }]`: unique CHAT-01 ids, an actor, known operations once each. */
export function parseGrants(value: unknown): Checked<Grant[]> {
  if (!Array.isArray(value)) return fail("expected a JSON array of grants");
  if (value.length === 0) return fail("no grants: a client could never say hello");
  const grants: Grant[] = [];
  const known: readonly string[] = OPERATIONS;
  for (const [i, g] of value.entries()) {
    const at = `[${i}]`;
    if (typeof g !== "object" || g === null || Array.isArray(g)) {
      return fail(`${at}: expected an object`);
    }
    const extra = Object.keys(g).filter((k) => !GRANT_FIELDS.includes(k));
    if (extra.length > 0) return fail(`${at}: unknown field ${JSON.stringify(extra[0])}`);
    const { id, actor, capabilities } = g as Record<string, unknown>;
    if (typeof id !== "string" || !ID_PATTERN.test(id)) {
      return fail(`${at}.id: expected an id (letters, digits, '.', '_', '-'; up to 200)`);
    }
    if (grants.some((other) => other.id === id)) return fail(`${at}.id: "${id}" is repeated`);
    if (typeof actor !== "string" || actor === "" || actor.length > 200) {
      return fail(`${at}.actor: expected a name of 1 to 200 characters`);
    }
    if (!Array.isArray(capabilities)) return fail(`${at}.capabilities: expected an array`);
    for (const [j, c] of capabilities.entries()) {
      if (typeof c !== "string" || !known.includes(c)) {
        return fail(`${at}.capabilities[${j}]: expected one of ${OPERATIONS.join(", ")}`);
      }
      if (capabilities.indexOf(c) !== j) return fail(`${at}.capabilities: "${c}" is repeated`);
    }
    grants.push({ id, actor, capabilities: capabilities as Operation[] });
  }
  return { ok: true, value: grants };
}

/**
 * Starts the controller, registers it, prints how to reach it, and stops it when `signal`
 * aborts. Resolves to 0 after a stop, 1 when the controller refused or failed to start or stop.
 */
export async function runControl(
  cmd: ControlCommand,
  grants: readonly Grant[],
  io: Io,
  signal: AbortSignal,
): Promise<number> {
  const undo: (() => void)[] = [];
  const undoAll = () => {
    for (const u of undo.splice(0).reverse()) u();
  };
  try {
    return await controlUntilStopped(cmd, grants, io, signal, undo);
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
): Promise<number> {
  const { Controller } = await import("../control/controller/controller.ts");
  const { LiveSessionGuard } = await import("../control/engine/guard.ts");
  const { FixtureVerifier, RepositoryVerifier } = await import("../control/controller/records.ts");
  const { chooseLauncher } = await import("../control/cohort/cohort.ts");
  const { ensurePrivateDir, register } = await import("../control/registry/registry.ts");
  const places = placesFor(cmd.stateDir);
  let ctl: Controller;
  let sessionFile: string;
  try {
    const project = cmd.project ?? projectOfSession(cmd);
    const badProject = checkProject(project);
    if (badProject !== null) return refused(io, "configuration", badProject);
    const guard = new LiveSessionGuard({ fixtureRoot: cmd.fixtureRoot ?? project });
    const live = cmd.agentDir === undefined ? null : guard.liveRootOf(cmd.agentDir);
    if (live !== null) {
      return refused(io, "live-session-refused", `--agent-dir is inside the live root ${live}`);
    }
    const sessions = sessionsDirOf(project, cmd.seat);
    if (cmd.target.kind === "session" && cmd.fixtureRoot === undefined) {
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
    ensurePrivateDir(places.registry);
    let socketDir = cmd.socketDir;
    if (socketDir === undefined) {
      ensurePrivateDir(places.sockets);
      const made = mkdtempSync(join(places.sockets, "c-"));
      undo.push(() => rmSync(made, { recursive: true, force: true }));
      socketDir = made;
    }
    const badDir = checkSocketDir(socketDir);
    if (badDir !== null) return refused(io, "configuration", badDir);
    let agentDir = cmd.agentDir;
    if (cmd.agentFrom !== undefined) {
      ensurePrivateDir(places.agents);
      const made = mkdtempSync(join(places.agents, "a-"));
      // It holds a copy of the credentials: it goes with the controller.
      undo.push(() => rmSync(made, { recursive: true, force: true }));
      const copied = copyAgentFiles(cmd.agentFrom, made);
      if (!copied.ok) return refused(io, "configuration", copied.error);
      agentDir = made;
    }
    if (cmd.target.kind === "new") {
      // The seal and the pin first: a refused flag must not leave a new conversation behind.
      const { engineCommand, sealedArgv } = await import("../control/engine/pi-pin.ts");
      engineCommand({
        argv: sealedArgv({
          sessionFile: join(sessions, "new.jsonl"),
          extraArgs: cmd.engineArgs,
          piVersion: cmd.piVersion,
        }),
        piVersion: cmd.piVersion,
      });
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
    const choice = await chooseLauncher();
    const specs = [{ kind: "repository" as const, projectRoot: project, seat: cmd.seat }];
    const verifier =
      cmd.fixtureRoot === undefined
        ? new RepositoryVerifier({ specs })
        : new FixtureVerifier({ fixtureRoot: cmd.fixtureRoot });
    let registration: Awaited<ReturnType<typeof register>> | null = null;
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
      ...(agentDir === undefined ? {} : { agentDir }),
      ...(cmd.piVersion === undefined ? {} : { piVersion: cmd.piVersion }),
      // A binding record marks each execution (a recovery mints a new one): keep the entry true.
      audit: (record) => {
        if (record.kind !== "binding") return;
        registration?.update({ execution: record.execution }).catch((e: unknown) => {
          // The entry keeps the previous execution; attach finds the controller by its
          // conversation and socket, which have not changed. Say so, and go on.
          io.err(`warning: the registry entry was not updated: ${visible(String(e))}\n`);
        });
      },
    });
    // `start` stops whatever it started before it rethrows.
    await ctl.start();
    try {
      registration = await register(places.registry, {
        conversation: ctl.conversation,
        project: ctl.projectRoot,
        seat: ctl.seat,
        sessionFile: ctl.sessionFile,
        socket: ctl.socketPath,
        execution: ctl.execution?.execution ?? "none",
        grants: grants.map((g) => g.id),
        startedAt: new Date().toISOString(),
        ...(ctl.execution?.binding.engine
          ? { piVersion: ctl.execution.binding.engine.version }
          : {}),
      });
    } catch (e) {
      await ctl.stop().catch(() => undefined);
      throw e;
    }
    const reg = registration;
    // Removed at a normal stop; also when the process ends some other way while Node runs.
    const onExit = () => reg.remove();
    process.once("exit", onExit);
    undo.push(() => {
      reg.remove();
      process.off("exit", onExit);
    });
  } catch (e) {
    return failed(io, "cannot start the controller", e, cmd.stateDir);
  }
  const how: AttachHow =
    cmd.stateDir === undefined ? { by: "registry" } : { by: "registry", stateDir: cmd.stateDir };
  io.out(describeStarted(ctl, grants, how));
  const warning = loadWarning(ctl);
  if (warning !== null) io.err(`${warning}\n`);
  void ctl.execution?.link.exited.then((exit) => {
    if (signal.aborted) return;
    const how = exit.spawnError ?? exit.signal ?? `code ${exit.exitCode}`;
    const tail = ctl.execution?.link.stderr().text.trim() ?? "";
    const said = tail === "" ? "" : `; Pi said: ${visible(tail.slice(-500))}`;
    io.err(
      `Pi exited (${visible(how)})${said}. Watchers can still read the conversation, but ` +
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
const AGENT_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Copies AGENT_FILES that exist in `from` into `to` (0600). Only reads `from`: no lock, no
 * write, no new file there (Pi's own readers would take a lock on auth.json; this does not).
 */
export function copyAgentFiles(from: string, to: string): Checked<string[]> {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(from);
  } catch (e) {
    return fail(`--agent-from ${from}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  if (!st.isDirectory()) return fail(`--agent-from ${from} is not a directory`);
  const copied: string[] = [];
  for (const name of AGENT_FILES) {
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
      `--agent-from ${from} has none of ${AGENT_FILES.join(", ")}; ` +
        "name Pi's agent directory (usually ~/.pi/agent)",
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
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? null : `socketDir ${dir}: ${code ?? String(e)}`;
  }
  if (!st.isDirectory()) return `socketDir ${dir} is not a directory`;
  if (st.uid !== process.getuid?.()) return `socketDir ${dir} belongs to uid ${st.uid}`;
  const mode = st.mode & 0o777;
  if ((mode & 0o077) !== 0) return `socketDir ${dir} has mode ${mode.toString(8)}, not 0700`;
  return null;
}

/** How the printed attach lines reach the controller: its socket, or the registry. */
export type AttachHow = { by: "socket" } | { by: "registry"; stateDir?: string };

/**
 * What a newcomer needs: the conversation, the launcher in plain words, the socket, the grants
 * and, for each, the command that attaches with it (a line that runs as printed).
 */
export function describeStarted(
  ctl: Controller,
  grants: readonly Grant[],
  how: AttachHow = { by: "socket" },
): string {
  const steer = grants.find((g) => g.capabilities.includes("prompt")) ?? grants[0];
  const socket = ctl.socketPath;
  const binding = ctl.execution?.binding;
  // As it is run from here (invocation.ts), so each line can be pasted into a shell; a
  // control character in a path is shown visibly by shellWord, never sent to the terminal.
  const attach = (grant: string) =>
    commandLine(
      how.by === "socket"
        ? ["attach", "--socket", socket, "--grant", grant]
        : [
            "attach",
            ctl.conversation,
            ...(how.stateDir === undefined ? [] : ["--state-dir", how.stateDir]),
            "--grant",
            grant,
          ],
    );
  const lines = [
    `Controlling ${ctl.conversation}`,
    `  session ${visible(ctl.sessionFile)}`,
    ...(binding?.engine ? [`Engine: Pi ${binding.engine.version}`] : []),
    ...(binding ? describeLauncher(binding.launcher, binding.launcherReason) : []),
    `Socket: ${visible(socket)}`,
    "Grants:",
    ...grants.flatMap((g) => [
      `  ${g.id} (${visible(g.actor)}): ${g.capabilities.join(" ")}`,
      `    ${attach(g.id)}`,
    ]),
  ];
  if (steer) lines.push(`Attach: ${attach(steer.id)}`);
  return `${lines.join("\n")}\n`;
}

/**
 * The launcher in plain words: what it means for stopping Pi, and the host's limits; the
 * probe's own reasons follow in parentheses.
 */
export function describeLauncher(kind: string, reason: string | undefined): string[] {
  const detail = reason === undefined ? "" : ` (${visible(reason)})`;
  const lines: string[] = [];
  if (kind === "pgroup") {
    lines.push(
      `Launcher: pgroup: Pi runs in a process group; this host gives no cgroup to put it in, so a stop can't be proven and the session stays claimed after it (docs/claim.md)${detail}`,
    );
  } else {
    const what = kind === "scope" ? "a systemd scope" : "a cgroup";
    lines.push(
      `Launcher: ${kind}: Pi runs in ${what} of its own, so stopping it can be proven${detail}`,
    );
  }
  if (reason?.includes("no nsdelegate")) {
    lines.push(
      "Note: this host's cgroup2 is mounted without nsdelegate, so a process Pi starts that runs as root could move itself out of Pi's cgroup and outlive a stop (K13 not enforced). Mounting cgroup2 with nsdelegate closes this.",
    );
  }
  if (reason?.includes("no cgroup namespace")) {
    lines.push(
      "Note: Pi's processes are not given a cgroup namespace of their own here (unshare --cgroup is missing or refused), so they can see the host's cgroups.",
    );
  }
  return lines;
}

/**
 * When the K8 load check failed: what happened, what still works, and what to do. The socket
 * serves, but prompts refuse `preflight`.
 */
export function loadWarning(ctl: Controller): string | null {
  const exec = ctl.execution;
  const binding = exec?.binding;
  if (!binding || binding.state === "bound") return null;
  const why = exec?.load?.reason ?? binding.reason;
  return (
    `warning: Pi did not load the session as the controller expected: ${visible(why)}.\n` +
    "You can still watch the conversation, but prompts will be refused (preflight) and the " +
    "session stays claimed until a proven stop. Stop this controller (Ctrl-C), fix the cause, " +
    "and start it again. (K8 load check)"
  );
}

/** The stop's result and where the claim was left. */
export function describeStopped(ctl: Controller): string {
  const exec = ctl.execution;
  const stop = exec?.stops.latest ?? null;
  const claim = ctl.claim?.state ?? "none";
  let engine = "no engine ran";
  if (exec && stop?.result === "stopped") engine = "the engine's stop is proven";
  else if (exec && stop) {
    const exit = exec.link.exit;
    const exited = exit === null ? "" : `Pi exited (${exit.signal ?? `code ${exit.exitCode}`}), `;
    const why =
      exec.launched.launcher === "pgroup"
        ? "the process-group launcher cannot prove a stop"
        : visible(stop.why);
    engine = `${exited}stop ${stop.result}: ${why}`;
  }
  const held = claim === "uncertain" ? ", held until a proven stop (docs/claim.md)" : "";
  return `Stopped: ${engine}; claim ${claim}${held}.`;
}

/** What to do after each refusal `conversation control` can print. */
const WHAT_TO_DO: Readonly<Record<string, string>> = {
  configuration: "check the path or option named above, then start again",
  "live-session-refused":
    "the controller never runs Pi in ~/.pi, ~/.claude or ~/.mosaic-dev, where your own Pi keeps its live state; to use your Pi's models and credentials, pass --agent-from ~/.pi/agent (it copies them into a private directory)",
  "unsafe-replacement":
    "an earlier controller of this session or seat ended without proof that Pi stopped, so the claim is kept (docs/claim.md); make sure no Pi of it still runs; after a reboot the claim is proven stale",
  "foreign-host":
    "the claim was taken on another host; use a state directory of this host (--state-dir)",
  "unsealed-engine":
    "only --model, --provider and --thinking go to Pi, each once, with a plain value (not starting with - or @)",
  "engine-pin-mismatch":
    "the installed Pi is not the pinned version; reinstall the dependencies (npm ci)",
};

/** What to do after a refusal; the command it names is as run from here (invocation.ts). */
function whatToDo(code: string, stateDir: string | undefined): string | undefined {
  if (code !== "already-active") return WHAT_TO_DO[code];
  const list = commandLine([
    "controllers",
    ...(stateDir === undefined ? [] : ["--state-dir", stateDir]),
  ]);
  return `another controller runs this session (or a copy of it under another seat); find it with "${list}" and attach to it, or stop it first`;
}

function failed(io: Io, what: string, e: unknown, stateDir?: string): number {
  if (isControlRefusal(e)) return refused(io, e.code, e.message, stateDir);
  // A place we could not make or write (a typed --project, --state-dir): a path to fix.
  const onPath = pathError(e);
  if (onPath !== null) return refused(io, "configuration", `${what}: ${onPath}`, stateDir);
  const message = e instanceof Error ? e.message : String(e);
  io.err(`conversation: ${what}: ${visible(message)}\n`);
  return 1;
}

/** A file system error on a path a person can fix, in words; null for any other error. */
function pathError(e: unknown): string | null {
  const err = e as NodeJS.ErrnoException;
  if (!(e instanceof Error) || typeof err.code !== "string" || typeof err.path !== "string") {
    return null;
  }
  const why: Record<string, string> = {
    ENOTDIR: "a part of the path is a file, not a folder",
    EEXIST: "it exists and is not a folder",
    EACCES: "permission denied",
    EPERM: "permission denied",
    EROFS: "the file system is read-only",
    ENOSPC: "no space left on the device",
  };
  const said = why[err.code];
  if (said === undefined) return null;
  return `${err.syscall ?? "using"} ${err.path}: ${said} (${err.code})`;
}

function refused(io: Io, code: string, message: string, stateDir?: string): number {
  io.err(`refused: ${makeVisible(code)}: ${visible(message)}\n`);
  const todo = whatToDo(code, stateDir);
  if (todo !== undefined) io.err(`  What to do: ${todo}.\n`);
  return 1;
}

function visible(text: string): string {
  return makeVisible(text, { showNewlines: true });
}

function fail(error: string): { ok: false; error: string } {
  return { ok: false, error };
}
