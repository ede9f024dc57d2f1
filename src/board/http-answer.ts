// How the board answers at the HTTP level, around the routes: a version or a repeated Host it
// refuses before routing, a Reply written to a response (or handed to a stream), CONNECT's
// hand-written answer, and a request node:http could not parse, each with the board's headers.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { boardRefusal, type Reply, rawResponse, SECURITY_HEADERS } from "./reply.ts";
import type { BoardRequest } from "./routes.ts";
import { sendStream } from "./stream-reply.ts";

/** Answers one request that passed the HTTP-level checks; never rejects. */
export type Dispatch = (request: BoardRequest) => Promise<Reply>;

/**
 * What the board refuses before a request is routed: a version other than HTTP/1.0 or 1.1
 * (llhttp parses `HTTP/2.0` and `HTTP/0.9`), and a repeated `Host`, which node:http would
 * reduce to its first value — a second one could be what a proxy in between acted on.
 */
export function refuseAtHttpLevel(req: IncomingMessage): Reply | null {
  if (req.httpVersionMajor !== 1 || (req.httpVersionMinor !== 0 && req.httpVersionMinor !== 1)) {
    return boardRefusal(
      "http-version-not-supported",
      `The board speaks HTTP/1.0 and HTTP/1.1 only, not HTTP/${req.httpVersionMajor}.${req.httpVersionMinor}.`,
    );
  }
  if ((req.headersDistinct.host?.length ?? 0) > 1) {
    return boardRefusal("bad-request", "The request has more than one Host header.");
  }
  return null;
}

export function requestOf(req: IncomingMessage): BoardRequest {
  return {
    method: req.method ?? "",
    target: req.url ?? "",
    host: req.headers.host,
    ifNoneMatch: req.headers["if-none-match"],
  };
}

export async function answerConnect(req: IncomingMessage, socket: Socket, dispatch: Dispatch) {
  const out = refuseAtHttpLevel(req) ?? (await dispatch(requestOf(req)));
  const bytes = rawResponse(out); // a copy: the body's memory can go back at once
  out.release?.();
  if (!socket.destroyed) socket.end(bytes);
}

export async function respond(req: IncomingMessage, res: ServerResponse, dispatch: Dispatch) {
  // The board never reads a request body; one that is sent is drained and discarded.
  req.resume();
  await writeReply(req, res, refuseAtHttpLevel(req) ?? (await dispatch(requestOf(req))));
}

export async function writeReply(
  req: IncomingMessage,
  res: ServerResponse,
  out: Reply,
): Promise<void> {
  // The client may have gone while a worker read; there is no one left to answer.
  if (res.destroyed || res.writableEnded) {
    out.release?.();
    out.stream?.cancel();
    return;
  }
  if (out.stream) return sendStream(req, res, out.status, out.headers, out.stream);
  // Shared memory goes back once the response is over: sent whole (the socket's write of it
  // has completed by then) or cut off. 'close' is emitted in both cases.
  if (out.release) res.once("close", out.release);
  res.writeHead(out.status, out.headers);
  // HEAD: the same headers as GET, Content-Length included, and no body.
  res.end(req.method === "HEAD" ? undefined : out.body);
}

/** A request Node could not parse (oversize headers, bad syntax): answered with our headers. */
export function rejectMalformed(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  if (error.code === "HPE_INVALID_VERSION") {
    // `HTTP/1.2`, `HTTP/3.0`: llhttp stops at the version, so nothing else is known.
    socket.end(
      rawResponse(
        boardRefusal("http-version-not-supported", "The board speaks HTTP/1.0 and HTTP/1.1 only."),
      ),
    );
    return;
  }
  const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
  const status = tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
  const headers = Object.entries(SECURITY_HEADERS)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  socket.end(`HTTP/1.1 ${status}\r\n${headers}Content-Length: 0\r\nConnection: close\r\n\r\n`);
}
