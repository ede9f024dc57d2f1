// The board's read workers: requests that reach the reader are handled off the request loop,
// in worker threads that each run their own reader and the board's handler (read-worker.ts),
// so one page that costs seconds never holds the catalogue or any other answer.
//
// Lanes: lane 0 takes everything that names no conversation (the catalogue, the Console's
// files, unknown routes); lanes 1..n take the routes under /api/conversations/<id>/, chosen by
// a hash of the decoded id. One conversation always lands on the same lane, so the cursor a
// page hands out is held by the reader that `next` asks, and its parse is cached once, not
// once per worker. A heavy conversation can delay another that hashes to its lane; it never
// delays the catalogue. Workers are started lazily again after a crash; close() stops them.
// A conversation lane's large bodies come back through memory shared with it (body-slab.ts).
import { extname } from "node:path";
import { Worker } from "node:worker_threads";
import { createSlab, SlabReader } from "./body-slab.ts";
import {
  isFromWorker,
  type ReaderSources,
  type SlabRange,
  type ToWorker,
  type WireReply,
  type WorkerSetup,
} from "./read-messages.ts";
import { boardRefusal, type Reply } from "./reply.ts";
import type { BoardRequest } from "./routes.ts";
import type { Pulled, ReplyStream } from "./stream-reply.ts";

export type ReadPoolOptions = {
  sources: ReaderSources;
  hosts: readonly string[];
  /** Conversation lanes beside the catalogue's; at least 1. */
  lanes: number;
  log: (line: string) => void;
  /** How long the first start of a worker may take before startReadPool rejects. */
  startDeadlineMs?: number;
  /** The worker's module: read-worker beside this file unless a test brings its own. */
  workerUrl?: URL;
};

export type ReadPool = {
  /** Resolves with the worker's reply, or a 500 refusal if the worker dies first; never rejects. */
  handle(request: BoardRequest): Promise<Reply>;
  /** How many worker threads are running now. */
  readonly running: number;
  /** Slab chunks held by responses not yet sent, over every lane (0 when all are done). */
  readonly slabInUse: number;
  /** Stops every worker; pending requests resolve as 500 (their sockets are gone by then). */
  close(): Promise<void>;
};

/**
 * Requests one lane holds (being read or waiting) before it answers `board-busy` 503 at once:
 * a flood of slow reads would otherwise queue without end, holding memory and making every
 * later request wait behind it. A Console asks a lane a few things at a time; the board bench
 * (50 clients paging one conversation, so one lane) stays well under this.
 */
export const LANE_QUEUE_MAX = 256;

/** Most conversation lanes a board takes: each is a thread with its own V8 heap and reader. */
export const MAX_LANES = 8;

// The worker runs as the same kind of file as this one: .ts in the repository, .js in dist.
const WORKER_URL = new URL(`./read-worker${extname(import.meta.url)}`, import.meta.url);

const DEFAULT_START_DEADLINE_MS = 60_000;

/** Added to the conversation lanes' nice value (read-worker.ts); lane 0 keeps the loop's. */
export const CONVERSATION_LANE_NICE = 10;

/** Starts 1 + `lanes` workers and waits until each has built its reader. */
export async function startReadPool(options: ReadPoolOptions): Promise<ReadPool> {
  if (!Number.isInteger(options.lanes) || options.lanes < 1 || options.lanes > MAX_LANES) {
    throw new Error(`The board's read lanes must be an integer from 1 to ${MAX_LANES}.`);
  }
  const hosts = [...options.hosts];
  const lanes = Array.from({ length: options.lanes + 1 }, (_, i) => {
    const nice = i === 0 ? 0 : CONVERSATION_LANE_NICE;
    // Lane 0's answers (the catalogue, the Console's files) are small: no slab.
    const slab = i === 0 ? undefined : createSlab();
    const setup: WorkerSetup = { sources: options.sources, hosts, nice, ...(slab && { slab }) };
    return new Lane(i, setup, options);
  });
  // Search gets a lane of its own (after the others), so catching up its index never holds
  // the catalogue or a conversation; it yields the CPU like a conversation lane.
  const searchLane = options.sources.search
    ? new Lane(
        lanes.length,
        { sources: options.sources, hosts, nice: CONVERSATION_LANE_NICE, searches: true },
        options,
      )
    : null;
  if (searchLane) lanes.push(searchLane);
  const deadline = options.startDeadlineMs ?? DEFAULT_START_DEADLINE_MS;
  try {
    await Promise.all(lanes.map((lane) => lane.started(deadline)));
  } catch (e) {
    await Promise.all(lanes.map((lane) => lane.stop()));
    throw e;
  }
  return {
    handle: (request) =>
      searchLane && isSearchTarget(request.target)
        ? searchLane.send(request)
        : lanes[laneOf(request.target, options.lanes)]!.send(request),
    get running() {
      return lanes.filter((lane) => lane.isRunning).length;
    },
    get slabInUse() {
      return lanes.reduce((n, lane) => n + lane.slabInUse, 0);
    },
    close: async () => {
      await Promise.all(lanes.map((lane) => lane.stop()));
    },
  };
}

