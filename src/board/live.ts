// The live route, `GET /api/conversations/:id/live?branch=&cursor=` (issue 15): follow pushed
// as Server-Sent Events. It is answered on the request loop, because a stream is held open for
// as long as the page is; the loop watches the directories of the followed files (inotify
// through fs.watch, a slow stat poll only where a watch cannot be set) and, when one of them
// changes, reads only what was appended with the follower's follow cursor — through the same
// dispatch as the page route, so the read runs in a worker lane with the reader's cursor rules.
// Nothing is read while nothing changes: a hundred idle followers cost no reads.
import { type FSWatcher, type StatWatcher, unwatchFile, watch, watchFile } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { parseEventId } from "../control/client/client.ts";
import { listRoot } from "../reader/catalogue.ts";
import { expandRoots } from "../reader/expand.ts";
import { conversationIdOf, isFileRoot, type Root } from "../reader/sources.ts";
import { ControllerWatches, DEFAULT_OBSERVE_GRANT } from "./live-control.ts";
import { boardRefusal, type Reply, SECURITY_HEADERS } from "./reply.ts";
import { type BoardRequest, checkRequest, readParams } from "./routes.ts";

export const LIVE_ROUTE = /^\/api\/conversations\/([^/?]+)\/live(?:\?|$)/;

/** The stat poll used only where fs.watch fails (no inotify watches left, say). */
export const FALLBACK_POLL_MS = 2000;

export type LiveOptions = {
  /** The approved roots now; a conversation's file is found in them by its id. */
  roots: () => Root[];
  /** Answers a page request (a worker lane, or the loop's own handler). */
  read: (request: BoardRequest) => Promise<Reply>;
  hosts: ReadonlySet<string>;
  log: (line: string) => void;
  /** Tests force the fallback poll with true. */
  pollOnly?: boolean;
  /** Tests shrink how many pages (and characters of them) are kept for reconnects. */
  kept?: { pages: number; chars: number };
  /** The registry of running controllers (`serve --state-dir`): their streams are relayed. */
  registryDir?: string;
  /** The observe-only grant the board watches controllers with; `observer` unless configured. */
  grant?: string;
};

/**
 * Live streams open at once. A stream needs no login, and each holds a connection and costs a
 * read per append of its file; one more is refused `too-many-streams` 503 and the Console
 * polls instead. A browser opens at most 6 connections to one host and port, so this is many
 * browsers' worth.
 */
export const MAX_STREAMS = 128;

/** A reader cursor id: a Last-Event-ID of this shape resumes the follow. */
const CURSOR_ID = /^c-[0-9a-f]{40}$/;

/**
 * SSE ids remembered for reconnects, across all streams: a text delta is one id, so this
 * covers the last few thousand events; a reconnect older than that resumes from the id alone.
 */
const POSITIONS_KEPT = 4096;

/**
 * The pages written lately, kept for a reconnect that resumes from before one of them
 * (#written): at most this many, and at most KEPT_CHARS of their JSON together (a page is at
 * most 8 MiB, most follow pages a few KiB), for no longer than a cursor lives.
 */
const KEPT_PAGES = 256;
const KEPT_CHARS = 16 * 1024 * 1024;
/** A reader cursor's TTL: the page a kept one hands on is refused `cursor-expired` after it. */
const KEPT_MS = 10 * 60_000;

export type LiveStats = {
  followers: number;
  watching: number;
  reads: number;
  /** Controller connections the streams share: one per watched controlled conversation. */
  observers: number;
};

type Follower = {
  conversation: string;
  branch: string;
  /** The cursor the next read takes: a follow cursor, or a page cursor while catching up. */
  cursor: string;
  res: ServerResponse;
  reading: boolean;
  /** Detaches this stream from its conversation's controller connection, while one runs. */
  relay: (() => void) | null;
  /** The id of the last controller event relayed: where a reconnect's relay resumes. */
  lastEventId: string | null;
  /** A change arrived during a read: read again once it ends. */
  again: boolean;
  closed: boolean;
};

/** One directory watched for the followed files in it. */
type DirWatch = {
  /** File name → conversation id, for the followed files of this directory. */
  files: Map<string, string>;
  watcher: FSWatcher | null;
  /** Files polled instead, when the directory watch could not be set. */
  polled: Map<string, StatWatcher>;
};

