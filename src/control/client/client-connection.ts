// The connection a ConversationClient stands on: one Unix socket, LF-framed JSON lines
// (framing.ts), the hello and its welcome, the stream's position, the pending requests and the
// automatic reconnect. Invariants: every controller line passes parseControllerMessage before
// use; a request is written at most once and never resent; every pending request settles (its
// reply, or `unknown` on a timeout or when the socket closes); a request made while not
// connected refuses `channel`. The typed requests are client.ts's.
import { createConnection, type Socket } from "node:net";
import { encodeLine, FramingError, LineSplitter } from "../engine/framing.ts";
import {
  type ControllerMessage,
  type ControllerState,
  type Dialog,
  type Hello,
  PROTOCOL_VERSION,
  type Reply,
  type Request,
  type ResumePoint,
  type Role,
  type StreamEvent,
  type Welcome,
} from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";
import { checkSocketPath } from "../registry/peer.ts";
import {
  type ClientIssue,
  ConnectError,
  type ConnectErrorCode,
  unmatched,
} from "./client-issues.ts";
import type { ConversationClientOptions } from "./client-options.ts";
import { type Obj, parseControllerMessage } from "./controller-message.ts";
import { emit, subscribe } from "./listeners.ts";
import type { Settled } from "./outcomes.ts";

type Body<R> = R extends unknown
  ? Omit<R, "type" | "id" | "target" | "generation" | "incarnation">
  : never;
export type RequestBody = Body<Request>;

type Pending = { resolve: (s: Settled) => void; timer: NodeJS.Timeout };

type Conn = {
  socket: Socket;
  splitter: LineSplitter;
  welcome: Welcome | null;
  hello: {
    resolve: (w: Welcome) => void;
    reject: (e: Error) => void;
    timer: NodeJS.Timeout;
  } | null;
  pending: Map<string, Pending>;
  /** Ids that timed out, so a late reply is named as such; the oldest are forgotten. */
  late: Set<string>;
  error: Error | null;
  closed: Promise<void>;
};

const LATE_IDS_KEPT = 1000;

/** The socket and what stands on it; ConversationClient adds the typed requests. */
export class ClientConnection {
  readonly #socketPath: string;
  readonly #grant: string;
  readonly #clientName: string | undefined;
  /** The hello's actor and narrowing, sent as given (docs/remote.md). */
  readonly #acting: Pick<Hello, "actor" | "capabilities">;
  readonly #timeoutMs: number;
  readonly #maxLineBytes: number | undefined;
  readonly #eventFns = new Set<(e: StreamEvent) => void>();
  readonly #dialogFns = new Set<(d: Dialog) => void>();
  readonly #stateFns = new Set<(s: ControllerState) => void>();
  readonly #issueFns = new Set<(i: ClientIssue) => void>();
  readonly #closeFns = new Set<() => void>();
  readonly #reconnectDelays: readonly number[] | null;
  #conn: Conn | null = null;
  #welcome: Welcome | null = null;
  #state: ControllerState | null = null;
  #nextId = 1;
  /** The last event received (or the resume option until one is): where a connect resumes. */
  #position: ResumePoint | null;
  /** Set by close(): no automatic reconnect after it. */
  #closedByUser = false;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #reconnecting = false;

