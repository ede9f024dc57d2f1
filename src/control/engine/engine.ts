// The engine link: one engine process, its stdin/stdout as LF-framed JSON (framing.ts) and its
// stderr kept bounded. It owns request/response correlation and the ordered record stream; what
// a line means is its wire's (Pi's RPC by default, pi/rpc.ts; Claude Code's stream-json,
// claude-code/claude-wire.ts). Invariants: the engine's environment is exactly the caller's
// (nothing from process.env); every pending request resolves, times out, or rejects when the
// engine exits or its stdout closes.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { encodeLine, FramingError, LineSplitter } from "./framing.ts";
import {
  type Parsed,
  parseIncoming,
  type RpcCommand,
  type RpcEvent,
  type RpcResponse,
  type RpcUiResponse,
} from "./pi/rpc.ts";

/**
 * What the lines on an engine's stdin and stdout mean: how a request is written with the id the
 * link gives it, and what one parsed stdout value is. A response names the request it answers
 * by `id` (the link correlates); anything else the engine writes is an event, kept whole.
 */
export type Wire<E, C> = {
  request(command: C, id: string): object;
  incoming(
    value: unknown,
  ): Parsed<{ kind: "event"; event: E } | { kind: "response"; response: RpcResponse }>;
};

/** Pi's RPC mode (rpc-mode.js): a command is `{ ...command, id }`; a `response` names its id. */
export const PI_WIRE: Wire<RpcEvent, RpcCommand> = {
  request: (command, id) => ({ ...command, id }),
  incoming: (value) => parseIncoming(value),
};

/**
 * A link of any wire, for code that needs only the process: its pid, exit, signals and stderr
 * (launchers, stops). Its requests take nothing, so it can't be asked anything.
 */
// biome-ignore lint/suspicious/noExplicitAny: no events are read through this view; any E fits.
export type AnyEngineLink = EngineLink<any, never, never>;

export type EngineSpec = {
  command: string;
  args: readonly string[];
  /** The whole environment. Nothing is inherited or added. */
  env: Readonly<Record<string, string>>;
  cwd: string;
};

export type EngineLinkOptions<E = RpcEvent, C = RpcCommand> = {
  /** What the lines mean; default Pi's RPC (PI_WIRE). */
  wire?: Wire<E, C>;
  maxRecordBytes?: number;
  /** Stderr kept: the last this many bytes. Default 64 KiB. */
  stderrLimitBytes?: number;
  /** Used by `request` when the call gives none. Default 60 s. */
  defaultTimeoutMs?: number;
};

export type EngineExit = {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be spawned (ENOENT, EACCES, ...). */
  spawnError?: string;
};

export type StderrTail = { text: string; truncated: boolean; totalBytes: number };

/** Why a record on stdout was not a response to a pending request or an event. */
export type ProtocolIssue =
  | { reason: "malformed-line"; detail: string; line: string }
  | { reason: "response-without-id"; response: RpcResponse }
  | { reason: "late-response"; response: RpcResponse }
  | { reason: "unknown-response-id"; response: RpcResponse }
  | { reason: "record-too-large"; limit: number };

/** Every stdout record in arrival order; `seq` counts records from 1. */
export type LinkRecord<E = RpcEvent> =
  | { seq: number; kind: "event"; event: E }
  | { seq: number; kind: "response"; response: RpcResponse; matched: boolean }
  | { seq: number; kind: "protocol"; issue: ProtocolIssue };

/** A request that cannot complete because the engine exited, its stdout closed, or it broke. */
export class EngineExited extends Error {
  readonly code = "engine-exited";
  readonly exit: EngineExit | null;
  readonly stderr: StderrTail;

  constructor(message: string, exit: EngineExit | null, stderr: StderrTail) {
    const tail = stderr.text.trim();
    super(tail ? `${message}; stderr tail: ${tail.slice(-2000)}` : message);
    this.name = "EngineExited";
    this.exit = exit;
    this.stderr = stderr;
  }
}

