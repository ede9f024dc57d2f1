// The board's HTTP server (SPEC §5): node:http on a loopback address only, serving the Console
// and the reader's GET routes through routes.ts. Any other bind address is refused before a
// socket opens; the Host header must name the bound address (DNS rebinding). Given sources
// rather than a reader, it reads in worker threads (read-pool.ts), off the request loop.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { availableParallelism } from "node:os";
import type { Reader } from "../reader/reader.ts";
import { type Root, rootsFromSpecs } from "../reader/sources.ts";
import { act, acts } from "./acting.ts";
import { checkAssets, loadAssets } from "./assets.ts";
import { BoardAuth } from "./auth.ts";
import { type ControlRoute, createControlRoute } from "./control-route.ts";
import type { DeviceLinks } from "./device-links.ts";
import { refuseCrossSite } from "./fetch-site.ts";
import {
  answerConnect,
  type Dispatch,
  refuseAtHttpLevel,
  rejectMalformed,
  requestOf,
  respond,
  writeReply,
} from "./http-answer.ts";
import { identify, LOCAL_WHO, type ProxyConfig, type Who } from "./identity.ts";
import { INBOX_ROUTE, InboxHub } from "./inbox-route.ts";
import { LIVE_ROUTE, LiveHub, type LiveStats } from "./live.ts";
import { PUSH_KEY_ROUTE, PushHub, type PushOptions } from "./push/hub.ts";
import type { ReaderSources } from "./read-messages.ts";
import { MAX_LANES, startReadPool } from "./read-pool.ts";
import { boardRefusal } from "./reply.ts";
import { roleWatches } from "./roles.ts";
import { checkRequest, createHandler } from "./routes.ts";
import type { BoardSearch } from "./search-route.ts";
import type { BoardUsage } from "./usage-route.ts";

export { MAX_POST_BYTES } from "./acting.ts";
export type { ReaderSources } from "./read-messages.ts";

/**
 * Where pages come from: `sources`, read in worker threads so a page that costs seconds holds
 * no other request (the `conversation` command and `npm start`); or one `reader`, called on
 * the request loop (tests and embedders that wrap a reader of their own).
 */
export type BoardReading =
  | {
      reader: Reader;
      /** The reader's roots, for the live route's watch; without them the route is 404. */
      roots?: () => Root[];
      sources?: never;
      lanes?: never;
    }
  | {
      sources: ReaderSources;
      /** Worker threads for conversations, beside the catalogue's one; default 2 to 4 by cores. */
      lanes?: number;
      reader?: never;
      roots?: never;
    };

export type BoardOptions = BoardReading & {
  /** `127.0.0.1` (default), `::1` or `localhost` (binds 127.0.0.1). Nothing else. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Where internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
  /** The grant a logged-in action's controller connection uses; `operator` unless configured. */
  grant?: string;
  /** The observe-only grant the live streams watch a controller with; `observer` by default. */
  observeGrant?: string;
  /** A run with no event for this long is stalled in the inbox (attention/states.ts). */
  stallMs?: number;
  /**
   * Called with the next login link once the current one is used (each logs in once): print
   * it for the operator, as the first one was.
   */
  onLoginLinkUsed?: (loginUrl: string) => void;
  /**
   * What `POST /api/conversations/:id/control` does once the login, Origin and content-type
   * checks passed (control-route.ts); without it the route is 404, after the same checks.
   */
  control?: ControlRoute;
  /**
   * Full-text search for GET /api/search when reading with `reader` (on the loop); with
   * `sources`, `sources.search` starts a search lane instead. Without either, 503.
   */
  search?: BoardSearch;
  /** Usage for GET /api/usage when reading with `reader`; with `sources`, the search lane's. */
  usage?: BoardUsage;
  /**
   * Behind a TLS-terminating, authenticating proxy (identity.ts, docs/remote.md): its public
   * origin is accepted as Host and Origin, and people come from its identity header.
   */
  proxy?: ProxyConfig;
  /** Device login links (`serve --phone`, device-links.ts); without it none can be minted. */
  devices?: DeviceLinks;
  /** Web Push (push/hub.ts, docs/push.md): its state folder; without it the routes are 404. */
  push?: PushOptions;
};