export class LiveHub {
  readonly #options: LiveOptions;
  readonly #followers = new Map<string, Set<Follower>>();
  readonly #dirs = new Map<string, DirWatch>();
  /** Where each followed conversation's file is: directory and name. */
  readonly #files = new Map<string, { dir: string; name: string }>();
  #reads = 0;
  /**
   * Where each SSE id written lately stood on both streams (conversation + id → the follow
   * cursor after it and the last controller event id before it). A reconnect's Last-Event-ID
   * is one id, either a page cursor or an event id; this finds the other half, so neither the
   * follow nor the relay starts over. Bounded: the oldest goes first (POSITIONS_KEPT).
   */
  readonly #positions = new Map<string, { cursor: string; eventId: string | null }>();
  /**
   * The pages read lately (conversation + the cursor read from → the answer and when). A read
   * uses its cursor up, and the board cannot tell a page the browser got from one written to a
   * stream that had already closed without its knowing (the socket takes the bytes either
   * way), or one read for a stream that closed while the read was on its way. A reconnect
   * resumes from the last id it got (its Last-Event-ID): if that is a cursor some page was read
   * from, it is handed that page again rather than refused `cursor-unknown` with the append
   * lost. Bounded (KEPT_PAGES, KEPT_CHARS, KEPT_MS): the oldest goes first.
   */
  readonly #written = new Map<string, { text: string; at: number }>();
  #writtenChars = 0;
  /**
   * Follow reads on their way (conversation + the cursor read from → settled once the read's
   * answer is sent or kept): a stream that starts from a cursor a closing stream is still
   * reading from waits for that answer instead of reading the used cursor again.
   */
  readonly #reading = new Map<string, Promise<void>>();
  readonly #watches: ControllerWatches | null;

  constructor(options: LiveOptions) {
    this.#options = options;
    const { registryDir } = options;
    this.#watches =
      registryDir === undefined
        ? null
        : new ControllerWatches({
            registryDir,
            grant: options.grant ?? DEFAULT_OBSERVE_GRANT,
            log: options.log,
          });
  }

  /** The Host the reads present: the page route checks it as every route does. */
  get #host(): string {
    for (const host of this.#options.hosts) return host;
    return "";
  }

  stats(): LiveStats {
    return {
      followers: this.#count(),
      watching: this.#files.size,
      reads: this.#reads,
      observers: this.#watches?.connections ?? 0,
    };
  }

  #count(): number {
    let followers = 0;
    for (const set of this.#followers.values()) followers += set.size;
    return followers;
  }

