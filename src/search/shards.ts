// The index is split in SHARDS files by a hash of each session file's path, so a large catch-up
// (the first indexing above all) runs on two cores: this thread indexes shard 0 while a worker
// thread (shard-worker.ts) indexes the others, each through its own SQLite connection (one
// writer per database file). FTS5 tokenizing is most of the cost of indexing and cannot be
// split inside one database; split across files it runs side by side. A small catch-up (a few
// appended lines) stays on this thread: starting a worker would cost more than it saves.
import { lstatSync } from "node:fs";
import { extname, join } from "node:path";
import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import type { FileRoot } from "../reader/sources.ts";
import { type CatchUp, catchUpFile } from "./indexer.ts";
import { inTransaction, isBusy, purgeDeleted, type Store } from "./store.ts";

/** Fixed: which shard holds a file must not change while the index lives. */
export const SHARDS = 2;
/** Files indexed per transaction: a commit per file would cost more than a small file's rows. */
const BATCH_FILES = 64;
/** Below this many bytes to read, every shard is caught up on this thread. */
export const PARALLEL_MIN_BYTES = 16 * 1024 * 1024;
/** A worker that has not begun this long after it was started is not waited for. */
const START_MS = 15_000;
/** A worker that finishes no file for this long is taken as stuck (a file takes seconds). */
const STALL_MS = 5 * 60_000;

// The worker runs as the same kind of file as this one: .ts in the repository, .js in dist.
const WORKER_URL = new URL(`./shard-worker${extname(import.meta.url)}`, import.meta.url);

export type IndexStats = Record<CatchUp, number>;

export type PendingFile = {
  root: FileRoot;
  name: string;
  path: string;
  bytes: number;
  mtimeMs: number;
};

/** The database file of shard `k` in the cache directory. */
export function shardFile(cacheDir: string, k: number): string {
  return join(cacheDir, `search-${k}-of-${SHARDS}.sqlite`);
}

/** The shard of a session file: FNV-1a of its path, so the same file always lands in the same shard. */
export function shardOf(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % SHARDS;
}

/** A file's identity as the index records it; null when it cannot be lstat'ed (gone). */
export function identityOf(
  path: string,
): { dev: string; ino: string; size: number; ctime: string; mtimeMs: number } | null {
  try {
    const st = lstatSync(path, { bigint: true });
    return {
      dev: String(st.dev),
      ino: String(st.ino),
      size: Number(st.size),
      ctime: String(st.ctimeNs),
      mtimeMs: Number(st.mtimeMs),
    };
  } catch {
    return null;
  }
}

/**
 * Catches `files` up in `store`, oldest change first (so rowids, which a query walks newest
 * first, follow the files' age), committing every BATCH_FILES; `done` is told after each file.
 * What it deleted is purged before it returns.
 */
export function indexFiles(
  store: Store,
  files: readonly Pick<PendingFile, "root" | "name" | "mtimeMs">[],
  done: () => void = () => {},
): IndexStats {
  const stats: IndexStats = { unchanged: 0, appended: 0, indexed: 0, refused: 0 };
  const ordered = [...files].sort((a, b) => a.mtimeMs - b.mtimeMs);
  for (let i = 0; i < ordered.length; i += BATCH_FILES) {
    inTransaction(store, () => {
      for (const { root, name } of ordered.slice(i, i + BATCH_FILES)) {
        stats[catchUpFile(store, root, name)]++;
        done();
      }
    });
  }
  // A rewritten or refused file's old words leave the file now, on the connection that
  // deleted them (a worker's included).
  purgeDeleted(store);
  return stats;
}

/** What shard-worker.ts is started with. */
export type ShardJob = {
  dbFile: string;
  files: { root: FileRoot; name: string; mtimeMs: number }[];
  /** Int32 words shared with the waiting thread, indexed by FLAG. */
  signal: SharedArrayBuffer;
  port: MessagePort;
};

/** The words of ShardJob.signal. */
export const FLAG = {
  /** 1 once the worker's outcome is on the port. */
  done: 0,
  /** Files finished so far: shows the worker moving. */
  progress: 1,
  /** 0 while neither side has moved, 1 once the worker took the job, 2 if the waiter took it back. */
  claim: 2,
} as const;

/** The worker's one message: its stats, or why it failed. */
export type ShardOutcome =
  | { ok: true; stats: IndexStats }
  | { ok: false; error: string; busy: boolean };

/** Another process held a shard's write lock past SQLite's busy timeout. */
export class IndexBusy extends Error {}

/**
 * Catches every shard up: inline when there is little to read, else shard 0 here while one
 * worker per other shard indexes its own, waiting for them before returning (the caller's
 * API is synchronous). A worker's failure is thrown here after every shard has stopped.
 */