export class EngineTimeout extends Error {
  readonly code = "engine-timeout";
  readonly command: string;
  readonly timeoutMs: number;

  constructor(command: string, id: string, timeoutMs: number) {
    super(`no response to ${command} (${id}) within ${timeoutMs} ms`);
    this.name = "EngineTimeout";
    this.command = command;
    this.timeoutMs = timeoutMs;
  }
}

type Pending = {
  command: string;
  resolve: (r: RpcResponse) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | null;
};

const STDERR_LIMIT = 64 * 1024;
// How long a stdout end waits for the exit status, and an exit for stdout's last bytes, before
// pending requests are settled without the other (a grandchild may hold stdout open).
const SETTLE_GRACE_MS = 500;
/** Output still arriving restarts the grace, up to this long after it began. */
const SETTLE_GRACE_MAX_MS = 5000;
const LATE_IDS_KEPT = 1000;

/**
 * One engine process. `start` spawns it with `detached: true`, so it leads its own process
 * group (pgid = pid): a signal for the controller's group (a terminal's ^C) does not reach it,
 * and `kill(sig, "group")` reaches the tools it spawned. stdin EOF still ends Pi (exit 0,
 * rpc-mode.js:641-644) if the controller dies, since the pipes close with it.
 */
export class EngineLink<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse> {
  readonly pid: number | undefined;
  /**
   * Resolves once the process has exited (or failed to spawn) and its stdout and stderr have
   * ended, or once nothing more has arrived for 500 ms after the exit (at most 5 s) when something
   * else still holds them. Never rejects.
   */
  readonly exited: Promise<EngineExit>;

  readonly #child: ChildProcessWithoutNullStreams;
  readonly #splitter: LineSplitter;
  readonly #defaultTimeoutMs: number;
  readonly #stderrLimit: number;
  readonly #pending = new Map<string, Pending>();
  readonly #lateIds = new Set<string>();
  readonly #recordFns = new Set<(r: LinkRecord<E>) => void>();
  readonly #wire: Wire<E, C>;
  readonly #stderrChunks: Buffer[] = [];
  #stderrHeld = 0;
  #stderrTotal = 0;
  #nextId = 1;
  #seq = 0;
  #exit: EngineExit | null = null;
  #stdoutEnded = false;
  #stderrEnded = false;
  #graceStartedAt = 0;
  #inputEnded = false;
  #broken: string | null = null;
  #settleTimer: NodeJS.Timeout | null = null;
  #resolveExited!: (e: EngineExit) => void;

