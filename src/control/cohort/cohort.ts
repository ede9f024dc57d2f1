// The cohort launcher: each execution gets a cgroup scope `<our cgroup>/mosaic-<execution>`
// with two leaves, `supervisor` (the shim) and `engine` (the engine and everything it starts,
// in its own cgroup namespace). Force stop proves itself from the cgroup: freeze, enumerate,
// kill, `populated 0`. Invariants: a proof is built only from observed values; an unreadable
// cgroup is an absent observation and ends the stop `uncertain`; a proven stop removes the scope.
// How a scope's shim and engine start is scope-start.ts, the host probes host-probe.ts.
import { access, constants, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { EngineSpec } from "../engine/engine.ts";
import type { RpcCommand, RpcEvent, RpcUiResponse } from "../engine/pi/rpc.ts";
import { type Cgroup2Hierarchy, errnoOf, findCgroup2, probeCgroupDir } from "./cgroup.ts";
import type { CgroupScope, CohortExecution } from "./cohort-stop.ts";
import { findUnshare, probeUserManager, run } from "./host-probe.ts";
import { executionIdOf, type Launcher, type LaunchOptions, PgroupLauncher } from "./launcher.ts";
import {
  type CgroupLauncherOptions,
  CohortError,
  type ScopeTimings,
  SHIM_PATH,
  shimHello,
  startEngine,
  startShim,
  timingsOf,
  undoer,
} from "./scope-start.ts";

export type { CgroupScope, CohortObservation, CohortStopOutcome } from "./cohort-stop.ts";
export { CohortExecution } from "./cohort-stop.ts";
export { probeUserManager, type UserManagerProbe } from "./host-probe.ts";
export {
  type CgroupLauncherOptions,
  CohortError,
  type CohortErrorCode,
  ENGINE_JOIN_FAILED,
  SHIM_PATH,
} from "./scope-start.ts";

/** What `CgroupLauncher.launch` returns: a `Launched` with `launcher: "cgroup"`, and more. */
export type CgroupLaunched = CohortExecution;

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
