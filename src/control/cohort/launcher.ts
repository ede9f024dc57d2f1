// Launchers (seed: Pieces, cohort; Choices, Force stop): start an engine as one execution and
// stop it by force. A force stop ends `stopped` only with a proof that every member of the
// engine's cohort is gone; an observation that could not be made is recorded as absent, never
// as empty. `PgroupLauncher` can't enumerate a member that left its process group (setsid), so
// its force stop always ends `uncertain` (K2). `FakeLauncher` is fixture-only.
import { randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import { ID_PATTERN } from "../../protocol/chat-01.ts";
import {
  type AnyEngineLink,
  EngineLink,
  type EngineLinkOptions,
  type EngineSpec,
} from "../engine/engine.ts";
import type { RpcCommand, RpcEvent, RpcUiResponse } from "../engine/pi/rpc.ts";

export type LauncherKind = "pgroup" | "fake" | "cgroup" | "scope";
export type StopPhase = "term" | "kill";

/** When an observation was made: its phase, and ms since the force stop began. */
type Stamp = { phase: StopPhase; atMs: number };

export type Observation =
  /**
   * kill(2) to the group: `sent`, `failed` with its errno (ESRCH: nobody was left in it), or
   * `skipped` once the engine had exited and the group was seen empty, since its id may then be
   * reused by an unrelated group.
   */
  | (Stamp & {
      kind: "signal";
      target: "group";
      pgid: number;
      signal: "SIGTERM" | "SIGKILL";
      delivery: "sent" | "skipped";
    })
  | (Stamp & {
      kind: "signal";
      target: "group";
      pgid: number;
      signal: "SIGTERM" | "SIGKILL";
      delivery: "failed";
      errno: string;
    })
  | (Stamp & {
      kind: "engine-exit";
      status: "observed";
      exitCode: number | null;
      signal: string | null;
      spawnError: string | null;
    })
  | (Stamp & { kind: "engine-exit"; status: "absent"; reason: string })
  /** The cohort's members as `source` listed them; an unreadable source is `absent`. */
  | (Stamp & { kind: "members"; source: string; status: "observed"; pids: number[] })
  | (Stamp & { kind: "members"; source: string; status: "absent"; reason: string })
  /** Whether the cohort was seen empty (a cgroup's `populated 0`). */
  | (Stamp & { kind: "cohort-empty"; source: string; status: "observed"; empty: boolean })
  | (Stamp & { kind: "cohort-empty"; source: string; status: "absent"; reason: string });

export type ObservedMembers = Extract<Observation, { kind: "members"; status: "observed" }>;
export type ObservedEmpty = Extract<Observation, { kind: "cohort-empty"; status: "observed" }>;

/**
 * Proof that a force stop ended every member: the members enumerated while the cohort could not
 * change (frozen), and the cohort then seen empty. Absent observations can't make one.
 */
export type StopProof = {
  method: "cgroup" | "synthetic";
  enumerated: ObservedMembers;
  emptied: ObservedEmpty & { empty: true };
};

/** `members`: every pid this stop saw in the cohort, the engine included; never a proof alone. */
export type StopOutcome =
  | { result: "stopped"; proof: StopProof; observations: Observation[]; members: number[] }
  | { result: "uncertain"; proof: null; observations: Observation[]; members: number[] };

/** A launched engine; its link speaks the wire it was launched with (Pi's by default). */
export type Launched<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse> = {
  readonly launcher: LauncherKind;
  readonly executionId: string;
  readonly link: EngineLink<E, C, O>;
  /**
   * Ends the engine and everything it started, as far as this launcher can. Concurrent calls
   * share one stop; a call after a stop settled runs a new one (a retry after `uncertain`).
   * Never rejects.
   */
  forceStop(): Promise<StopOutcome>;
};

/** A launched engine of any wire, for code that needs only its process and its stop. */
// biome-ignore lint/suspicious/noExplicitAny: as AnyEngineLink: nothing is read through its events.
export type AnyLaunched = Launched<any, never, never>;

export type LaunchOptions<E = RpcEvent, C = RpcCommand> = {
  /** A CHAT-01 id; default a fresh UUID. */
  executionId?: string;
  link?: EngineLinkOptions<E, C>;
};

export type Launcher = {
  readonly kind: LauncherKind;
  launch<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>(
    spec: EngineSpec,
    options?: LaunchOptions<E, C>,
  ): Promise<Launched<E, C, O>>;
  /**
   * The cgroup scope directory an execution will run under, known before it launches; the
   * controller writes it to its launch record so a recovery can find it after a crash.
   * Absent, or null, for launchers whose scope is not fixed in advance.
   */
  scopeFor?(executionId: string): string | null;
};

export type PgroupLauncherOptions = {
  /** TERM phase: how long to wait for the engine to exit after SIGTERM. Default 3 s. */
  termGraceMs?: number;
  /** Kill phase: how long to wait for the engine, and the group in /proc, to go. Default 3 s. */
  killGraceMs?: number;
  /** Where to list the group's members. Default /proc. */
  procRoot?: string;
};

const POLL_MS = 10;

/**
 * The process-group fallback. The engine leads its own group (EngineLink spawns it detached);
 * force stop sends SIGTERM to the group, waits a bounded grace for the engine, then SIGKILL to
 * the group. Always `uncertain` with no proof: a member that called setsid left the group and
 * nothing here can see it.
 */
export class PgroupLauncher implements Launcher {
  readonly kind = "pgroup";
  readonly #options: Required<PgroupLauncherOptions>;

  constructor(options: PgroupLauncherOptions = {}) {
    this.#options = {
      termGraceMs: options.termGraceMs ?? 3000,
      killGraceMs: options.killGraceMs ?? 3000,
      procRoot: options.procRoot ?? "/proc",
    };
  }

  async launch<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>(
    spec: EngineSpec,
    options: LaunchOptions<E, C> = {},
  ): Promise<Launched<E, C, O>> {
    return launchInGroup<E, C, O>("pgroup", spec, options, async (link) => {
      const { observations, members } = await stopProcessGroup(link, this.#options);
      return { result: "uncertain", proof: null, observations, members };
    });
  }
}

/** Fixture-only: what the next force stop of a FakeLauncher engine reports. */
export type FakeStopScript = {
  result: "stopped" | "uncertain";
  /** Whether the stop really TERMs and KILLs the engine's group first. Default true. */
  signal?: boolean;
  /** The stop settles after this does (a rejection rejects it): a test holds a stop here. */
  hold?: Promise<void>;
};

/**
 * FIXTURE-ONLY launcher for tests of the controller. It starts the given (fake) engine like
 * PgroupLauncher, and its force stop reports whatever the test scripted: `stopped` with a
 * synthetic proof it never verified, or `uncertain`. Never use it outside tests: its proof
 * proves nothing. Scripts are used in order across launches; then `defaultStop`.
 */
export class FakeLauncher implements Launcher {
  readonly kind = "fake";
  readonly #stops: FakeStopScript[];
  readonly #defaultStop: FakeStopScript;
  readonly #group: Required<PgroupLauncherOptions>;
  #stopCalls = 0;

  constructor(
    options: {
      stops?: FakeStopScript[];
      defaultStop?: FakeStopScript;
    } & PgroupLauncherOptions = {},
  ) {
    this.#stops = [...(options.stops ?? [])];
    this.#defaultStop = options.defaultStop ?? { result: "uncertain" };
    this.#group = {
      termGraceMs: options.termGraceMs ?? 1000,
      killGraceMs: options.killGraceMs ?? 1000,
      procRoot: options.procRoot ?? "/proc",
    };
  }

  /** Appends scripts for the next force stops. */
  scriptStops(...scripts: FakeStopScript[]): void {
    this.#stops.push(...scripts);
  }

  /** How many force stops have begun. */
  get stopCalls(): number {
    return this.#stopCalls;
  }

  async launch<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>(
    spec: EngineSpec,
    options: LaunchOptions<E, C> = {},
  ): Promise<Launched<E, C, O>> {
    return launchInGroup<E, C, O>("fake", spec, options, async (link) => {
      this.#stopCalls++;
      const script = this.#stops.shift() ?? this.#defaultStop;
      const stopped =
        script.signal === false
          ? { observations: [], members: link.pid === undefined ? [] : [link.pid] }
          : await stopProcessGroup(link, this.#group);
      await script.hold;
      if (script.result === "uncertain") return { result: "uncertain", proof: null, ...stopped };
      const atMs = lastAt(stopped.observations);
      const proof: StopProof = {
        method: "synthetic",
        enumerated: {
          phase: "kill",
          atMs,
          kind: "members",
          source: "synthetic",
          status: "observed",
          pids: link.pid === undefined ? [] : [link.pid],
        },
        emptied: {
          phase: "kill",
          atMs,
          kind: "cohort-empty",
          source: "synthetic",
          status: "observed",
          empty: true,
        },
      };
      return {
        result: "stopped",
        proof,
        observations: [...stopped.observations, proof.enumerated, proof.emptied],
        members: stopped.members,
      };
    });
  }
}

/**
 * Starts the engine as its process group's leader (EngineLink) under the options' execution id
 * (TypeError for a bad one), as a Launched whose force stop is `stop`: PgroupLauncher's and
 * FakeLauncher's launches differ only in their stop.
 */
function launchInGroup<E, C, O extends object>(
  kind: LauncherKind,
  spec: EngineSpec,
  options: LaunchOptions<E, C>,
  stop: (link: EngineLink<E, C, O>) => Promise<StopOutcome>,
): Launched<E, C, O> {
  const executionId = executionIdOf(options);
  const link = EngineLink.start<E, C, O>(spec, options.link ?? {});
  return new LaunchedEngine(kind, executionId, link, () => stop(link));
}

class LaunchedEngine<E, C, O extends object> implements Launched<E, C, O> {
  readonly launcher: LauncherKind;
  readonly executionId: string;
  readonly link: EngineLink<E, C, O>;
  readonly #stop: () => Promise<StopOutcome>;
  #running: Promise<StopOutcome> | null = null;

  constructor(
    launcher: LauncherKind,
    executionId: string,
    link: EngineLink<E, C, O>,
    stop: () => Promise<StopOutcome>,
  ) {
    this.launcher = launcher;
    this.executionId = executionId;
    this.link = link;
    this.#stop = stop;
  }

  forceStop(): Promise<StopOutcome> {
    if (!this.#running) {
      this.#running = this.#stop().finally(() => {
        this.#running = null;
      });
    }
    return this.#running;
  }
}