  /** Ends every stream, stops every watch and closes every controller connection. */
  async close(): Promise<void> {
    for (const set of this.#followers.values()) {
      for (const f of set) {
        f.closed = true;
        f.relay = null;
        f.res.end();
      }
    }
    for (const [dir] of this.#dirs) this.#stopDir(dir);
    this.#followers.clear();
    this.#files.clear();
    await this.#watches?.close();
  }

  /**
   * Serves one live request; answers with a refusal (not a stream) when it cannot follow.
   * `relay` false (a viewer, roles.ts): the file is followed, no controller is watched.
   */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    request: BoardRequest,
    relay = true,
  ): Promise<void> {
    const refused = checkRequest(this.#options.hosts, request);
    if (refused !== null) return send(res, refused, req.method);
    if (request.method !== "GET") {
      return send(
        res,
        boardRefusal("method-not-allowed", "The live route is a stream: GET only.", {
          Allow: "GET",
        }),
        req.method,
      );
    }
    // Before anything is looked up: a refused stream costs no listing of the roots.
    if (this.#count() >= MAX_STREAMS) {
      return send(
        res,
        boardRefusal(
          "too-many-streams",
          `The board holds ${MAX_STREAMS} live streams now, the most it keeps open; close other Console tabs (this page reads every second instead).`,
        ),
      );
    }
    const raw = LIVE_ROUTE.exec(request.target)?.[1] ?? "";
    let conversation: string;
    try {
      conversation = decodeURIComponent(raw);
    } catch {
      return send(
        res,
        boardRefusal("bad-request", "The conversation id is not valid percent-encoding."),
      );
    }
    const q = request.target.indexOf("?");
    const params = readParams(q < 0 ? "" : request.target.slice(q + 1), ["branch", "cursor"]);
    if (typeof params === "string") return send(res, boardRefusal("bad-request", params));
    // EventSource sends the last `id:` it saw when it reconnects (the URL's cursor having been
    // used by then). A page's id is the follow cursor to go on from; a controller event's id
    // resumes the relay (live-control.ts: the controller replays what it still keeps). The id
    // names one of the two; #positions remembers the other for ids this board wrote.
    const lastId = req.headers["last-event-id"];
    const known =
      typeof lastId === "string"
        ? this.#positions.get(`${conversation}\u0000${lastId}`)
        : undefined;
    let cursor = params.cursor;
    let eventId: string | null = null;
    if (known !== undefined) {
      cursor = known.cursor;
      eventId = known.eventId;
    } else if (typeof lastId === "string" && CURSOR_ID.test(lastId)) {
      cursor = lastId;
    } else if (typeof lastId === "string" && parseEventId(lastId) !== null) {
      // An id this board did not write (it restarted): the relay resumes, the follow starts
      // at the URL's cursor as before.
      eventId = lastId;
    }
    const resume = eventId === null ? null : parseEventId(eventId);
    const { branch } = params;
    if (branch === undefined || cursor === undefined) {
      return send(
        res,
        boardRefusal(
          "bad-request",
          "Follow the end of a page: pass branch= and cursor= with the page's follow cursor.",
        ),
      );
    }
    let place: { dir: string; name: string } | null;
    try {
      place = this.#files.get(conversation) ?? this.#locate(conversation);
    } catch (e) {
      this.#options.log(
        `board: live: listing the roots failed: ${e instanceof Error ? e.stack : e}`,
      );
      place = null;
    }
    if (place === null) {
      return send(
        res,
        boardRefusal(
          "not-found",
          "No approved root holds this conversation now; reload the catalogue.",
        ),
      );
    }
    openEventStream(res, 1000);
    const follower: Follower = {
      conversation,
      branch,
      cursor,
      res,
      reading: false,
      relay: null,
      lastEventId: eventId,
      again: false,
      closed: false,
    };
    this.#add(follower, place);
    res.on("close", () => this.#remove(follower));
    // Anything appended between the page the client read and this stream is read at once.
    this.#readFor(follower);
    if (this.#watches === null || follower.closed || !relay) return;
    follower.relay = this.#watches.watch(
      conversation,
      {
        send: (event, id, data) => {
          if (follower.closed) return;
          if (event === "event" && id !== null) {
            follower.lastEventId = id;
            this.#remember(follower, id);
          }
          writeEvent(res, event, id, data);
        },
      },
      resume,
    );
  }

  /** Records where both streams stood when the SSE id `id` was written to this follower. */
  #remember(follower: Follower, id: string): void {
    const key = `${follower.conversation}\u0000${id}`;
    this.#positions.delete(key);
    this.#positions.set(key, { cursor: follower.cursor, eventId: follower.lastEventId });
    if (this.#positions.size > POSITIONS_KEPT) {
      for (const oldest of this.#positions.keys()) {
        this.#positions.delete(oldest);
        break;
      }
    }
  }

  #keepWritten(from: string, text: string): void {
    this.#dropWritten(from);
    this.#written.set(from, { text, at: Date.now() });
    this.#writtenChars += text.length;
    const { pages, chars } = this.#options.kept ?? { pages: KEPT_PAGES, chars: KEPT_CHARS };
    for (const oldest of this.#written.keys()) {
      if (this.#written.size <= pages && this.#writtenChars <= chars) break;
      this.#dropWritten(oldest);
    }
  }