const CONVERSATION_TARGET = /^\/api\/conversations\/([^/?]+)\//;

/** Search and usage: the routes that read through an index in the cache (the search lane's). */
function isSearchTarget(target: string): boolean {
  return ["/api/search", "/api/usage"].some((p) => target === p || target.startsWith(`${p}?`));
}

/** 0 for a target that names no conversation; else 1..lanes from the decoded id. */
export function laneOf(target: string, lanes: number): number {
  const raw = CONVERSATION_TARGET.exec(target)?.[1];
  if (raw === undefined) return 0;
  let id = raw;
  try {
    id = decodeURIComponent(raw);
  } catch {
    // A bad escape is refused 400 by the handler; any lane can say so.
  }
  // FNV-1a, stable across runs, then a murmur3 finish: FNV's low bits alone are the parity
  // of the characters', which would send most ids of one shape to one lane.
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return 1 + ((hash >>> 0) % lanes);
}

type Pending = (reply: Reply) => void;

/** A streamed reply's body, read from its worker: the pull waiting for its chunk or end. */
type Streaming = { waiting: ((next: Pulled) => void) | null };

/** One worker thread and the requests it owes an answer. */
class Lane {
  #worker: Worker | null = null;
  #ready: Promise<void> | null = null;
  #pending = new Map<number, Pending>();
  #streams = new Map<number, Streaming>();
  #nextId = 1;
  #stopping = false;
  readonly #index: number;
  #setup: WorkerSetup;
  readonly #log: (line: string) => void;
  readonly #url: URL;
  #slab: SlabReader | null;

  constructor(index: number, setup: WorkerSetup, options: ReadPoolOptions) {
    this.#index = index;
    this.#setup = setup;
    this.#log = options.log;
    this.#url = options.workerUrl ?? WORKER_URL;
    this.#slab = setup.slab === undefined ? null : new SlabReader(setup.slab);
  }

  /** Chunks of this lane's slab still held by responses being sent. */
  get slabInUse(): number {
    return this.#slab?.used ?? 0;
  }

  get isRunning(): boolean {
    return this.#worker !== null;
  }

