// The reader benchmark (SPEC §7): side by side in one run, on sessions written by Pi's own
// SessionManager, the reader's full traversal against the one-pass floor (read + SHA-256 +
// JSON.parse of every line) and Pi's SessionManager.open; follow latency after a small append;
// peak memory (child processes); the catalogue over 50 roots and over Pi's store (200
// directories) against lstat. Prints tables and writes the raw numbers to
// bench/results/<timestamp>.json.
//
//   npm run bench -- [--sizes 1,20,100] [--runs 5] [--quick] [--seed 1] [--budget 240]
//                    [--bytes-runs 2]
//
// --quick: sizes 1 and 5 MiB, 2 runs. --bytes-runs: how many of the runs also time a cold
// traversal with `prefixCheck: "bytes"` (the racy path: every page compares the whole pinned
// prefix with the held bytes, as where the change time proves nothing), quadratic, hence only
// two by default. --budget: seconds per size; once two runs are done, no run starts that would
// end past it (0: no limit), so the full run stays within about five minutes.
// Generated sessions are cached in bench/results/cache/ (git-ignored), keyed by size, seed and
// a hash of the generator's sources and Pi's version.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, arch as osArch, platform, release, tmpdir, totalmem } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { SessionManager as PiSessionManager } from "@earendil-works/pi-coding-agent";
import {
  type Cursor,
  conversationId,
  createReader,
  type Reader,
  type Root,
  rootsFromSpecs,
} from "../src/index.ts";
import { timeCatalogue } from "./catalogue-time.ts";
import {
  CACHE_DIR,
  type CachedSession,
  ensureCached,
  materialize,
  writeCatalogueFixture,
} from "./fixtures.ts";
import { barePrefixCheck, floorPass } from "./floor.ts";
import { int, mib, ms, ratio, spread, table } from "./report.ts";
import { gc, type Series, summarize, timed } from "./stats.ts";
import { expectOk, type Traversal, traverse } from "./traverse.ts";

type PiModule = typeof import("@earendil-works/pi-coding-agent");

const SCRIPT = fileURLToPath(import.meta.url);
const HERE = dirname(SCRIPT);
const ROOT = dirname(HERE);
const RESULTS_DIR = join(HERE, "results");
const SEAT = "main";
const SESSION_NAME = "long.jsonl";
const MIN_RUNS = 2;
const CATALOGUE_ROOTS = 50;
const CATALOGUE_FILES_PER_ROOT = 40;
/** Pi's own store at the same 2,000 files: 200 project directories of 10 (issue 12 §5). */
const STORE_DIRS = 200;
const STORE_FILES_PER_DIR = 10;

// ---------------------------------------------------------------------------------------------
// Arguments