/** The launch's execution id, given or new; checked before anything spawns (TypeError). */
export function executionIdOf(options: { executionId?: string }): string {
  const id = options.executionId ?? randomUUID();
  if (!ID_PATTERN.test(id)) throw new TypeError(`execution id ${JSON.stringify(id)} is not an id`);
  return id;
}

function lastAt(observations: readonly Observation[]): number {
  return observations.at(-1)?.atMs ?? 0;
}

/** TERM then KILL to the engine's process group, recording what was seen. Never rejects. */
async function stopProcessGroup(
  link: AnyEngineLink,
  options: Required<PgroupLauncherOptions>,
): Promise<{ observations: Observation[]; members: number[] }> {
  const t0 = performance.now();
  const at = (phase: StopPhase): Stamp => ({ phase, atMs: Math.round(performance.now() - t0) });
  const observations: Observation[] = [];
  const pgid = link.pid;
  if (pgid === undefined) {
    // Never spawned: there is no group. The spawn error arrives as the exit.
    observations.push(await awaitExit(link, options.termGraceMs, "term", at));
    return { observations, members: [] };
  }
  const beforeTerm = await scanGroup(options.procRoot, pgid, at("term"));
  observations.push(beforeTerm);
  observations.push(signalGroup(link, pgid, beforeTerm, "SIGTERM", at("term")));
  const termExit = await awaitExit(link, options.termGraceMs, "term", at);
  observations.push(termExit);

  const beforeKill = await scanGroup(options.procRoot, pgid, at("kill"));
  observations.push(beforeKill);
  observations.push(signalGroup(link, pgid, beforeKill, "SIGKILL", at("kill")));
  const deadline = performance.now() + options.killGraceMs;
  const [killExit, after] = await Promise.all([
    termExit.status === "observed" ? null : awaitExit(link, options.killGraceMs, "kill", at),
    pollUntilGroupGone(options.procRoot, pgid, deadline, () => at("kill")),
  ]);
  if (killExit) observations.push(killExit);
  observations.push(after);

  const members = new Set<number>([pgid]);
  for (const o of observations) {
    if (o.kind === "members" && o.status === "observed") for (const pid of o.pids) members.add(pid);
  }
  return { observations, members: [...members] };
}

