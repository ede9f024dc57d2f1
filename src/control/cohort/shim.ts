// The shim: a cohort scope's first process and its anchor. It sits in `<scope>/supervisor`,
// outside `<scope>/engine`, ignores SIGTERM (only) so a stray TERM never drops the anchor, and
// answers ops on fd 3 (LF-JSON, framing.ts): hello, events, members, term, freeze, kill,
// release. Run as `node shim.ts --scope <dir>`. If its channel closes with no release (the
// controller died), it kills the engine cgroup, removes the scope and exits.
// This file also holds the wire (one union per direction, checked by hand) and `ShimClient`.

import { Socket } from "node:net";
import { dirname, join } from "node:path";
import type { Duplex } from "node:stream";
import { encodeLine, FramingError, LineSplitter } from "../engine/framing.ts";
import {
  cgroupOf,
  type EventsRead,
  type EventsWant,
  listMembers,
  type MembersRead,
  readEvents,
  removeTree,
  type WriteResult,
  waitForEvents,
  writeControl,
} from "./cgroup.ts";

export const SHIM_PROTOCOL_VERSION = 1;
/** A record on the channel is small; anything bigger is a broken peer. */
export const SHIM_MAX_RECORD_BYTES = 1024 * 1024;
/** The longest `events` wait the shim accepts. */
export const SHIM_MAX_WAIT_MS = 60_000;

export type ShimRequest =
  | { type: "hello"; id: number }
  | { type: "events"; id: number; until: EventsWant | null; timeoutMs: number }
  | { type: "members"; id: number }
  | { type: "term"; id: number }
  | { type: "freeze"; id: number; frozen: boolean }
  | { type: "kill"; id: number }
  | { type: "release"; id: number };

export type SignalResult =
  | { pid: number; delivery: "sent" }
  | { pid: number; delivery: "failed"; errno: string };

/** Every reply names the file it read or wrote, as the shim sees it. */
export type ShimMessage =
  | {
      type: "hello";
      id: number;
      version: number;
      pid: number;
      /** The shim's own cgroup as it read it (`0::` of /proc/self/cgroup); null if unreadable. */
      cgroup: string | null;
      engine: string;
    }
  | { type: "events"; id: number; source: string; events: EventsRead; met: boolean }
  | { type: "members"; id: number; source: string; members: MembersRead }
  | { type: "term"; id: number; source: string; members: MembersRead; signals: SignalResult[] }
  | { type: "written"; id: number; source: string; result: WriteResult }
  | { type: "released"; id: number }
  | { type: "error"; id: number | null; reason: string };

type Parsed<T> = { ok: true; value: T } | { ok: false; id: number | null; reason: string };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1;
const isPid = isId;
const isBool = (v: unknown): v is boolean => typeof v === "boolean";
const isString = (v: unknown): v is string => typeof v === "string";

/** Parses one decoded record from the launcher; never trusts its shape. */
export function parseShimRequest(v: unknown): Parsed<ShimRequest> {
  if (!isRecord(v)) return { ok: false, id: null, reason: "not an object" };
  const id = isId(v.id) ? v.id : null;
  const no = (reason: string): Parsed<ShimRequest> => ({ ok: false, id, reason });
  if (id === null) return no("id must be a positive integer");
  switch (v.type) {
    case "hello":
    case "members":
    case "term":
    case "kill":
    case "release":
      return { ok: true, value: { type: v.type, id } };
    case "freeze":
      if (!isBool(v.frozen)) return no("freeze needs frozen: boolean");
      return { ok: true, value: { type: "freeze", id, frozen: v.frozen } };
    case "events": {
      const t = v.timeoutMs;
      if (!Number.isSafeInteger(t) || (t as number) < 0 || (t as number) > SHIM_MAX_WAIT_MS) {
        return no(`events needs timeoutMs 0..${SHIM_MAX_WAIT_MS}`);
      }
      if (v.until === null)
        return { ok: true, value: { type: "events", id, until: null, timeoutMs: t as number } };
      if (!isRecord(v.until)) return no("events until must be an object or null");
      const until: EventsWant = {};
      for (const key of ["populated", "frozen"] as const) {
        const want = v.until[key];
        if (want === undefined) continue;
        if (!isBool(want)) return no(`events until.${key} must be boolean`);
        until[key] = want;
      }
      return { ok: true, value: { type: "events", id, until, timeoutMs: t as number } };
    }
    default:
      return no(`unknown type ${JSON.stringify(v.type)}`);
  }
}

function parseEventsRead(v: unknown): EventsRead | null {
  if (!isRecord(v)) return null;
  if (v.status === "observed" && isBool(v.populated) && isBool(v.frozen)) {
    return { status: "observed", populated: v.populated, frozen: v.frozen };
  }
  if (v.status === "absent" && isString(v.reason)) return { status: "absent", reason: v.reason };
  return null;
}