  constructor(options: ConversationClientOptions) {
    this.#socketPath = options.socketPath;
    this.#grant = options.grant;
    this.#clientName = options.clientName;
    this.#acting = {
      ...(options.actor === undefined ? {} : { actor: options.actor }),
      ...(options.capabilities === undefined ? {} : { capabilities: [...options.capabilities] }),
    };
    this.#timeoutMs = options.requestTimeoutMs ?? 60_000;
    this.#maxLineBytes = options.maxLineBytes;
    this.#position = options.resume ? { ...options.resume } : null;
    this.#reconnectDelays = options.reconnect ? [...options.reconnect.delaysMs] : null;
  }

  /**
   * Where the next connect resumes: the last event received, or where the last welcome joined
   * the stream; null before any welcome (unless the `resume` option set it).
   */
  get position(): ResumePoint | null {
    return this.#position === null ? null : { ...this.#position };
  }

  /** The id of the last event received (an SSE `id:`), or null. */
  get lastEventId(): string | null {
    const p = this.#position;
    return p === null ? null : `${p.streamEpoch}.${p.afterSequence}`;
  }

  /** True while an automatic reconnect is waiting or trying. */
  get reconnecting(): boolean {
    return this.#reconnecting;
  }

  /** True between a welcome and the socket closing. */
  get connected(): boolean {
    return this.#conn?.welcome != null;
  }

  /** The last welcome, kept after the socket closes. */
  get welcome(): Welcome | null {
    return this.#welcome;
  }

  /** The controller state from the last welcome or `state` message. */
  get state(): ControllerState | null {
    return this.#state;
  }

  /** `controller` while the state names this connection as the controller; null unconnected. */
  get role(): Role | null {
    const welcome = this.#conn?.welcome;
    if (!welcome || !this.#state) return null;
    return this.#state.controllerConnection === welcome.connection ? "controller" : "observer";
  }

  /**
   * Opens the socket, sends the hello and resolves with the welcome (the client starts as an
   * observer). Rejects with ConnectError: `untrusted-socket` (checked before anything is sent:
   * registry/peer.ts), `refused` (the hello's reply, e.g. `grant`), `invalid` (a line that is
   * not a welcome), `protocol` (another version), `timeout`, `channel` (the socket failed or
   * closed first), `already-connected`. Callable again after a close.
   */
  connect(): Promise<Welcome> {
    if (this.#conn !== null) {
      return Promise.reject(new ConnectError("already-connected", "the client is connected"));
    }
    const peer = checkSocketPath(this.#socketPath);
    if (!peer.ok) {
      const code = peer.absent ? "channel" : "untrusted-socket";
      return Promise.reject(new ConnectError(code, peer.message));
    }
    this.#closedByUser = false;
    this.#cancelReconnect();
    return new Promise((resolve, reject) => {
      const socket = createConnection(this.#socketPath);
      let markClosed!: () => void;
      const conn: Conn = {
        socket,
        splitter: new LineSplitter(
          this.#maxLineBytes === undefined ? {} : { maxRecordBytes: this.#maxLineBytes },
        ),
        welcome: null,
        hello: {
          resolve,
          reject,
          timer: setTimeout(() => {
            this.#failHello(conn, "timeout", `no welcome within ${this.#timeoutMs} ms`);
          }, this.#timeoutMs),
        },
        pending: new Map(),
        late: new Set(),
        error: null,
        closed: new Promise((r) => {
          markClosed = r;
        }),
      };
      this.#conn = conn;
      socket.on("connect", () => {
        const hello: Hello = { type: "hello", protocol: PROTOCOL_VERSION, grant: this.#grant };
        if (this.#clientName !== undefined) hello.client = this.#clientName;
        Object.assign(hello, this.#acting);
        if (this.#position !== null) hello.resume = { ...this.#position };
        socket.write(encodeLine(hello));
      });
      socket.on("data", (chunk: Buffer) => this.#feed(conn, () => conn.splitter.push(chunk)));
      // A last line without LF still counts (framing.ts); a truncated one fails its parse.
      socket.on("end", () =>
        this.#feed(conn, () => {
          const last = conn.splitter.end();
          return last === null ? [] : [last];
        }),
      );
      // 'close' follows every 'error'; it settles everything, so the error is only reported.
      socket.on("error", (e) => {
        conn.error = e;
        if (conn.welcome) this.issue({ code: "socket-error", message: e.message });
      });
      socket.on("close", () => {
        this.#onClose(conn);
        markClosed();
      });
    });
  }

  /**
   * Closes the socket. Requests in flight settle `unknown`; later requests refuse `channel`.
   * Resolves once the socket has closed.
   */
  async close(): Promise<void> {
    this.#closedByUser = true;
    this.#cancelReconnect();
    this.#reconnecting = false;
    const conn = this.#conn;
    if (conn === null) return;
    conn.socket.destroy();
    await conn.closed;
  }

  /** Stream events in arrival order. Returns the detach function. */
  onEvent(fn: (event: StreamEvent) => void): () => void {
    return subscribe(this.#eventFns, fn);
  }

  /** Pi dialogs, pushed disabled; the controller never answers them. */
  onDialog(fn: (dialog: Dialog) => void): () => void {
    return subscribe(this.#dialogFns, fn);
  }

  /** The controller state, from each welcome and each `state` message. */
  onState(fn: (state: ControllerState) => void): () => void {
    return subscribe(this.#stateFns, fn);
  }

  /** Lines and replies from the controller that answer nothing (see ClientIssue). */
  onError(fn: (issue: ClientIssue) => void): () => void {
    return subscribe(this.#issueFns, fn);
  }

  /** The socket closed, after its pending requests settled. */
  onClose(fn: () => void): () => void {
    return subscribe(this.#closeFns, fn);
  }

  // Writes one request once. Control requests carry the generation and incarnation believed now.
  protected request(body: RequestBody, control: boolean): Promise<Settled> {
    const conn = this.#conn;
    if (!conn?.welcome || !conn.socket.writable || !this.#state) {
      return Promise.resolve({ kind: "local", refusal: "channel", message: "not connected" });
    }
    const id = `q-${this.#nextId++}`;
    const wire: Obj = { type: "request", id, ...body };
    if (control) {
      wire.generation = this.#state.generation;
      wire.incarnation = this.#state.incarnation;
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        conn.pending.delete(id);
        conn.late.add(id);
        if (conn.late.size > LATE_IDS_KEPT) conn.late.delete(conn.late.values().next().value!);
        resolve({ kind: "lost", id, message: `no reply within ${this.#timeoutMs} ms; not resent` });
      }, this.#timeoutMs);
      conn.pending.set(id, { resolve, timer });
      conn.socket.write(encodeLine(wire));
    });
  }

  #feed(conn: Conn, split: () => string[]): void {
    if (conn.socket.destroyed) return;
    let lines: string[];
    try {
      lines = split();
    } catch (e) {
      if (!(e instanceof FramingError)) throw e;
      for (const line of e.lines) this.#onLine(conn, line);
      // The stream's position is lost: nothing after this can be trusted, so close.
      if (conn.hello) this.#failHello(conn, "invalid", e.message);
      else this.issue({ code: "record-too-large", message: e.message });
      conn.socket.destroy();
      return;
    }
    for (const line of lines) this.#onLine(conn, line);
  }

  #onLine(conn: Conn, line: string): void {
    if (conn.socket.destroyed) return;
    const parsed = parseControllerMessage(line);
    if (!parsed.ok) {
      if (conn.hello) this.#failHello(conn, "invalid", `before the welcome: ${parsed.reason}`);
      else this.issue({ code: "invalid-line", message: parsed.reason, line: line.slice(0, 200) });
      return;
    }
    const m = parsed.message;
    if (conn.hello) {
      this.#onHelloAnswer(conn, conn.hello, m);
      return;
    }
    switch (m.type) {
      case "welcome":
        this.issue({ code: "unexpected-message", message: "a second welcome" });
        break;
      case "reply":
        this.#onReply(conn, m);
        break;
      case "event":
        // Replayed events come first and in order, so the last one received is always where
        // this client's view of the stream stops.
        this.#position = { streamEpoch: m.streamEpoch, afterSequence: m.sequence };
        emit(this.#eventFns, m);
        break;
      case "dialog":
        emit(this.#dialogFns, m);
        break;
      case "state":
        this.#state = m.state;
        emit(this.#stateFns, m.state);
        break;
      default: {
        const never: never = m;
        this.issue({ code: "unexpected-message", message: String(never) });
      }
    }
  }

  #onHelloAnswer(conn: Conn, hello: NonNullable<Conn["hello"]>, m: ControllerMessage): void {
    if (m.type === "reply" && m.id === null && m.refusal !== undefined) {
      const why = `hello refused (${m.refusal}): ${m.message ?? m.refusal}`;
      this.#failHello(conn, "refused", why, m.refusal);
    } else if (m.type !== "welcome") {
      this.#failHello(conn, "invalid", `expected a welcome, got a ${m.type}`);
    } else if (m.protocol !== PROTOCOL_VERSION) {
      const why = `welcome names protocol ${m.protocol}; this client speaks ${PROTOCOL_VERSION}`;
      this.#failHello(conn, "protocol", why);
    } else {
      clearTimeout(hello.timer);
      conn.hello = null;
      conn.welcome = m;
      this.#welcome = m;
      // Where this connection joins the stream: after the replayed range, or (no resume, or
      // one that could not be replayed) wherever the stream is now; the events in between
      // are gone for this client, and its view must be re-read (Transcript does).
      if (m.replay === undefined || m.replay === "unavailable") {
        this.#position = m.stream
          ? { streamEpoch: m.stream.streamEpoch, afterSequence: m.stream.nextSequence - 1 }
          : null;
      }
      this.#state = m.state;
      hello.resolve(m);
      emit(this.#stateFns, m.state);
    }
  }

  #failHello(
    conn: Conn,
    code: ConnectErrorCode,
    message: string,
    refusal?: ControlRefusalCode,
  ): void {
    const hello = conn.hello;
    if (!hello) return;
    clearTimeout(hello.timer);
    conn.hello = null;
    hello.reject(new ConnectError(code, message, refusal));
    conn.socket.destroy();
  }

  #onReply(conn: Conn, reply: Reply): void {
    const pending = reply.id === null ? undefined : conn.pending.get(reply.id);
    if (reply.id === null || pending === undefined) {
      this.issue(unmatched(reply, reply.id !== null && conn.late.delete(reply.id)));
      return;
    }
    conn.pending.delete(reply.id);
    clearTimeout(pending.timer);
    pending.resolve({ kind: "reply", id: reply.id, reply });
  }

  #onClose(conn: Conn): void {
    const cause = conn.error?.message ?? "the controller closed the connection";
    this.#failHello(conn, "channel", `not connected: ${cause}`);
    for (const [id, p] of conn.pending) {
      clearTimeout(p.timer);
      p.resolve({ kind: "lost", id, message: `the socket closed before the reply (${cause})` });
    }
    conn.pending.clear();
    if (this.#conn === conn) this.#conn = null;
    // Scheduled first, so a close listener can already tell a reconnect is coming.
    if (conn.welcome && !this.#closedByUser && this.#reconnectDelays !== null) {
      this.#reconnect(0);
    }
    if (conn.welcome) emit(this.#closeFns, undefined);
  }

  // One attempt after delays[n]; a failed attempt schedules the next, the last gives up.
  #reconnect(n: number): void {
    const delays = this.#reconnectDelays;
    if (delays === null || this.#closedByUser) return;
    const delay = delays[n];
    if (delay === undefined) {
      this.#reconnecting = false;
      const message = `gave up reconnecting after ${delays.length} attempts; connect() to retry`;
      this.issue({ code: "reconnect-failed", message });
      return;
    }
    this.#reconnecting = true;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      if (this.#closedByUser || this.#conn !== null) return;
      this.connect().then(
        () => {
          this.#reconnecting = false;
        },
        (e: unknown) => {
          // A refused hello (a revoked grant) will not change by retrying.
          if (e instanceof ConnectError && e.code === "refused") {
            this.#reconnecting = false;
            this.issue({ code: "reconnect-failed", message: e.message });
            return;
          }
          this.#reconnect(n + 1);
        },
      );
    }, delay);
  }

  #cancelReconnect(): void {
    if (this.#reconnectTimer !== null) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
  }

  protected issue(issue: ClientIssue): void {
    emit(this.#issueFns, issue);
  }
}
