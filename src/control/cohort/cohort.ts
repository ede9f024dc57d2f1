// The cohort launcher: each execution gets a cgroup scope `<our cgroup>/mosaic-<execution>`
// with two leaves, `supervisor` (the shim) and `engine` (the engine and everything it starts,
// in its own cgroup namespace). Force stop proves itself from the cgroup: freeze, enumerate,
// kill, `populated 0`. Invariants: a proof is built only from observed values; an unreadable
// cgroup is an absent observation and ends the stop `uncertain`; a proven stop removes the scope.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { access, constants, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { fileURLToPath } from "node:url";
import { EngineLink, type EngineSpec } from "../engine/engine.ts";
import type { RpcCommand, RpcEvent, RpcUiResponse } from "../engine/pi/rpc.ts";
import {
  type Cgroup2Hierarchy,
  errnoOf,
  findCgroup2,
  probeCgroupDir,
  removeTree,
  waitForEvents,
  writeControl,
} from "./cgroup.ts";
import {
  type CgroupScope,
  CohortExecution,
  SHIM_REPLY_SLACK_MS,
  type StartedShim,
  within,
} from "./cohort-stop.ts";
import { executionIdOf, type Launcher, type LaunchOptions, PgroupLauncher } from "./launcher.ts";
import { SHIM_PROTOCOL_VERSION, ShimClient, ShimError } from "./shim.ts";

export type { CgroupScope, CohortObservation, CohortStopOutcome } from "./cohort-stop.ts";
export { CohortExecution } from "./cohort-stop.ts";

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

/** What `CgroupLauncher.launch` returns: a `Launched` with `launcher: "cgroup"`, and more. */
export type CgroupLaunched = CohortExecution;

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

/**
 * Launches each engine into its own cgroup scope under a writable cgroup v2 hierarchy (root
 * here; no systemd needed). Construct it from `CgroupLauncher.probe()` or `chooseLauncher()`.
 * A `Launcher`: its executions are `Launched` whose force stop is a `CohortStopOutcome`.
 */
export class CgroupLauncher implements Launcher {
  readonly kind = "cgroup";
  readonly hierarchy: Cgroup2Hierarchy;
  readonly #options: ScopeTimings;

  constructor(options: CgroupLauncherOptions) {
    this.hierarchy = options.hierarchy;
    this.#options = timingsOf(options);
  }

  /**
   * Finds a writable cgroup v2 hierarchy for this process and checks it can freeze and kill,
   * and looks for unshare(1) able to make a cgroup namespace. Says why not otherwise.
   */
  static async probe(
    options: Omit<CgroupLauncherOptions, "hierarchy" | "unshare"> & { procSelf?: string } = {},
  ): Promise<
    { ok: true; launcher: CgroupLauncher; detail: string } | { ok: false; reason: string }
  > {
    const { procSelf, ...rest } = options;
    const found = await findCgroup2(procSelf);
    if (!found.ok) return { ok: false, reason: found.reason };
    const h = found.hierarchy;
    try {
      await access(h.dir, constants.W_OK);
    } catch (e) {
      return { ok: false, reason: `${h.dir} is not writable: ${errnoOf(e)}` };
    }
    const probe = await probeCgroupDir(h.dir);
    if (!probe.ok) return { ok: false, reason: probe.reason };
    const unshare = await findUnshare();
    const detail = [
      `cgroup2 at ${h.mountPoint} (${h.options.join(",")}), scopes under ${h.dir}`,
      unshare.ok
        ? `engine cgroup namespace via ${unshare.path}`
        : `no cgroup namespace: ${unshare.reason}`,
      h.nsdelegate
        ? "nsdelegate: a member can't move out (K13)"
        : "no nsdelegate: a root member can move itself out (K13 not enforced)",
    ].join("; ");
    return {
      ok: true,
      launcher: new CgroupLauncher({
        ...rest,
        hierarchy: h,
        unshare: unshare.ok ? unshare.path : null,
      }),
      detail,
    };
  }

  /**
   * Makes the scope, starts the shim in `supervisor` and waits for its hello, then starts the
   * engine through EngineLink via a wrapper that joins `engine` before it execs, and waits
   * until the cgroup shows it. Rejects with CohortError (having removed what it made) when any
   * step fails, TypeError for a bad execution id.
   */
  /** `<hierarchy dir>/mosaic-<execution>`: fixed by the id, so a recovery can find it. */
  scopeFor(executionId: string): string {
    return join(this.hierarchy.dir, `mosaic-${executionIdOf({ executionId })}`);
  }

