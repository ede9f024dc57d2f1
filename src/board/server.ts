// The board's HTTP server (SPEC §5): node:http on a loopback address only, serving the Console
// and the reader's two GET routes through routes.ts. Any other bind address is refused before
// a socket opens; the Host header must name the bound address (DNS rebinding).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Reader } from "../reader/reader.ts";
import { loadAssets } from "./assets.ts";
import { SECURITY_HEADERS } from "./reply.ts";
import { createHandler, type Handler } from "./routes.ts";
import type { BoardSearch } from "./search-route.ts";

export type BoardOptions = {
  reader: Reader;
  /** `127.0.0.1` (default), `::1` or `localhost` (binds 127.0.0.1). Nothing else. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Where internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
  /** Full-text search for GET /api/search; without it that route answers search-unavailable. */
  search?: BoardSearch;
};

export type Board = {
  /** `http://127.0.0.1:<port>/` or `http://[::1]:<port>/`. */
  url: string;
  port: number;
  /** Stops listening and closes every open connection. */
  close(): Promise<void>;
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
  const assets = loadAssets();
  const hosts = new Set<string>();
  const handle = createHandler({
    reader: options.reader,
    assets,
    hosts,
    log,
    ...(options.search ? { search: options.search } : {}),
  });

  // requireHostHeader is off so a request without Host gets the board's refusal and headers.
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    respond(req, res, handle);
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    rejectMalformed(error, socket);
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
  server.on("error", (e) => log(`board: server error: ${e.stack ?? e}`));

  return {
    url: `http://${urlHost}:${bound.port}/`,
    port: bound.port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        // Keep-alive sockets (a browser's) would hold close() open until they time out.
        server.closeAllConnections();
      }),
  };
}

function respond(req: IncomingMessage, res: ServerResponse, handle: Handler): void {
  const method = req.method ?? "";
  const out = handle({ method, target: req.url ?? "", host: req.headers.host });
  res.writeHead(out.status, out.headers);
  // HEAD: the same headers as GET, Content-Length included, and no body.
  res.end(method === "HEAD" ? undefined : out.body);
  // The board never reads a request body; one that is sent is drained and discarded.
  req.resume();
}

/** A request Node could not parse (oversize headers, bad syntax): answered with our headers. */
function rejectMalformed(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
  const status = tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
  const headers = Object.entries(SECURITY_HEADERS)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  socket.end(`HTTP/1.1 ${status}\r\n${headers}Content-Length: 0\r\nConnection: close\r\n\r\n`);
}
