// `conversation control`: one controller on one session (issue 6 §13). It takes the writer
// claim, launches the pinned Pi sealed, runs the K8 load check and serves the socket until
// SIGINT or SIGTERM, then stops the engine with `Controller.stop()`. The launcher is
// `chooseLauncher()`'s: cgroup where a writable cgroup v2 exists (its stops can be proven),
// else the process group (never proven). Flags and the grants file
// are checked here (usage errors); the controller's refusals print `refused: <code>: ...`.
// The control modules are loaded only when the command runs.
import { lstatSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Controller } from "../control/controller/controller.ts";
import { isPiVersion, PI_VERSIONS } from "../control/engine/pi-pin.ts";
import { type Grant, OPERATIONS, type Operation } from "../control/protocol.ts";
import { isControlRefusal } from "../control/refusal.ts";
import { ID_PATTERN } from "../protocol/chat-01.ts";
import type { Checked } from "./config.ts";
import { commandPrefix, shellWord } from "./invocation.ts";
import type { Io } from "./io.ts";
import { whenAborted } from "./serve.ts";
import { makeVisible } from "./visible.ts";

export type ControlCommand = {
  name: "control";
  fixtureRoot: string;
  claimRoot: string;
  socketDir: string;
  session: string;
  seat: string;
  /** The grants file, read when the command runs. */
  grants: string;
  /** Pi's `--model`, `--provider`, `--thinking`, in that order; the seal checks them. */
  engineArgs: string[];
  agentDir?: string;
  /** Which pinned Pi runs (`--pi-version`); absent: the default, 0.85.1. */
  piVersion?: string;
};

export type ControlParsed =
  | { ok: true; command: ControlCommand | { name: "help"; text: string } }
  | { ok: false; error: string; usage: string };

export const CONTROL_HELP = `Usage: conversation control --fixture-root DIR --claim-root DIR
                            --socket-dir DIR --session FILE --seat NAME
                            --grants FILE [--model M] [--provider P]
                            [--thinking LEVEL] [--agent-dir DIR]
                            [--pi-version 0.85.1|1.6.0]

Starts a controller on one session: takes the writer claim, launches the
pinned Pi sealed (RPC mode, no extensions, offline), checks that Pi loaded
the session, and serves a Unix socket where clients observe and, with a
grant, steer it (docs/control-protocol.md). Prints the socket path and the
grants, and the launcher it chose and why: cgroup where this process's cgroup
v2 is writable, else pgroup (process group). SIGINT or SIGTERM (Ctrl-C) stops
the engine and exits 0.

  --fixture-root DIR  the session must be inside DIR (this build controls
                      fixtures only)
  --claim-root DIR    where writer claims are kept (created 0700)
  --socket-dir DIR    created 0700; the socket is DIR/control.sock
  --session FILE      <project>/.pi/state/<seat>/sessions/<name>.jsonl
  --seat NAME         the seat the session is under
  --grants FILE       JSON: [{ "id": ..., "actor": ..., "capabilities":
                      [...] }]; capabilities: observe, takeover, release,
                      prompt, interrupt, confirm, force-stop, recover, launch
  --model M           Pi's --model, e.g. provider/id
  --provider P        Pi's --provider
  --thinking LEVEL    off, minimal, low, medium, high, xhigh or max
  --agent-dir DIR     Pi's agent directory (models.json, settings.json,
                      credentials), outside ~/.pi; without it Pi has none
  --pi-version V      which pinned Pi runs: 0.85.1 (the default) or 1.6.0,
                      each checked against its integrity (docs/seal-and-pin.md)
  -h, --help          this help

Exit status: 0 stopped by a signal; 1 refused or failed (stderr: "refused:
<code>: <message>"); 2 usage error. A stop the cgroup launcher proves ends
the claim (stopped-proven). The process-group launcher can't prove a stop, so
after it the claim stays held, marked uncertain (docs/claim.md).
`;

