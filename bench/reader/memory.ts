// Peak memory of one traversal (or the floor, or Pi's open), each in a child process of its own:
// the entry script (reader.bench.ts) runs memoryWorker when given --worker.
import { execFileSync } from "node:child_process";
import { copyFileSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { getHeapSpaceStatistics } from "node:v8";
import type { SessionManager as PiSessionManager } from "@earendil-works/pi-coding-agent";
import { conversationId, createReader, rootsFromSpecs } from "../../src/index.ts";
import { gc, timed } from "../stats.ts";
import { traverse } from "../traverse.ts";
import { floorPass } from "./baselines.ts";
import { freshen, type PiModule, SEAT, SESSION_NAME, type Session } from "./session.ts";

/** The script a memory child runs: the bench's entry, with --worker. */
const SCRIPT = fileURLToPath(new URL("../reader.bench.ts", import.meta.url));

export type MemoryResult = {
  mode: "live" | "settled" | "floor" | "pi";
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
  /**
   * How far V8's young generation (new space and new large-object space, physical bytes) grew
   * above the baseline's, at most, sampled after each call: heap the runtime keeps for
   * short-lived garbage, not anything the work holds (its two semi-spaces grow while scavenges
   * keep seeing survivors, up to V8's limit: 28 MiB in a 20 MiB traversal here, 60 at 100).
   */
  youngGrowth: number;
  /**
   * With --held only: the largest live memory (heapUsed + arrayBuffers after a full collection)
   * above the baseline's, taken after every reader call — what the traversal holds between
   * calls (its caches, the reader's buffers, the page just returned). Else null.
   */
  heldPeak: number | null;
  ms: number;
  detail: Record<string, number | string>;
  /** Above-baseline peaks of every child measured, smallest first (the row is the median). */
  aboveAll?: number[];
};

/**
 * Peak RSS of one traversal (or the floor, or Pi's open) in a child process of its own. `held`:
 * instead, a full collection after every reader call, and the live memory measured there (its
 * RSS figures are then not comparable: collections change how the heap grows).
 */
export function measureMemory(
  mode: MemoryResult["mode"],
  s: Session,
  tmp: string,
  held = false,
): MemoryResult {
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
      [
        "--expose-gc",
        SCRIPT,
        "--worker",
        mode,
        "--file",
        file,
        "--project",
        s.projectRoot,
        ...(held ? ["--held"] : []),
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 10 * 60_000 },
    );
    return JSON.parse(out.trim().split("\n").pop() ?? "") as MemoryResult;
  } finally {
    if (piDir) rmSync(piDir, { recursive: true, force: true });
  }
}

/** Physical bytes of V8's young generation: new space and new large-object space. */
function youngBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === "new_space" || space.space_name === "new_large_object_space") {
      bytes += space.physical_space_size;
    }
  }
  return bytes;
}

/** Live bytes: the heap in use and Buffers' memory, meant to be read right after gc(). */
function liveBytes(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

export async function memoryWorker(
  mode: string,
  file: string,
  projectRoot: string,
  held = false,
): Promise<void> {
  let work: (sample: () => void) => Record<string, number | string>;
  if (mode === "live" || mode === "settled") {
    const roots = rootsFromSpecs([{ kind: "repository", projectRoot, seat: SEAT }], []);
    const conversation = conversationId(projectRoot, SEAT, basename(file));
    // live: written again just now (inside the racy window), default settings; settled: as a
    // file quiet for longer than the window.
    if (mode === "live") freshen(file);
    work = (sample) => {
      const reader = createReader(mode === "live" ? { roots } : { roots, racyWindowMs: 0 });
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
  const baselineYoung = youngBytes();
  const baselineLive = liveBytes();
  // The high-water mark of start-up (loading the module graph) can exceed the work's: reset it,
  // so the peak measured is the work's (Linux: 5 > clear_refs resets VmHWM and maxRSS).
  const reset = resetPeakRss();
  const maxBefore = peakRssNow();
  let sampledPeakRss = baselineRss;
  let sampledPeakHeap = 0;
  let sampledPeakBuffers = 0;
  let youngGrowth = 0;
  let heldPeak = 0;
  const sample = (): void => {
    if (held) {
      gc();
      heldPeak = Math.max(heldPeak, liveBytes() - baselineLive);
    }
    youngGrowth = Math.max(youngGrowth, youngBytes() - baselineYoung);
    const m = process.memoryUsage();
    sampledPeakRss = Math.max(sampledPeakRss, m.rss);
    sampledPeakHeap = Math.max(sampledPeakHeap, m.heapUsed);
    sampledPeakBuffers = Math.max(sampledPeakBuffers, m.arrayBuffers);
  };
  const t = timed(() => work(sample));
  sample();
  const maxAfter = peakRssNow();
  const peakRss = Math.max(maxAfter, sampledPeakRss);
  const result: MemoryResult = {
    mode: mode as MemoryResult["mode"],
    fileBytes: lstatSync(file).size,
    baselineRss,
    peakRss,
    aboveBaseline: peakRss - baselineRss,
    peakDuringWork: reset || maxAfter > maxBefore,
    sampledPeakRss,
    sampledPeakHeap,
    sampledPeakBuffers,
    youngGrowth,
    heldPeak: held ? heldPeak : null,
    ms: t.ms,
    detail: t.value,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** Resets the process's RSS high-water mark; false where /proc/self/clear_refs is not there. */
function resetPeakRss(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    // Not Linux, or no /proc: the peak may then be start-up's (the report says so).
    return false;
  }
}

/** The RSS high-water mark: VmHWM where /proc has it, else getrusage's maxRSS. */
function peakRssNow(): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    // No /proc/self/status: getrusage below.
  }
  return process.resourceUsage().maxRSS * 1024;
}