function parseMembersRead(v: unknown): MembersRead | null {
  if (!isRecord(v)) return null;
  if (v.status === "observed" && Array.isArray(v.pids) && v.pids.every(isPid)) {
    return { status: "observed", pids: [...v.pids] };
  }
  if (v.status === "absent" && isString(v.reason)) return { status: "absent", reason: v.reason };
  return null;
}

function parseWriteResult(v: unknown): WriteResult | null {
  if (!isRecord(v)) return null;
  if (v.status === "written") return { status: "written" };
  if (v.status === "failed" && isString(v.errno)) return { status: "failed", errno: v.errno };
  return null;
}

function parseSignals(v: unknown): SignalResult[] | null {
  if (!Array.isArray(v)) return null;
  const out: SignalResult[] = [];
  for (const s of v) {
    if (!isRecord(s) || !isPid(s.pid)) return null;
    if (s.delivery === "sent") out.push({ pid: s.pid, delivery: "sent" });
    else if (s.delivery === "failed" && isString(s.errno))
      out.push({ pid: s.pid, delivery: "failed", errno: s.errno });
    else return null;
  }
  return out;
}

/** Parses one decoded record from the shim. */
export function parseShimMessage(v: unknown): Parsed<ShimMessage> {
  if (!isRecord(v)) return { ok: false, id: null, reason: "not an object" };
  const id = isId(v.id) ? v.id : null;
  const no = (reason: string): Parsed<ShimMessage> => ({ ok: false, id, reason });
  if (v.type === "error") {
    if (!(v.id === null || isId(v.id)) || !isString(v.reason)) return no("bad error");
    return { ok: true, value: { type: "error", id, reason: v.reason } };
  }
  if (id === null) return no("id must be a positive integer");
  switch (v.type) {
    case "hello":
      if (!isId(v.version) || !isPid(v.pid) || !(v.cgroup === null || isString(v.cgroup)))
        return no("bad hello");
      if (!isString(v.engine)) return no("bad hello");
      return {
        ok: true,
        value: {
          type: "hello",
          id,
          version: v.version,
          pid: v.pid,
          cgroup: v.cgroup,
          engine: v.engine,
        },
      };
    case "events": {
      const events = parseEventsRead(v.events);
      if (!events || !isBool(v.met) || !isString(v.source)) return no("bad events");
      return { ok: true, value: { type: "events", id, source: v.source, events, met: v.met } };
    }
    case "members": {
      const members = parseMembersRead(v.members);
      if (!members || !isString(v.source)) return no("bad members");
      return { ok: true, value: { type: "members", id, source: v.source, members } };
    }
    case "term": {
      const members = parseMembersRead(v.members);
      const signals = parseSignals(v.signals);
      if (!members || !signals || !isString(v.source)) return no("bad term");
      return { ok: true, value: { type: "term", id, source: v.source, members, signals } };
    }
    case "written": {
      const result = parseWriteResult(v.result);
      if (!result || !isString(v.source)) return no("bad written");
      return { ok: true, value: { type: "written", id, source: v.source, result } };
    }
    case "released":
      return { ok: true, value: { type: "released", id } };
    default:
      return no(`unknown type ${JSON.stringify(v.type)}`);
  }
}

/** Signals each pid once; the caller froze the cgroup first, so the list can't go stale. */
export function signalEach(pids: readonly number[], signal: NodeJS.Signals): SignalResult[] {
  return pids.map((pid) => {
    try {
      process.kill(pid, signal);
      return { pid, delivery: "sent" };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (typeof code !== "string") throw e;
      return { pid, delivery: "failed", errno: code };
    }
  });
}

/** What each op does to `engine`; the shim and the launcher's direct fallback share it. */
export async function runOp(
  engine: string,
  req: Exclude<ShimRequest, { type: "hello" } | { type: "release" }>,
): Promise<ShimMessage> {
  const { id } = req;
  switch (req.type) {
    case "events": {
      const source = join(engine, "cgroup.events");
      const { events, met } =
        req.until === null
          ? { events: await readEvents(engine), met: true }
          : await waitForEvents(engine, req.until, req.timeoutMs);
      return { type: "events", id, source, events, met };
    }
    case "members":
      return {
        type: "members",
        id,
        source: join(engine, "cgroup.procs"),
        members: await listMembers(engine),
      };
    case "term": {
      const members = await listMembers(engine);
      const signals = members.status === "observed" ? signalEach(members.pids, "SIGTERM") : [];
      return { type: "term", id, source: join(engine, "cgroup.procs"), members, signals };
    }
    case "freeze":
      return {
        type: "written",
        id,
        source: join(engine, "cgroup.freeze"),
        result: await writeControl(engine, "cgroup.freeze", req.frozen ? "1" : "0"),
      };
    case "kill":
      return {
        type: "written",
        id,
        source: join(engine, "cgroup.kill"),
        result: await writeControl(engine, "cgroup.kill", "1"),
      };
    default: {
      const never: never = req;
      throw new Error(`unhandled op ${JSON.stringify(never)}`);
    }
  }
}