// A group with a live member keeps its id reserved, so signalling it is safe while the engine
// runs or a scan saw a member; an absent scan can't say the group is empty, so it signals too.
function signalGroup(
  link: AnyEngineLink,
  pgid: number,
  scan: Extract<Observation, { kind: "members" }>,
  signal: "SIGTERM" | "SIGKILL",
  stamp: Stamp,
): Observation {
  const base = { ...stamp, kind: "signal", target: "group", pgid, signal } as const;
  if (link.exit && scan.status === "observed" && scan.pids.length === 0) {
    return { ...base, delivery: "skipped" };
  }
  try {
    process.kill(-pgid, signal);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code !== "string") throw e;
    return { ...base, delivery: "failed", errno: code };
  }
  return { ...base, delivery: "sent" };
}

async function awaitExit(
  link: AnyEngineLink,
  graceMs: number,
  phase: StopPhase,
  at: (phase: StopPhase) => Stamp,
): Promise<Extract<Observation, { kind: "engine-exit" }>> {
  const timeout = new AbortController();
  await Promise.race([
    link.exited,
    delay(graceMs, undefined, { signal: timeout.signal }).catch(() => undefined),
  ]);
  timeout.abort();
  // `exited` also waits for stdout and stderr to end; the exit itself may be known sooner.
  const exit = link.exit;
  if (!exit)
    return {
      ...at(phase),
      kind: "engine-exit",
      status: "absent",
      reason: `no exit within ${graceMs} ms`,
    };
  return {
    ...at(phase),
    kind: "engine-exit",
    status: "observed",
    exitCode: exit.exitCode,
    signal: exit.signal,
    spawnError: exit.spawnError ?? null,
  };
}

