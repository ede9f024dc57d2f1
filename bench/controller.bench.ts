// The controller benchmark (issue 18 item 5): one run's events fanned out to many observers.
// A Controller runs the real pinned Pi (sealed, the loopback fake model of
// docs/real-engine-tests.md) in this process; a controlling client prompts, and the model
// streams a reply of many text deltas, each an event every welcomed connection gets. The
// observers are raw socket clients in one child process (so their parsing does not share this
// event loop), each stamping every event's arrival. Per run: stream events per second, lines
// delivered per second (events × observers), the lag between the first and the last observer
// to get each event (p50, p99, max), whether every observer got every event in order, and the
// controller's peak RSS. Prints a table and writes bench/results/controller-<timestamp>.json.
//
//   node bench/controller.bench.ts [--observers 1,50] [--deltas 4000] [--runs 3] [--quick]
//
// --quick: 50 observers, 1,000 deltas, 1 run.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { PgroupLauncher } from "../src/control/cohort/launcher.ts";
import { Controller } from "../src/control/controller/controller.ts";
import { LineSplitter } from "../src/control/engine/framing.ts";
import { controllerOptions, makeFixture } from "../test/control/controller-fixture.ts";
import { startFakeModel } from "../test/helpers/fake-model.ts";
import { MODEL, settledSession, writeAgentFiles } from "../test/helpers/real-pi.ts";
import { int, mib, ms, table } from "./report.ts";
import { summarize } from "./stats.ts";

const SCRIPT = fileURLToPath(import.meta.url);
const HERE = dirname(SCRIPT);
const ROOT = dirname(HERE);
const RESULTS_DIR = join(HERE, "results");
const DEADLINE_MS = 120_000;

const { values } = parseArgs({
  options: {
    observers: { type: "string", default: "1,50" },
    deltas: { type: "string", default: "4000" },
    runs: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
    "observer-child": { type: "string" },
    count: { type: "string" },
  },
  // `npm run bench -- <args>` appends its arguments to the last command of the script, this
  // one: the reader bench's options (--sizes, --seed, …) are ignored here, --quick is honoured.
  strict: false,
});

function stringOption(name: string, fallback: string): string {
  const v = values[name];
  return typeof v === "string" ? v : fallback;
}

type ObserverReport = {
  observers: number;
  /** Events each observer received; all equal when none was lost. */
  received: number[];
  /** Whether every observer saw sequences 1..n of one epoch with no gap or repeat. */
  inOrder: boolean;
  sequences: number;
  /** Earliest arrival of the first event to the latest arrival of the last, ms. */
  spanMs: number;
  lag: { p50: number; p99: number; max: number; mean: number };
};

// ---- the observer child -----------------------------------------------------------------------

async function observerChild(socketPath: string, n: number): Promise<void> {
  const first: number[] = [];
  const last: number[] = [];
  const seen: number[] = [];
  const received: number[] = new Array(n).fill(0);
  const expect: number[] = new Array(n).fill(0);
  let inOrder = true;
  let epoch: string | null = null;
  const sockets: Socket[] = [];
  await Promise.all(
    Array.from({ length: n }, (_, i) => {
      return new Promise<void>((ready, fail) => {
        const s = createConnection(socketPath);
        sockets.push(s);
        const splitter = new LineSplitter();
        s.once("error", fail);
        s.on("connect", () =>
          s.write(
            `${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op", client: `o${i}` })}\n`,
          ),
        );
        s.on("data", (chunk: Buffer) => {
          const now = performance.now();
          for (const line of splitter.push(chunk)) {
            const m = JSON.parse(line) as { type: string; sequence?: number; streamEpoch?: string };
            if (m.type === "welcome") ready();
            if (m.type !== "event" || m.sequence === undefined) continue;
            epoch ??= m.streamEpoch ?? null;
            if (m.streamEpoch !== epoch) inOrder = false;
            const seq = m.sequence;
            if (expect[i] !== 0 && seq !== expect[i]) inOrder = false;
            expect[i] = seq + 1;
            received[i] = (received[i] ?? 0) + 1;
            if (seen[seq] === undefined) {
              seen[seq] = 1;
              first[seq] = now;
              last[seq] = now;
            } else {
              seen[seq] = (seen[seq] ?? 0) + 1;
              if (now > (last[seq] ?? 0)) last[seq] = now;
            }
          }
        });
      });
    }),
  );
  process.stdout.write("ready\n");
  process.stdin.once("data", () => {
    const lags: number[] = [];
    let t0 = Number.POSITIVE_INFINITY;
    let t1 = 0;
    let sequences = 0;
    for (let s = 0; s < seen.length; s++) {
      if (seen[s] === undefined) continue;
      sequences++;
      if ((seen[s] ?? 0) !== n) inOrder = false;
      lags.push((last[s] ?? 0) - (first[s] ?? 0));
      t0 = Math.min(t0, first[s] ?? t0);
      t1 = Math.max(t1, last[s] ?? 0);
    }
    lags.sort((a, b) => a - b);
    const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? 0;
    const report: ObserverReport = {
      observers: n,
      received,
      inOrder,
      sequences,
      spanMs: t1 - t0,
      lag: {
        p50: at(0.5),
        p99: at(0.99),
        max: lags.at(-1) ?? 0,
        mean: lags.reduce((a, b) => a + b, 0) / Math.max(1, lags.length),
      },
    };
    process.stdout.write(`${JSON.stringify(report)}\n`);
    for (const s of sockets) s.destroy();
    process.exit(0);
  });
}

