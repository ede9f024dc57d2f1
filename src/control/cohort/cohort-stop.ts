// One launched cohort execution and its force stop (K3, K12, K15): a TERM phase (freeze, TERM
// each member, thaw, bounded grace for `populated 0`), then the kill phase (freeze, `frozen 1`,
// enumerate, cgroup.kill, `populated 0`), then a survivor check. Invariants: the proof holds
// only observed values; an absent read never passes for an empty one; only a proven stop
// releases the shim and removes the scope, and a proven stop stays proven.

import type { EngineLink } from "../engine/engine.ts";
import type { RpcCommand, RpcEvent, RpcUiResponse } from "../engine/pi/rpc.ts";
import type { RemoveResult } from "./cgroup.ts";
import { errnoOf, findSurvivors, removeTree } from "./cgroup.ts";
import type {
  Launched,
  Observation,
  ObservedEmpty,
  ObservedMembers,
  StopOutcome,
  StopPhase,
  StopProof,
} from "./launcher.ts";
import { runOp, type ShimClient, ShimError, type ShimReplyFor, type ShimRequest } from "./shim.ts";

type Stamp = { phase: StopPhase; atMs: number };

/**
 * What a cohort stop did and saw, in order. `Observation` (launcher.ts) holds the member and
 * emptiness reads, the engine's exit and group signals; the cgroup writes, the freeze state,
 * per-process signals and the survivor check have no kind there, so they are added here.
 * `source` names the file read or written, prefixed `shim:` when the shim did it.
 */
export type CohortObservation =
  | Observation
  | (Stamp & { kind: "cgroup-write"; source: string; value: "0" | "1"; status: "written" })
  | (Stamp & {
      kind: "cgroup-write";
      source: string;
      value: "0" | "1";
      status: "failed";
      errno: string;
    })
  | (Stamp & { kind: "frozen"; source: string; status: "observed"; frozen: boolean })
  | (Stamp & { kind: "frozen"; source: string; status: "absent"; reason: string })
  | (Stamp & { kind: "member-signal"; signal: "SIGTERM"; pid: number; delivery: "sent" })
  | (Stamp & {
      kind: "member-signal";
      signal: "SIGTERM";
      pid: number;
      delivery: "failed";
      errno: string;
    })
  /** Members seen during the stop that are alive after it, and the cgroup each is in now. */
  | (Stamp & {
      kind: "survivors";
      source: string;
      status: "observed";
      alive: { pid: number; cgroup: string | null }[];
    })
  | (Stamp & { kind: "survivors"; source: string; status: "absent"; reason: string });

export type CohortStopOutcome = StopOutcome & {
  /** Every step in order; `observations` is the part of it that launcher.ts types. */
  log: CohortObservation[];
  /** After `stopped`: the scope's removal (`failed` lists what stayed); null otherwise. */
  removal: RemoveResult | null;
};

export type CgroupScope = {
  /** `<hierarchy dir>/mosaic-<execution>` */
  dir: string;
  supervisor: string;
  engine: string;
  /** `engine` as a cgroup path, as /proc/<pid>/cgroup shows it. */
  enginePath: string;
  shimPid: number;
};

export type StartedShim = {
  pid: number;
  client: ShimClient;
  /** Resolves with how it ended. */
  exited: Promise<string>;
  /** Resolves once its stderr (and every other pipe) has ended: stderr() is then whole. */
  drained: Promise<void>;
  stderr(): string;
  /** SIGKILL (the shim ignores only TERM), then waits for the exit. */
  kill(): Promise<void>;
};

export type StopTimings = {
  termGraceMs: number;
  freezeTimeoutMs: number;
  killTimeoutMs: number;
  procRoot: string;
};

/** Replies come at most this long after the wait they report on ends. */
export const SHIM_REPLY_SLACK_MS = 2000;

type Op = Exclude<ShimRequest, { type: "hello" } | { type: "release" }>;
type OpType = Op["type"];
type OpBody<K extends OpType> = Omit<Extract<Op, { type: K }>, "id"> & { type: K };
/** A reply, and whether the shim made it or the launcher did, on the cgroup itself. */
type OpResult<K extends OpType> = ShimReplyFor[K] & { via: "shim" | "direct" };