  private constructor(spec: EngineSpec, options: EngineLinkOptions<E, C>) {
    // Pi's wire unless another is given: the type parameters then default to Pi's too.
    this.#wire = options.wire ?? (PI_WIRE as unknown as Wire<E, C>);
    this.#splitter = new LineSplitter(
      options.maxRecordBytes === undefined ? {} : { maxRecordBytes: options.maxRecordBytes },
    );
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
    this.#stderrLimit = options.stderrLimitBytes ?? STDERR_LIMIT;
    this.exited = new Promise((resolve) => {
      this.#resolveExited = resolve;
    });
    this.#child = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd,
      env: { ...spec.env },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    this.pid = this.#child.pid;
    this.#child.stdout.on("data", (chunk: Buffer) => this.#onStdout(chunk));
    this.#child.stdout.on("end", () => this.#onStdoutEnd());
    this.#child.stderr.on("data", (chunk: Buffer) => this.#onStderr(chunk));
    this.#child.stderr.on("end", () => {
      this.#stderrEnded = true;
      this.#maybeSettle();
    });
    // EPIPE after the engine died: the exit path settles everything, so nothing is lost here.
    this.#child.stdin.on("error", () => {});
    // After a successful spawn, 'error' only reports a failed kill(), which `kill` handles.
    this.#child.on("error", (err) => {
      if (this.pid === undefined)
        this.#onExit({ exitCode: null, signal: null, spawnError: err.message });
    });
    this.#child.on("exit", (exitCode, signal) => this.#onExit({ exitCode, signal }));
  }

  /** Spawns the engine. Spawn failures surface as an `exited` with `spawnError`. */
  static start<E = RpcEvent, C = RpcCommand, O extends object = RpcUiResponse>(
    spec: EngineSpec,
    options: EngineLinkOptions<E, C> = {},
  ): EngineLink<E, C, O> {
    return new EngineLink<E, C, O>(spec, options);
  }

  /** Subscribes to events, in stdout order. Returns the detach function. */
  onEvent(fn: (event: E) => void): () => void {
    return this.onRecord((r) => {
      if (r.kind === "event") fn(r.event);
    });
  }

  /** Subscribes to protocol issues (unparseable lines, responses nobody waits for). */
  onProtocol(fn: (issue: ProtocolIssue) => void): () => void {
    return this.onRecord((r) => {
      if (r.kind === "protocol") fn(r.issue);
    });
  }

  /**
   * Subscribes to every record in stdout order, responses included. A response record is
   * delivered before its request's promise settles, so a subscriber sees exactly where it fell
   * among the events.
   */
  onRecord(fn: (record: LinkRecord<E>) => void): () => void {
    this.#recordFns.add(fn);
    return () => this.#recordFns.delete(fn);
  }

  /**
   * Sends `cmd` with a fresh id (`req-<n>`) and resolves with its response, `success: false`
   * included. Rejects with `EngineTimeout` after `timeoutMs` (Infinity: never), and with
   * `EngineExited` when the engine exits, its stdout closes, or the link broke first.
   */
  request(cmd: C, options: { timeoutMs?: number } = {}): Promise<RpcResponse> {
    const id = `req-${this.#nextId++}`;
    const gone =
      this.#goneError() ??
      (this.#inputEnded
        ? new EngineExited("engine input already ended", null, this.stderr())
        : null);
    if (gone) return Promise.reject(gone);
    const timeoutMs = options.timeoutMs ?? this.#defaultTimeoutMs;
    return new Promise<RpcResponse>((resolve, reject) => {
      const command = commandName(cmd);
      const pending: Pending = { command, resolve, reject, timer: null };
      if (Number.isFinite(timeoutMs)) {
        pending.timer = setTimeout(() => {
          this.#pending.delete(id);
          this.#rememberLate(id);
          reject(new EngineTimeout(command, id, timeoutMs));
        }, timeoutMs);
      }
      this.#pending.set(id, pending);
      this.#child.stdin.write(encodeLine(this.#wire.request(cmd, id)));
    });
  }

  /**
   * Sends a record that has no response (Pi's `extension_ui_response`; Claude Code's user turn
   * or answer to its own request). False if it can't.
   */
  send(message: O): boolean {
    if (this.#goneError() || this.#inputEnded) return false;
    this.#child.stdin.write(encodeLine(message));
    return true;
  }

  /**
   * Readiness. Pi prints nothing until its first response (research §3.1), so this sends
   * `get_state` and resolves with its response; rejects past the deadline or on exit.
   */
  ready(options: { timeoutMs?: number } = {}): Promise<RpcResponse> {
    // Pi's readiness; only a link on Pi's wire has get_state.
    return this.request({ type: "get_state" } as C, { timeoutMs: options.timeoutMs ?? 15_000 });
  }

  /**
   * Stops the engine: stdin EOF (Pi exits 0 in about 20 ms, rpc-mode.js:641-644), then after
   * `eofGraceMs` SIGTERM to the process (Pi exits 143, rpc-mode.js:275-288), then after
   * `termGraceMs` SIGKILL to its whole process group. Resolves with the exit.
   */
  async close(options: { eofGraceMs?: number; termGraceMs?: number } = {}): Promise<EngineExit> {
    if (this.#exit) return this.exited;
    this.endInput();
    if (await this.#exitWithin(options.eofGraceMs ?? 3000)) return this.#exit!;
    this.kill("SIGTERM");
    if (await this.#exitWithin(options.termGraceMs ?? 3000)) return this.#exit!;
    this.kill("SIGKILL", "group");
    return this.exited;
  }

  /** Ends stdin without waiting: Pi's shutdown on EOF. Later requests reject at once. */
  endInput(): void {
    this.#inputEnded = true;
    this.#child.stdin.end();
  }

  /**
   * Signals the engine, or its process group. False if it is gone. Once the exit is known the
   * process target is refused (its pid may be reused); the group stays addressable while any
   * member, such as a tool Pi spawned, is alive.
   */
  kill(signal: NodeJS.Signals, target: "process" | "group" = "process"): boolean {
    if (this.pid === undefined) return false;
    if (target === "process" && this.#exit) return false;
    try {
      process.kill(target === "group" ? -this.pid : this.pid, signal);
      return true;
    } catch (e) {
      // ESRCH: it (or every member of its group) is already gone; that is what was asked.
      if ((e as NodeJS.ErrnoException).code === "ESRCH") return false;
      throw e;
    }
  }

  /** The exit once known. */
  get exit(): EngineExit | null {
    return this.#exit;
  }

  /** The last `stderrLimitBytes` of stderr; `truncated` when earlier bytes were dropped. */
  stderr(): StderrTail {
    const all = Buffer.concat(this.#stderrChunks);
    const kept = all.subarray(Math.max(0, all.length - this.#stderrLimit));
    return {
      text: kept.toString("utf8"),
      truncated: this.#stderrTotal > kept.length,
      totalBytes: this.#stderrTotal,
    };
  }

  #onStdout(chunk: Buffer): void {
    this.#extendGrace();
    if (this.#broken) return;
    let lines: readonly string[];
    try {
      lines = this.#splitter.push(chunk);
    } catch (e) {
      if (!(e instanceof FramingError)) throw e;
      for (const line of e.lines) this.#onLine(line);
      this.#break(e);
      return;
    }
    for (const line of lines) this.#onLine(line);
  }

  #onStdoutEnd(): void {
    if (!this.#broken) {
      try {
        const last = this.#splitter.end();
        if (last !== null) this.#onLine(last);
      } catch (e) {
        if (!(e instanceof FramingError)) throw e;
        this.#break(e);
      }
    }
    this.#stdoutEnded = true;
    this.#maybeSettle();
  }

  #onLine(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      this.#issue({ reason: "malformed-line", detail: (e as Error).message, line: clip(line) });
      return;
    }
    const parsed = this.#wire.incoming(value);
    if (!parsed.ok) {
      this.#issue({ reason: "malformed-line", detail: parsed.reason, line: clip(line) });
      return;
    }
    if (parsed.value.kind === "event") {
      this.#emit({ seq: ++this.#seq, kind: "event", event: parsed.value.event });
      return;
    }
    const response = parsed.value.response;
    const pending = response.id === undefined ? undefined : this.#pending.get(response.id);
    if (response.id === undefined || pending === undefined) {
      const reason =
        response.id === undefined
          ? "response-without-id"
          : this.#lateIds.has(response.id)
            ? "late-response"
            : "unknown-response-id";
      this.#emit({ seq: ++this.#seq, kind: "response", response, matched: false });
      this.#issue({ reason, response });
      return;
    }
    this.#pending.delete(response.id);
    if (pending.timer) clearTimeout(pending.timer);
    this.#emit({ seq: ++this.#seq, kind: "response", response, matched: true });
    pending.resolve(response);
  }

  #issue(issue: ProtocolIssue): void {
    this.#emit({ seq: ++this.#seq, kind: "protocol", issue });
  }

  // A throwing subscriber is a bug; it is rethrown outside the read loop so the other
  // subscribers, and the request the record answers, still see it.
  #emit(record: LinkRecord<E>): void {
    for (const fn of [...this.#recordFns]) {
      try {
        fn(record);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  // An oversize record leaves the stream's position unknown: stop reading and fail every
  // pending request. The engine keeps running until the owner closes it.
  #break(e: FramingError): void {
    this.#broken = `stdout framing failed: ${e.message}`;
    this.#issue({ reason: "record-too-large", limit: e.limit });
    this.#child.stdout.removeAllListeners("data");
    this.#child.stdout.resume();
    this.#rejectAll();
  }

  #onStderr(chunk: Buffer): void {
    this.#extendGrace();
    this.#stderrTotal += chunk.length;
    this.#stderrChunks.push(chunk);
    this.#stderrHeld += chunk.length;
    while (
      this.#stderrChunks.length > 1 &&
      this.#stderrHeld - this.#stderrChunks[0]!.length >= this.#stderrLimit
    ) {
      this.#stderrHeld -= this.#stderrChunks.shift()!.length;
    }
  }

  #onExit(exit: EngineExit): void {
    if (this.#exit) return;
    this.#exit = exit;
    this.#maybeSettle();
  }

  // Settles once the exit is known and stdout and stderr have ended, so the stderr tail and the
  // last responses are complete; or, when only some of those happened, after a grace.
  #maybeSettle(): void {
    if (this.#exit && this.#stdoutEnded && this.#stderrEnded) {
      this.#settle();
      return;
    }
    if ((this.#exit || this.#stdoutEnded) && !this.#settleTimer) {
      this.#settleTimer = setTimeout(() => this.#settle(), SETTLE_GRACE_MS);
      this.#graceStartedAt = Date.now();
    }
  }

  // The grace is for pipes something else still holds, not for output still draining: on a
  // loaded machine a large stderr can take longer than the grace to read after the exit, and
  // settling then would cut the tail short. Bounded, so a chatty holder cannot delay it long.
  #extendGrace(): void {
    if (this.#settleTimer && Date.now() - this.#graceStartedAt < SETTLE_GRACE_MAX_MS) {
      this.#settleTimer.refresh();
    }
  }

  #settle(): void {
    if (this.#settleTimer) clearTimeout(this.#settleTimer);
    this.#settleTimer = null;
    this.#rejectAll();
    if (this.#exit) this.#resolveExited(this.#exit);
  }

  #rejectAll(): void {
    const error = this.#goneError();
    if (!error) return;
    for (const [id, p] of this.#pending) {
      if (p.timer) clearTimeout(p.timer);
      this.#pending.delete(id);
      p.reject(error);
    }
  }

  #goneError(): EngineExited | null {
    const exit = this.#exit;
    if (this.#broken) return new EngineExited(this.#broken, exit, this.stderr());
    if (exit?.spawnError)
      return new EngineExited(`engine failed to spawn: ${exit.spawnError}`, exit, this.stderr());
    if (exit) return new EngineExited(`engine exited (${describeExit(exit)})`, exit, this.stderr());
    if (this.#stdoutEnded) return new EngineExited("engine closed its stdout", null, this.stderr());
    return null;
  }

  #rememberLate(id: string): void {
    this.#lateIds.add(id);
    if (this.#lateIds.size > LATE_IDS_KEPT) {
      const oldest = this.#lateIds.values().next().value;
      if (oldest !== undefined) this.#lateIds.delete(oldest);
    }
  }

  #exitWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      void this.exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

/** A command's name for timeouts and the pending map: its `type` or `subtype`, else "request". */
function commandName(cmd: unknown): string {
  if (typeof cmd !== "object" || cmd === null) return "request";
  const o = cmd as { type?: unknown; subtype?: unknown };
  if (typeof o.type === "string") return o.type;
  return typeof o.subtype === "string" ? o.subtype : "request";
}

function describeExit(exit: EngineExit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.exitCode}`;
}

function clip(line: string): string {
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