// ---- the run ----------------------------------------------------------------------------------

function within<T>(p: Promise<T>, what: string, msLimit = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`deadline: ${what}`)), msLimit);
    }),
  ]);
}

/** A raw client that takes over and prompts; resolves when the run has settled. */
async function controlAndPrompt(socketPath: string): Promise<void> {
  const s = createConnection(socketPath);
  const splitter = new LineSplitter();
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  s.on("data", (chunk: Buffer) => {
    for (const l of splitter.push(chunk)) lines.push(JSON.parse(l) as Record<string, unknown>);
    for (const w of [...waiters]) w();
  });
  const waitFor = (match: (m: Record<string, unknown>) => boolean, what: string) =>
    within(
      new Promise<Record<string, unknown>>((ok) => {
        const check = () => {
          const hit = lines.find(match);
          if (hit) {
            waiters.delete(check);
            ok(hit);
          }
        };
        waiters.add(check);
        check();
      }),
      what,
    );
  s.write(`${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op", client: "bench" })}\n`);
  const welcome = await waitFor((m) => m.type === "welcome", "welcome");
  const gen = (welcome.state as { generation: number }).generation;
  s.write(`${JSON.stringify({ type: "request", id: "t", op: "takeover", generation: gen })}\n`);
  await waitFor((m) => m.type === "reply" && m.id === "t", "takeover");
  s.write(
    `${JSON.stringify({ type: "request", id: "p", op: "prompt", generation: gen + 1, text: "stream", draft: { id: "d", revision: 1 } })}\n`,
  );
  const reply = await waitFor((m) => m.type === "reply" && m.id === "p", "prompt reply");
  if (reply.outcome !== "admitted") throw new Error(`prompt: ${JSON.stringify(reply)}`);
  await waitFor(
    (m) => m.type === "event" && (m.event as { kind?: string }).kind === "run-settled",
    "run-settled",
  );
  s.destroy();
}

