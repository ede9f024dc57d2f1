// A read worker (read-pool.ts): its own reader over the board's sources and the board's own
// request handler (routes.ts), so a page that costs seconds to read holds this thread and
// never the board's request loop. Requests are handled one at a time, in arrival order.
import { getPriority, setPriority } from "node:os";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { withLiveCatalogue } from "../control/registry/live-catalogue.ts";
import { createReader } from "../reader/reader.ts";
import { rootsFromSpecs } from "../reader/sources.ts";
import { createSearch, type Search } from "../search/index.ts";
import { loadAssets } from "./assets.ts";
import { SlabWriter } from "./body-slab.ts";
import { type FromWorker, isToWorker, type WorkerSetup } from "./read-messages.ts";
import { createHandler } from "./routes.ts";
import type { BoardSearch } from "./search-route.ts";
import type { ReplyStream } from "./stream-reply.ts";
import { lazyUsage } from "./usage-lane.ts";

function isWorkerSetup(value: unknown): value is WorkerSetup {
  if (typeof value !== "object" || value === null) return false;
  if (!("sources" in value && "hosts" in value && "nice" in value)) return false;
  const { sources, hosts, nice } = value;
  return (
    typeof nice === "number" &&
    Array.isArray(hosts) &&
    hosts.every((h) => typeof h === "string") &&
    typeof sources === "object" &&
    sources !== null &&
    "specs" in sources &&
    Array.isArray(sources.specs) &&
    "registrations" in sources &&
    Array.isArray(sources.registrations) &&
    (!("liveRegistry" in sources) ||
      sources.liveRegistry === undefined ||
      typeof sources.liveRegistry === "string")
  );
}

/** The search lane's index (src/search); none, with the reason logged, when its cache is unsafe. */
function openSearch(
  setup: WorkerSetup,
  reader: ReturnType<typeof createReader>,
  post: (message: FromWorker) => void,
  refused: (reason: string) => void = () => {},
): Search | undefined {
  const { specs, registrations } = setup.sources;
  const cacheDir = setup.sources.search?.cacheDir;
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, registrations),
    catalogue: () => reader.catalogue(),
    ...(cacheDir === undefined ? {} : { cacheDir }),
  });
  if (opened.ok) return opened.search;
  post({ type: "log", line: `board: search is off: ${opened.reason}` });
  refused(opened.reason);
  return undefined;
}

/**
 * The index is opened (and its cache directory made) on the first search, not when the board
 * starts: a board nobody searches leaves nothing in the cache. A cache that cannot be used is
 * answered `search-unavailable` with its reason, each time.
 */
function lazySearch(
  setup: WorkerSetup,
  reader: ReturnType<typeof createReader>,
  post: (message: FromWorker) => void,
): BoardSearch {
  let opened: Search | null | undefined;
  let reason = "";
  return {
    search(query, limit) {
      if (opened === undefined) {
        opened = openSearch(setup, reader, post, (r) => {
          reason = r;
        });
        opened ??= null;
      }
      if (opened === null) {
        const message = `Search is off on this board: ${reason}`;
        return { ok: false, refusal: { code: "search-unavailable", reconcile: false, message } };
      }
      return opened.search(query, limit);
    },
  };
}

function run(): void {
  const port = parentPort;
  if (isMainThread || port === null) {
    throw new Error("read-worker.ts runs only as a worker thread started by the board.");
  }
  const setup: unknown = workerData;
  if (!isWorkerSetup(setup)) throw new Error("read worker: malformed workerData");
  lowerPriority(setup.nice);
  const { specs, registrations, liveRegistry, ...tuning } = setup.sources;
  const base = createReader({ roots: () => rootsFromSpecs(specs, registrations), ...tuning });
  const reader = liveRegistry === undefined ? base : withLiveCatalogue(base, liveRegistry);
  const post = (message: FromWorker) => port.postMessage(message);
  const slab = setup.slab === undefined ? null : new SlabWriter(setup.slab);
  const search = setup.searches ? lazySearch(setup, reader, post) : undefined;
  const handle = createHandler({
    reader,
    assets: loadAssets(),
    hosts: new Set(setup.hosts),
    log: (line) => post({ type: "log", line }),
    ...(search ? { search } : {}),
    // Usage reads through an index in the same cache, on the same lane as search.
    ...(setup.searches ? { usage: lazyUsage(setup, reader) } : {}),
  });
  // Streamed replies (an export) by request id, until their end or their client's cancel.
  const streams = new Map<number, ReplyStream>();
  port.on("message", (message: unknown) => {
    if (!isToWorker(message)) {
      post({ type: "log", line: "board: read worker: a malformed message was ignored" });
      return;
    }
    if (message.type !== "request") {
      const stream = streams.get(message.id);
      if (stream === undefined) return;
      if (message.type === "cancel") {
        streams.delete(message.id);
        stream.cancel();
        return;
      }
      void stream.pull().then((next) => {
        if ("end" in next) {
          streams.delete(message.id);
          post({ type: "end", id: message.id, end: next.end });
          return;
        }
        // Copied into a buffer of its own, which is transferred (see below).
        const body = new Uint8Array(next.chunk.byteLength);
        body.set(next.chunk);
        port.postMessage({ type: "chunk", id: message.id, body } satisfies FromWorker, [
          body.buffer,
        ]);
      });
      return;
    }
    // createHandler never throws: a reader bug is logged and answered 500 there.
    const reply = handle(message.request);
    if (reply.stream !== undefined) {
      streams.set(message.id, reply.stream);
      const head = { status: reply.status, headers: reply.headers, body: new Uint8Array(0) };
      post({ type: "reply", id: message.id, reply: head, streamed: true });
      return;
    }
    const range = slab?.write(reply.body) ?? null;
    if (range !== null) {
      const empty = { ...reply, body: new Uint8Array(0) };
      post({ type: "reply", id: message.id, reply: empty, slab: range });
      return;
    }
    // The body is copied here into a buffer of its own and that buffer is transferred, so the
    // request loop receives it without a copy. Never the reply's own buffer: it may be one
    // that is served again (an asset) or a slice of Node's shared pool.
    const body = new Uint8Array(reply.body.byteLength);
    body.set(reply.body);
    const out: FromWorker = { type: "reply", id: message.id, reply: { ...reply, body } };
    port.postMessage(out, [body.buffer]);
  });
  post({ type: "ready" });
}

/**
 * On Linux a nice value belongs to a thread, and setpriority(PRIO_PROCESS, 0) sets the calling
 * thread's: a conversation lane then gives way to the request loop and the catalogue's lane
 * when the CPU is short, and costs nothing when it is not. Elsewhere the call would lower the
 * whole process, so it is not made.
 */
function lowerPriority(nice: number): void {
  if (nice === 0 || process.platform !== "linux") return;
  try {
    // Relative to the thread's own (inherited from the loop's), never above the loop's.
    setPriority(0, Math.min(19, getPriority(0) + nice));
  } catch {
    // Not permitted (a sandbox's seccomp, say): the lane runs at the board's priority, which
    // only loses the tie-break above; the thread isolation does not depend on it.
  }
}

run();
