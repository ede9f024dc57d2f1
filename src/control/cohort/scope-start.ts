// Starting an execution inside a made scope: the shim in `supervisor` and its hello, the engine
// through a wrapper that joins `engine` before it execs, and the undo that ends what got in and
// removes the scope when a step fails. Shared by CgroupLauncher and ScopeLauncher (cohort.ts),
// so both start (and stop) the same way.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { fileURLToPath } from "node:url";
import { EngineLink, type EngineSpec } from "../engine/engine.ts";
import { type Cgroup2Hierarchy, removeTree, waitForEvents, writeControl } from "./cgroup.ts";
import {
  type CgroupScope,
  CohortExecution,
  SHIM_REPLY_SLACK_MS,
  type StartedShim,
  within,
} from "./cohort-stop.ts";
import type { LaunchOptions } from "./launcher.ts";
import { SHIM_PROTOCOL_VERSION, ShimClient, ShimError } from "./shim.ts";

export const SHIM_PATH = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./shim.ts" : "./shim.js", import.meta.url),
);

export type CohortErrorCode =
  | "scope-exists"
  | "scope-create"
  | "shim-start"
  | "engine-join"
  | "engine-start";

/** A launch that could not set up its scope; nothing it made is left behind. */
export class CohortError extends Error {
  readonly code: CohortErrorCode;
  constructor(code: CohortErrorCode, message: string) {
    super(message);
    this.name = "CohortError";
    this.code = code;
  }
}

export type CgroupLauncherOptions = {
  hierarchy: Cgroup2Hierarchy;
  /** unshare(1), to give the engine its own cgroup namespace; null runs it without one. */
  unshare: string | null;
  /** TERM phase: how long to wait for `populated 0` after SIGTERM. Default 3 s. */
  termGraceMs?: number;
  /** How long to wait for `frozen 1` after writing cgroup.freeze. Default 2 s. */
  freezeTimeoutMs?: number;
  /** Kill phase: how long to wait for `populated 0` after cgroup.kill. Default 3 s. */
  killTimeoutMs?: number;
  /** The shim's hello, and the engine joining its cgroup. Default 10 s. */
  startTimeoutMs?: number;
  procRoot?: string;
};

const SHIM_STDERR_LIMIT = 8 * 1024;

// The wrapper the engine runs as before it execs: it joins `engine` (so no engine code ever
// runs outside it), then execs through unshare when given. `$$` is the pid EngineLink spawned,
// which stays the engine's pid through both execs. 125: never ran.
const JOIN_SCRIPT = 'echo $$ > "$1" || exit 125\nshift\nexec "$@"';
export const ENGINE_JOIN_FAILED = 125;

/** A launcher's options with every default filled in (both launchers stop the same way). */
export type ScopeTimings = Required<Omit<CgroupLauncherOptions, "hierarchy">>;

export function timingsOf(options: CgroupLauncherOptions): ScopeTimings {
  return {
    unshare: options.unshare,
    termGraceMs: options.termGraceMs ?? 3000,
    freezeTimeoutMs: options.freezeTimeoutMs ?? 2000,
    killTimeoutMs: options.killTimeoutMs ?? 3000,
    startTimeoutMs: options.startTimeoutMs ?? 10_000,
    procRoot: options.procRoot ?? "/proc",
  };
}

export type Undo = (code: CohortErrorCode, message: string) => Promise<never>;

// Ends whatever got in (the engine may have started children), removes the scope, rejects.
export function undoer(
  dir: string | null,
  engine: string | null,
  shim: () => StartedShim | null,
  killTimeoutMs: number,
): Undo {
  return async (code, message) => {
    await shim()?.kill();
    let left = "";
    if (dir !== null && engine !== null) {
      await writeControl(engine, "cgroup.kill", "1");
      await waitForEvents(engine, { populated: false }, killTimeoutMs);
      const removed = await removeTree(dir);
      left = removed.failed.map((f) => `${f.dir}: ${f.errno}`).join(", ");
    }
    throw new CohortError(code, left ? `${message}; left behind: ${left}` : message);
  };
}

