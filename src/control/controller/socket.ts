// The controller's Unix socket (SPEC §6, seed: The socket): a directory the controller owns
// with mode 0700, the socket 0600, LF framing (framing.ts), one JSON message per line. Before a
// welcome only `hello` is accepted; any line that is not a valid message is answered
// `malformed` and nothing else happens. An oversize line also ends the connection, since the
// stream's position is lost. The last line before the client's EOF counts without its LF: a
// half-closed connection (shutdown of the client's writing side) gets every reply it is owed,
// then the controller ends its side. This module knows the envelope, never the operations.
import { randomUUID } from "node:crypto";
import { chmod, lstat, unlink } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { isAbsolute, join, resolve } from "node:path";
import { encodeLine, FramingError, LineSplitter } from "../engine/framing.ts";
import {
  type ControllerMessage,
  type Hello,
  type Operation,
  parseClientMessage,
  type Reply,
  type Request,
} from "../protocol.ts";
import { ControlRefusal } from "../refusal.ts";
import { controlPlace, ensurePrivateDir } from "../registry/private-dirs.ts";

/** A prompt of 262,144 characters fits even when every one is escaped (`\u0000`, 6 bytes). */
export const MAX_LINE_BYTES = 2 * 1024 * 1024;
/**
 * Bytes a connection may have waiting to be sent before the controller gives up on it: a client
 * that stops reading must not make the controller buffer without bound.
 */
export const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/** How long a closing slow client gets to read what is queued (and the final reason). */
const SLOW_CLIENT_GRACE_MS = 1000;
export const SOCKET_NAME = "control.sock";
const SUN_PATH_MAX = 107;
const SOCKET_DIR_INSTEAD = "choose another with --state-dir (or --socket-dir)";

export type Connection = {
  readonly id: string;
  /** Set by the welcome; null until then. */
  grant: string | null;
  /**
   * Who acts on this connection, set by the welcome: the person a delegating grant's hello
   * named, else the grant's own actor (hello.ts).
   */
  actor: string | null;
  /** The hello's narrowing of the grant's capabilities, or null for all of the grant's. */
  capabilities: readonly Operation[] | null;
  /** False once the controller closed this connection's channel (revocation, shutdown). */
  channelOpen: boolean;
  readonly closed: boolean;
  send(message: ControllerMessage): void;
  end(): void;
};

/**
 * A hello's answer: a welcome or a refusal reply (the connection stays unwelcomed), or a welcome
 * followed by already encoded lines (a replay), written in the same tick so no broadcast can
 * come between them.
 */
export type HelloAnswer =
  | ControllerMessage
  | { message: ControllerMessage; lines: readonly string[] };

export type ServerHooks = {
  hello(conn: Connection, hello: Hello): HelloAnswer;
  request(conn: Connection, request: Request): void;
  closed(conn: Connection): void;
};

export function malformed(message: string, id: string | null = null): Reply {
  return { type: "reply", id, outcome: "refused:malformed", refusal: "malformed", message };
}

/**
 * Creates `dir` with mode 0700, or accepts an existing one only when it is a private folder of
 * this uid with no folder above it that others could change (registry/private-dirs.ts).
 * Refuses `configuration` otherwise.
 */
export async function prepareSocketDir(dir: string): Promise<string> {
  if (typeof dir !== "string" || !isAbsolute(dir)) {
    throw new ControlRefusal("configuration", "socketDir must be an absolute path");
  }
  const path = resolve(dir);
  ensurePrivateDir(path, controlPlace("the socket folder", SOCKET_DIR_INSTEAD));
  return path;
}

export class ControlServer {
  readonly socketPath: string;
  readonly connections = new Map<string, Connection>();
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  /** Per welcomed-or-not connection: writes one already encoded line (for broadcast). */
  readonly #lineWriters = new Map<string, (line: string) => void>();

  private constructor(socketPath: string, server: Server) {
    this.socketPath = socketPath;
    this.#server = server;
  }

