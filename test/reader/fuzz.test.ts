// The reader's fuzz suite (issue 17): mutations of sessions written by Pi's own SessionManager
// (fuzz-mutations.ts), each read every way a client can (catalogue, open, every page, other
// branches, a follow after growth, a foreign cursor) through a checked reader. It checks that
// no call throws, none hangs (a watchdog per iteration), every record is schema-valid and no
// file changes. `npm test` runs a seeded slice of a few seconds; a long run on demand:
//   FUZZ_ITERATIONS=100000 [FUZZ_SEED=n] [FUZZ_FROM=i] npm run fuzz
// A failure names its seed and iteration (replay with FUZZ_SEED, FUZZ_FROM and
// FUZZ_ITERATIONS=1) and saves the mutated file under $TMPDIR/mosaic-fuzz-failures/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Worker } from "node:worker_threads";
import { makeProject, writeLongSession, writeRichSession } from "../helpers/pi-sessions.ts";
import { tempDir } from "../helpers/reader.ts";
import type { FuzzJob, FuzzMessage } from "./fuzz-worker.ts";

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 120);
const SEED = Number(process.env.FUZZ_SEED ?? 17);
const FROM = Number(process.env.FUZZ_FROM ?? 0);
/** No single case may take longer than this (the slowest take a few seconds on a busy host). */
const ITERATION_DEADLINE_MS = Number(process.env.FUZZ_DEADLINE_MS ?? 60_000);

function runWorker(job: FuzzJob): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./fuzz-worker.ts", import.meta.url), { workerData: job });
    let current: Extract<FuzzMessage, { type: "start" }> | null = null;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
      void worker.terminate();
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        settle(() =>
          reject(
            new Error(
              `fuzz iteration ${current?.i} (seed ${job.seed}) ran over ${ITERATION_DEADLINE_MS} ms: ${current?.applied.join(", ")} (${current?.bytes} bytes)`,
            ),
          ),
        );
      }, ITERATION_DEADLINE_MS);
    };
    arm();
    worker.on("message", (m: FuzzMessage) => {
      if (m.type === "start") {
        current = m;
        arm();
      } else if (m.type === "failure") {
        settle(() =>
          reject(
            new Error(
              `fuzz iteration ${m.i} (seed ${job.seed}) failed after ${m.applied.join(", ")}; file saved as ${m.saved}\n${m.error}`,
            ),
          ),
        );
      } else settle(() => resolve(m.stats));
    });
    worker.on("error", (e) => settle(() => reject(e)));
    worker.on("exit", (code) =>
      settle(() =>
        reject(new Error(`fuzz worker exited (${code}) during iteration ${current?.i}`)),
      ),
    );
  });
}

describe("reader fuzz", () => {
  it(`survives ${ITERATIONS} mutated Pi sessions (seed ${SEED}): no exception, no hang, every record valid, no file changed`, {
    timeout: Math.max(180_000, ITERATIONS * 2_000),
  }, async (t) => {
    const base = tempDir(t, "fuzz-");
    const p = makeProject(base);
    // Seeds come from Pi itself, written outside the root the reader lists.
    const seedsDir = join(base, "seeds");
    const rich = await writeRichSession(seedsDir, "rich", p.projectRoot);
    const long = await writeLongSession(seedsDir, "long", p.projectRoot, {
      targetBytes: 96 * 1024,
      branches: true,
      compactionEveryBytes: 32 * 1024,
    });
    const seeds = [readFileSync(rich.path), readFileSync(long.path)].map((b) => new Uint8Array(b));
    const stats = await runWorker({
      base: p.projectRoot,
      projectRoot: p.projectRoot,
      seat: p.seat,
      sessionsDir: p.sessionsDir,
      seeds,
      seed: SEED,
      from: FROM,
      count: ITERATIONS,
    });
    const summary = Object.entries(stats).sort(([a], [b]) => a.localeCompare(b));
    for (const [k, v] of summary) t.diagnostic(`${k}: ${v}`);
    // The slice must reach past the header: pages were read, and some mutations refused.
    assert.ok((stats.page ?? 0) >= ITERATIONS / 2, "most cases were read");
  });
});