export type ShimReplyFor = {
  hello: Extract<ShimMessage, { type: "hello" }>;
  events: Extract<ShimMessage, { type: "events" }>;
  members: Extract<ShimMessage, { type: "members" }>;
  term: Extract<ShimMessage, { type: "term" }>;
  freeze: Extract<ShimMessage, { type: "written" }>;
  kill: Extract<ShimMessage, { type: "written" }>;
  release: Extract<ShimMessage, { type: "released" }>;
};

const REPLY_TYPE: { [K in ShimRequest["type"]]: ShimReplyFor[K]["type"] } = {
  hello: "hello",
  events: "events",
  members: "members",
  term: "term",
  freeze: "written",
  kill: "written",
  release: "released",
};

export type ShimErrorCode = "shim-gone" | "shim-timeout" | "shim-error";

export class ShimError extends Error {
  readonly code: ShimErrorCode;
  constructor(code: ShimErrorCode, message: string) {
    super(message);
    this.name = "ShimError";
    this.code = code;
  }
}

type Pending = {
  expect: ShimMessage["type"];
  resolve: (m: ShimMessage) => void;
  reject: (e: ShimError) => void;
  timer: NodeJS.Timeout;
};

type RequestBody<K extends ShimRequest["type"]> = Omit<Extract<ShimRequest, { type: K }>, "id">;

/**
 * The launcher's end of a shim channel. Every request resolves with its reply, or rejects on a
 * deadline, an `error` reply, or the channel closing. Records from the shim that don't parse
 * are kept in `issues` (and fail the request they name, if any).
 */
export class ShimClient {
  readonly issues: string[] = [];
  readonly #channel: Duplex;
  readonly #splitter = new LineSplitter({ maxRecordBytes: SHIM_MAX_RECORD_BYTES });
  readonly #pending = new Map<number, Pending>();
  readonly #closeFns = new Set<() => void>();
  #nextId = 1;
  #closed: string | null = null;