const { values } = parseArgs({
  options: {
    sizes: { type: "string" },
    runs: { type: "string" },
    quick: { type: "boolean", default: false },
    seed: { type: "string", default: "1" },
    budget: { type: "string", default: "240" },
    "bytes-runs": { type: "string", default: "2" },
    worker: { type: "string" },
    file: { type: "string" },
    project: { type: "string" },
  },
  strict: true,
});

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: node bench/reader.bench.ts [--sizes 1,20,100] [--runs N] [--quick] [--seed S] [--budget SECONDS] [--bytes-runs N]\n`,
  );
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Measurements

type Session = {
  cached: CachedSession;
  projectRoot: string;
  file: string;
  conversation: string;
  roots: Root[];
};

type SizeResult = {
  mib: number;
  bytes: number;
  lines: number;
  piEntries: number;
  runsWanted: number;
  runsDone: number;
  floor: Series;
  pi: Series;
  readerCold: Series;
  readerWarm: Series;
  /** A cold traversal with `prefixCheck: "bytes"`: every page re-reads and hashes the prefix. */
  readerBytes: Series;
  /** Every page `next` of every run, cold and warm. */
  pageCold: Series;
  pageWarm: Series;
  openCold: Series;
  followInTraversal: Series;
  pages: number;
  follows: number;
  parts: number;
  branches: number;
  defaultBranch: string;
  defaultLeaf: string | null;
};

type FollowResult = {
  mib: number;
  bytesBefore: number;
  bytesAfter: number;
  samples: number;
  follow: Series;
  bare: Series;
};

type MemoryResult = {
  mode: "reader" | "floor" | "pi";
  fileBytes: number;
  baselineRss: number;
  peakRss: number;
  aboveBaseline: number;
  /** The high-water mark rose during the measured work (else the peak is a startup one). */
  peakDuringWork: boolean;
  sampledPeakRss: number;
  /** Largest heapUsed and arrayBuffers (Buffers) seen after a reader call, and after the work. */
  sampledPeakHeap: number;
  sampledPeakBuffers: number;
  ms: number;
  detail: Record<string, number | string>;
  /** Above-baseline peaks of every child measured, smallest first (the row is the median). */
  aboveAll?: number[];
};

type CatalogueResult = {
  layout: "repository" | "pi-store";
  roots: number;
  files: number;
  cold: Series;
  warm: Series;
  lstat: Series;
};

function leafIdOf(key: string | null): string {
  if (key === null || !key.startsWith("n.")) throw new Error(`no native default leaf: ${key}`);
  const id = key.slice(2);
  if (id.startsWith("h-")) throw new Error(`the default leaf id was hashed (${key})`);
  return id;
}

function freshSession(cached: CachedSession, base: string): Session {
  const projectRoot = join(base, `bench-${cached.mib}mib`);
  const file = materialize(cached, projectRoot, SESSION_NAME);
  return {
    cached,
    projectRoot,
    file,
    conversation: conversationId(projectRoot, SEAT, SESSION_NAME),
    roots: rootsFromSpecs([{ kind: "repository", projectRoot, seat: SEAT }], []),
  };
}

function measureSize(
  s: Session,
  Pi: PiModule,
  tmp: string,
  runs: number,
  bytesRuns: number,
  budgetMs: number,
  keepLast: boolean,
): { result: SizeResult; last: { reader: Reader; traversal: Traversal } | null } {
  const floor: number[] = [];
  const pi: number[] = [];
  const cold: number[] = [];
  const warm: number[] = [];
  const bytes: number[] = [];
  const pageCold: number[] = [];
  const pageWarm: number[] = [];
  const openCold: number[] = [];
  const followIn: number[] = [];
  let lines = 0;
  let piEntries = 0;
  let shape: Traversal | null = null;
  let last: { reader: Reader; traversal: Traversal } | null = null;
  const started = performance.now();
  let lastIteration = 0;
  for (let run = 0; run < runs; run++) {
    const elapsed = performance.now() - started;
    if (run >= MIN_RUNS && budgetMs > 0 && elapsed + lastIteration > budgetMs) break;
    const iteration = performance.now();

    gc();
    const f = timed(() => floorPass(s.file));
    floor.push(f.ms);
    lines = f.value.lines;

    const piDir = join(tmp, `pi-${s.cached.mib}mib-${run}`);
    mkdirSync(piDir);
    const copy = join(piDir, SESSION_NAME);
    copyFileSync(s.file, copy);
    gc();
    const p = timed(() => Pi.SessionManager.open(copy, piDir));
    pi.push(p.ms);
    piEntries = p.value.getEntries().length;
    const piLeaf = p.value.getLeafId();
    rmSync(piDir, { recursive: true, force: true });

    gc();
    const c = timed(() => {
      // racyWindowMs 0: as on a file quiet for longer than the racy window (change-time.ts), so
      // the settled path is timed whatever the fixture's age; bytes-check times the racy path.
      const reader = createReader({ roots: s.roots, racyWindowMs: 0 });
      return { reader, traversal: traverse(reader, s.conversation) };
    });
    cold.push(c.ms);
    pageCold.push(...c.value.traversal.pageMs);
    openCold.push(...c.value.traversal.openMs);
    followIn.push(...c.value.traversal.followMs);
    checkTraversal(c.value.traversal, shape, piLeaf);
    shape = c.value.traversal;

    gc();
    const w = timed(() => traverse(c.value.reader, s.conversation));
    warm.push(w.ms);
    pageWarm.push(...w.value.pageMs);
    checkTraversal(w.value, shape, piLeaf);
    last = keepLast ? { reader: c.value.reader, traversal: w.value } : null;

    let b: number | undefined;
    if (run < bytesRuns) {
      gc();
      const t = timed(() =>
        traverse(createReader({ roots: s.roots, prefixCheck: "bytes" }), s.conversation),
      );
      b = t.ms;
      bytes.push(t.ms);
      checkTraversal(t.value, shape, piLeaf);
    }

    lastIteration = performance.now() - iteration;
    process.stderr.write(
      `  ${s.cached.mib} MiB run ${run + 1}: floor ${ms(f.ms)} ms, pi ${ms(p.ms)} ms, ` +
        `reader cold ${ms(c.ms)} ms, warm ${ms(w.ms)} ms` +
        `${b === undefined ? "" : `, cold with byte checks ${ms(b)} ms`}\n`,
    );
  }
  if (!shape) throw new Error("no run");
  return {
    result: {
      mib: s.cached.mib,
      bytes: s.cached.bytes,
      lines,
      piEntries,
      runsWanted: runs,
      runsDone: cold.length,
      floor: summarize(floor),
      pi: summarize(pi),
      readerCold: summarize(cold),
      readerWarm: summarize(warm),
      readerBytes: summarize(bytes),
      pageCold: summarize(pageCold),
      pageWarm: summarize(pageWarm),
      openCold: summarize(openCold),
      followInTraversal: summarize(followIn),
      pages: shape.pages,
      follows: shape.follows,
      parts: shape.parts,
      branches: shape.branches,
      defaultBranch: shape.defaultBranch,
      defaultLeaf: shape.defaultLeaf,
    },
    last,
  };
}

/** Every traversal reads the same pages, and the default leaf is Pi's. */
function checkTraversal(t: Traversal, previous: Traversal | null, piLeaf: string | null): void {
  if (t.defaultLeaf !== `n.${piLeaf}`) {
    throw new Error(`default leaf ${t.defaultLeaf} is not Pi's ${piLeaf}`);
  }
  const end = t.end.get(t.defaultBranch);
  if (end?.lastEntry !== t.defaultLeaf) {
    throw new Error(`the default branch ends at ${end?.lastEntry}, not ${t.defaultLeaf}`);
  }
  if (previous && (previous.pages !== t.pages || previous.parts !== t.parts)) {
    throw new Error(
      `traversals differ: ${previous.pages}/${previous.parts} vs ${t.pages}/${t.parts}`,
    );
  }
}

