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
import { ID_PATTERN } from "../protocol/chat-01.ts";
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
} from "./cohort-stop.ts";
import { EngineLink, type EngineSpec } from "./engine.ts";
import { type Launcher, type LaunchOptions, PgroupLauncher } from "./launcher.ts";
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
  readonly #options: Required<Omit<CgroupLauncherOptions, "hierarchy">>;

  constructor(options: CgroupLauncherOptions) {
    this.hierarchy = options.hierarchy;
    this.#options = {
      unshare: options.unshare,
      termGraceMs: options.termGraceMs ?? 3000,
      freezeTimeoutMs: options.freezeTimeoutMs ?? 2000,
      killTimeoutMs: options.killTimeoutMs ?? 3000,
      startTimeoutMs: options.startTimeoutMs ?? 10_000,
      procRoot: options.procRoot ?? "/proc",
    };
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
  async launch(spec: EngineSpec, options: LaunchOptions = {}): Promise<CgroupLaunched> {
    const executionId = options.executionId ?? crypto.randomUUID();
    if (!ID_PATTERN.test(executionId))
      throw new TypeError(`execution id ${JSON.stringify(executionId)} is not an id`);
    const o = this.#options;
    const dir = join(this.hierarchy.dir, `mosaic-${executionId}`);
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
    let shim: StartedShim | null = null;
    // Ends whatever got in (the engine may have started children) and removes the scope.
    const undo = async (code: CohortErrorCode, message: string): Promise<never> => {
      if (shim) await shim.kill();
      await writeControl(engine, "cgroup.kill", "1");
      await waitForEvents(engine, { populated: false }, o.killTimeoutMs);
      const removed = await removeTree(dir);
      const left = removed.failed.map((f) => `${f.dir}: ${f.errno}`).join(", ");
      throw new CohortError(code, left ? `${message}; left behind: ${left}` : message);
    };
    try {
      await mkdir(supervisor);
      await mkdir(engine);
    } catch (e) {
      return undo("scope-create", `mkdir under ${dir}: ${errnoOf(e)}`);
    }

    shim = startShim(dir);
    const expected = join(this.hierarchy.cgroupPath, `mosaic-${executionId}`);
    try {
      const hello = await Promise.race([
        shim.client.request({ type: "hello" }, o.startTimeoutMs),
        shim.exited.then((s) => {
          throw new ShimError("shim-gone", `the shim exited (${s})`);
        }),
      ]);
      if (hello.version !== SHIM_PROTOCOL_VERSION) {
        return undo("shim-start", `the shim speaks version ${hello.version}`);
      }
      if (hello.cgroup !== join(expected, "supervisor")) {
        return undo(
          "shim-start",
          `the shim reports cgroup ${hello.cgroup}, not ${expected}/supervisor`,
        );
      }
    } catch (e) {
      if (!(e instanceof ShimError)) throw e;
      return undo("shim-start", `${e.message}; shim stderr: ${shim.stderr().trim()}`);
    }

    const prefix = o.unshare ? [o.unshare, "--cgroup", "--"] : [];
    const link = EngineLink.start(
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
    if (
      typeof joined !== "string" &&
      (joined.spawnError || joined.exitCode === ENGINE_JOIN_FAILED)
    ) {
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

    const scope: CgroupScope = {
      dir,
      supervisor,
      engine,
      enginePath: join(expected, "engine"),
      shimPid: shim.pid,
    };
    return new CohortExecution(executionId, link, scope, o.unshare !== null, shim, {
      termGraceMs: o.termGraceMs,
      freezeTimeoutMs: o.freezeTimeoutMs,
      killTimeoutMs: o.killTimeoutMs,
      procRoot: o.procRoot,
    });
  }
}

function startShim(scopeDir: string): StartedShim {
  const child: ChildProcess = spawn(process.execPath, [SHIM_PATH, "--scope", scopeDir], {
    stdio: ["ignore", "ignore", "pipe", "pipe"],
    // Its own session: a terminal's ^C for the controller's group does not reach the anchor.
    detached: true,
    env: {},
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
  const client = new ShimClient(child.stdio[3] as Duplex);
  return {
    pid: child.pid ?? 0,
    client,
    exited,
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
  | { kind: "cgroup"; launcher: CgroupLauncher; reason: string }
  | { kind: "pgroup"; launcher: PgroupLauncher; reason: string };

/**
 * Picks the strongest launcher this host supports and says why, for the binding record:
 * ScopeLauncher where a systemd user manager answers (not built yet: reported, then the next),
 * CgroupLauncher where a writable cgroup v2 hierarchy can freeze and kill, else PgroupLauncher,
 * whose stops are never proven.
 */
export async function chooseLauncher(
  options: {
    systemctl?: string;
    procSelf?: string;
    cgroup?: Omit<CgroupLauncherOptions, "hierarchy" | "unshare">;
  } = {},
): Promise<LauncherChoice> {
  const um = await probeUserManager(
    options.systemctl === undefined ? {} : { systemctl: options.systemctl },
  );
  const scope = um.answers
    ? `scope: a systemd user manager answers (${um.detail}) but ScopeLauncher is not built`
    : `scope: no systemd user manager answers (${um.detail})`;
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