/** What a request answered `board-starting` is told to wait (`Retry-After`), in seconds. */
export const STARTING_RETRY_AFTER_S = 1;

/**
 * Largest request head read. Chromium and Firefox send every cookie any port of this host set,
 * up to 180 of 4 KiB (about 720 KiB): under node's default of 16 KiB, a page on another port
 * that sets them keeps the Console from loading. The board reads no cookie; it only has to
 * get past them.
 */
export const MAX_HEAD_BYTES = 1024 * 1024;

export type Board = {
  /** `http://127.0.0.1:<port>/` or `http://[::1]:<port>/`. */
  url: string;
  port: number;
  /** Stops listening, closes every open connection and stops the read workers. */
  close(): Promise<void>;
  /**
   * The read workers now: threads running, and shared-memory chunks held by responses still
   * being sent (0 once every answer is over). Both 0 for a board reading on its loop.
   */
  readers(): { running: number; slabChunksInUse: number };
  /**
   * The current operator link, `http://127.0.0.1:PORT/login?token=…`: print it for the
   * operator and nowhere else (never to a log). It logs in once; a fresh one is drawn at every
   * start and after every login (`onLoginLinkUsed`).
   */
  readonly loginUrl: string;
  /** The live route now: open streams, files watched, follow reads made since the start. */
  live(): LiveStats;
  /**
   * A device login link for `identity` (the public origin's behind a proxy): single use,
   * DEVICE_LINK_TTL_MS, revocable. Throws when the board was started without `devices`.
   */
  mintDeviceLink(identity: string): { id: string; url: string; expiresAt: string };
};

/** The address a loopback host name binds, and how that address is written in a URL. */
export function loopbackAddress(host: string): { address: string; urlHost: string } {
  switch (host.toLowerCase()) {
    case "127.0.0.1":
    case "localhost":
      return { address: "127.0.0.1", urlHost: "127.0.0.1" };
    case "::1":
    case "[::1]":
      return { address: "::1", urlHost: "[::1]" };
    default:
      throw new Error(
        `The board binds to loopback only (127.0.0.1, ::1 or localhost), not ${JSON.stringify(host)}: ` +
          "it serves conversation histories without authentication.",
      );
  }
}

/**
 * `Host` values accepted for a board on `urlHost:port`: the address itself and `localhost`,
 * which browsers resolve to loopback and no DNS answer can rebind.
 */
export function allowedHosts(urlHost: string, port: number): Set<string> {
  return new Set([`${urlHost}:${port}`, `localhost:${port}`]);
}

/**
 * Starts the board. Rejects with an Error for a non-loopback host, a bad port or a failed
 * listen (EADDRINUSE). Reader refusals become HTTP statuses through REFUSAL_STATUS.
 */
