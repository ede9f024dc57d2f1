// Runs the fuzz loop (fuzz-worker.ts) in a worker under a watchdog: a reader call that hangs
// is stopped and named by its seed and iteration, as is a failure (its file saved for replay).
import { Worker } from "node:worker_threads";
import type { FuzzJob, FuzzMessage } from "./fuzz-worker.ts";

/** No single case may take longer than this (the slowest take a few seconds on a busy host). */
const ITERATION_DEADLINE_MS = Number(process.env.FUZZ_DEADLINE_MS ?? 60_000);

export function runWorker(job: FuzzJob): Promise<Record<string, number>> {
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