function startObservers(
  socketPath: string,
  n: number,
): Promise<{ child: ChildProcess; report: () => Promise<ObserverReport> }> {
  const child = spawn(
    process.execPath,
    [SCRIPT, "--observer-child", socketPath, "--count", String(n)],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const splitter = new LineSplitter();
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  child.stdout?.on("data", (c: Buffer) => {
    lines.push(...splitter.push(c));
    for (const w of [...waiters]) w();
  });
  const next = (what: string) =>
    within(
      new Promise<string>((ok, fail) => {
        const check = () => {
          const l = lines.shift();
          if (l !== undefined) {
            waiters.delete(check);
            ok(l);
          }
        };
        waiters.add(check);
        child.once("exit", (code) =>
          fail(new Error(`observer child exited ${code} before ${what}`)),
        );
        check();
      }),
      what,
    );
  return next("observers welcomed").then(() => ({
    child,
    report: async () => {
      child.stdin?.write("report\n");
      return JSON.parse(await next("the observers' report")) as ObserverReport;
    },
  }));
}

type Run = ObserverReport & {
  deltas: number;
  eventsPerSecond: number;
  linesPerSecond: number;
  peakRssBytes: number;
};

async function oneRun(observers: number, deltas: number): Promise<Run> {
  const cleanups: (() => void)[] = [];
  const f = makeFixture(
    { after: (fn) => cleanups.push(fn as () => void) },
    (cwd) => settledSession(cwd) as Record<string, unknown>[],
  );
  const model = await startFakeModel({
    fallback: { kind: "text", text: "x".repeat(deltas * 4), pieces: deltas },
  });
  const agentDir = join(f.root, "agent");
  writeAgentFiles(agentDir, model.baseUrl);
  const { engine: _fake, ...rest } = controllerOptions(f);
  const ctl = new Controller({
    ...rest,
    launcher: new PgroupLauncher({ termGraceMs: 2000, killGraceMs: 2000 }),
    engine: { extraArgs: ["--model", MODEL] },
    agentDir,
  });
  let child: ChildProcess | null = null;
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    await within(ctl.start(), "controller start");
    const obs = await startObservers(ctl.socketPath, observers);
    child = obs.child;
    await controlAndPrompt(ctl.socketPath);
    // The last event reached this process's sockets; give the observers' reads a moment.
    await new Promise((r) => setTimeout(r, 200));
    const report = await obs.report();
    const seconds = report.spanMs / 1000;
    return {
      ...report,
      deltas,
      eventsPerSecond: report.sequences / seconds,
      linesPerSecond: (report.sequences * observers) / seconds,
      peakRssBytes: peak,
    };
  } finally {
    clearInterval(sampler);
    child?.kill("SIGKILL");
    await ctl.stop();
    await model.close();
    for (const c of cleanups) c();
    rmSync(f.root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const quick = values.quick === true;
  const observerCounts = (quick ? "50" : stringOption("observers", "1,50"))
    .split(",")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
  const deltas = quick ? 1000 : Number(stringOption("deltas", "4000"));
  const runs = quick ? 1 : Number(stringOption("runs", "3"));
  if (observerCounts.length === 0 || !(deltas > 0) || !(runs > 0)) {
    process.stderr.write(
      "usage: node bench/controller.bench.ts [--observers 1,50] [--deltas N] [--runs N] [--quick]\n",
    );
    process.exit(2);
  }
  process.stdout.write(
    `\n# Controller fan-out: one run's events to N observers (real pinned Pi, loopback model)\n` +
      `host: ${cpus().length} cpus, ${mib(totalmem(), 0)} MiB, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}\n` +
      `reply: ${int(deltas)} text deltas; ${runs} run(s) each\n\n`,
  );
  const results: Run[] = [];
  const rows: string[][] = [];
  for (const n of observerCounts) {
    const mine: Run[] = [];
    for (let r = 0; r < runs; r++) mine.push(await oneRun(n, deltas));
    results.push(...mine);
    const med = (f: (x: Run) => number) => summarize(mine.map(f)).median;
    rows.push([
      String(n),
      int(med((x) => x.sequences)),
      int(med((x) => x.eventsPerSecond)),
      int(med((x) => x.linesPerSecond)),
      ms(med((x) => x.lag.p50)),
      ms(med((x) => x.lag.p99)),
      ms(Math.max(...mine.map((x) => x.lag.max))),
      mine.every((x) => x.inOrder && x.received.every((c) => c === x.sequences)) ? "yes" : "NO",
      mib(Math.max(...mine.map((x) => x.peakRssBytes))),
    ]);
  }
  process.stdout.write(
    `${table(
      [
        "observers",
        "events",
        "events/s",
        "lines/s",
        "lag p50 ms",
        "lag p99 ms",
        "lag max ms",
        "all, in order",
        "peak RSS MiB",
      ],
      rows,
    )}\n\n(medians of the runs; lag: first to last observer receiving the same event; max over all runs)\n`,
  );
  mkdirSync(RESULTS_DIR, { recursive: true });
  const out = join(RESULTS_DIR, `controller-${new Date().toISOString().replaceAll(":", "-")}.json`);
  writeFileSync(out, `${JSON.stringify({ deltas, runs, results }, null, 2)}\n`);
  process.stdout.write(`results: ${relative(ROOT, out)}\n`);
  if (results.some((x) => !x.inOrder || x.received.some((c) => c !== x.sequences))) process.exit(1);
}

const observerSocket = values["observer-child"];
if (typeof observerSocket === "string") {
  await observerChild(observerSocket, Number(stringOption("count", "1")));
} else {
  await main();
  // Handles the fake model or a socket may keep open must not hold the process.
  process.exit(0);
}