  async launch<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>(
    spec: EngineSpec,
    options: LaunchOptions<E, C> = {},
  ): Promise<CohortExecution<E, C, O>> {
    const executionId = executionIdOf(options);
    const o = this.#options;
    const dir = this.scopeFor(executionId);
    const supervisor = join(dir, "supervisor");
    const engine = join(dir, "engine");
    try {
      await mkdir(dir);
    } catch (e) {
      const code = errnoOf(e);
      throw new CohortError(
        code === "EEXIST" ? "scope-exists" : "scope-create",
        `mkdir ${dir}: ${code}`,
      );
    }
    const undo = undoer(dir, engine, () => null, o.killTimeoutMs);
    try {
      await mkdir(supervisor);
      await mkdir(engine);
    } catch (e) {
      return undo("scope-create", `mkdir under ${dir}: ${errnoOf(e)}`);
    }
    const shim = startShim([process.execPath, SHIM_PATH, "--scope", dir], {});
    const undoAll = undoer(dir, engine, () => shim, o.killTimeoutMs);
    const expected = join(this.hierarchy.cgroupPath, `mosaic-${executionId}`);
    const hello = await shimHello(shim, o.startTimeoutMs, undoAll);
    if (hello !== join(expected, "supervisor")) {
      return undoAll("shim-start", `the shim reports cgroup ${hello}, not ${expected}/supervisor`);
    }
    return startEngine(
      "cgroup",
      executionId,
      { dir, supervisor, engine, enginePath: join(expected, "engine"), shimPid: shim.pid },
      shim,
      spec,
      options,
      o,
      undoAll,
    );
  }
}

export type ScopeLauncherOptions = CgroupLauncherOptions & {
  /** systemd-run(1). Default `systemd-run` on PATH. */
  systemdRun?: string;
  /**
   * The environment systemd-run runs in: it finds the user manager's bus through
   * XDG_RUNTIME_DIR or DBUS_SESSION_BUS_ADDRESS. Default those, PATH, HOME and USER from ours.
   */
  env?: NodeJS.ProcessEnv;
};

// Run by systemd-run inside the new scope, before the shim: finds the scope's directory from
// its own cgroup (mount point + path below the mount's root), makes the two leaves and execs
// the shim with `--scope <dir>`. $1 mount point, $2 the mount's root ("" for /), then the shim.
const SCOPE_SCRIPT = [
  "cg=",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
  "while IFS= read -r l; do case $l in 0::*) cg=${l#0::};; esac; done < /proc/self/cgroup",
  'case $cg in "$2"/*) ;; *) echo "scope: cgroup $cg is outside $2" >&2; exit 71;; esac',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
  'd="$1${cg#"$2"}"',
  'mkdir "$d/supervisor" "$d/engine" || exit 72',
  "shift 2",
  'exec "$@" --scope "$d"',
].join("\n");

/**
 * Launches each engine into a systemd user scope: `systemd-run --user --scope
 * --unit=mosaic-<execution> -p Delegate=yes` runs the shim as the scope's first process, the
 * scope gets the same `supervisor` / `engine` leaves as CgroupLauncher's, and the force stop is
 * the same CohortExecution stop and proof. Needs a user manager that answers, and an engine
 * join the controller may write (see docs/cohort.md). Construct it from `ScopeLauncher.probe()`.
 */
export class ScopeLauncher implements Launcher {
  readonly kind = "scope";
  readonly hierarchy: Cgroup2Hierarchy;
  readonly #systemdRun: string;
  readonly #env: NodeJS.ProcessEnv;
  readonly #options: ScopeTimings;