/**
 * Follow latency: on a reader that paged to the end of the default branch (the last warm
 * traversal), append one user message to the (temporary copy of the) file, then time `next`
 * with the follow cursor; the bare check reads the pinned prefix and hashes it.
 */
function measureFollow(
  s: Session,
  reader: Reader,
  traversal: Traversal,
  samples: number,
): FollowResult {
  const branch = traversal.defaultBranch;
  let cursor: Cursor | undefined = traversal.end.get(branch)?.follow;
  if (!cursor) throw new Error("no follow cursor on the default branch");
  let leaf = leafIdOf(traversal.defaultLeaf);
  const follow: number[] = [];
  const bare: number[] = [];
  const bytesBefore = lstatSync(s.file).size;
  const taken = new Set<string>();
  for (let k = 0; k < samples; k++) {
    let id = randomBytes(4).toString("hex");
    const text = readFileSync(s.file, "latin1");
    while (taken.has(id) || text.includes(`"id":"${id}"`)) id = randomBytes(4).toString("hex");
    taken.add(id);
    const at = Date.now();
    const entry = {
      type: "message",
      id,
      parentId: leaf,
      timestamp: new Date(at).toISOString(),
      message: { role: "user", content: `Follow sample ${k}: one more question.`, timestamp: at },
    };
    appendFileSync(s.file, `${JSON.stringify(entry)}\n`);

    const pinned = cursor.snapshot;
    gc();
    const b = timed(() => barePrefixCheck(s.file, pinned));
    if (!b.value) throw new Error("the bare check found a different prefix");
    bare.push(b.ms);

    const cursorId = cursor.id;
    gc();
    const f = timed(() => reader.next({ cursor: cursorId, conversation: s.conversation, branch }));
    follow.push(f.ms);
    const r = expectOk(f.value, "follow after append");
    const parts = r.page.parts;
    if (parts.length !== 1 || parts[0]?.entry !== `n.${id}` || !r.follow) {
      throw new Error(`follow returned ${parts.length} parts (${parts[0]?.entry}), not n.${id}`);
    }
    if (r.view.defaultLeaf !== `n.${id}`) throw new Error(`default leaf ${r.view.defaultLeaf}`);
    cursor = r.follow;
    leaf = id;
  }
  return {
    mib: s.cached.mib,
    bytesBefore,
    bytesAfter: lstatSync(s.file).size,
    samples,
    follow: summarize(follow),
    bare: summarize(bare),
  };
}