/** A launched engine in its cgroup scope. Built by CgroupLauncher.launch and ScopeLauncher.launch. */
export class CohortExecution<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>
  implements Launched<E, C, O>
{
  /** `scope` when systemd made the scope (ScopeLauncher), `cgroup` when the launcher did. */
  readonly launcher: "cgroup" | "scope";
  readonly executionId: string;
  readonly link: EngineLink<E, C, O>;
  readonly scope: CgroupScope;
  /** Whether the engine runs in its own cgroup namespace (`unshare --cgroup`). */
  readonly cgroupNamespace: boolean;
  readonly #shim: StartedShim;
  readonly #t: StopTimings;
  #running: Promise<CohortStopOutcome> | null = null;
  #proven: CohortStopOutcome | null = null;

  constructor(
    executionId: string,
    link: EngineLink<E, C, O>,
    scope: CgroupScope,
    cgroupNamespace: boolean,
    shim: StartedShim,
    timings: StopTimings,
    launcher: "cgroup" | "scope" = "cgroup",
  ) {
    this.launcher = launcher;
    this.executionId = executionId;
    this.link = link;
    this.scope = scope;
    this.cgroupNamespace = cgroupNamespace;
    this.#shim = shim;
    this.#t = timings;
  }

  /** The shim's channel; closed once the shim is released. */
  get shim(): ShimClient {
    return this.#shim.client;
  }

  /**
   * Ends the engine and everything in its cgroup; `stopped` only with a proof. Concurrent calls
   * share one stop; after `uncertain` a call runs a new one; after `stopped` every call returns
   * that outcome (the scope is gone, so a new stop could observe nothing). Never rejects.
   */
  forceStop(): Promise<CohortStopOutcome> {
    if (this.#proven) return Promise.resolve(this.#proven);
    if (!this.#running) {
      this.#running = this.#stop().finally(() => {
        this.#running = null;
      });
    }
    return this.#running;
  }

  /**
   * Gives up without a proof: kills the shim and the engine cgroup and removes the scope. For an
   * owner done with an execution whose stop stayed `uncertain`.
   */
  async dispose(): Promise<RemoveResult> {
    await this.#running;
    await this.#shim.kill();
    if (!this.#proven) {
      await this.#op({ type: "kill" });
      await this.#op({
        type: "events",
        until: { populated: false },
        timeoutMs: this.#t.killTimeoutMs,
      });
    }
    return removeTree(this.scope.dir);
  }

  // Through the shim while its channel is open; directly (the launcher can write the cgroup
  // too) once it is gone or fails to answer, so a dead anchor never blocks a stop.
  async #op<K extends OpType>(body: OpBody<K>): Promise<OpResult<K>> {
    const waitMs = (body as { timeoutMs?: number }).timeoutMs ?? 0;
    if (!this.#shim.client.closed) {
      try {
        const reply = await this.#shim.client.request<K>(body, waitMs + SHIM_REPLY_SLACK_MS);
        return { ...reply, via: "shim" };
      } catch (e) {
        if (!(e instanceof ShimError)) throw e;
      }
    }
    // runOp answers each op with its reply type, exactly as the shim does (it is the same code).
    const reply = (await runOp(this.scope.engine, { ...body, id: 0 } as Op)) as ShimReplyFor[K];
    return { ...reply, via: "direct" };
  }

  async #stop(): Promise<CohortStopOutcome> {
    const t = this.#t;
    const t0 = performance.now();
    const at = (phase: StopPhase): Stamp => ({ phase, atMs: Math.round(performance.now() - t0) });
    const log: CohortObservation[] = [];
    const src = (r: { via: "shim" | "direct"; source: string }) =>
      r.via === "shim" ? `shim:${r.source}` : r.source;

    const freeze = async (phase: StopPhase, frozen: boolean): Promise<boolean> => {
      const w = await this.#op({ type: "freeze", frozen });
      const value = frozen ? "1" : "0";
      log.push({ ...at(phase), kind: "cgroup-write", source: src(w), value, ...w.result });
      if (!frozen) return w.result.status === "written";
      const e = await this.#op({
        type: "events",
        until: { frozen: true },
        timeoutMs: t.freezeTimeoutMs,
      });
      log.push(
        e.events.status === "observed"
          ? {
              ...at(phase),
              kind: "frozen",
              source: src(e),
              status: "observed",
              frozen: e.events.frozen,
            }
          : { ...at(phase), kind: "frozen", source: src(e), ...e.events },
      );
      return e.events.status === "observed" && e.events.frozen;
    };
    const emptied = async (phase: StopPhase, timeoutMs: number) => {
      const e = await this.#op({ type: "events", until: { populated: false }, timeoutMs });
      const obs: Extract<Observation, { kind: "cohort-empty" }> =
        e.events.status === "observed"
          ? {
              ...at(phase),
              kind: "cohort-empty",
              source: src(e),
              status: "observed",
              empty: !e.events.populated,
            }
          : { ...at(phase), kind: "cohort-empty", source: src(e), ...e.events };
      log.push(obs);
      return obs;
    };
    const enumerate = (phase: StopPhase, r: OpResult<"members"> | OpResult<"term">) => {
      const obs: Extract<Observation, { kind: "members" }> = {
        ...at(phase),
        kind: "members",
        source: src(r),
        ...r.members,
      };
      log.push(obs);
      return obs;
    };

    // TERM phase. Frozen, the list can't go stale before the signals; they land on thaw.
    const termFrozen = await freeze("term", true);
    const term = await this.#op({ type: "term" });
    const termMembers = enumerate("term", term);
    for (const s of term.signals)
      log.push({ ...at("term"), kind: "member-signal", signal: "SIGTERM", ...s });
    await freeze("term", false);
    await emptied("term", t.termGraceMs);

    // Kill phase: freeze, wait for `frozen 1`, enumerate for the proof, kill, wait for empty.
    const killFrozen = await freeze("kill", true);
    const killMembers = enumerate("kill", await this.#op({ type: "members" }));
    const k = await this.#op({ type: "kill" });
    log.push({ ...at("kill"), kind: "cgroup-write", source: src(k), value: "1", ...k.result });
    const final = await emptied("kill", t.killTimeoutMs);
    // No cgroup to kill: the engine, if it still runs, is reached as its group's leader.
    if (final.status === "absent" && this.link.exit === null && this.link.pid !== undefined) {
      const pgid = this.link.pid;
      const base = {
        ...at("kill"),
        kind: "signal",
        target: "group",
        pgid,
        signal: "SIGKILL",
      } as const;
      try {
        process.kill(-pgid, "SIGKILL");
        log.push({ ...base, delivery: "sent" });
      } catch (e) {
        log.push({ ...base, delivery: "failed", errno: errnoOf(e) });
      }
    }
    log.push(await this.#engineExit(at));

    const seen = [
      ...new Set(
        [termMembers, killMembers].flatMap((m) => (m.status === "observed" ? m.pids : [])),
      ),
    ].sort((a, b) => a - b);
    // A member seen, then alive outside the cgroup, moved out (K13): populated 0 can't cover it.
    const survivors = await findSurvivors(seen, t.procRoot);
    const source = `${t.procRoot}/<pid>/stat`;
    log.push({ ...at("kill"), kind: "survivors", source, ...survivors });

    const observations = log.filter(isBaseObservation);
    const covers = (m: typeof termMembers): m is ObservedMembers =>
      m.status === "observed" && seen.every((pid) => m.pids.includes(pid));
    // The proof's enumeration is one made while frozen: the TERM phase's when it names every
    // member seen (it names the engine even when TERM ended it), else the kill phase's.
    const enumerated: ObservedMembers | null =
      termFrozen && covers(termMembers)
        ? termMembers
        : killFrozen && killMembers.status === "observed"
          ? killMembers
          : null;
    if (
      !killFrozen ||
      enumerated === null ||
      killMembers.status !== "observed" ||
      !isEmptied(final) ||
      survivors.status !== "observed" ||
      survivors.alive.length > 0
    ) {
      return { result: "uncertain", proof: null, observations, members: seen, log, removal: null };
    }
    const proof: StopProof = { method: "cgroup", enumerated, emptied: final };
    const removal = await this.#release();
    this.#proven = { result: "stopped", proof, observations, members: seen, log, removal };
    return this.#proven;
  }

  async #engineExit(
    at: (phase: StopPhase) => Stamp,
  ): Promise<Extract<Observation, { kind: "engine-exit" }>> {
    await within(this.link.exited, this.#t.killTimeoutMs);
    const exit = this.link.exit;
    if (!exit) {
      const reason = `no exit within ${this.#t.killTimeoutMs} ms`;
      return { ...at("kill"), kind: "engine-exit", status: "absent", reason };
    }
    return {
      ...at("kill"),
      kind: "engine-exit",
      status: "observed",
      exitCode: exit.exitCode,
      signal: exit.signal,
      spawnError: exit.spawnError ?? null,
    };
  }

  // After a proven stop: the shim leaves (asked, killed if it doesn't), then the scope goes.
  async #release(): Promise<RemoveResult> {
    const shim = this.#shim;
    if (!shim.client.closed) {
      try {
        await shim.client.request({ type: "release" }, SHIM_REPLY_SLACK_MS);
      } catch (e) {
        if (!(e instanceof ShimError)) throw e;
        // No answer is no reason to keep it: kill() below ends it either way.
      }
    }
    if (!(await within(shim.exited, SHIM_REPLY_SLACK_MS))) await shim.kill();
    shim.client.close();
    return removeTree(this.scope.dir);
  }
}

/** Whether `p` settled within `ms`. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return settled;
}

function isEmptied(o: Observation): o is ObservedEmpty & { empty: true } {
  return o.kind === "cohort-empty" && o.status === "observed" && o.empty;
}

function isBaseObservation(o: CohortObservation): o is Observation {
  return (
    o.kind === "members" ||
    o.kind === "cohort-empty" ||
    o.kind === "engine-exit" ||
    o.kind === "signal"
  );
}
