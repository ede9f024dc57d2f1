// The messages between the board's request loop and its read workers (read-pool.ts and
// read-worker.ts): one union per direction, discriminated on `type`. Both ends are this
// package's own code in one process, so a guard checks shape rather than trusting a cast.
import type { PrefixCheck } from "../reader/change-time.ts";
import type { BoardSpec, SeatRegistration } from "../reader/sources.ts";
import type { BoardRequest } from "./routes.ts";
import type { StreamEnd } from "./stream-reply.ts";

/**
 * What a worker builds its reader from: plain data, because a Reader (closures, caches)
 * cannot cross a thread. The same specs the `conversation` command reads.
 */
export type ReaderSources = {
  specs: BoardSpec[];
  registrations: SeatRegistration[];
  prefixCheck?: PrefixCheck;
  cursorCap?: number;
  cursorTtlMs?: number;
  /** Full-text search (GET /api/search) in a lane of its own; its index in `cacheDir`. */
  search?: { cacheDir?: string };
  /**
   * The registry of running controllers (control/registry): when given, the catalogue marks
   * each row `live` by it, read at each request (`conversation serve`, issue 13).
   */
  liveRegistry?: string;
};

/** `workerData` of a read worker. */
export type WorkerSetup = {
  sources: ReaderSources;
  /** The `Host` values the board accepts, known once it listens. */
  hosts: string[];
  /** Added to the thread's nice value on Linux: conversation lanes yield the CPU. */
  nice: number;
  /** Where large bodies are written for the loop to send (body-slab.ts); absent on lane 0. */
  slab?: SlabMemory;
  /** Set on the search lane: it opens the search index and answers GET /api/search. */
  searches?: boolean;
};

/** A slab shared by one worker and the loop: its bytes, and one Int32 state per chunk. */
export type SlabMemory = { bytes: SharedArrayBuffer; states: SharedArrayBuffer };

/** Where in the slab a body was written: `count` chunks from `first`. */
export type SlabRange = { offset: number; length: number; first: number; count: number };

/**
 * A request; then, for a reply that came `streamed`, a `pull` for each chunk of its body (the
 * next is asked for once the last is written) or a `cancel` when its client has gone.
 */
export type ToWorker =
  | { type: "request"; id: number; request: BoardRequest }
  | { type: "pull"; id: number }
  | { type: "cancel"; id: number };

/** A Reply after the structured clone: the Buffer arrives as a plain Uint8Array. */
export type WireReply = { status: number; headers: Record<string, string>; body: Uint8Array };

/** `streamed`: the reply's body follows as one `chunk` per `pull`, then an `end`. */
export type FromWorker =
  | { type: "ready" }
  | { type: "reply"; id: number; reply: WireReply; slab?: SlabRange; streamed?: boolean }
  | { type: "chunk"; id: number; body: Uint8Array }
  | { type: "end"; id: number; end: StreamEnd }
  | { type: "log"; line: string };

export function isFromWorker(value: unknown): value is FromWorker {
  if (typeof value !== "object" || value === null || !("type" in value)) return false;
  switch (value.type) {
    case "ready":
      return true;
    case "log":
      return "line" in value && typeof value.line === "string";
    case "reply":
      return (
        "id" in value &&
        typeof value.id === "number" &&
        "reply" in value &&
        isWireReply(value.reply) &&
        (!("slab" in value) || value.slab === undefined || isSlabRange(value.slab)) &&
        (!("streamed" in value) ||
          value.streamed === undefined ||
          typeof value.streamed === "boolean")
      );
    case "chunk":
      return (
        "id" in value &&
        typeof value.id === "number" &&
        "body" in value &&
        value.body instanceof Uint8Array
      );
    case "end":
      return (
        "id" in value &&
        typeof value.id === "number" &&
        "end" in value &&
        (value.end === "complete" || value.end === "stopped")
      );
    default:
      return false;
  }
}

function isSlabRange(value: unknown): value is SlabRange {
  if (typeof value !== "object" || value === null) return false;
  const fields = ["offset", "length", "first", "count"] as const;
  return fields.every((f) => f in value && Number.isInteger((value as Record<string, unknown>)[f]));
}

function isWireReply(value: unknown): value is WireReply {
  if (typeof value !== "object" || value === null) return false;
  if (!("status" in value && "headers" in value && "body" in value)) return false;
  const { status, headers, body } = value;
  return (
    typeof status === "number" &&
    typeof headers === "object" &&
    headers !== null &&
    Object.values(headers).every((v) => typeof v === "string") &&
    body instanceof Uint8Array
  );
}

export function isToWorker(value: unknown): value is ToWorker {
  if (typeof value !== "object" || value === null) return false;
  if ("type" in value && (value.type === "pull" || value.type === "cancel")) {
    return "id" in value && typeof value.id === "number";
  }
  if (!("type" in value && value.type === "request" && "id" in value && "request" in value)) {
    return false;
  }
  const { id, request } = value;
  if (typeof id !== "number" || typeof request !== "object" || request === null) return false;
  return (
    "method" in request &&
    typeof request.method === "string" &&
    "target" in request &&
    typeof request.target === "string" &&
    (!("host" in request) || request.host === undefined || typeof request.host === "string") &&
    (!("ifNoneMatch" in request) ||
      request.ifNoneMatch === undefined ||
      typeof request.ifNoneMatch === "string")
  );
}