  /** Starts the worker and resolves once its reader is built; rejects past the deadline. */
  started(deadlineMs: number): Promise<void> {
    this.#spawn();
    const ready = this.#ready ?? Promise.reject(new Error("read worker did not start"));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`The board's read worker ${this.#index} did not start in time.`)),
        deadlineMs,
      );
    });
    return Promise.race([ready, late]).finally(() => clearTimeout(timer));
  }

  send(request: BoardRequest): Promise<Reply> {
    if (this.#stopping) return Promise.resolve(stoppedReply());
    // A streamed body still being sent counts: each holds a cursor and a client.
    if (this.#pending.size + this.#streams.size >= LANE_QUEUE_MAX) {
      return Promise.resolve(
        boardRefusal(
          "board-busy",
          "The board is busy reading; try again in a moment (it answers at most 256 requests per conversation at a time).",
        ),
      );
    }
    const worker = this.#worker ?? this.#spawn();
    const id = this.#nextId++;
    return new Promise<Reply>((resolve) => {
      this.#pending.set(id, resolve);
      const message: ToWorker = { type: "request", id, request };
      worker.postMessage(message);
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const worker = this.#worker;
    this.#worker = null;
    this.#failPending(stoppedReply());
    if (worker) await worker.terminate();
  }

  #spawn(): Worker {
    const worker = new Worker(this.#url, {
      workerData: this.#setup,
      name: `board-read-${this.#index}`,
      // The parent's flags (the test runner's among them) are not all valid in a worker.
      execArgv: [],
    });
    this.#worker = worker;
    this.#ready = new Promise<void>((resolve, reject) => {
      worker.on("message", (message: unknown) => {
        if (!isFromWorker(message)) {
          this.#log(`board: read worker ${this.#index} sent a malformed message`);
          return;
        }
        switch (message.type) {
          case "ready":
            resolve();
            return;
          case "log":
            this.#log(message.line);
            return;
          case "reply":
            if (message.streamed === true) {
              this.#settle(message.id, this.#streamed(worker, message.id, message.reply));
              return;
            }
            this.#settle(message.id, this.#fromWire(message.reply, message.slab));
            return;
          case "chunk":
            this.#pulled(message.id, { chunk: toBuffer(message.body) });
            return;
          case "end":
            this.#pulled(message.id, { end: message.end });
            this.#streams.delete(message.id);
            return;
          default:
            return unreachable(message);
        }
      });
      worker.on("error", (e) => {
        this.#log(`board: read worker ${this.#index} failed: ${e.stack ?? e}`);
        reject(e);
      });
      worker.on("exit", (code) => {
        reject(new Error(`The board's read worker ${this.#index} exited (${code}).`));
        if (this.#worker !== worker) return;
        // A crash: what it owed is answered 500 and the next request starts a new worker, with
        // a new slab: chunks the dead worker had claimed would never be released. Responses
        // still sending from the old slab keep it alive until they end.
        this.#worker = null;
        if (this.#setup.slab !== undefined && !this.#stopping) {
          const slab = createSlab();
          this.#setup = { ...this.#setup, slab };
          this.#slab = new SlabReader(slab);
        }
        if (!this.#stopping) this.#log(`board: read worker ${this.#index} exited (${code})`);
        this.#failPending(
          boardRefusal("internal-error", "The board failed on this request; see its log."),
        );
      });
    });
    // A rejection nobody awaits (a crash after the start) is reported through the log above.
    this.#ready.catch(() => {});
    return worker;
  }

  /** A reply whose body the worker sends a chunk per pull (an export). */
  #streamed(worker: Worker, id: number, wire: WireReply): Reply {
    const streaming: Streaming = { waiting: null };
    this.#streams.set(id, streaming);
    const stream: ReplyStream = {
      pull: () => {
        if (!this.#streams.has(id) || this.#worker !== worker) {
          return Promise.resolve({ end: "stopped" });
        }
        return new Promise<Pulled>((resolve) => {
          streaming.waiting = resolve;
          worker.postMessage({ type: "pull", id } satisfies ToWorker);
        });
      },
      cancel: () => {
        if (!this.#streams.delete(id)) return;
        streaming.waiting?.({ end: "stopped" });
        streaming.waiting = null;
        if (this.#worker === worker) worker.postMessage({ type: "cancel", id } satisfies ToWorker);
      },
    };
    return { status: wire.status, headers: wire.headers, body: Buffer.alloc(0), stream };
  }

  #pulled(id: number, next: Pulled): void {
    const streaming = this.#streams.get(id);
    const resolve = streaming?.waiting;
    if (streaming === undefined || resolve == null) return;
    streaming.waiting = null;
    resolve(next);
  }

  #fromWire(wire: WireReply, range: SlabRange | undefined): Reply {
    if (range === undefined) return fromWire(wire);
    const opened = this.#slab?.open(range) ?? null;
    if (opened === null) {
      this.#log(`board: read worker ${this.#index} named a slab range it cannot have written`);
      return boardRefusal("internal-error", "The board failed on this request; see its log.");
    }
    return { status: wire.status, headers: wire.headers, ...opened };
  }

  #settle(id: number, reply: Reply): void {
    const resolve = this.#pending.get(id);
    if (!resolve) {
      reply.release?.();
      reply.stream?.cancel();
      return;
    }
    this.#pending.delete(id);
    resolve(reply);
  }

  #failPending(reply: Reply): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const resolve of pending) resolve(reply);
    // A body cut off by the worker's end: its response is cut too (stream-reply.ts).
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const s of streams) s.waiting?.({ end: "stopped" });
  }
}

function fromWire(wire: WireReply): Reply {
  return { status: wire.status, headers: wire.headers, body: toBuffer(wire.body) };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function stoppedReply(): Reply {
  return boardRefusal("internal-error", "The board is stopping.");
}

function unreachable(value: never): never {
  throw new Error(`Unhandled worker message ${JSON.stringify(value)}`);
}
