// The board under load (issue 18 item 5): a board in a child process, over a 20 MiB
// conversation written by Pi's own SessionManager, paged from start to end again and again by
// 50 concurrent clients, while one more client fetches the catalogue every 10 ms. Reports
// requests per second, p50/p99/max, errors and the board's peak RSS (VmHWM: the process, its
// read workers included), and the catalogue's latency, whose p99 must stay under 50 ms.
// Loopback only; bounded in time (--seconds) and in count (--max-requests).
//
//   npm run bench:board -- [--seconds 20] [--clients 50] [--mib 20] [--seed 1] [--quick]
//                          [--max-requests 200000] [--on-loop]
//
// --on-loop: the board reads on its request loop (startBoard({ reader })), as before the read
// workers, for comparison; its catalogue is expected to fail the budget.
// --quick: 5 s. `npm run bench` runs this after the reader's and the controller's benches
// (bench/run.ts), passing `--board-seconds 10` on as `--seconds 10`. Exits 1 when the
// catalogue's p99 is over budget or any request failed, so the claim is checked, not only
// printed. Raw numbers go to bench/results/board-<timestamp>.json.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, loadavg, arch as osArch, platform, release, tmpdir, totalmem } from "node:os";
import { dirname, join, relative } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { startBoard } from "../src/board/index.ts";
import {
  type BoardSpec,
  conversationId,
  createReader,
  rootsFromSpecs,
  sessionsDirOf,
} from "../src/index.ts";
import { ensureCached, materialize } from "./fixtures.ts";
import { int, mib, ms, table } from "./report.ts";

const SCRIPT = fileURLToPath(import.meta.url);
const HERE = dirname(SCRIPT);
const ROOT = dirname(HERE);
const RESULTS_DIR = join(HERE, "results");
const SEAT = "main";
const BIG = "big.jsonl";
/** Small sessions beside the big one, so the catalogue lists (and stats) something. */
const SMALL_SESSIONS = 40;
const CATALOGUE_EVERY_MS = 10;
const CATALOGUE_P99_BUDGET_MS = 50;
/** Per request; a request slower than this counts as an error. */
const REQUEST_DEADLINE_MS = 30_000;
const START_DEADLINE_MS = 60_000;

const { values } = parseArgs({
  args: isMainThread ? process.argv.slice(2) : [],
  options: {
    seconds: { type: "string" },
    clients: { type: "string", default: "50" },
    mib: { type: "string", default: "20" },
    seed: { type: "string", default: "1" },
    "max-requests": { type: "string", default: "200000" },
    quick: { type: "boolean", default: false },
    "on-loop": { type: "boolean", default: false },
    serve: { type: "string" },
  },
  strict: true,
});

