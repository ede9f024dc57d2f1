// `npm test`'s runner: Node's test runner over test/**/*.test.ts, several files at once, the
// slowest files first. Most of a file's time is spent waiting on children (Pi, controllers,
// Chromium, tmux, servers), so files run side by side; started in glob order, a three-minute
// file drawn last would run on alone after the rest had finished, so each file's last measured
// time (test/durations.json) sets the order. A file not listed there (a new one) goes first
// among the short ones, after every listed file slower than NEW_FILE_GUESS_S.
//
// TEST_CONCURRENCY sets how many files run at once (default 4, measured in docs/testing.md);
// arguments name files or globs to run instead of the whole suite. With TEST_DURATIONS=write
// the run writes each file's time (its process's life) back to test/durations.json (do that
// after adding slow files).
//
// Every Node the suite starts (test files, the CLI children, controllers, shims, workers) keeps
// its compiled modules in one compile cache (NODE_COMPILE_CACHE, node_modules/.cache of this
// checkout unless already set): most of a short child's CPU is type-stripping and compiling the
// sources, which the cache does once (docs/testing.md). An engine gets no inherited env, so no
// cache: the engines run as they would anywhere.
import { globSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { run } from "node:test";
import { spec } from "node:test/reporters";

const ROOT = resolve(import.meta.dirname, "..");
const DURATIONS = resolve(ROOT, "test/durations.json");
/** Node checks each entry against its source, so a stale or torn entry is recompiled, not run. */
const COMPILE_CACHE = resolve(ROOT, "node_modules/.cache/node-compile-cache");
/**
 * Node never prunes the cache, and each run adds some 500 entries (2 MB) for files compiled
 * anew (edited sources, the package test's fresh installs): past this many it starts over.
 */
const COMPILE_CACHE_MAX_ENTRIES = 20_000;
const DEFAULT_CONCURRENCY = 4;
/** Every test's deadline: a test that hangs fails after 3 minutes instead of holding the run. */
const TEST_TIMEOUT_MS = 180_000;
/** Where a file with no measured time sorts: a guess between the slow files and the quick. */
const NEW_FILE_GUESS_S = 15;

function concurrency(): number {
  const raw = process.env.TEST_CONCURRENCY;
  if (raw === undefined || raw === "") return DEFAULT_CONCURRENCY;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`TEST_CONCURRENCY must be a whole number of files, at least 1 (got ${raw})`);
    process.exit(2);
  }
  return n;
}

function recorded(): Record<string, number> {
  try {
    const parsed: unknown = JSON.parse(readFileSync(DURATIONS, "utf8"));
    if (typeof parsed !== "object" || parsed === null) return {};
    const out: Record<string, number> = {};
    for (const [file, s] of Object.entries(parsed)) if (typeof s === "number") out[file] = s;
    return out;
  } catch {
    return {};
  }
}

/**
 * CPU time (user + system) of every process the run started and reaped, through each file's
 * process: the suite's real cost on a shared machine, which the wall time hides.
 */
function cpuOfChildren(): string {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // Fields after the command's ")": cutime and cstime are the 16th and 17th of the line, in
    // USER_HZ ticks (100 a second on Linux).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[13]) + Number(fields[14]);
    return Number.isFinite(ticks) ? `${(ticks / 100).toFixed(0)} s CPU` : "CPU unknown";
  } catch {
    // Not Linux: the figure is only a report.
    return "CPU unknown";
  }
}

const patterns = process.argv.slice(2);
const files = [
  ...new Set(
    (patterns.length > 0 ? patterns : ["test/**/*.test.ts"]).flatMap((p) =>
      globSync(p, { cwd: ROOT }),
    ),
  ),
].map((f) => relative(ROOT, resolve(ROOT, f)));
if (files.length === 0) {
  console.error(`no test file matches ${patterns.join(" ")}`);
  process.exit(2);
}
const known = recorded();
const weight = (f: string) => known[f] ?? NEW_FILE_GUESS_S;
files.sort((a, b) => weight(b) - weight(a) || a.localeCompare(b));

if (!process.env.NODE_COMPILE_CACHE) {
  // One folder per Node version below the cache, each flat.
  mkdirSync(COMPILE_CACHE, { recursive: true });
  const entries = readdirSync(COMPILE_CACHE, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .reduce((sum, d) => sum + readdirSync(join(COMPILE_CACHE, d.name)).length, 0);
  if (entries > COMPILE_CACHE_MAX_ENTRIES) {
    rmSync(COMPILE_CACHE, { recursive: true, force: true });
    mkdirSync(COMPILE_CACHE, { recursive: true });
  }
  process.env.NODE_COMPILE_CACHE = COMPILE_CACHE;
}

const n = concurrency();
const started = performance.now();
/**
 * Per file: its process's whole life (seconds), start-up and exit included: a timer or handle
 * left behind keeps a file's process, and so one of the n slots, after its last test.
 */
const fileTime = new Map<string, number>();
const failed = new Set<string>();

const stream = run({
  files: files.map((f) => resolve(ROOT, f)),
  concurrency: n,
  timeout: TEST_TIMEOUT_MS,
  cwd: ROOT,
});
stream.on("test:fail", (data) => {
  process.exitCode = 1;
  if (data.file) failed.add(relative(ROOT, data.file));
});
// The runner reports each file's process as a test named by its (absolute) path.
stream.on("test:complete", (data) => {
  if (data.nesting !== 0 || !data.file || data.name !== data.file) return;
  fileTime.set(relative(ROOT, data.file), data.details.duration_ms / 1000);
});
stream.compose(spec).pipe(process.stdout);
stream.on("end", () => {
  const wall = (performance.now() - started) / 1000;
  const slowest = [...fileTime].sort((a, b) => b[1] - a[1]).slice(0, 10);
  const lines = slowest.map(([f, s]) => `#   ${s.toFixed(1).padStart(7)} s  ${f}`);
  const load = readFileSync("/proc/loadavg", "utf8").trim();
  process.stdout.write(
    `# ${files.length} files, ${n} at once: ${wall.toFixed(0)} s wall, ${cpuOfChildren()} (load now ${load})\n` +
      `# slowest files:\n${lines.join("\n")}\n` +
      (failed.size > 0 ? `# files with failures: ${[...failed].join(", ")}\n` : ""),
  );
  if (process.env.TEST_DURATIONS === "write" && patterns.length === 0) {
    const out: Record<string, number> = {};
    for (const f of [...fileTime.keys()].sort())
      out[f] = Math.round((fileTime.get(f) ?? 0) * 10) / 10;
    writeFileSync(DURATIONS, `${JSON.stringify(out, null, 2)}\n`);
  }
});