  constructor(options: ScopeLauncherOptions) {
    this.hierarchy = options.hierarchy;
    this.#systemdRun = options.systemdRun ?? "systemd-run";
    this.#env =
      options.env ??
      pick(process.env, ["PATH", "HOME", "USER", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"]);
    this.#options = timingsOf(options);
  }

  /** A user manager that answers, a cgroup2 mount showing this process, unshare(1) if any. */
  static async probe(
    options: Omit<ScopeLauncherOptions, "hierarchy" | "unshare"> & {
      procSelf?: string;
      systemctl?: string;
    } = {},
  ): Promise<
    { ok: true; launcher: ScopeLauncher; detail: string } | { ok: false; reason: string }
  > {
    const { procSelf, systemctl, ...rest } = options;
    const um = await probeUserManager({
      ...(systemctl === undefined ? {} : { systemctl }),
      ...(rest.env === undefined ? {} : { env: rest.env }),
    });
    if (!um.answers) return { ok: false, reason: `no systemd user manager answers (${um.detail})` };
    const answers = `a systemd user manager answers (${um.detail})`;
    const systemdRun = rest.systemdRun ?? "systemd-run";
    const version = await run(systemdRun, ["--version"], 3000, rest.env ?? process.env);
    if (!version.ok)
      return { ok: false, reason: `${answers} but ${systemdRun}: ${version.detail}` };
    const found = await findCgroup2(procSelf);
    if (!found.ok) return { ok: false, reason: `${answers} but ${found.reason}` };
    const unshare = await findUnshare();
    const detail = [
      `a systemd user manager answers (${um.detail}); scopes via ${systemdRun} --user --scope, cgroup2 at ${found.hierarchy.mountPoint}`,
      unshare.ok
        ? `engine cgroup namespace via ${unshare.path}`
        : `no cgroup namespace: ${unshare.reason}`,
    ].join("; ");
    return {
      ok: true,
      launcher: new ScopeLauncher({
        ...rest,
        hierarchy: found.hierarchy,
        unshare: unshare.ok ? unshare.path : null,
      }),
      detail,
    };
  }

  /**
   * systemd-run makes the scope `mosaic-<execution>.scope` with the shim in it (the shim's first
   * act is to join `supervisor`); the scope's directory is learnt from the shim's hello; then
   * the engine starts exactly as under CgroupLauncher. Rejects with CohortError, having killed
   * what it started (systemd collects the emptied scope), TypeError for a bad execution id.
   */
  async launch<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>(
    spec: EngineSpec,
    options: LaunchOptions<E, C> = {},
  ): Promise<CohortExecution<E, C, O>> {
    const executionId = executionIdOf(options);
    const o = this.#options;
    const h = this.hierarchy;
    const unit = `mosaic-${executionId}`;
    const shim = startShim(
      [
        this.#systemdRun,
        "--user",
        "--scope",
        "--quiet",
        "--collect",
        `--unit=${unit}`,
        "--property=Delegate=yes",
        "--",
        "/bin/sh",
        "-c",
        SCOPE_SCRIPT,
        "mosaic-scope",
        h.mountPoint,
        h.mountRoot === "/" ? "" : h.mountRoot,
        process.execPath,
        SHIM_PATH,
      ],
      this.#env,
    );
    const cgroup = await shimHello(
      shim,
      o.startTimeoutMs,
      undoer(null, null, () => shim, o.killTimeoutMs),
    );
    const suffix = `/${unit}.scope/supervisor`;
    const root = h.mountRoot === "/" ? "" : h.mountRoot;
    if (cgroup === null || !cgroup.endsWith(suffix) || !cgroup.startsWith(`${root}/`)) {
      return undoer(
        null,
        null,
        () => shim,
        o.killTimeoutMs,
      )("shim-start", `the shim reports cgroup ${cgroup}, not …${suffix} under ${h.mountPoint}`);
    }
    const scopePath = cgroup.slice(0, -"/supervisor".length);
    const dir = join(h.mountPoint, scopePath.slice(root.length));
    const scope: CgroupScope = {
      dir,
      supervisor: join(dir, "supervisor"),
      engine: join(dir, "engine"),
      enginePath: join(scopePath, "engine"),
      shimPid: shim.pid,
    };
    const undo = undoer(dir, scope.engine, () => shim, o.killTimeoutMs);
    return startEngine("scope", executionId, scope, shim, spec, options, o, undo);
  }
}

function pick(env: NodeJS.ProcessEnv, keys: string[]): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const k of keys) if (env[k] !== undefined) out[k] = env[k];
  return out;
}

/** A launcher's options with every default filled in (both launchers stop the same way). */
type ScopeTimings = Required<Omit<CgroupLauncherOptions, "hierarchy">>;