export async function startBoard(options: BoardOptions): Promise<Board> {
  const { address, urlHost } = loopbackAddress(options.host ?? "127.0.0.1");
  const requested = options.port ?? 0;
  if (!Number.isInteger(requested) || requested < 0 || requested > 65535) {
    throw new Error(`The board's port must be an integer from 0 to 65535, not ${requested}.`);
  }
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const hosts = new Set<string>();
  // Until the workers run (they need the port for the Host check), every request is told to
  // come back: the port listens first, so a script or a browser may be quicker than they are.
  let dispatch: Dispatch = () =>
    Promise.resolve(
      boardRefusal("board-starting", "The board is starting; try again in a moment.", {
        "Retry-After": String(STARTING_RETRY_AFTER_S),
      }),
    );
  let stopReading = async () => {};
  let readers = () => ({ running: 0, slabChunksInUse: 0 });

  // requireHostHeader is off so a request without Host gets the board's refusal and headers.
  let live: LiveHub | null = null;
  let inbox: InboxHub | null = null;
  let auth: BoardAuth | null = null;
  let control = options.control;
  let stopControl = async () => {};
  let ready = false;
  const proxy = options.proxy ?? null;
  const push = options.push === undefined ? null : new PushHub({ ...options.push, hosts, log });
  const serveRequest = (req: IncomingMessage, res: ServerResponse, who: Who) => {
    const target = req.url ?? "";
    const early = refuseAtHttpLevel(req);
    // Another site's page gets nothing from the API, the streams, the exports or a POST;
    // the Host check still comes first, as on every route.
    const crossSite = early ?? refuseCrossSite(req.method ?? "", target, req.headers);
    if (early === null && crossSite !== null) {
      req.resume();
      res.shouldKeepAlive = false;
      const request = { ...requestOf(req), method: "GET" };
      // A refusal: a body of its own, never a stream, so nothing is left to wait for.
      void writeReply(req, res, checkRequest(hosts, request) ?? crossSite);
      return;
    }
    // Before the workers run, a login or a POST is told to come back like any request.
    if (ready && auth !== null && early === null && acts(req)) {
      const acting = act(req, res, { auth, hosts, control, who, proxy, push }).catch(
        (e: unknown) => {
          log(`board: internal error on a POST or login: ${e instanceof Error ? e.stack : e}`);
          res.destroy();
        },
      );
      void acting;
      return;
    }
    if (push !== null && PUSH_KEY_ROUTE.test(target) && early === null) {
      req.resume();
      return push.serveKey(req, res, requestOf(req));
    }
    if (inbox !== null && INBOX_ROUTE.test(target) && early === null) {
      req.resume();
      inbox.serve(req, res, requestOf(req)).catch((e: unknown) => {
        log(`board: internal error on the inbox route: ${e instanceof Error ? e.stack : e}`);
        res.destroy();
      });
      return;
    }
    if (live !== null && LIVE_ROUTE.test(target) && early === null) {
      req.resume();
      live.serve(req, res, requestOf(req), roleWatches(who.role)).catch((e: unknown) => {
        log(`board: internal error on the live route: ${e instanceof Error ? e.stack : e}`);
        res.destroy();
      });
      return;
    }
    respond(req, res, dispatch).catch((e: unknown) => {
      // Dispatch never rejects and a write to a closed socket does not throw: a bug, so the
      // socket goes (its client sees a reset) and the board keeps serving.
      log(`board: internal error answering a request: ${e instanceof Error ? e.stack : e}`);
      res.destroy();
    });
  };
  const server = createServer(
    { requireHostHeader: false, maxHeaderSize: MAX_HEAD_BYTES },
    (req, res) => {
      if (proxy === null) return serveRequest(req, res, LOCAL_WHO);
      // Who asks is known before anything is routed; a refusal still answers Host first.
      identify(req, proxy)
        .then((known) => {
          if (known.ok) return serveRequest(req, res, known.who);
          req.resume();
          res.shouldKeepAlive = false;
          const first =
            refuseAtHttpLevel(req) ?? checkRequest(hosts, { ...requestOf(req), method: "GET" });
          return writeReply(req, res, first ?? known.reply);
        })
        .catch((e: unknown) => {
          log(`board: internal error identifying a request: ${e instanceof Error ? e.stack : e}`);
          res.destroy();
        });
    },
  );
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    rejectMalformed(error, socket);
  });
  // CONNECT is answered like any other method the board does not serve; node:http hands the
  // socket over for it, so the answer is written by hand and the socket closed.
  const handedOver = new Set<Socket>();
  server.on("connect", (req: IncomingMessage, socket: Socket) => {
    handedOver.add(socket);
    socket.on("close", () => handedOver.delete(socket));
    socket.on("error", () => socket.destroy());
    answerConnect(req, socket, dispatch).catch((e: unknown) => {
      log(`board: internal error answering CONNECT: ${e instanceof Error ? e.stack : e}`);
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: address, port: requested, exclusive: true }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  if (bound === null || typeof bound === "string") throw new Error("The board has no TCP port.");
  for (const h of allowedHosts(urlHost, bound.port)) hosts.add(h);
  if (proxy !== null) hosts.add(proxy.host);
  const linkOf = (token: string) => `http://${urlHost}:${bound.port}/login?token=${token}`;
  const signedOut: ((login: string) => void)[] = [];
  const madeAuth = new BoardAuth({
    onSignedOut: (login) => {
      for (const forget of signedOut) forget(login);
    },
    onTokenUsed: () => options.onLoginLinkUsed?.(linkOf(madeAuth.token)),
    ...(options.devices === undefined ? {} : { devices: options.devices }),
  });
  auth = madeAuth;
  // A login signed out (made room for, its device link revoked) takes its subscriptions along.
  if (push !== null) signedOut.push((login) => push.forget(login));
  server.on("error", (e) => log(`board: server error: ${e.stack ?? e}`));

  try {
    // Here, before any read worker starts: a missing or stale Console file is one clear line
    // (assets.ts says which command fixes it), not a worker's stack trace first.
    checkAssets();
    if (options.reader !== undefined) {
      const search = options.search ? { search: options.search } : {};
      const handle = createHandler({
        reader: options.reader,
        assets: loadAssets(),
        hosts,
        log,
        ...search,
        ...(options.usage ? { usage: options.usage } : {}),
      });
      dispatch = (request) => Promise.resolve(handle(request));
      const roots = options.roots;
      if (roots !== undefined) live = new LiveHub({ roots, read: dispatch, hosts, log });
      // No registry to watch: the inbox answers, empty, and says it watches nothing.
      inbox = new InboxHub({ hosts, log });
    } else {
      const pool = await startReadPool({
        sources: options.sources,
        hosts: [...hosts],
        lanes: options.lanes ?? defaultLanes(),
        log,
      });
      dispatch = (request) => pool.handle(request);
      stopReading = () => pool.close();
      readers = () => ({ running: pool.running, slabChunksInUse: pool.slabInUse });
      const { specs, registrations } = options.sources;
      const { liveRegistry: registryDir } = options.sources;
      if (registryDir !== undefined && control === undefined) {
        const made = createControlRoute({
          registryDir,
          log,
          ...(options.grant === undefined ? {} : { grant: options.grant }),
        });
        control = made.route;
        stopControl = made.close;
        // A login signed out to make room closes its controller connections with it.
        signedOut.push(made.forget);
      }
      inbox = new InboxHub({
        ...(registryDir === undefined ? {} : { registryDir }),
        ...(options.observeGrant === undefined ? {} : { grant: options.observeGrant }),
        ...(options.stallMs === undefined ? {} : { stallMs: options.stallMs }),
        hosts,
        log,
      });
      live = new LiveHub({
        ...(registryDir === undefined ? {} : { registryDir }),
        ...(options.observeGrant === undefined ? {} : { grant: options.observeGrant }),
        roots: () => rootsFromSpecs(specs, registrations),
        read: dispatch,
        hosts,
        log,
      });
    }
  } catch (e) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw e;
  }
  if (push !== null) inbox?.onChange((row) => push.onRow(row));
  ready = true;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${bound.port}/`,
    get loginUrl() {
      return linkOf(madeAuth.token);
    },
    port: bound.port,
    close: () => {
      // Once: a second call gets the first one's outcome rather than "not running".
      closing ??= Promise.all([
        live?.close(),
        inbox?.close(),
        push?.close(),
        stopControl(),
        stopServing(server, handedOver, stopReading),
      ]).then(() => {});
      return closing;
    },
    readers: () => readers(),
    live: () => live?.stats() ?? { followers: 0, watching: 0, reads: 0, observers: 0 },
    mintDeviceLink: (identity) => {
      if (options.devices === undefined) throw new Error("the board keeps no device links");
      const { id, token, expiresAt } = options.devices.mint(identity);
      const base = proxy === null ? `http://${urlHost}:${bound.port}` : proxy.origin;
      return { id, url: `${base}/login?token=${token}`, expiresAt };
    },
  };
}

async function stopServing(
  server: Server,
  handedOver: Set<Socket>,
  stopReading: () => Promise<void>,
): Promise<void> {
  const closed = new Promise<void>((resolve, reject) => {
    server.close((e) => (e ? reject(e) : resolve()));
  });
  // Keep-alive sockets (a browser's) would hold close() open until they time out.
  server.closeAllConnections();
  for (const socket of handedOver) socket.destroy();
  try {
    await closed;
  } finally {
    await stopReading();
  }
}

/** One conversation lane per core, at least 2 (so two conversations rarely wait on each other). */
function defaultLanes(): number {
  return Math.min(MAX_LANES, Math.max(2, Math.min(4, availableParallelism())));
}