const REQUIRED = [
  ["fixture-root", "DIR"],
  ["claim-root", "DIR"],
  ["socket-dir", "DIR"],
  ["session", "FILE"],
  ["seat", "NAME"],
  ["grants", "FILE"],
] as const;

const GRANTS_MAX_BYTES = 1024 * 1024;
const GRANT_FIELDS = ["id", "actor", "capabilities"];

/** Parses the flags after `control`; throws parseArgs' TypeError on an unknown flag. */
export function parseControl(args: string[]): ControlParsed {
  const bad = (error: string): ControlParsed => ({ ok: false, error, usage: CONTROL_HELP });
  const { values, positionals } = parseArgs({
    args,
    options: {
      "fixture-root": { type: "string" },
      "claim-root": { type: "string" },
      "socket-dir": { type: "string" },
      session: { type: "string" },
      seat: { type: "string" },
      grants: { type: "string" },
      model: { type: "string" },
      provider: { type: "string" },
      thinking: { type: "string" },
      "agent-dir": { type: "string" },
      "pi-version": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { ok: true, command: { name: "help", text: CONTROL_HELP } };
  if (positionals.length > 0) return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const missing = REQUIRED.filter(([flag]) => values[flag] === undefined);
  if (missing.length > 0) {
    return bad(`missing ${missing.map(([flag, arg]) => `--${flag} ${arg}`).join(", ")}`);
  }
  for (const flag of [
    ...REQUIRED.map(([f]) => f),
    "model",
    "provider",
    "thinking",
    "agent-dir",
    "pi-version",
  ]) {
    if (values[flag as keyof typeof values] === "") return bad(`--${flag} needs a value`);
  }
  const path = (flag: (typeof REQUIRED)[number][0]) => resolve(values[flag] as string);
  const engineArgs: string[] = [];
  for (const flag of ["model", "provider", "thinking"] as const) {
    const v = values[flag];
    if (v !== undefined) engineArgs.push(`--${flag}`, v);
  }
  const agentDir = values["agent-dir"];
  const piVersion = values["pi-version"];
  if (piVersion !== undefined && !isPiVersion(piVersion)) {
    return bad(
      `--pi-version is one of ${PI_VERSIONS.join(", ")}, not ${JSON.stringify(piVersion)}`,
    );
  }
  return {
    ok: true,
    command: {
      name: "control",
      fixtureRoot: path("fixture-root"),
      claimRoot: path("claim-root"),
      socketDir: path("socket-dir"),
      session: path("session"),
      seat: values.seat as string,
      grants: values.grants as string,
      engineArgs,
      ...(agentDir === undefined ? {} : { agentDir: resolve(agentDir) }),
      ...(piVersion === undefined ? {} : { piVersion }),
    },
  };
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
 * Starts the controller, prints where to reach it, and stops it when `signal` aborts. Resolves
 * to 0 after a stop, 1 when the controller refused or failed to start or stop.
 */
export async function runControl(
  cmd: ControlCommand,
  grants: Grant[],
  io: Io,
  signal: AbortSignal,
): Promise<number> {
  const { Controller } = await import("../control/controller/controller.ts");
  const { LiveSessionGuard } = await import("../control/engine/guard.ts");
  const { FixtureVerifier } = await import("../control/controller/records.ts");
  const { chooseLauncher } = await import("../control/cohort/cohort.ts");
  let ctl: Controller;
  try {
    const guard = new LiveSessionGuard({ fixtureRoot: cmd.fixtureRoot });
    const live = cmd.agentDir === undefined ? null : guard.liveRootOf(cmd.agentDir);
    if (live !== null) {
      return refused(io, "live-session-refused", `--agent-dir is inside the live root ${live}`);
    }
    const badDir = checkSocketDir(cmd.socketDir);
    if (badDir !== null) return refused(io, "configuration", badDir);
    const choice = await chooseLauncher();
    ctl = new Controller({
      fixtureRoot: cmd.fixtureRoot,
      claimRoot: cmd.claimRoot,
      socketDir: cmd.socketDir,
      sessionFile: cmd.session,
      seat: cmd.seat,
      verifier: new FixtureVerifier({ fixtureRoot: cmd.fixtureRoot }),
      grants,
      launcher: choice.launcher,
      launcherReason: choice.reason,
      engine: { extraArgs: cmd.engineArgs },
      ...(cmd.agentDir === undefined ? {} : { agentDir: cmd.agentDir }),
      ...(cmd.piVersion === undefined ? {} : { piVersion: cmd.piVersion }),
    });
    // `start` stops whatever it started before it rethrows.
    await ctl.start();
  } catch (e) {
    return failed(io, "cannot start the controller", e);
  }
  io.out(describeStarted(ctl, grants));
  const warning = loadWarning(ctl);
  if (warning !== null) io.err(`${warning}\n`);
  void ctl.execution?.link.exited.then((exit) => {
    if (signal.aborted) return;
    const how = exit.spawnError ?? exit.signal ?? `code ${exit.exitCode}`;
    io.err(`Pi exited (${how}); the socket still serves observers. Ctrl-C stops.\n`);
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

/**
 * The controller's socket-directory rule (docs/controller.md, The socket), checked before the
 * claim: the controller checks it only after launching, and a refusal there would leave the
 * claim uncertain (the process-group launcher can't prove the stop), blocking the next start.
 */
function checkSocketDir(dir: string): string | null {
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

/**
 * What a newcomer needs: the conversation, the launcher and why it was chosen, the socket, the
 * grants and how to attach.
 */
export function describeStarted(ctl: Controller, grants: readonly Grant[]): string {
  const steer = grants.find((g) => g.capabilities.includes("prompt")) ?? grants[0];
  const socket = makeVisible(ctl.socketPath, { showNewlines: true });
  const binding = ctl.execution?.binding;
  const reason = binding?.launcherReason;
  const lines = [
    `Controlling ${ctl.conversation}`,
    `  session ${makeVisible(ctl.sessionFile, { showNewlines: true })}`,
    ...(binding?.engine ? [`Engine: Pi ${binding.engine.version}`] : []),
    ...(binding
      ? [
          `Launcher: ${binding.launcher}` +
            (reason === undefined ? "" : ` (${makeVisible(reason, { showNewlines: true })})`),
        ]
      : []),
    `Socket: ${socket}`,
    "Grants:",
    ...grants.map(
      (g) =>
        `  ${g.id} (${makeVisible(g.actor, { showNewlines: true })}): ${g.capabilities.join(" ")}`,
    ),
  ];
  // As it is run from here (invocation.ts), so the line can be pasted into a shell.
  const attach = `${commandPrefix()} attach --socket ${shellWord(ctl.socketPath)}`;
  if (steer) lines.push(`Attach: ${attach} --grant ${shellWord(steer.id)}`);
  return `${lines.join("\n")}\n`;
}

/** A warning when the K8 load check failed: the socket serves, but prompts refuse `preflight`. */
export function loadWarning(ctl: Controller): string | null {
  const binding = ctl.execution?.binding;
  if (!binding || binding.state === "bound") return null;
  return (
    "warning: Pi did not load the session as expected (the K8 load check failed); " +
    "observe works, prompts refuse preflight, and the claim stays held"
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
        : makeVisible(stop.why, { showNewlines: true });
    engine = `${exited}stop ${stop.result}: ${why}`;
  }
  const held = claim === "uncertain" ? ", held until a proven stop (docs/claim.md)" : "";
  return `Stopped: ${engine}; claim ${claim}${held}.`;
}

function failed(io: Io, what: string, e: unknown): number {
  if (isControlRefusal(e)) return refused(io, e.code, e.message);
  const message = e instanceof Error ? e.message : String(e);
  io.err(`conversation: ${what}: ${makeVisible(message, { showNewlines: true })}\n`);
  return 1;
}

function refused(io: Io, code: string, message: string): number {
  io.err(`refused: ${makeVisible(code)}: ${makeVisible(message, { showNewlines: true })}\n`);
  return 1;
}

function fail(error: string): { ok: false; error: string } {
  return { ok: false, error };
}