function timingsOf(options: CgroupLauncherOptions): ScopeTimings {
  return {
    unshare: options.unshare,
    termGraceMs: options.termGraceMs ?? 3000,
    freezeTimeoutMs: options.freezeTimeoutMs ?? 2000,
    killTimeoutMs: options.killTimeoutMs ?? 3000,
    startTimeoutMs: options.startTimeoutMs ?? 10_000,
    procRoot: options.procRoot ?? "/proc",
  };
}
type Undo = (code: CohortErrorCode, message: string) => Promise<never>;

// Ends whatever got in (the engine may have started children), removes the scope, rejects.
function undoer(
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
async function shimHello(
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
async function startEngine<E, C, O extends object>(
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

function startShim(argv: [string, ...string[]], env: NodeJS.ProcessEnv): StartedShim {
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

async function findUnshare(): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  for (const path of ["/usr/bin/unshare", "/bin/unshare", "/usr/sbin/unshare", "/sbin/unshare"]) {
    try {
      await access(path, constants.X_OK);
    } catch (e) {
      errnoOf(e);
      continue;
    }
    const ran = await run(path, ["--cgroup", "/bin/true"], 5000);
    return ran.ok ? { ok: true, path } : { ok: false, reason: `${path} --cgroup: ${ran.detail}` };
  }
  return { ok: false, reason: "unshare(1) not found" };
}

function run(
  file: string,
  args: string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = { PATH: "/usr/bin:/bin" },
): Promise<{ ok: boolean; detail: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, env }, (err, stdout, stderr) => {
      const out = `${stdout}${stderr}`.trim().slice(0, 500);
      if (!err) resolve({ ok: true, detail: out });
      else
        resolve({
          ok: false,
          detail: `${err.code ?? err.signal ?? err.message}${out ? `: ${out}` : ""}`,
        });
    });
  });
}

export type UserManagerProbe = { answers: boolean; detail: string };

/** Whether a systemd user manager answers `systemctl --user`, within `timeoutMs`. */
export async function probeUserManager(
  options: { systemctl?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<UserManagerProbe> {
  const r = await run(
    options.systemctl ?? "systemctl",
    ["--user", "show", "--property=Version", "--value"],
    options.timeoutMs ?? 3000,
    options.env ?? process.env,
  );
  return { answers: r.ok, detail: r.ok ? `version ${r.detail}` : r.detail };
}

export type LauncherChoice =
  | { kind: "scope"; launcher: ScopeLauncher; reason: string }
  | { kind: "cgroup"; launcher: CgroupLauncher; reason: string }
  | { kind: "pgroup"; launcher: PgroupLauncher; reason: string };

/**
 * Picks the strongest launcher this host supports and says why, for the binding record:
 * ScopeLauncher where a systemd user manager answers, CgroupLauncher where a writable cgroup v2
 * hierarchy can freeze and kill, else PgroupLauncher, whose stops are never proven.
 */
export async function chooseLauncher(
  options: {
    systemctl?: string;
    systemdRun?: string;
    procSelf?: string;
    cgroup?: Omit<CgroupLauncherOptions, "hierarchy" | "unshare">;
  } = {},
): Promise<LauncherChoice> {
  const sc = await ScopeLauncher.probe({
    ...options.cgroup,
    ...(options.systemctl === undefined ? {} : { systemctl: options.systemctl }),
    ...(options.systemdRun === undefined ? {} : { systemdRun: options.systemdRun }),
    ...(options.procSelf === undefined ? {} : { procSelf: options.procSelf }),
  });
  if (sc.ok) return { kind: "scope", launcher: sc.launcher, reason: `scope: ${sc.detail}` };
  const scope = `scope: ${sc.reason}`;
  const cg = await CgroupLauncher.probe({
    ...options.cgroup,
    ...(options.procSelf === undefined ? {} : { procSelf: options.procSelf }),
  });
  if (cg.ok)
    return { kind: "cgroup", launcher: cg.launcher, reason: `${scope}; cgroup: ${cg.detail}` };
  return {
    kind: "pgroup",
    launcher: new PgroupLauncher(),
    reason: `${scope}; cgroup: ${cg.reason}; pgroup: stops can't be proven`,
  };
}
