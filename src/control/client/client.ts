// ConversationClient: the library every client of a controller uses (seed: Mediated control).
// One Unix socket, LF-framed JSON lines (framing.ts), the messages of protocol.ts. Invariants:
// every controller line passes parseControllerMessage before use; a request is written at most
// once and never resent; every pending request settles (its reply, or `unknown` on a timeout or
// when the socket closes); a request made while not connected refuses `channel`. What requests
// answer (outcomes.ts), what goes wrong (client-issues.ts) and the options (client-options.ts)
// are files of their own, re-exported here: this module is what a client imports.
import { randomUUID } from "node:crypto";
import { createConnection, type Socket } from "node:net";
import { encodeLine, FramingError, LineSplitter } from "../engine/framing.ts";
import {
  type BudgetLimits,
  CONFIRMED_OPERATIONS,
  type ConfirmedOperation,
  type ControllerMessage,
  type ControllerState,
  DECISIONS,
  type Decision,
  type Dialog,
  type Hello,
  PROTOCOL_VERSION,
  parseBudgetLimits,
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
import { isId, isObj, type Obj, parseControllerMessage } from "./controller-message.ts";
import { emit, subscribe } from "./listeners.ts";
import {
  type Confirmed,
  type ConfirmOutcome,
  type ControlOutcome,
  idIn,
  localRefusal,
  type ObserveOutcome,
  type Outcome,
  outcomeOf,
  type PromptOutcome,
  type RecoverOutcome,
  readSeam,
  type Settled,
} from "./outcomes.ts";

export { type ClientIssue, ConnectError, type ConnectErrorCode } from "./client-issues.ts";
export {
  type ConversationClientOptions,
  parseEventId,
  RECONNECT_DELAYS_MS,
} from "./client-options.ts";
export { type ParsedControllerMessage, parseControllerMessage } from "./controller-message.ts";
export type {
  Confirmed,
  ConfirmOutcome,
  ControlOutcome,
  ObserveOutcome,
  Outcome,
  PromptOutcome,
  RecoverOutcome,
  Refused,
  Seam,
  Unknown,
} from "./outcomes.ts";

type Body<R> = R extends unknown
  ? Omit<R, "type" | "id" | "target" | "generation" | "incarnation">
  : never;
type RequestBody = Body<Request>;

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

export class ConversationClient {
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
        if (conn.welcome) this.#issue({ code: "socket-error", message: e.message });
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

  /** A reader page plus the live stream's seam. `limit` (1–100) is advisory. */
  async observe(options: { limit?: number; cursor?: string } = {}): Promise<ObserveOutcome> {
    const body: RequestBody = { op: "observe" };
    const { limit, cursor } = options;
    if (limit !== undefined) {
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100) {
        return localRefusal("malformed", "observe's limit is an integer from 1 to 100");
      }
      body.limit = limit;
    }
    if (cursor !== undefined) {
      if (typeof cursor !== "string" || cursor.length === 0 || cursor.length > 512) {
        return localRefusal("malformed", "observe's cursor is a cursor string");
      }
      body.cursor = cursor;
    }
    return this.#outcome(await this.#send(body, false), (reply) => {
      if (!isObj(reply.result)) return "observe's result is not an object";
      const seam = readSeam(reply.result.seam);
      return typeof seam === "string" ? seam : { seam, result: reply.result };
    });
  }

  /** Become the controller (H1–H4). */
  async takeover(): Promise<ControlOutcome> {
    return this.#plain(await this.#send({ op: "takeover" }, true));
  }

  async release(): Promise<ControlOutcome> {
    return this.#plain(await this.#send({ op: "release" }, true));
  }

  /** Sends `text` with a fresh draft id at revision 1; the library keeps no draft state. */
  async prompt(text: string): Promise<PromptOutcome> {
    if (typeof text !== "string") return localRefusal("malformed", "prompt text is a string");
    const draft = { id: `d-${randomUUID()}`, revision: 1 };
    return this.#outcome(await this.#send({ op: "prompt", text, draft }, true), (reply) =>
      reply.receipt ? { receipt: reply.receipt } : "an admitted prompt's reply has no receipt",
    );
  }

  async interrupt(): Promise<ControlOutcome> {
    return this.#plain(await this.#send({ op: "interrupt" }, true));
  }

  /** Issues a confirmation for `operation`; use it with forceStop or recover. */
  async confirm(operation: ConfirmedOperation): Promise<ConfirmOutcome> {
    if (!(CONFIRMED_OPERATIONS as readonly unknown[]).includes(operation)) {
      return localRefusal("malformed", "confirm names force-stop or recover");
    }
    return this.#outcome(await this.#send({ op: "confirm", operation }, true), (reply) => {
      const confirmation = idIn(reply.result, "confirmation");
      return confirmation === null
        ? "an admitted confirm's result names no confirmation id"
        : { confirmation, result: reply.result };
    });
  }

  async forceStop(confirmation: string): Promise<ControlOutcome> {
    if (!isId(confirmation)) return localRefusal("malformed", "a confirmation is an id");
    return this.#plain(await this.#send({ op: "force-stop", confirmation }, true));
  }

  /** After a proven stop: resolves with the single-use eligibility id that `launch` takes. */
  async recover(confirmation: string): Promise<RecoverOutcome> {
    if (!isId(confirmation)) return localRefusal("malformed", "a confirmation is an id");
    return this.#outcome(await this.#send({ op: "recover", confirmation }, true), (reply) => {
      const eligibility = idIn(reply.result, "eligibility");
      return eligibility === null
        ? "an admitted recover's result names no eligibility id"
        : { eligibility, result: reply.result };
    });
  }

  /** Issues a confirmation, then uses it: `confirm` then `force-stop` or `recover`. */
  confirmed(operation: "force-stop"): Promise<Confirmed<ControlOutcome>>;
  confirmed(operation: "recover"): Promise<Confirmed<RecoverOutcome>>;
  async confirmed(
    operation: ConfirmedOperation,
  ): Promise<Confirmed<ControlOutcome> | Confirmed<RecoverOutcome>> {
    const issued = await this.confirm(operation);
    if (issued.outcome !== "admitted") return { ...issued, step: "confirm" };
    const used =
      operation === "recover"
        ? await this.recover(issued.confirmation)
        : await this.forceStop(issued.confirmation);
    return { ...used, step: "use" };
  }

  /**
   * Answers an approval the engine asked (`dialog.method === "approval"`): allow or deny, with a
   * message for a deny. Only the controlling connection's answer is admitted, and only the first.
   */
  async answer(dialog: string, decision: Decision, message?: string): Promise<ControlOutcome> {
    if (!isId(dialog)) return localRefusal("malformed", "a dialog is an id");
    if (!(DECISIONS as readonly unknown[]).includes(decision)) {
      return localRefusal("malformed", 'a decision is "allow" or "deny"');
    }
    const body: RequestBody =
      message === undefined
        ? { op: "answer", dialog, decision }
        : { op: "answer", dialog, decision, message };
    return this.#plain(await this.#send(body, true));
  }

  /**
   * Answers a budget dialog (`dialog.method === "budget"`) by raising the budget to `limits`
   * (USD in whole cents and/or tokens): needs the controller and the budget capability. To
   * stop instead, `answer(dialog, "deny")`.
   */
  async raiseBudget(dialog: string, limits: BudgetLimits): Promise<ControlOutcome> {
    if (!isId(dialog)) return localRefusal("malformed", "a dialog is an id");
    const checked = parseBudgetLimits(limits);
    if (typeof checked === "string") return localRefusal("malformed", checked);
    return this.#plain(
      await this.#send({ op: "answer", dialog, decision: "allow", budget: checked }, true),
    );
  }

  /** Changes the budget (the `budget` op): USD in whole cents and/or tokens; an admin's. */
  async budget(limits: BudgetLimits): Promise<ControlOutcome> {
    const checked = parseBudgetLimits(limits);
    if (typeof checked === "string") return localRefusal("malformed", checked);
    return this.#plain(await this.#send({ op: "budget", ...checked }, true));
  }

  /** Launches a recovered execution with a single-use eligibility id (K17, K18). */
  async launch(eligibility: string): Promise<ControlOutcome> {
    if (!isId(eligibility)) return localRefusal("malformed", "an eligibility record is an id");
    return this.#plain(await this.#send({ op: "launch", eligibility }, true));
  }

  // Writes one request once. Control requests carry the generation and incarnation believed now.
  #send(body: RequestBody, control: boolean): Promise<Settled> {
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

  #plain(settled: Settled): ControlOutcome {
    return this.#outcome(settled, (reply) =>
      reply.result === undefined ? {} : { result: reply.result },
    );
  }

  #outcome<T extends object>(settled: Settled, admitted: (reply: Reply) => T | string): Outcome<T> {
    return outcomeOf(settled, admitted, (issue) => this.#issue(issue));
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
      else this.#issue({ code: "record-too-large", message: e.message });
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
      else this.#issue({ code: "invalid-line", message: parsed.reason, line: line.slice(0, 200) });
      return;
    }
    const m = parsed.message;
    if (conn.hello) {
      this.#onHelloAnswer(conn, conn.hello, m);
      return;
    }
    switch (m.type) {
      case "welcome":
        this.#issue({ code: "unexpected-message", message: "a second welcome" });
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
        this.#issue({ code: "unexpected-message", message: String(never) });
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
      this.#issue(unmatched(reply, reply.id !== null && conn.late.delete(reply.id)));
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
      this.#issue({ code: "reconnect-failed", message });
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
            this.#issue({ code: "reconnect-failed", message: e.message });
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

  #issue(issue: ClientIssue): void {
    emit(this.#issueFns, issue);
  }
}