/** The shim's hello: the cgroup it reports it is in (null if it could not read it). */
export async function shimHello(
  shim: StartedShim,
  startTimeoutMs: number,
  undo: Undo,
): Promise<string | null> {
  try {
    const hello = await Promise.race([
      shim.client.request({ type: "hello" }, startTimeoutMs),
      shim.exited.then((s) => {
        throw new ShimError("shim-gone", `the shim exited (${s})`);
      }),
    ]);
    if (hello.version !== SHIM_PROTOCOL_VERSION) {
      return undo("shim-start", `the shim speaks version ${hello.version}`);
    }
    return hello.cgroup;
  } catch (e) {
    if (!(e instanceof ShimError)) throw e;
    // The channel can fail (EPIPE) before the shim's last words are read: wait, briefly, for
    // its stderr to end, so the refusal names why it failed.
    await within(shim.drained, SHIM_REPLY_SLACK_MS);
    return undo("shim-start", `${e.message}; shim stderr: ${shim.stderr().trim()}`);
  }
}

/**
 * Starts the engine through EngineLink via the wrapper that joins `scope.engine` before it
 * execs, and waits until the cgroup shows it (or the engine exits). Undoes on failure.
 */
export async function startEngine<E, C, O extends object>(
  kind: "cgroup" | "scope",
  executionId: string,
  scope: CgroupScope,
  shim: StartedShim,
  spec: EngineSpec,
  options: LaunchOptions<E, C>,
  o: ScopeTimings,
  undo: Undo,
): Promise<CohortExecution<E, C, O>> {
  const engine = scope.engine;
  const prefix = o.unshare ? [o.unshare, "--cgroup", "--"] : [];
  const link = EngineLink.start<E, C, O>(
    {
      command: "/bin/sh",
      args: [
        "-c",
        JOIN_SCRIPT,
        "mosaic-engine-join",
        join(engine, "cgroup.procs"),
        ...prefix,
        spec.command,
        ...spec.args,
      ],
      env: spec.env,
      cwd: spec.cwd,
    },
    options.link ?? {},
  );
  // Joined once `engine` is populated; or the engine already exited (joined unless 125).
  const joined = await Promise.race([
    shim.client
      .request(
        { type: "events", until: { populated: true }, timeoutMs: o.startTimeoutMs },
        o.startTimeoutMs + SHIM_REPLY_SLACK_MS,
      )
      .then(
        (r) => (r.met ? "joined" : "timeout"),
        (e: unknown) => `shim: ${String(e)}`,
      ),
    link.exited,
  ]);
  if (typeof joined !== "string" && (joined.spawnError || joined.exitCode === ENGINE_JOIN_FAILED)) {
    return undo(
      "engine-join",
      `the engine did not join ${engine}: ${joined.spawnError ?? link.stderr().text.trim()}`,
    );
  }
  if (typeof joined === "string" && joined !== "joined") {
    link.kill("SIGKILL", "group");
    await link.exited;
    return undo("engine-start", `the engine was not seen in ${engine}: ${joined}`);
  }
  return new CohortExecution(
    executionId,
    link,
    scope,
    o.unshare !== null,
    shim,
    {
      termGraceMs: o.termGraceMs,
      freezeTimeoutMs: o.freezeTimeoutMs,
      killTimeoutMs: o.killTimeoutMs,
      procRoot: o.procRoot,
    },
    kind,
  );
}

export function startShim(argv: [string, ...string[]], env: NodeJS.ProcessEnv): StartedShim {
  const [command, ...args] = argv;
  const child: ChildProcess = spawn(command, args, {
    stdio: ["ignore", "ignore", "pipe", "pipe"],
    // Its own session: a terminal's ^C for the controller's group does not reach the anchor.
    detached: true,
    env,
    cwd: "/",
  });
  let tail = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-SHIM_STDERR_LIMIT);
  });
  const exited = new Promise<string>((resolve) => {
    child.on("error", (e) => resolve(`spawn failed: ${e.message}`));
    child.on("exit", (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`));
  });
  const drained = new Promise<void>((resolve) => {
    child.on("error", () => resolve());
    child.on("close", () => resolve());
  });
  const client = new ShimClient(child.stdio[3] as Duplex);
  return {
    pid: child.pid ?? 0,
    client,
    exited,
    drained,
    stderr: () => tail,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      client.close();
    },
  };
}