async function pollUntilGroupGone(
  procRoot: string,
  pgid: number,
  deadline: number,
  stamp: () => Stamp,
): Promise<Observation> {
  for (;;) {
    const scan = await scanGroup(procRoot, pgid, stamp());
    if (scan.status === "absent" || scan.pids.length === 0) return scan;
    if (performance.now() >= deadline) return scan;
    await delay(POLL_MS);
  }
}

/**
 * The live processes whose process group is `pgid`, from `<procRoot>/<pid>/stat` (proc(5):
 * field 3 is the state, field 5 the group). Zombies are dead and skipped. Absent, not empty,
 * when the list can't be read.
 */
async function scanGroup(
  procRoot: string,
  pgid: number,
  stamp: Stamp,
): Promise<Extract<Observation, { kind: "members" }>> {
  const source = `${procRoot}/<pid>/stat`;
  const absent = (reason: string): Extract<Observation, { kind: "members" }> => ({
    ...stamp,
    kind: "members",
    source,
    status: "absent",
    reason,
  });
  let names: string[];
  try {
    names = await readdir(procRoot);
  } catch (e) {
    return absent(`${procRoot}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  const pids: number[] = [];
  for (const name of names) {
    if (!/^[1-9][0-9]*$/.test(name)) continue;
    let stat: string;
    try {
      stat = await readFile(`${procRoot}/${name}/stat`, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // The process ended between the listing and the read: it is in no group now.
      if (code === "ENOENT" || code === "ESRCH") continue;
      return absent(`${procRoot}/${name}/stat: ${code ?? String(e)}`);
    }
    // The name (field 2) is in parentheses and may hold spaces; the fields after it don't.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    const pgrp = Number(fields[2]);
    if (state === undefined || !Number.isInteger(pgrp)) {
      return absent(`${procRoot}/${name}/stat: unparseable`);
    }
    if (pgrp === pgid && state !== "Z" && state !== "X") pids.push(Number(name));
  }
  return { ...stamp, kind: "members", source, status: "observed", pids };
}