export function catchUpShards(
  stores: readonly Store[],
  dbFiles: readonly string[],
  pending: readonly PendingFile[][],
  tuning: ShardTuning = {},
): IndexStats & { workers: number } {
  const { parallelMinBytes = PARALLEL_MIN_BYTES } = tuning;
  const total: IndexStats = { unchanged: 0, appended: 0, indexed: 0, refused: 0 };
  const add = (s: IndexStats) => {
    for (const k of Object.keys(total) as CatchUp[]) total[k] += s[k];
  };
  const bytes = pending.reduce((n, files) => n + files.reduce((m, f) => m + f.bytes, 0), 0);
  const busy = pending.filter((files) => files.length > 0).length;
  if (bytes < parallelMinBytes || busy < 2) {
    pending.forEach((files, k) => {
      if (files.length) add(indexFiles(stores[k] as Store, files));
    });
    return { ...total, workers: 0 };
  }
  const workers = pending
    .slice(1)
    .map((files, i) =>
      files.length ? startShardWorker(dbFiles[i + 1] as string, files, tuning) : null,
    );
  let failure: unknown = null;
  try {
    add(indexFiles(stores[0] as Store, pending[0] as PendingFile[]));
  } catch (e) {
    failure = e;
  }
  workers.forEach((w, i) => {
    if (!w) return;
    const outcome = w.wait();
    if (outcome === "not-started") {
      // The worker never began (it could not load, or the machine is too busy to start it
      // in time) and will not now: its shard is indexed here instead.
      try {
        add(indexFiles(stores[i + 1] as Store, pending[i + 1] as PendingFile[]));
      } catch (e) {
        failure ??= e;
      }
      return;
    }
    if (outcome.ok) add(outcome.stats);
    else if (outcome.busy) failure ??= new IndexBusy(outcome.error);
    else failure ??= new Error(`indexing a search shard failed: ${outcome.error}`);
  });
  if (isBusy(failure)) failure = new IndexBusy(String(failure));
  if (failure) throw failure;
  return { ...total, workers: workers.filter((w) => w?.started).length };
}

type RunningShard = { wait(): ShardOutcome | "not-started"; readonly started: boolean };

/** Defaults for real use; tests shorten the start deadline and give a worker that cannot load. */
export type ShardTuning = { parallelMinBytes?: number; startMs?: number; workerUrl?: URL };

function startShardWorker(
  dbFile: string,
  files: readonly PendingFile[],
  { startMs = START_MS, workerUrl = WORKER_URL }: ShardTuning,
): RunningShard {
  const signal = new SharedArrayBuffer(4 * 3);
  const flags = new Int32Array(signal);
  const { port1, port2 } = new MessageChannel();
  const job: ShardJob = {
    dbFile,
    files: files.map(({ root, name, mtimeMs }) => ({ root, name, mtimeMs })),
    signal,
    port: port2,
  };
  // No inherited flags: under `node --input-type=module -e` the worker would refuse to start.
  const created = Date.now();
  const worker = new Worker(workerUrl, { workerData: job, transferList: [port2], execArgv: [] });
  // Its errors arrive as events only once this thread is free again, after the outcome is
  // known (a worker that could not start is covered by the claim below): not a crash then.
  worker.on("error", () => {});
  // Never what keeps a process alive: it is waited for below, then left to end.
  worker.unref();
  let started = false;
  return {
    get started() {
      return started;
    },
    wait() {
      // This thread blocks (the API is synchronous), so the worker's messages cannot arrive
      // as events: it raises a flag when done and its outcome is read off the port directly.
      // A worker that has not taken its job `startMs` after it was made is stopped and the job taken
      // back (one compare-and-swap decides, so never both); one that finishes no file for
      // STALL_MS is given up.
      let progress = 0;
      let movedAt = Date.now();
      while (Atomics.load(flags, FLAG.done) === 0) {
        Atomics.wait(flags, FLAG.done, 0, 250);
        const now = Date.now();
        if (Atomics.load(flags, FLAG.claim) === 0 && now - created > startMs) {
          if (Atomics.compareExchange(flags, FLAG.claim, 0, 2) === 0) {
            void worker.terminate();
            port1.close();
            return "not-started";
          }
        }
        const moved = Atomics.load(flags, FLAG.progress);
        if (moved !== progress) {
          progress = moved;
          movedAt = now;
        } else if (now - movedAt > STALL_MS) {
          void worker.terminate();
          port1.close();
          started = true;
          return { ok: false, error: `no file finished in ${STALL_MS / 1000} s`, busy: false };
        }
      }
      started = true;
      const message = receiveMessageOnPort(port1);
      port1.close();
      if (!message) return { ok: false, error: "the worker ended without a result", busy: false };
      return message.message as ShardOutcome;
    },
  };
}