  /** The page read from `from` lately, if it is still kept. */
  #keptWritten(from: string): string | undefined {
    const kept = this.#written.get(from);
    if (kept === undefined) return undefined;
    if (Date.now() - kept.at > KEPT_MS) {
      this.#dropWritten(from);
      return undefined;
    }
    return kept.text;
  }

  #dropWritten(from: string): void {
    const kept = this.#written.get(from);
    if (kept === undefined) return;
    this.#written.delete(from);
    this.#writtenChars -= kept.text.length;
  }

  /** The directory and file name of a conversation: its id is a hash, so the roots are listed. */
  #locate(conversation: string): { dir: string; name: string } | null {
    for (const root of expandRoots(this.#options.roots())) {
      if (!isFileRoot(root)) continue;
      let names: string[];
      try {
        names = listRoot(root).names;
      } catch {
        // A root that cannot be listed now holds nothing to follow now.
        continue;
      }
      for (const name of names) {
        if (conversationIdOf(root, name) === conversation) return { dir: root.sessionsDir, name };
      }
    }
    return null;
  }

  #add(follower: Follower, place: { dir: string; name: string }): void {
    let set = this.#followers.get(follower.conversation);
    if (!set) {
      set = new Set();
      this.#followers.set(follower.conversation, set);
      this.#files.set(follower.conversation, place);
      this.#watchFile(place.dir, place.name, follower.conversation);
    }
    set.add(follower);
  }

  #remove(follower: Follower): void {
    follower.closed = true;
    const detach = follower.relay;
    follower.relay = null;
    detach?.();
    const set = this.#followers.get(follower.conversation);
    if (!set) return;
    set.delete(follower);
    if (set.size > 0) return;
    this.#followers.delete(follower.conversation);
    const place = this.#files.get(follower.conversation);
    this.#files.delete(follower.conversation);
    if (!place) return;
    const dir = this.#dirs.get(place.dir);
    if (!dir) return;
    dir.files.delete(place.name);
    const polled = dir.polled.get(place.name);
    if (polled) {
      unwatchFile(join(place.dir, place.name));
      dir.polled.delete(place.name);
    }
    if (dir.files.size === 0) this.#stopDir(place.dir);
  }

  #watchFile(dirPath: string, name: string, conversation: string): void {
    let dir = this.#dirs.get(dirPath);
    if (!dir) {
      dir = { files: new Map(), watcher: null, polled: new Map() };
      this.#dirs.set(dirPath, dir);
      if (!this.#options.pollOnly) {
        try {
          // The directory, not the file: a file replaced by rename is still seen (the reader
          // then refuses source-replaced, which the page shows).
          const watcher = watch(dirPath, { persistent: false }, (_event, file) => {
            this.#changed(dirPath, typeof file === "string" ? file : null);
          });
          watcher.on("error", (e) => {
            this.#options.log(`board: live: watching a sessions directory failed: ${e.message}`);
            this.#fallBack(dirPath);
          });
          dir.watcher = watcher;
        } catch (e) {
          this.#options.log(
            `board: live: no inotify watch (${e instanceof Error ? e.message : e}); polling every ${FALLBACK_POLL_MS} ms`,
          );
        }
      }
    }
    dir.files.set(name, conversation);
    if (dir.watcher === null) this.#poll(dirPath, dir, name);
  }

  /** The watch failed after it was set: every followed file of the directory is polled. */
  #fallBack(dirPath: string): void {
    const dir = this.#dirs.get(dirPath);
    if (!dir) return;
    dir.watcher?.close();
    dir.watcher = null;
    for (const name of dir.files.keys()) this.#poll(dirPath, dir, name);
  }

  #poll(dirPath: string, dir: DirWatch, name: string): void {
    if (dir.polled.has(name)) return;
    // A stat every FALLBACK_POLL_MS, never a read: a read happens only when size or time moved.
    const watcher = watchFile(
      join(dirPath, name),
      { persistent: false, interval: FALLBACK_POLL_MS },
      (now, before) => {
        if (now.size !== before.size || now.mtimeMs !== before.mtimeMs || now.ino !== before.ino) {
          this.#changed(dirPath, name);
        }
      },
    );
    dir.polled.set(name, watcher);
  }

  #stopDir(dirPath: string): void {
    const dir = this.#dirs.get(dirPath);
    if (!dir) return;
    dir.watcher?.close();
    for (const name of dir.polled.keys()) unwatchFile(join(dirPath, name));
    this.#dirs.delete(dirPath);
  }

  /** A change in a watched directory: the followers of that file read (all, if unnamed). */
  #changed(dirPath: string, name: string | null): void {
    const dir = this.#dirs.get(dirPath);
    if (!dir) return;
    const ids = name === null ? [...dir.files.values()] : [dir.files.get(name)];
    for (const id of ids) {
      if (id === undefined) continue;
      for (const follower of this.#followers.get(id) ?? []) this.#readFor(follower);
    }
  }

  /** Reads on from the follower's cursor to the file's end; one read at a time per follower. */
  #readFor(follower: Follower): void {
    if (follower.closed) return;
    if (follower.reading) {
      follower.again = true;
      return;
    }
    follower.reading = true;
    void this.#readOn(follower)
      .catch((e: unknown) => {
        this.#options.log(`board: live: a follow read failed: ${e instanceof Error ? e.stack : e}`);
        follower.res.end();
      })
      .finally(() => {
        follower.reading = false;
        if (follower.again && !follower.closed) {
          follower.again = false;
          this.#readFor(follower);
        }
      });
  }

  async #readOn(follower: Follower): Promise<void> {
    // A follow page can be one of several when much was appended: read on to the new end.
    for (;;) {
      const from = `${follower.conversation}\u0000${follower.cursor}`;
      const before = this.#reading.get(from);
      if (before !== undefined) await before;
      let text = this.#keptWritten(from);
      const kept = text !== undefined;
      let settle = () => {};
      const mine = new Promise<void>((resolve) => {
        settle = resolve;
      });
      let body: unknown;
      let next: { cursor: string; more: boolean } | null;
      try {
        if (text === undefined) {
          this.#reading.set(from, mine);
          const query = new URLSearchParams({ branch: follower.branch, cursor: follower.cursor });
          const target = `/api/conversations/${encodeURIComponent(follower.conversation)}/page?${query}`;
          this.#reads++;
          const out = await this.#options.read({ method: "GET", target, host: this.#host });
          try {
            text = out.body.toString("utf8");
          } finally {
            out.release?.();
          }
        }
        body = JSON.parse(text);
        next = nextCursor(body);
        if (!kept && next !== null) this.#keepWritten(from, text);
      } finally {
        // After the answer is kept, so a stream waiting on this read finds it.
        if (this.#reading.get(from) === mine) this.#reading.delete(from);
        settle();
      }
      if (follower.closed) return;
      if (next === null) {
        // A refusal (source-replaced, cursor-expired…): sent once, then the stream ends; the
        // page shows it in words and reopens as it does for a refused read.
        writeEvent(follower.res, "refusal", null, JSON.stringify(body));
        follower.closed = true;
        follower.res.end();
        return;
      }
      follower.cursor = next.cursor;
      this.#remember(follower, next.cursor);
      // The event's id is the cursor that goes on after it: a reconnect resumes there.
      writeEvent(follower.res, "page", next.cursor, JSON.stringify(body));
      if (next.more) continue;
      // At a follow cursor nothing is read until the file changes, unless the page just sent
      // was a kept one (the file may have grown since it was read, with no stream watching),
      // or a page was read from that cursor already (for a stream that closed unknown to the
      // board): then the stream reads on now, to the file's end.
      const after = `${follower.conversation}\u0000${next.cursor}`;
      if (!kept && !this.#written.has(after) && !this.#reading.has(after)) return;
    }
  }
}