  constructor(channel: Duplex) {
    this.#channel = channel;
    channel.on("data", (chunk: Buffer) => this.#onData(chunk));
    channel.on("end", () => this.#close("the shim closed its channel"));
    channel.on("close", () => this.#close("the shim's channel closed"));
    channel.on("error", (e: Error) => this.#close(`channel error: ${e.message}`));
  }

  get closed(): boolean {
    return this.#closed !== null;
  }

  /** Calls `fn` once the channel closes (at once if it has). Returns the detach function. */
  onClose(fn: () => void): () => void {
    if (this.#closed !== null) {
      fn();
      return () => {};
    }
    this.#closeFns.add(fn);
    return () => this.#closeFns.delete(fn);
  }

  request<K extends ShimRequest["type"]>(
    body: RequestBody<K> & { type: K },
    timeoutMs: number,
  ): Promise<ShimReplyFor[K]> {
    if (this.#closed !== null) return Promise.reject(new ShimError("shim-gone", this.#closed));
    const id = this.#nextId++;
    const expect = REPLY_TYPE[body.type];
    return new Promise<ShimReplyFor[K]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new ShimError("shim-timeout", `no reply to ${body.type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, {
        expect,
        resolve: (m) => resolve(m as ShimReplyFor[K]),
        reject,
        timer,
      });
      this.#channel.write(encodeLine({ ...body, id }));
    });
  }

  /** Closes our end; pending requests reject. */
  close(): void {
    this.#close("closed by the launcher");
    this.#channel.destroy();
  }

  #onData(chunk: Buffer): void {
    let lines: string[];
    try {
      lines = this.#splitter.push(chunk);
    } catch (e) {
      if (!(e instanceof FramingError)) throw e;
      for (const line of e.lines) this.#onLine(line);
      this.issues.push(e.message);
      this.close();
      return;
    }
    for (const line of lines) this.#onLine(line);
  }

  #onLine(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      this.issues.push(`malformed line: ${(e as Error).message}`);
      return;
    }
    const parsed = parseShimMessage(value);
    if (!parsed.ok) {
      this.issues.push(`bad message: ${parsed.reason}`);
      if (parsed.id !== null) this.#settle(parsed.id, new ShimError("shim-error", parsed.reason));
      return;
    }
    const m = parsed.value;
    if (m.type === "error") {
      this.issues.push(`shim refused: ${m.reason}`);
      if (m.id !== null) this.#settle(m.id, new ShimError("shim-error", m.reason));
      return;
    }
    this.#settle(m.id, m);
  }

  #settle(id: number, outcome: ShimMessage | ShimError): void {
    const p = this.#pending.get(id);
    if (!p) {
      this.issues.push(`reply to unknown or expired request ${id}`);
      return;
    }
    this.#pending.delete(id);
    clearTimeout(p.timer);
    if (outcome instanceof ShimError) p.reject(outcome);
    else if (outcome.type !== p.expect)
      p.reject(new ShimError("shim-error", `expected ${p.expect}, got ${outcome.type}`));
    else p.resolve(outcome);
  }

  #close(why: string): void {
    if (this.#closed !== null) return;
    this.#closed = why;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(new ShimError("shim-gone", why));
    }
    this.#pending.clear();
    for (const fn of this.#closeFns) fn();
    this.#closeFns.clear();
  }
}

/** How long an orphaned shim waits for the killed engine cgroup to empty. */
const ORPHAN_KILL_WAIT_MS = 5000;

async function runShim(argv: readonly string[]): Promise<void> {
  const at = argv.indexOf("--scope");
  const scope = at === -1 ? undefined : argv[at + 1];
  if (scope === undefined || !scope.startsWith("/")) {
    process.stderr.write("usage: shim.ts --scope <absolute cgroup dir>\n");
    process.exit(64);
  }
  const engine = join(scope, "engine");
  // Ignore TERM: the anchor must outlive a stray signal. Anything else ends it as usual.
  process.on("SIGTERM", () => {});
  const joined = await writeControl(join(scope, "supervisor"), "cgroup.procs", String(process.pid));
  if (joined.status === "failed") {
    process.stderr.write(`shim: can't join ${scope}/supervisor: ${joined.errno}\n`);
    process.exit(70);
  }
  const channel = new Socket({ fd: 3, readable: true, writable: true });
  const splitter = new LineSplitter({ maxRecordBytes: SHIM_MAX_RECORD_BYTES });
  let released = false;
  const send = (m: ShimMessage) => channel.write(encodeLine(m));

  const handle = async (line: string): Promise<void> => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      send({ type: "error", id: null, reason: `malformed line: ${(e as Error).message}` });
      return;
    }
    const parsed = parseShimRequest(value);
    if (!parsed.ok) {
      send({ type: "error", id: parsed.id, reason: parsed.reason });
      return;
    }
    const req = parsed.value;
    if (req.type === "hello") {
      const cgroup = await cgroupOf("self");
      send({
        type: "hello",
        id: req.id,
        version: SHIM_PROTOCOL_VERSION,
        pid: process.pid,
        cgroup,
        engine,
      });
      return;
    }
    if (req.type === "release") {
      released = true;
      // The stop is proven (the engine cgroup is empty): leave the scope and remove it before
      // answering. Left to the launcher after this answer, a launcher killed in between left
      // the empty scope behind for good, since nothing removes the scope of a stop already
      // proven; the launcher's own removal then finds nothing left to do.
      await leaveAndRemove(scope);
      channel.end(encodeLine({ type: "released", id: req.id } satisfies ShimMessage), () =>
        process.exit(0),
      );
      return;
    }
    send(await runOp(engine, req));
  };

  channel.on("data", (chunk: Buffer) => {
    let lines: string[];
    try {
      lines = splitter.push(chunk);
    } catch (e) {
      if (!(e instanceof FramingError)) throw e;
      send({ type: "error", id: null, reason: e.message });
      channel.destroy();
      return;
    }
    for (const line of lines) void handle(line);
  });
  // EPIPE once the launcher is gone: the close handler below does what is left to do.
  channel.on("error", () => {});
  channel.on("close", () => {
    if (!released) void orphaned(scope, engine);
  });
}

// No controller is left to stop the engine or prove it: end the cohort, leave the scope (move
// to its parent, which holds the launcher's own processes already) and remove it.
async function orphaned(scope: string, engine: string): Promise<void> {
  await writeControl(engine, "cgroup.kill", "1");
  await waitForEvents(engine, { populated: false }, ORPHAN_KILL_WAIT_MS);
  process.exit((await leaveAndRemove(scope)) ? 0 : 75);
}

/**
 * Moves this process to the scope's parent (which holds the launcher's own processes already)
 * and removes the scope; whether all of it went (what stayed is said on stderr).
 */
async function leaveAndRemove(scope: string): Promise<boolean> {
  await writeControl(dirname(scope), "cgroup.procs", String(process.pid));
  const { failed } = await removeTree(scope);
  for (const f of failed) process.stderr.write(`shim: rmdir ${f.dir}: ${f.errno}\n`);
  return failed.length === 0;
}

if (import.meta.main) await runShim(process.argv.slice(2));
