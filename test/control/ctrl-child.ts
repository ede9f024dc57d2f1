// A Controller in its own process, for crash.test.ts: a crash needs a real pid to SIGKILL, and
// the claim store judges its holder by that pid. Argv[2] is a JSON CtrlChildArgs. Once the
// controller listens it prints one JSON line, CtrlChildReady; later lines are CtrlChildEvents,
// each with an `event` field. It runs until killed. A SIGTERM or the end of its stdin stops the
// controller cleanly and exits, so a child never outlives a test that forgot it.
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { CgroupLauncher, type CohortExecution } from "../../src/control/cohort/cohort.ts";
import {
  FakeLauncher,
  type FakeStopScript,
  type Launched,
  type Launcher,
  type LaunchOptions,
  PgroupLauncher,
} from "../../src/control/cohort/launcher.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { FixtureVerifier } from "../../src/control/controller/records.ts";
import type { EngineSpec } from "../../src/control/engine/engine.ts";
import type { Grant } from "../../src/control/protocol.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";

/** A FakeStopScript as JSON: `holdFile` holds the stop until that file exists. */
export type CtrlChildStop = {
  result: "stopped" | "uncertain";
  signal?: boolean;
  holdFile?: string;
};

export type CtrlChildLauncher =
  | { kind: "pgroup"; termGraceMs?: number; killGraceMs?: number }
  | { kind: "fake"; stops?: CtrlChildStop[]; defaultStop?: CtrlChildStop }
  /** CgroupLauncher.probe()'s launcher; the child exits with an error if there is none. */
  | { kind: "cgroup"; termGraceMs?: number; killTimeoutMs?: number };

export type CtrlChildArgs = {
  fixtureRoot: string;
  claimRoot: string;
  socketDir: string;
  sessionFile: string;
  seat: string;
  grants: Grant[];
  /** The Controller's `engine` test hook: the fake engine's command line and environment. */
  engine: {
    /** Absent: the pinned Pi (the Controller's default engine command). */
    command?: string;
    preArgs?: string[];
    extraArgs?: string[];
    env?: Record<string, string>;
  };
  launcher: CtrlChildLauncher;
  /** The Controller's agentDir (the real Pi's models.json for the loopback model). */
  agentDir?: string;
};

/** The one line printed once the controller listens. */
export type CtrlChildReady = {
  socketPath: string;
  pid: number;
  enginePid: number;
  execution: string;
  incarnation: string;
  /** Under the cgroup launcher: the scope directory and the shim's pid. */
  scope?: string;
  shimPid?: number;
};

export type CtrlChildEvent =
  /** The launcher's force stop was entered (the claim already says `stopping`). */
  | { event: "force-stop-began"; execution: string }
  | { event: "refused"; code: string; message: string };

function emit(line: CtrlChildReady | CtrlChildEvent): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Resolves once `file` exists; polls, so it needs no channel to the test. */
async function untilExists(file: string): Promise<void> {
  while (!existsSync(file)) await sleep(20);
}

function stopScript(s: CtrlChildStop): FakeStopScript {
  return {
    result: s.result,
    ...(s.signal === undefined ? {} : { signal: s.signal }),
    ...(s.holdFile === undefined ? {} : { hold: untilExists(s.holdFile) }),
  };
}

async function makeLauncher(spec: CtrlChildLauncher): Promise<Launcher> {
  if (spec.kind === "cgroup") {
    const probe = await CgroupLauncher.probe({
      termGraceMs: spec.termGraceMs ?? 1000,
      killTimeoutMs: spec.killTimeoutMs ?? 3000,
    });
    if (!probe.ok) throw new Error(`no cgroup launcher: ${probe.reason}`);
    return probe.launcher;
  }
  if (spec.kind === "pgroup") {
    return new PgroupLauncher({
      ...(spec.termGraceMs === undefined ? {} : { termGraceMs: spec.termGraceMs }),
      ...(spec.killGraceMs === undefined ? {} : { killGraceMs: spec.killGraceMs }),
    });
  }
  return new FakeLauncher({
    stops: (spec.stops ?? []).map(stopScript),
    ...(spec.defaultStop ? { defaultStop: stopScript(spec.defaultStop) } : {}),
  });
}

/** The same launcher, announcing each force stop as it begins (and keeping its scope). */
function announcing(inner: Launcher): Launcher {
  return {
    kind: inner.kind,
    ...(inner.scopeFor ? { scopeFor: (id: string) => inner.scopeFor?.(id) ?? null } : {}),
    async launch<E, C, O extends object>(spec: EngineSpec, options?: LaunchOptions<E, C>) {
      const launched = await inner.launch<E, C, O>(spec, options);
      const scope = "scope" in launched ? (launched.scope as CohortExecution["scope"]) : undefined;
      const wrapped: Launched<E, C, O> & { scope?: CohortExecution["scope"] } = {
        launcher: launched.launcher,
        executionId: launched.executionId,
        link: launched.link,
        ...(scope ? { scope } : {}),
        forceStop() {
          emit({ event: "force-stop-began", execution: launched.executionId });
          return launched.forceStop();
        },
      };
      return wrapped;
    },
  };
}

const args = JSON.parse(process.argv[2] ?? "{}") as CtrlChildArgs;

const ctl = new Controller({
  fixtureRoot: args.fixtureRoot,
  claimRoot: args.claimRoot,
  socketDir: args.socketDir,
  sessionFile: args.sessionFile,
  seat: args.seat,
  verifier: new FixtureVerifier({ fixtureRoot: args.fixtureRoot }),
  grants: args.grants,
  launcher: announcing(await makeLauncher(args.launcher)),
  ...(args.agentDir ? { agentDir: args.agentDir } : {}),
  engine: {
    ...(args.engine.command ? { command: args.engine.command } : {}),
    ...(args.engine.preArgs ? { preArgs: args.engine.preArgs } : {}),
    ...(args.engine.extraArgs ? { extraArgs: args.engine.extraArgs } : {}),
    ...(args.engine.env ? { env: args.engine.env } : {}),
  },
});

// A scripted stop held on a file that never comes would hold this stop too: it gets 5 s.
let stopping = false;
async function shutdown(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.race([ctl.stop().catch(() => undefined), sleep(5000)]);
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown());
process.stdin.on("end", () => void shutdown());
process.stdin.resume();

try {
  await ctl.start();
} catch (e) {
  if (!isControlRefusal(e)) throw e;
  emit({ event: "refused", code: e.code, message: e.message });
  process.exit(1);
}
const exec = ctl.execution;
if (!exec || exec.link.pid === undefined) throw new Error("the controller started no engine");
emit({
  socketPath: ctl.socketPath,
  pid: process.pid,
  enginePid: exec.link.pid,
  execution: exec.execution,
  incarnation: exec.incarnation,
  ...(exec.binding.scope ? { scope: exec.binding.scope } : {}),
  ...(exec.launched.launcher === "cgroup"
    ? { shimPid: (exec.launched as Partial<CohortExecution>).scope?.shimPid ?? 0 }
    : {}),
});
