// One shard of a large catch-up (shards.ts), on a thread of its own: it opens the shard's
// database, indexes its files exactly as the main thread would, and hands back its counts. The
// thread that started it is blocked waiting, so it raises a flag in shared memory when done
// (and counts files as it goes, to show it is moving) and leaves its outcome on the port.
import { isMainThread, workerData } from "node:worker_threads";
import { FLAG, indexFiles, type ShardJob, type ShardOutcome } from "./shards.ts";
import { isBusy, openStore } from "./store.ts";

function run(job: ShardJob): void {
  const flags = new Int32Array(job.signal);
  // The waiting thread may have given up on this worker starting and indexed the shard
  // itself: then there is nothing to do (one compare-and-swap decides who does it).
  if (Atomics.compareExchange(flags, FLAG.claim, 0, 1) !== 0) return;
  let outcome: ShardOutcome;
  try {
    const store = openStore(job.dbFile);
    try {
      outcome = {
        ok: true,
        stats: indexFiles(store, job.files, () => Atomics.add(flags, FLAG.progress, 1)),
      };
    } finally {
      store.close();
    }
  } catch (e) {
    outcome = { ok: false, error: e instanceof Error ? e.message : String(e), busy: isBusy(e) };
  }
  job.port.postMessage(outcome);
  job.port.close();
  Atomics.store(flags, FLAG.done, 1);
  Atomics.notify(flags, FLAG.done);
}

if (isMainThread) throw new Error("shard-worker.ts runs only as a worker thread (shards.ts).");
run(workerData as ShardJob);
