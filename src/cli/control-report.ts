// What `conversation control` prints: the started controller (conversation, engine, launcher
// in plain words, socket, each grant with the line that attaches with it), the K8 warning, the
// stop and where the claim was left, and each refusal with what to do about it.
import type { Recovered } from "../control/claim/recovery.ts";
import type { Controller } from "../control/controller/controller.ts";
import { CLAUDE_VERSION } from "../control/engine/claude-code/claude-pin.ts";
import { HARNESS_LABELS } from "../control/engine/harness.ts";
import type { Grant } from "../control/protocol.ts";
import { isControlRefusal } from "../control/refusal.ts";
import { makeVisible } from "../present/visible.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";

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
    ...(binding?.engine ? [`Engine: ${ctl.engineLabel} ${binding.engine.version}`] : []),
    ...(binding ? describeLauncher(binding.launcher, binding.launcherReason, ctl.engineLabel) : []),
    ...(ctl.recovered ? [describeRecovered(ctl.recovered)] : []),
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
export function describeLauncher(
  kind: string,
  reason: string | undefined,
  engine = HARNESS_LABELS.pi,
): string[] {
  // The probe's reasons are a detail on a line of their own: inline they nested parentheses
  // three deep. The rule id they end with is said once, by the note, after its plain words.
  const probe = reason === undefined ? "" : visible(reason).replace(/ \(K13 not enforced\)/g, "");
  const lines: string[] = [];
  if (kind === "pgroup") {
    lines.push(
      `Launcher: pgroup: ${engine} runs in a process group; this host gives no cgroup to put it in, so a stop can't be proven and the session stays claimed after it (docs/claim.md)`,
    );
  } else {
    const what = kind === "scope" ? "a systemd scope" : "a cgroup";
    lines.push(
      `Launcher: ${kind}: ${engine} runs in ${what} of its own, so stopping it can be proven`,
    );
  }
  if (probe !== "") lines.push(`  how it was chosen: ${probe}`);
  if (reason?.includes("no nsdelegate")) {
    lines.push(
      `Note: this host's cgroup2 is mounted without nsdelegate, so a process ${engine} starts that runs as root could move itself out of ${engine}'s cgroup and outlive a stop. Mounting cgroup2 with nsdelegate closes this. (rule K13 is not enforced here)`,
    );
  }
  if (reason?.includes("no cgroup namespace")) {
    lines.push(
      `Note: ${engine}'s processes are not given a cgroup namespace of their own here (unshare --cgroup is missing or refused), so they can see the host's cgroups.`,
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
    `warning: ${ctl.engineLabel} did not load the session as the controller expected: ${visible(why)}.\n` +
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
    const exited =
      exit === null
        ? ""
        : `${ctl.engineLabel} exited (${exit.signal ?? `code ${exit.exitCode}`}), `;
    const why =
      exec.launched.launcher === "pgroup"
        ? "the process-group launcher cannot prove a stop"
        : visible(stop.why);
    engine = `${exited}stop ${stop.result}: ${why}`;
  }
  return `Stopped: ${engine}; ${CLAIM_WORDS[claim] ?? "the claim is"} (claim ${claim}).`;
}

/** Where the claim was left, in words a person acts on; the state follows in parentheses. */
const CLAIM_WORDS: Readonly<Record<string, string>> = {
  "stopped-proven": "the session and its seat are free for another controller",
  released: "the session and its seat are free for another controller",
  uncertain:
    "the session and its seat stay claimed until a stop is proven, as docs/claim.md explains",
  stopping: "the session and its seat stay claimed while the stop is being proven",
  held: "the session and its seat are still claimed",
  none: "no claim was taken",
};

/** What to do after each refusal `conversation control` can print, for the engine `e`. */
function whatToDoFor(e: string): Readonly<Record<string, string>> {
  const claude = e === HARNESS_LABELS["claude-code"];
  return {
    configuration: "check the path or option named above, then start again",
    "live-session-refused": claude
      ? "the controller never runs an engine in ~/.pi, ~/.claude or ~/.mosaic-dev, where your own agents keep their live state; to use your Claude Code's settings and credentials, pass --agent-from ~/.claude (it copies settings.json and .credentials.json into a private directory)"
      : "the controller never runs Pi in ~/.pi, ~/.claude or ~/.mosaic-dev, where your own Pi keeps its live state; to use your Pi's models and credentials, pass --agent-from ~/.pi/agent (it copies them into a private directory)",
    "unsafe-replacement": `an earlier controller of this session or seat ended without proof that ${e} stopped, so the claim is kept (docs/claim.md); make sure no ${e} of it still runs; after a reboot the claim is proven stale`,
    "foreign-host":
      "the claim was taken on another host; use a state directory of this host (--state-dir)",
    "unsealed-engine": claude
      ? "only --model goes to Claude Code, once, with a plain value (not starting with -)"
      : "only --model, --provider and --thinking go to Pi, each once, with a plain value (not starting with - or @)",
    "engine-pin-mismatch": claude
      ? `this build runs Claude Code ${CLAUDE_VERSION} only: install exactly that version (npm install --save-exact @anthropic-ai/claude-code@${CLAUDE_VERSION}) beside this package, or put its claude on PATH (docs/claude-control.md)`
      : "the installed Pi is not the pinned version; reinstall the dependencies (npm ci)",
  };
}

/** What to do after a refusal; the command it names is as run from here (invocation.ts). */
function whatToDo(
  code: string,
  stateDir: string | undefined,
  isNew: boolean,
  engine: string,
): string | undefined {
  if (code !== "already-active") return whatToDoFor(engine)[code];
  const list = commandLine([
    "controllers",
    ...(stateDir === undefined ? [] : ["--state-dir", stateDir]),
  ]);
  // A new conversation has no copies yet: only the seat can be taken (one controller a seat).
  if (isNew) {
    return `nothing was written; another controller runs on this seat (one at a time); find it with "${list}" and attach to it, stop it first, or start the new conversation on another --seat`;
  }
  return `another controller runs this session (or a copy of it under another seat); find it with "${list}" and attach to it, or stop it first`;
}

/** Prints why `what` failed (a refusal, a path to fix, or the error) and returns 1. */
export function failed(
  io: Io,
  what: string,
  e: unknown,
  stateDir?: string,
  isNew = false,
  engine: string = HARNESS_LABELS.pi,
): number {
  if (isControlRefusal(e)) return refused(io, e.code, e.message, stateDir, isNew, engine);
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

/** Prints a refusal and what to do about it; returns 1 (the exit status). */
export function refused(
  io: Io,
  code: string,
  message: string,
  stateDir?: string,
  isNew = false,
  engine: string = HARNESS_LABELS.pi,
): number {
  io.err(`refused: ${makeVisible(code)}: ${visible(message)}\n`);
  const todo = whatToDo(code, stateDir, isNew, engine);
  if (todo !== undefined) io.err(`  What to do: ${todo}.\n`);
  return 1;
}

/** Text from a file, the engine or a person, made visible on one line. */
export function visible(text: string): string {
  return makeVisible(text, { showNewlines: true });
}

/** A proven stop of an earlier controller's engine, recorded before this one took the claim. */
function describeRecovered(r: Recovered): string {
  const how =
    r.proof.kind === "cohort-proof"
      ? "from the cgroup it ran in"
      : "by the reboot since it was started";
  return `Recovered: an earlier controller of this session ended without stopping its engine; that engine's stop was proven ${how} and recorded beside the claim (proof ${r.proofDigest.slice(0, 12)}…)`;
}
