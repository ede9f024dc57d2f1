// A tiny HTTP client for the board suites: node:http, so a test can send any Host header (or
// none) and any method, plus a raw-socket request for what no client library will send.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { DEADLINE_MS } from "../helpers/deadline.ts";

export type Answer = { status: number; headers: IncomingHttpHeaders; text: string; json: unknown };

/**
 * Sends one request to 127.0.0.1:port. `host` overrides the Host header; `null` sends none.
 * Rejects after a deadline.
 */
export function send(
  port: number,
  path: string,
  opts: {
    method?: string;
    host?: string | null;
    headers?: Record<string, string>;
    /** The deadline; DEADLINE_MS unless a test expects a slower answer (or means it to run out). */
    timeoutMs?: number;
    /** A request body (a POST's). */
    body?: string;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (typeof opts.host === "string") headers.host = opts.host;
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method: opts.method ?? "GET",
        headers,
        setHost: opts.host !== null,
        agent: false,
        signal: AbortSignal.timeout(opts.timeoutMs ?? DEADLINE_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = text === "" ? undefined : JSON.parse(text);
          } catch {
            // Not JSON (the Console's files): `text` carries it.
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** Writes `raw` to the port and returns everything the server sends before it closes. */
export function sendRaw(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("raw request: no answer before the deadline"));
    }, DEADLINE_MS);
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      // One response is enough; the board may keep the connection open.
      const all = Buffer.concat(chunks);
      const end = all.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(all.toString("latin1"))?.[1];
      if (end >= 0 && length !== undefined && all.length >= end + 4 + Number(length)) {
        socket.end();
      }
    });
    socket.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    socket.write(raw);
  });
}