  static async listen(
    dir: string,
    hooks: ServerHooks,
    options: { maxLineBytes?: number; maxQueuedBytes?: number } = {},
  ): Promise<ControlServer> {
    const socketPath = await readySocketPath(dir);
    const limits = {
      maxLineBytes: options.maxLineBytes ?? MAX_LINE_BYTES,
      maxQueuedBytes: options.maxQueuedBytes ?? MAX_QUEUED_BYTES,
    };
    // Half-open: a client's EOF must not end our side before its last line is answered.
    const server = createServer({ allowHalfOpen: true });
    const self = new ControlServer(socketPath, server);
    server.on("connection", (socket) => self.#accept(socket, hooks, limits));
    await new Promise<void>((ok, fail) => {
      server.once("error", fail);
      server.listen(socketPath, () => {
        server.off("error", fail);
        ok();
      });
    });
    await chmod(socketPath, 0o600);
    return self;
  }

  /**
   * Sends to every welcomed connection. The line is encoded once for all of them: with 50
   * observers a run's every event would otherwise be stringified 50 times.
   */
  broadcast(message: ControllerMessage): void {
    let line: string | null = null;
    for (const c of this.connections.values()) {
      if (c.grant === null) continue;
      line ??= encodeLine(message);
      this.#lineWriters.get(c.id)?.(line);
    }
  }

  /** Sends one already encoded line to every welcomed connection (a stream event, whose bytes
   * the replay buffer keeps). */
  broadcastLine(line: string): void {
    for (const c of this.connections.values()) {
      if (c.grant !== null) this.#lineWriters.get(c.id)?.(line);
    }
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((ok) => this.#server.close(() => ok()));
    for (const s of this.#sockets) s.destroy();
    await closed;
    // The directory stays (it may be the operator's); the socket name goes with the server.
    await unlink(this.socketPath).catch(() => undefined);
  }

  #accept(
    socket: Socket,
    hooks: ServerHooks,
    { maxLineBytes, maxQueuedBytes }: { maxLineBytes: number; maxQueuedBytes: number },
  ): void {
    this.#sockets.add(socket);
    const splitter = new LineSplitter({ maxRecordBytes: maxLineBytes });
    let closed = false;
    // Set once the client fell more than maxQueuedBytes behind: nothing more is queued for it.
    let overflowed = false;
    // Set once the framing failed (an oversize line): the stream's position is lost.
    let framingFailed = false;
    // Set once the client half-closed: when nothing is owed any more, our side ends too.
    let inputEnded = false;
    // Request ids handed to the operations whose reply has not been written yet, with a count
    // (an identical repeat is owed its reply again).
    const owed = new Map<string, number>();
    const endIfSettled = (): void => {
      if (inputEnded && owed.size === 0 && !closed) socket.end();
    };
    // Writes one encoded line; broadcast and write() below use it.
    const writeLine = (line: string): void => {
      if (closed || overflowed || !socket.writable) return;
      socket.write(line);
      if (inputEnded) queueMicrotask(endIfSettled);
      if (socket.writableLength <= maxQueuedBytes) return;
      // The client stopped reading. Its channel closes, a final reason goes after what is
      // queued (read only if it resumes in time), and the socket is destroyed after a grace,
      // which frees the queue. Other connections and the engine never wait for it.
      overflowed = true;
      conn.channelOpen = false;
      socket.end(encodeLine(slowClient(maxQueuedBytes)));
      setTimeout(() => socket.destroy(), SLOW_CLIENT_GRACE_MS).unref();
    };
    // Writes one message; the socket's own answers (hello, malformed) go straight here.
    const write = (message: ControllerMessage): void => {
      if (closed || overflowed || !socket.writable) return;
      writeLine(encodeLine(message));
    };
    const conn: Connection = {
      id: `c-${randomUUID()}`,
      grant: null,
      actor: null,
      capabilities: null,
      channelOpen: true,
      get closed() {
        return closed;
      },
      send(message) {
        // A reply the operations send settles what this connection is owed.
        if (message.type === "reply" && message.id !== null) settleOwed(message.id);
        write(message);
      },
      end() {
        if (!closed) socket.end();
      },
    };
    const settleOwed = (id: string): void => {
      const n = owed.get(id);
      if (n === undefined) return;
      if (n > 1) owed.set(id, n - 1);
      else owed.delete(id);
    };
    this.connections.set(conn.id, conn);
    this.#lineWriters.set(conn.id, writeLine);
    const onLine = (line: string): void => {
      const parsed = parseClientMessage(line);
      if (!parsed.ok) {
        write(malformed(parsed.reason, requestIdOf(line)));
        return;
      }
      const m = parsed.message;
      if (conn.grant === null) {
        if (m.type !== "hello") {
          write(malformed("the first message must be hello", m.id));
          return;
        }
        const answer = hooks.hello(conn, m);
        if ("lines" in answer) {
          write(answer.message);
          for (const l of answer.lines) writeLine(l);
        } else write(answer);
        return;
      }
      if (m.type === "hello") {
        write(malformed("hello was already answered"));
        return;
      }
      owed.set(m.id, (owed.get(m.id) ?? 0) + 1);
      hooks.request(conn, m);
    };
    socket.on("data", (chunk: Buffer) => {
      let lines: string[];
      try {
        lines = splitter.push(chunk);
      } catch (e) {
        if (!(e instanceof FramingError)) throw e;
        framingFailed = true;
        for (const line of e.lines) onLine(line);
        write(malformed(`a line exceeded ${maxLineBytes} bytes; closing`));
        socket.end();
        socket.removeAllListeners("data");
        socket.resume();
        return;
      }
      for (const line of lines) onLine(line);
    });
    // The client's EOF: its last line counts even without an LF (a truncated one is answered
    // `malformed`). Our side stays open until every reply owed is written, then ends.
    socket.on("end", () => {
      if (framingFailed) return;
      let last: string | null;
      try {
        last = splitter.end();
      } catch (e) {
        // The last line's bytes passed the limit only as the decoder flushed: same as above.
        if (!(e instanceof FramingError)) throw e;
        write(malformed(`a line exceeded ${maxLineBytes} bytes; closing`));
        last = null;
      }
      if (last !== null && last !== "") onLine(last);
      inputEnded = true;
      endIfSettled();
    });
    // A reset peer closes like any other; 'close' below does the bookkeeping.
    socket.on("error", () => {});
    socket.on("close", () => {
      closed = true;
      this.#sockets.delete(socket);
      this.connections.delete(conn.id);
      this.#lineWriters.delete(conn.id);
      hooks.closed(conn);
    });
  }
}

function slowClient(limit: number): Reply {
  return {
    type: "reply",
    id: null,
    outcome: "refused:channel",
    refusal: "channel",
    message: `the client fell over ${limit} bytes behind; closing`,
  };
}

/** The id of a line that looks like a request, so even a malformed one can be correlated. */
function requestIdOf(line: string): string | null {
  try {
    const v: unknown = JSON.parse(line);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      const id = (v as { id?: unknown }).id;
      if (typeof id === "string" && id.length <= 200) return id;
    }
  } catch {
    // Not JSON: there is no id to give back.
  }
  return null;
}

/** Whether something accepts connections on a Unix socket (answered within half a second). */
function isListening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    const done = (answer: boolean) => {
      clearTimeout(timer);
      probe.destroy();
      resolve(answer);
    };
    // No answer in time: treat it as alive, the safe side (a refusal, never a lost controller).
    const timer = setTimeout(() => done(true), 500);
    probe.once("connect", () => done(true));
    probe.once("error", () => done(false));
  });
}

/**
 * The socket path in a checked directory (see prepareSocketDir), free to bind: a stale socket
 * left by a dead controller is removed; a live one refuses `configuration`. The controller
 * calls it before it claims or launches anything, and again when it listens.
 */
export async function readySocketPath(dir: string): Promise<string> {
  const socketDir = await prepareSocketDir(dir);
  const socketPath = join(socketDir, SOCKET_NAME);
  if (Buffer.byteLength(socketPath) > SUN_PATH_MAX) {
    throw new ControlRefusal("configuration", `the socket path is over ${SUN_PATH_MAX} bytes`);
  }
  try {
    const st = await lstat(socketPath);
    if (!st.isSocket()) {
      throw new ControlRefusal("configuration", `${socketPath} exists and is not a socket`);
    }
    // A socket left by a controller that died is stale and goes; one that still answers
    // belongs to a live controller, which this one must not silently replace.
    if (await isListening(socketPath)) {
      throw new ControlRefusal(
        "configuration",
        `another controller is listening on ${socketPath}; give this one its own socket directory`,
      );
    }
    await unlink(socketPath);
  } catch (e) {
    if (e instanceof ControlRefusal) throw e;
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  return socketPath;
}