/** Peak RSS of one traversal (or the floor, or Pi's open) in a child process of its own. */
function measureMemory(mode: MemoryResult["mode"], s: Session, tmp: string): MemoryResult {
  let file = s.file;
  let piDir: string | undefined;
  if (mode === "pi") {
    piDir = join(tmp, "pi-memory");
    mkdirSync(piDir);
    file = join(piDir, SESSION_NAME);
    copyFileSync(s.file, file);
  }
  try {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", SCRIPT, "--worker", mode, "--file", file, "--project", s.projectRoot],
      { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 10 * 60_000 },
    );
    return JSON.parse(out.trim().split("\n").pop() ?? "") as MemoryResult;
  } finally {
    if (piDir) rmSync(piDir, { recursive: true, force: true });
  }
}

async function memoryWorker(mode: string, file: string, projectRoot: string): Promise<void> {
  let work: (sample: () => void) => Record<string, number | string>;
  if (mode === "reader") {
    const roots = rootsFromSpecs([{ kind: "repository", projectRoot, seat: SEAT }], []);
    const conversation = conversationId(projectRoot, SEAT, basename(file));
    work = (sample) => {
      const reader = createReader({ roots });
      const t = traverse(reader, conversation, sample);
      return { pages: t.pages, parts: t.parts };
    };
  } else if (mode === "floor") {
    work = () => ({ lines: floorPass(file).lines });
  } else if (mode === "pi") {
    const Pi: PiModule = await import("@earendil-works/pi-coding-agent");
    let kept: PiSessionManager | undefined;
    work = () => {
      kept = Pi.SessionManager.open(file, dirname(file));
      return { entries: kept.getEntries().length };
    };
  } else {
    throw new Error(`unknown worker mode ${mode}`);
  }
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const baselineRss = process.memoryUsage.rss();
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  let sampledPeakRss = baselineRss;
  let sampledPeakHeap = 0;
  let sampledPeakBuffers = 0;
  const sample = (): void => {
    const m = process.memoryUsage();
    sampledPeakRss = Math.max(sampledPeakRss, m.rss);
    sampledPeakHeap = Math.max(sampledPeakHeap, m.heapUsed);
    sampledPeakBuffers = Math.max(sampledPeakBuffers, m.arrayBuffers);
  };
  const t = timed(() => work(sample));
  sample();
  const maxAfter = process.resourceUsage().maxRSS * 1024;
  const peakRss = Math.max(maxAfter, sampledPeakRss);
  const result: MemoryResult = {
    mode: mode as MemoryResult["mode"],
    fileBytes: lstatSync(file).size,
    baselineRss,
    peakRss,
    aboveBaseline: peakRss - baselineRss,
    peakDuringWork: maxAfter > maxBefore,
    sampledPeakRss,
    sampledPeakHeap,
    sampledPeakBuffers,
    ms: t.ms,
    detail: t.value,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function measureCatalogue(
  tmp: string,
  runs: number,
  layout: CatalogueResult["layout"] = "repository",
): CatalogueResult {
  const [nRoots, perRoot] =
    layout === "repository"
      ? [CATALOGUE_ROOTS, CATALOGUE_FILES_PER_ROOT]
      : [STORE_DIRS, STORE_FILES_PER_DIR];
  const fx = writeCatalogueFixture(join(tmp, `catalogue-${layout}`), nRoots, perRoot, layout);
  const times = timeCatalogue(rootsFromSpecs(fx.specs, []), fx, runs);
  return {
    layout,
    roots: nRoots,
    files: fx.files,
    ...times,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

function machine(): Record<string, string | number> {
  const cpu = cpus();
  return {
    loadAvg1m: Number(loadavg()[0]?.toFixed(2)),
    cpu: cpu[0]?.model ?? "unknown",
    cores: cpu.length,
    totalMemGiB: Number((totalmem() / 1024 ** 3).toFixed(1)),
    node: process.version,
    os: `${platform()} ${release()} ${osArch()}`,
  };
}

function sizeLabel(m: number): string {
  return `${m} MiB`;
}

function report(r: {
  startedAt: string;
  command: string;
  machine: Record<string, string | number>;
  sizes: SizeResult[];
  follow: FollowResult | null;
  memory: MemoryResult[];
  memoryMib: number | null;
  catalogue: CatalogueResult;
  catalogueStore: CatalogueResult;
  budgetS: number;
  totalMs: number;
  loadAtEnd: number;
}): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(`@mosaic/conversation reader benchmark, ${r.startedAt}`);
  out.push(`command: ${r.command}`);
  out.push(`machine: ${m.cpu}, ${m.cores} cores, ${m.totalMemGiB} GiB, node ${m.node}, ${m.os}`);
  out.push(
    `load average (1 min): ${m.loadAvg1m} at start, ${r.loadAtEnd.toFixed(2)} at the end` +
      (Math.max(Number(m.loadAvg1m), r.loadAtEnd) > Number(m.cores)
        ? " (other work was running: expect noise)"
        : ""),
  );
  out.push("");
  out.push("Traversal: medians in ms (reader = open + every page of every branch + a follow each)");
  out.push(
    "reader cold/warm = settled (racyWindowMs 0, as a file quiet for longer than the racy " +
      'window); bytes-check = a cold traversal with createReader({ prefixCheck: "bytes" }), ' +
      "the racy path: the open reads twice, every page compares the pinned prefix with the held bytes",
  );
  out.push(
    table(
      [
        "size",
        "bytes",
        "runs",
        "floor",
        "pi",
        "reader cold",
        "reader warm",
        "bytes-check",
        "cold/floor",
        "cold/pi",
        "warm/floor",
        "warm/pi",
        "bytes/floor",
        "branches",
        "pages",
        "parts",
        "page p50",
      ],
      r.sizes.map((s) => [
        sizeLabel(s.mib),
        int(s.bytes),
        s.runsDone === s.runsWanted ? String(s.runsDone) : `${s.runsDone}/${s.runsWanted}`,
        ms(s.floor.median),
        ms(s.pi.median),
        ms(s.readerCold.median),
        ms(s.readerWarm.median),
        ms(s.readerBytes.median),
        ratio(s.readerCold.median, s.floor.median),
        ratio(s.readerCold.median, s.pi.median),
        ratio(s.readerWarm.median, s.floor.median),
        ratio(s.readerWarm.median, s.pi.median),
        ratio(s.readerBytes.median, s.floor.median),
        String(s.branches),
        int(s.pages),
        int(s.parts),
        ms(s.pageWarm.median),
      ]),
    ),
  );
  out.push("");
  out.push("Spread: min–max ms; open = each open on a cold reader; page = each `next` page");
  out.push(
    table(
      [
        "size",
        "floor",
        "pi",
        "reader cold",
        "reader warm",
        "bytes-check (runs)",
        "open (cold)",
        "page (warm)",
        "lines",
        "pi entries",
      ],
      r.sizes.map((s) => [
        sizeLabel(s.mib),
        spread(s.floor),
        spread(s.pi),
        spread(s.readerCold),
        spread(s.readerWarm),
        s.readerBytes.n === 0 ? "-" : `${spread(s.readerBytes)} (${s.readerBytes.n})`,
        spread(s.openCold),
        spread(s.pageWarm),
        int(s.lines),
        int(s.piEntries),
      ]),
    ),
  );
  if (r.sizes.some((s) => s.runsDone < s.runsWanted)) {
    out.push(
      `(runs a/b: the size's time budget of ${r.budgetS} s stopped it after a runs; --budget 0 lifts it)`,
    );
  }
  if (r.follow) {
    const f = r.follow;
    out.push("");
    out.push("Follow after a one-line append (reader paged to the end of the default branch), ms");
    out.push(
      table(
        [
          "size",
          "bytes",
          "samples",
          "follow",
          "follow min–max",
          "bare check",
          "bare min–max",
          "follow/bare",
        ],
        [
          [
            sizeLabel(f.mib),
            int(f.bytesBefore),
            String(f.samples),
            ms(f.follow.median),
            spread(f.follow),
            ms(f.bare.median),
            spread(f.bare),
            ratio(f.follow.median, f.bare.median),
          ],
        ],
      ),
    );
    out.push("(bare check = read the pinned prefix and SHA-256 it)");
  }
  if (r.memory.length > 0) {
    out.push("");
    out.push(`Peak memory, ${r.memoryMib} MiB file, each in a child process (RSS, MiB)`);
    out.push(
      table(
        [
          "work",
          "file",
          "baseline",
          "peak",
          "above baseline",
          "above/file",
          "all children",
          "heap*",
          "buffers*",
          "ms",
        ],
        r.memory.map((x) => [
          x.mode === "reader" ? "reader traversal" : x.mode === "pi" ? "pi open" : "floor",
          mib(x.fileBytes),
          mib(x.baselineRss),
          `${mib(x.peakRss)}${x.peakDuringWork ? "" : " (start-up)"}`,
          mib(x.aboveBaseline),
          ratio(x.aboveBaseline, x.fileBytes),
          (x.aboveAll ?? [x.aboveBaseline]).map((v) => mib(v)).join(" "),
          mib(x.sampledPeakHeap),
          mib(x.sampledPeakBuffers),
          ms(x.ms),
        ]),
      ),
    );
    out.push(
      "(peak = the child's maxRSS; heap*, buffers* = largest heapUsed and arrayBuffers sampled " +
        "after each reader call and after the work)",
    );
  }
  out.push("");
  out.push(`Catalogue: ${int(r.catalogue.files)} files, medians in ms`);
  const where = (c: CatalogueResult) =>
    c.layout === "repository"
      ? `${c.roots} repository roots (${c.cold.n} runs)`
      : `Pi's store, ${c.roots} dirs (${c.cold.n} runs)`;
  out.push(
    table(
      [
        "",
        "cold",
        "warm",
        "lstat+readdir",
        "cold/lstat",
        "warm/lstat",
        "cold min–max",
        "warm min–max",
        "lstat min–max",
      ],
      [r.catalogue, r.catalogueStore].map((c) => [
        where(c),
        ms(c.cold.median),
        ms(c.warm.median),
        ms(c.lstat.median),
        ratio(c.cold.median, c.lstat.median),
        ratio(c.warm.median, c.lstat.median),
        spread(c.cold),
        spread(c.warm),
        spread(c.lstat),
      ]),
    ),
  );
  out.push("");
  out.push(`total ${(r.totalMs / 1000).toFixed(1)} s`);
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const began = performance.now();
  const quick = values.quick === true;
  const sizes = (values.sizes ?? (quick ? "1,5" : "1,20,100"))
    .split(",")
    .map((v) => Number(v.trim()));
  if (sizes.length === 0 || sizes.some((v) => !(v > 0) || v > 200)) {
    usage("--sizes takes MiB values in (0, 200], comma-separated");
  }
  sizes.sort((a, b) => a - b);
  const runs = Number(values.runs ?? (quick ? 2 : 5));
  if (!Number.isInteger(runs) || runs < 1) usage("--runs must be a positive integer");
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) usage("--seed must be an integer");
  const bytesRuns = Number(values["bytes-runs"]);
  if (!Number.isInteger(bytesRuns) || bytesRuns < 0) usage("--bytes-runs must be 0 or more");
  const budgetS = Number(values.budget);
  if (!(budgetS >= 0)) usage("--budget must be a number of seconds, 0 for none");
  const memoryRuns = quick ? 1 : 5;

  const command = ["node", relative(ROOT, SCRIPT), ...process.argv.slice(2)].join(" ");
  const mach = machine();
  const startedAt = new Date();
  process.stderr.write(`${command}\n`);

  const tmp = mkdtempSync(join(tmpdir(), "mosaic-bench-"));
  const cleanup = (): void => rmSync(tmp, { recursive: true, force: true });
  const onSignal = (): void => {
    cleanup();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const Pi: PiModule = await import("@earendil-works/pi-coding-agent");
    const cached: CachedSession[] = [];
    for (const size of sizes) {
      const c = ensureCached(size, seed, tmp);
      process.stderr.write(
        c.fresh
          ? `generated ${size} MiB (seed ${seed}) with Pi's SessionManager in ${ms(c.generatedMs)} ms\n`
          : `cached ${size} MiB (seed ${seed}): ${relative(ROOT, c.path)}\n`,
      );
      cached.push(c);
    }

    const sizeResults: SizeResult[] = [];
    let follow: FollowResult | null = null;
    const memory: MemoryResult[] = [];
    let memoryMib: number | null = null;
    for (const [i, c] of cached.entries()) {
      const largest = i === cached.length - 1;
      const s = freshSession(c, tmp);
      if (largest) {
        memoryMib = c.mib;
        // GC timing varies from process to process (a late major collection can double the
        // peak), so each is measured in several children and the median child is reported.
        for (const mode of ["reader", "floor", "pi"] as const) {
          process.stderr.write(`  ${c.mib} MiB peak memory: ${mode}\n`);
          const all = Array.from({ length: memoryRuns }, () => measureMemory(mode, s, tmp));
          all.sort((a, b) => a.aboveBaseline - b.aboveBaseline);
          const median = all[all.length >> 1];
          if (median) memory.push({ ...median, aboveAll: all.map((x) => x.aboveBaseline) });
        }
      }
      const { result, last } = measureSize(
        s,
        Pi,
        tmp,
        runs,
        Math.min(runs, bytesRuns),
        budgetS * 1000,
        largest,
      );
      sizeResults.push(result);
      if (largest && last) {
        process.stderr.write(`  ${c.mib} MiB follow after append\n`);
        // A follow right after an append is racy: timed on a reader with the default window.
        const racy = createReader({ roots: s.roots });
        follow = measureFollow(s, racy, traverse(racy, s.conversation), Math.max(runs, 5));
      }
      rmSync(s.projectRoot, { recursive: true, force: true });
      gc();
    }

    process.stderr.write(`  catalogue: ${CATALOGUE_ROOTS} roots × ${CATALOGUE_FILES_PER_ROOT}\n`);
    const catalogue = measureCatalogue(tmp, runs);
    process.stderr.write(`  catalogue: Pi's store, ${STORE_DIRS} dirs × ${STORE_FILES_PER_DIR}\n`);
    const catalogueStore = measureCatalogue(tmp, runs, "pi-store");
    const totalMs = performance.now() - began;
    const text = report({
      startedAt: startedAt.toISOString(),
      command,
      machine: mach,
      sizes: sizeResults,
      follow,
      memory,
      memoryMib,
      catalogue,
      catalogueStore,
      budgetS,
      totalMs,
      loadAtEnd: loadavg()[0] ?? 0,
    });
    process.stdout.write(`\n${text}\n`);

    mkdirSync(RESULTS_DIR, { recursive: true });
    const out = join(RESULTS_DIR, `${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
    const json = {
      startedAt: startedAt.toISOString(),
      command,
      argv: process.argv,
      machine: mach,
      options: { sizes, runs, bytesRuns, seed, budgetS, quick },
      cache: relative(ROOT, CACHE_DIR),
      generated: cached.map(({ path, ...rest }) => ({ ...rest, path: relative(ROOT, path) })),
      sizes: sizeResults,
      follow,
      memory,
      catalogue,
      catalogueStore,
      totalMs,
      text,
    };
    writeFileSync(out, `${JSON.stringify(json, null, 2)}\n`);
    process.stdout.write(`\nresults: ${relative(ROOT, out)}\n`);
  } finally {
    cleanup();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

if (values.worker !== undefined) {
  if (values.file === undefined || values.project === undefined)
    usage("--worker needs --file and --project");
  await memoryWorker(values.worker, values.file, values.project);
} else {
  await main();
}
