// The reader benchmark (SPEC §7): side by side in one run, on sessions written by Pi's own
// SessionManager, the reader's full traversal — of a live session (written again just before,
// inside the racy window) and of a settled one — against the one-pass floor (read + SHA-256 +
// JSON.parse of every line) and Pi's SessionManager.open; follow latency after a small append;
// peak memory of both traversals (child processes); the catalogue over 50 roots and over Pi's
// store (200 directories) against lstat. Prints tables and writes the raw numbers to
// bench/results/<timestamp>.json.
//
//   npm run bench -- [--sizes 1,20,100] [--runs 5] [--quick] [--seed 1] [--budget 240]
//                    [--bytes-runs 2]
//
// --quick: sizes 1 and 5 MiB, 2 runs. --bytes-runs: how many of the runs also time a cold
// traversal with `prefixCheck: "bytes"` (the seed's method: every call verifies the whole pinned
// prefix, as where the change time proves nothing), quadratic, hence only two by default. --budget: seconds per size; once two runs are done, no run starts that would
// end past it (0: no limit), so the full run stays within about five minutes.
// Generated sessions are cached in bench/results/cache/ (git-ignored), keyed by size, seed and
// a hash of the generator's sources and Pi's version.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createReader } from "../src/index.ts";
import { CACHE_DIR, type CachedSession, ensureCached } from "./fixtures.ts";
import {
  CATALOGUE_FILES_PER_ROOT,
  CATALOGUE_ROOTS,
  measureCatalogue,
  STORE_DIRS,
  STORE_FILES_PER_DIR,
} from "./reader/catalogue.ts";
import { type ClaudeSizeResult, measureClaudeSize } from "./reader/claude-traversal.ts";
import { type FollowResult, measureFollow } from "./reader/follow.ts";
import { type MemoryResult, measureMemory, memoryWorker } from "./reader/memory.ts";
import { freshSession, type PiModule } from "./reader/session.ts";
import { machine, report } from "./reader/summary.ts";
import { measureSize, type SizeResult } from "./reader/traversal.ts";
import { ms } from "./report.ts";
import { gc } from "./stats.ts";
import { traverse } from "./traverse.ts";

const SCRIPT = fileURLToPath(import.meta.url);
const HERE = dirname(SCRIPT);
const ROOT = dirname(HERE);
const RESULTS_DIR = join(HERE, "results");

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
    held: { type: "boolean", default: false },
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
    const claude: ClaudeSizeResult[] = [];
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
        for (const mode of ["live", "settled", "floor", "pi"] as const) {
          process.stderr.write(`  ${c.mib} MiB peak memory: ${mode}\n`);
          const all = Array.from({ length: memoryRuns }, () => measureMemory(mode, s, tmp));
          all.sort((a, b) => a.aboveBaseline - b.aboveBaseline);
          const median = all[all.length >> 1];
          // What a traversal holds between calls, in one more child that collects after each.
          const held =
            mode === "live" || mode === "settled"
              ? measureMemory(mode, s, tmp, true).heldPeak
              : null;
          if (median) {
            memory.push({ ...median, aboveAll: all.map((x) => x.aboveBaseline), heldPeak: held });
          }
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
      // Claude Code's file of the same size, in the same run (half the runs, at least one).
      const claudeRuns = Math.max(1, Math.min(runs, Math.ceil(result.runsDone / 2)));
      claude.push(measureClaudeSize(tmp, c.mib, seed, claudeRuns));
      rmSync(join(tmp, `claude-${c.mib}mib`), { recursive: true, force: true });
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
      claude,
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
      claude,
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
  await memoryWorker(values.worker, values.file, values.project, values.held === true);
} else {
  await main();
}