function positive(name: string, raw: string | undefined, fallback: number): number {
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(
      `--${name} must be a positive integer\nusage: node bench/board.bench.ts [--seconds S] [--clients N] [--mib M] [--seed S] [--max-requests N] [--quick]\n`,
    );
    process.exit(2);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// The child: a board over the given project, reading in its worker threads, as `serve` runs it.

async function serveChild(projectRoot: string, onLoop: boolean): Promise<void> {
  const specs: BoardSpec[] = [{ kind: "repository", projectRoot, seat: SEAT }];
  const board = onLoop
    ? await startBoard({ reader: createReader({ roots: () => rootsFromSpecs(specs, []) }) })
    : await startBoard({ sources: { specs, registrations: [] } });
  // How long the request loop itself was held: the part of a catalogue's latency that is the
  // board's loop rather than the machine's scheduler.
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  process.stdout.write(`${JSON.stringify({ port: board.port })}\n`);
  const stop = () => {
    delay.disable();
    const loop: LoopDelay = {
      p50: delay.percentile(50) / 1e6,
      p99: delay.percentile(99) / 1e6,
      max: delay.max / 1e6,
    };
    process.stdout.write(`${JSON.stringify({ loop })}\n`);
    void board.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  // The parent gone (its pipe closed) is a stop too: no board outlives the bench.
  process.stdin.on("end", stop);
  process.stdin.resume();
}

// ---------------------------------------------------------------------------------------------
// HTTP

type Answer = { status: number; body: Buffer };

function get(agent: Agent, port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        agent,
        signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const NEXT_CURSOR = Buffer.from('"nextCursor":');

/**
 * The page's nextCursor without a JSON.parse of the whole page, which on 2 cores would take
 * CPU from the board being measured. The key is unique in a page of this session (conversation
 * text is inside JSON strings, where every quote is escaped); if it is not, parse the page.
 */
function nextCursorOf(body: Buffer): string | null {
  const at = body.indexOf(NEXT_CURSOR);
  if (at >= 0 && body.indexOf(NEXT_CURSOR, at + 1) < 0) {
    const rest = body.toString("latin1", at + NEXT_CURSOR.length, at + NEXT_CURSOR.length + 200);
    if (rest.startsWith("null")) return null;
    const token = /^"([A-Za-z0-9_.~-]+)"/.exec(rest)?.[1];
    if (token !== undefined) return token;
  }
  return parsePage(body).nextCursor;
}

function parsePage(body: Buffer): { branch: string; nextCursor: string | null } {
  const json: unknown = JSON.parse(body.toString("utf8"));
  if (
    typeof json === "object" &&
    json !== null &&
    "page" in json &&
    typeof json.page === "object" &&
    json.page !== null &&
    "branch" in json.page &&
    typeof json.page.branch === "string" &&
    "nextCursor" in json.page &&
    (json.page.nextCursor === null || typeof json.page.nextCursor === "string")
  ) {
    return { branch: json.page.branch, nextCursor: json.page.nextCursor };
  }
  throw new Error(`not a page: ${body.toString("utf8", 0, 200)}`);
}

// ---------------------------------------------------------------------------------------------
// Load

type Load = {
  pages: number[];
  catalogue: number[];
  errors: Map<string, number>;
  traversals: number;
  pageBytes: number;
  elapsedMs: number;
};

async function runLoad(
  port: number,
  conversation: string,
  clients: number,
  seconds: number,
  maxRequests: number,
): Promise<Load> {
  const pageAgent = new Agent({ keepAlive: true, maxSockets: clients });
  const load: Load = {
    pages: [],
    catalogue: [],
    errors: new Map(),
    traversals: 0,
    pageBytes: 0,
    elapsedMs: 0,
  };
  const fail = (what: string) => load.errors.set(what, (load.errors.get(what) ?? 0) + 1);
  const started = performance.now();
  const until = started + seconds * 1000;
  const over = () => performance.now() >= until || load.pages.length >= maxRequests;
  const base = `/api/conversations/${encodeURIComponent(conversation)}/page`;

  const pageClient = async () => {
    while (!over()) {
      let query = "";
      let branch: string | null = null;
      do {
        const t0 = performance.now();
        let answer: Answer;
        try {
          answer = await get(pageAgent, port, base + query);
        } catch (e) {
          fail(`page: ${(e as Error).name}: ${(e as Error).message.slice(0, 80)}`);
          break;
        }
        load.pages.push(performance.now() - t0);
        if (answer.status !== 200) {
          fail(`page: HTTP ${answer.status}`);
          break;
        }
        load.pageBytes += answer.body.length;
        let next: string | null;
        if (branch === null) {
          const first = parsePage(answer.body);
          branch = first.branch;
          next = first.nextCursor;
        } else {
          next = nextCursorOf(answer.body);
        }
        if (next === null) {
          load.traversals++;
          break;
        }
        query = `?branch=${encodeURIComponent(branch)}&cursor=${encodeURIComponent(next)}`;
      } while (!over());
    }
  };
  // The catalogue's client runs in a thread of its own: its clock must not wait on this
  // thread's 50 page clients, only on the board.
  const catalogue = new Worker(SCRIPT, { workerData: { port } });
  const catalogueDone = new Promise<CatalogueResult>((resolve, reject) => {
    catalogue.once("message", (m: CatalogueResult) => resolve(m));
    catalogue.once("error", reject);
  });
  await Promise.all(Array.from({ length: clients }, () => pageClient()));
  catalogue.postMessage("stop");
  const result = await catalogueDone;
  await catalogue.terminate();
  load.catalogue = result.latencies;
  for (const [what, n] of result.errors) load.errors.set(what, (load.errors.get(what) ?? 0) + n);
  load.elapsedMs = performance.now() - started;
  pageAgent.destroy();
  return load;
}

type LoopDelay = { p50: number; p99: number; max: number };

type CatalogueResult = { latencies: number[]; errors: [string, number][] };

/** The catalogue's client (a worker thread of the bench): until told to stop. */
async function catalogueClient(port: number): Promise<void> {
  const parent = parentPort;
  if (parent === null) throw new Error("the catalogue client runs in a worker thread");
  let stopped = false;
  parent.once("message", () => {
    stopped = true;
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  const errors = new Map<string, number>();
  const fail = (what: string) => errors.set(what, (errors.get(what) ?? 0) + 1);
  while (!stopped) {
    const t0 = performance.now();
    try {
      const answer = await get(agent, port, "/api/conversations");
      latencies.push(performance.now() - t0);
      if (answer.status !== 200) fail(`catalogue: HTTP ${answer.status}`);
    } catch (e) {
      fail(`catalogue: ${(e as Error).name}`);
    }
    await new Promise((r) => setTimeout(r, CATALOGUE_EVERY_MS));
  }
  agent.destroy();
  const result: CatalogueResult = { latencies, errors: [...errors] };
  parent.postMessage(result);
}

// ---------------------------------------------------------------------------------------------
// The child's memory

function memoryOf(pid: number): { rssKiB: number; hwmKiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return { rssKiB: field("VmRSS"), hwmKiB: field("VmHWM") };
}

function startChild(
  projectRoot: string,
  onLoop: boolean,
): Promise<{ child: ChildProcess; port: number; loop: Promise<LoopDelay | null> }> {
  const args = [SCRIPT, "--serve", projectRoot, ...(onLoop ? ["--on-loop"] : [])];
  const child = spawn(process.execPath, args, {
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("the board did not start in time"));
    }, START_DEADLINE_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the board exited (${code}) before it served`));
    });
    const stdout = child.stdout;
    if (stdout === null) throw new Error("no stdout from the board");
    const lines = createInterface({ input: stdout });
    // The board's second line, when it stops: how long its request loop was held.
    const loop = new Promise<LoopDelay | null>((resolveLoop) => {
      lines.on("line", (line) => {
        const value = (JSON.parse(line) as { loop?: LoopDelay }).loop;
        if (value !== undefined) resolveLoop(value);
      });
      lines.on("close", () => resolveLoop(null));
    });
    lines.once("line", (line) => {
      clearTimeout(timer);
      const port: unknown = (JSON.parse(line) as { port?: unknown }).port;
      if (typeof port !== "number") reject(new Error(`unexpected line from the board: ${line}`));
      else resolve({ child, port, loop });
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// Report

function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function writeSmallSessions(projectRoot: string): void {
  const dir = sessionsDirOf(projectRoot, SEAT);
  for (let i = 0; i < SMALL_SESSIONS; i++) {
    const at = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
    const lines = [
      { type: "session", version: 3, id: `small-${i}`, timestamp: at, cwd: projectRoot },
      {
        type: "message",
        id: "u1",
        parentId: null,
        timestamp: at,
        message: { role: "user", content: `small conversation ${i}`, timestamp: Date.parse(at) },
      },
    ];
    writeFileSync(
      join(dir, `small-${i}.jsonl`),
      lines.map((l) => `${JSON.stringify(l)}\n`).join(""),
    );
  }
}

async function main(): Promise<number> {
  if (values.serve !== undefined) {
    await serveChild(values.serve, values["on-loop"]);
    return -1;
  }
  const seconds = positive("seconds", values.seconds, values.quick ? 5 : 20);
  const clients = positive("clients", values.clients, 50);
  const sizeMib = positive("mib", values.mib, 20);
  const seed = positive("seed", values.seed, 1);
  const maxRequests = positive("max-requests", values["max-requests"], 200_000);
  const onLoop = values["on-loop"];
  const startedAt = new Date();
  const command = `node bench/board.bench.ts --seconds ${seconds} --clients ${clients} --mib ${sizeMib} --seed ${seed}${onLoop ? " --on-loop" : ""}`;
  process.stderr.write(`${command}\n`);

  const tmp = mkdtempSync(join(tmpdir(), "mosaic-board-bench-"));
  let child: ChildProcess | null = null;
  const cleanup = () => rmSync(tmp, { recursive: true, force: true });
  const onSignal = () => {
    child?.kill("SIGKILL");
    cleanup();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const cached = ensureCached(sizeMib, seed, tmp);
    const projectRoot = join(tmp, "board-project");
    materialize(cached, projectRoot, BIG);
    writeSmallSessions(projectRoot);
    const conversation = conversationId(projectRoot, SEAT, BIG);

    const started = await startChild(projectRoot, onLoop);
    child = started.child;
    const { port } = started;
    const idle = memoryOf(child.pid ?? 0);
    // The first open parses the whole file; measured apart, not in the load's percentiles.
    const warmAgent = new Agent({ keepAlive: false });
    const t0 = performance.now();
    const cold = await get(
      warmAgent,
      port,
      `/api/conversations/${encodeURIComponent(conversation)}/page`,
    );
    const coldMs = performance.now() - t0;
    if (cold.status !== 200) throw new Error(`the first page answered ${cold.status}`);
    const pageSize = cold.body.length;

    const load = await runLoad(port, conversation, clients, seconds, maxRequests);
    const memory = memoryOf(child.pid ?? 0);
    await stopChild(child);
    const loop = await started.loop;

    const errors = [...load.errors.values()].reduce((a, b) => a + b, 0);
    const catP99 = percentile(load.catalogue, 99);
    const verdict =
      catP99 < CATALOGUE_P99_BUDGET_MS && errors === 0
        ? "ok"
        : `FAILED: ${errors} errors; catalogue p99 ${ms(catP99)} ms (budget ${CATALOGUE_P99_BUDGET_MS} ms)`;
    const rows = [
      [
        `pages (${clients} clients)`,
        int(load.pages.length),
        (load.pages.length / (load.elapsedMs / 1000)).toFixed(1),
        ms(percentile(load.pages, 50)),
        ms(percentile(load.pages, 99)),
        ms(Math.max(...load.pages)),
        int(errors),
      ],
      [
        `catalogue (1 client, every ${CATALOGUE_EVERY_MS} ms)`,
        int(load.catalogue.length),
        (load.catalogue.length / (load.elapsedMs / 1000)).toFixed(1),
        ms(percentile(load.catalogue, 50)),
        ms(catP99),
        ms(Math.max(...load.catalogue)),
        "",
      ],
    ];
    const text = [
      `Board under load, ${onLoop ? "reading on its request loop (--on-loop)" : "reading in its worker threads"}: ${mib(cached.bytes)} MiB conversation (${int(cached.entries)} entries, Pi-written), ${seconds} s, loopback`,
      table(["requests", "count", "per s", "p50 ms", "p99 ms", "max ms", "errors"], rows),
      "",
      `first page (cold open): ${ms(coldMs)} ms; a page is ${mib(pageSize, 2)} MiB; ${int(load.traversals)} whole traversals; ${mib(load.pageBytes, 0)} MiB served`,
      loop === null
        ? "board request loop delay: not reported"
        : `board request loop delay: p50 ${ms(loop.p50)} ms, p99 ${ms(loop.p99)} ms, max ${ms(loop.max)} ms`,
      `board RSS: ${mib(idle.rssKiB * 1024)} MiB idle, peak ${mib(memory.hwmKiB * 1024)} MiB (VmHWM, workers included)`,
      ...[...load.errors].map(([what, n]) => `error: ${what} × ${n}`),
      `load average (1 min) at the end: ${loadavg()[0]?.toFixed(2)} on ${cpus().length} cores`,
      `catalogue p99 under ${CATALOGUE_P99_BUDGET_MS} ms while the pages are served: ${verdict}`,
    ].join("\n");
    process.stdout.write(`\n${text}\n`);

    mkdirSync(RESULTS_DIR, { recursive: true });
    const out = join(RESULTS_DIR, `board-${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
    const json = {
      startedAt: startedAt.toISOString(),
      command,
      onLoop,
      machine: {
        cpu: cpus()[0]?.model ?? "unknown",
        cores: cpus().length,
        totalMemGiB: Number((totalmem() / 1024 ** 3).toFixed(1)),
        node: process.version,
        os: `${platform()} ${release()} ${osArch()}`,
        loadAvg1mAtEnd: loadavg()[0],
      },
      session: { bytes: cached.bytes, entries: cached.entries, path: relative(ROOT, cached.path) },
      coldMs,
      pageBytes: pageSize,
      elapsedMs: load.elapsedMs,
      pages: {
        n: load.pages.length,
        p50: percentile(load.pages, 50),
        p99: percentile(load.pages, 99),
      },
      catalogue: {
        n: load.catalogue.length,
        p50: percentile(load.catalogue, 50),
        p99: catP99,
      },
      errors: Object.fromEntries(load.errors),
      rssKiB: { idle: idle.rssKiB, peak: memory.hwmKiB },
      loopDelayMs: loop,
      verdict,
      text,
    };
    writeFileSync(out, `${JSON.stringify(json, null, 2)}\n`);
    process.stdout.write(`\nresults: ${relative(ROOT, out)}\n`);
    return verdict === "ok" ? 0 : 1;
  } finally {
    if (child) await stopChild(child);
    cleanup();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

if (isMainThread) {
  const code = await main();
  if (code >= 0) process.exitCode = code;
} else {
  await catalogueClient((workerData as { port: number }).port);
}