/** The cursor a read result hands on, and whether it is a page cursor (more to read now). */
function nextCursor(body: unknown): { cursor: string; more: boolean } | null {
  if (typeof body !== "object" || body === null || !("ok" in body) || body.ok !== true) return null;
  if ("follow" in body && isCursor(body.follow)) return { cursor: body.follow.id, more: false };
  if ("cursor" in body && isCursor(body.cursor)) return { cursor: body.cursor.id, more: true };
  return null;
}

function isCursor(value: unknown): value is { id: string } {
  return (
    typeof value === "object" && value !== null && "id" in value && typeof value.id === "string"
  );
}

const LINE_BREAK = /[\r\n]/;

/**
 * Starts an SSE response (the live stream's, the inbox's): the board's security headers, a
 * sandboxed CSP, then the delay a client waits before it reconnects.
 */
export function openEventStream(res: ServerResponse, retryMs: number): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    "Content-Type": "text/event-stream; charset=utf-8",
    // Each event is written as it happens: no proxy or buffer may hold it.
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  res.write(`retry: ${retryMs}\n\n`);
}

/**
 * One SSE event. A field never holds a raw CR or LF (each would end the field early): JSON
 * escapes them, and anything else that has one is a bug, refused here rather than sent split.
 */
export function writeEvent(
  res: ServerResponse,
  event: string,
  id: string | null,
  data: string,
): void {
  for (const field of [event, id ?? "", data]) {
    if (LINE_BREAK.test(field)) throw new Error("An SSE field would hold a line break.");
  }
  res.write(`event: ${event}\n${id === null ? "" : `id: ${id}\n`}data: ${data}\n\n`);
}

/** Writes a whole reply (a refusal, never a stream) on the request loop. */
export function send(res: ServerResponse, out: Reply, method?: string): void {
  res.writeHead(out.status, out.headers);
  res.end(method === "HEAD" ? undefined : out.body);
  out.release?.();
}
