// Usage benchmark (issue 28): over a corpus of generated Pi sessions (default 1 GiB in 512
// files; USAGE_BENCH_MIB and USAGE_BENCH_FILES change it), the one-pass floor (read + SHA-256
// + JSON.parse of every line, as search's bench), the first run (a fresh usage index: every
// file read, every spend stored, the report made), a run once indexed (each file's lstat, the
// spends read back, counted once, grouped by day), and the peer, @ccusage/pi, on the same
// files (one run: it keeps no index). Targets: once indexed ≤ 2 s, first run ≤ 3× the floor.
// The corpus is copies of a few sessions written by Pi's SessionManager (bench/fixtures.ts);
// copies share their lines, so most spends are counted once for many files, but every file is
// still read, and every spend stored and read back.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type BoardSpec, createReader, encodeCwd, rootsFromSpecs } from "../src/index.ts";
import { openUsage } from "../src/usage/index.ts";
import { ensureCached } from "./fixtures.ts";
import { floorPass } from "./reader/baselines.ts";
import { int, mib, ms, ratio, table } from "./report.ts";
import { gc, summarize, timed } from "./stats.ts";

const QUICK = process.argv.includes("--quick");
const TOTAL_MIB = Number(process.env.USAGE_BENCH_MIB ?? (QUICK ? 64 : 1024));
const FILES = Number(process.env.USAGE_BENCH_FILES ?? (QUICK ? 32 : 512));
const BASES = 4;
const RUNS = 5;
const TARGETS = { indexedMs: 2000, firstRatio: 3 };
const PEER = resolve(import.meta.dirname, "../node_modules/@ccusage/pi/dist/index.js");

const tmp = mkdtempSync(join(tmpdir(), "usage-bench-"));
try {
  run();
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

function run(): void {
  const perFile = Math.max(1, Math.round(TOTAL_MIB / FILES));
  process.stdout.write(`usage bench: ${FILES} files of about ${perFile} MiB (${TOTAL_MIB} MiB)\n`);
  process.stdout.write(
    `load before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
  );
  const bases = Array.from({ length: BASES }, (_, i) => ensureCached(perFile, i + 1, tmp));
  const buffers = bases.map((b) => readFileSync(b.path));
  // Pi's own store (`<sessions>/--<cwd>--/`), the layout both read: the peer skips the dot
  // folders of a project's `.pi/state/<seat>/sessions`.
  const sessionsDir = join(tmp, "store", "sessions");
  const specs: BoardSpec[] = [{ kind: "pi-agent", sessionsDir }];
  const projects = Math.max(1, Math.ceil(FILES / 64));
  const cwds = Array.from({ length: projects }, (_, p) => join(tmp, "code", `project-${p}`));
  for (const cwd of cwds) mkdirSync(join(sessionsDir, encodeCwd(cwd)), { recursive: true });
  const files: string[] = [];
  for (let i = 0; i < FILES; i++) {
    files.push(writeCopy(buffers[i % BASES]!, sessionsDir, cwds[i % projects]!, i));
  }
  const bytes = files.reduce((n, f) => n + readFileSync(f).length, 0);
  process.stdout.write(`corpus: ${files.length} files, ${mib(bytes)} MiB\n`);

  gc();
  const floor = timed(() => files.reduce((n, f) => n + floorPass(f).lines, 0));
  process.stdout.write(`floor: ${ms(floor.ms)} ms for ${int(floor.value)} lines\n`);

  const roots = () => rootsFromSpecs(specs, []);
  const reader = createReader({ roots });
  const opened = openUsage({
    roots,
    catalogue: () => reader.catalogue(),
    cacheDir: join(tmp, "cache"),
  });
  if (!opened.ok) throw new Error(opened.reason);
  const usage = opened.usage;
  gc();
  const first = timed(() => usage.report({ by: "day", timeZone: "UTC" }));
  process.stdout.write(
    `first run: ${ms(first.ms)} ms, ${int(first.value.totals.requests)} requests counted\n`,
  );
  const samples: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    gc();
    const t = timed(() => usage.report({ by: "day", timeZone: "UTC" }));
    if (t.value.totals.requests !== first.value.totals.requests) throw new Error("counts moved");
    samples.push(t.ms);
  }
  const indexed = summarize(samples);
  usage.close();

  // The peer reads every file whole at each run; its figures must be ours.
  const peerStart = performance.now();
  const out = execFileSync(
    process.execPath,
    [PEER, "daily", "--json", "--piPath", sessionsDir, "--timezone", "UTC"],
    {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      env: { PATH: process.env.PATH ?? "", HOME: tmp, LOG_LEVEL: "0" },
    },
  );
  const peerMs = performance.now() - peerStart;
  const peer = JSON.parse(out) as { totals?: { inputTokens?: number } };
  // Not a target: the peer's key (timestamp and total tokens) merges distinct replies written
  // in the same millisecond with the same counts, as the generator writes them, and it counts
  // no summary's request (docs/usage.md, "Where the peers differ").
  process.stdout.write(
    `input tokens: ours ${int(first.value.totals.input)}, @ccusage/pi ${int(peer.totals?.inputTokens ?? 0)}\n`,
  );

  const rows = [
    ["floor (read + SHA-256 + JSON.parse)", ms(floor.ms), "", ""],
    [
      "first run (fresh index)",
      ms(first.ms),
      ratio(first.ms, floor.ms),
      `≤ ${TARGETS.firstRatio}× floor`,
    ],
    [
      `once indexed (median of ${RUNS})`,
      ms(indexed.median),
      ratio(indexed.median, floor.ms),
      `≤ ${TARGETS.indexedMs} ms`,
    ],
    ["@ccusage/pi 18.0.11 daily (no index, one run)", ms(peerMs), ratio(peerMs, floor.ms), ""],
  ];
  process.stdout.write(
    `\n${table([`usage, ${files.length} files, ${mib(bytes)} MiB`, "ms", "ratio", "target"], rows)}\n`,
  );
  process.stdout.write(
    `load after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
  );
  const verdict = {
    indexed: indexed.median <= TARGETS.indexedMs,
    first: first.ms <= TARGETS.firstRatio * floor.ms,
  };
  process.stdout.write(`targets met: ${JSON.stringify(verdict)}\n`);
  const dir = join(import.meta.dirname, "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `usage-${new Date().toISOString().replace(/[:.]/g, "-")}.json`),
    `${JSON.stringify({ bytes, files: files.length, floorMs: floor.ms, firstMs: first.ms, indexed, peerMs, verdict, load: loadavg() }, null, 2)}\n`,
  );
}

/** A copy of `base` in the store's folder of `cwd`, its header's cwd and id its own. */
function writeCopy(base: Buffer, sessionsDir: string, cwd: string, i: number): string {
  const nl = base.indexOf(0x0a);
  const header = JSON.parse(base.toString("utf8", 0, nl)) as Record<string, unknown>;
  header.cwd = cwd;
  header.id = `01c00000-0000-7000-8000-${String(i).padStart(12, "0")}`;
  const name = `2026-01-01T00-00-00-000Z_${header.id}.jsonl`;
  const file = join(sessionsDir, encodeCwd(cwd), name);
  writeFileSync(file, Buffer.concat([Buffer.from(JSON.stringify(header)), base.subarray(nl)]));
  return file;
}
