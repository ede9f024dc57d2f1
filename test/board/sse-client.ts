// A Server-Sent Events client for the board suites: node:http, events parsed as they arrive,
// the raw text kept so a test can check the framing itself. Every wait has a deadline.
import { request as httpRequest } from "node:http";
import { DEADLINE_MS } from "../helpers/deadline.ts";

export type SseEvent = { event: string; id: string | null; data: string };

/** One open SSE stream: its events as they arrive, and the raw lines (for the CR/LF check). */
export type Stream = {
  status: number;
  events: SseEvent[];
  raw: string;
  next(deadlineMs?: number): Promise<SseEvent>;
  close(): void;
};

export function openStream(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<Stream> {
  return new Promise((resolve, reject) => {
    // A deadline on the answer's head only: a signal on the request would end the stream itself
    // at its deadline (a hundred streams opened one by one at load 20 lost their first three).
    const answered = setTimeout(
      () => req.destroy(new Error(`no SSE answer within ${DEADLINE_MS} ms`)),
      DEADLINE_MS,
    );
    const req = httpRequest({ host: "127.0.0.1", port, path, headers, agent: false }, (res) => {
      clearTimeout(answered);
      const events: SseEvent[] = [];
      let taken = 0;
      let buffer = "";
      const waiters: (() => void)[] = [];
      const stream: Stream = {
        status: res.statusCode ?? 0,
        events,
        raw: "",
        next: (deadlineMs = DEADLINE_MS) =>
          new Promise((ok, fail) => {
            const timer = setTimeout(() => fail(new Error("no SSE event in time")), deadlineMs);
            const check = () => {
              const e = events[taken];
              if (e === undefined) return waiters.push(check);
              taken++;
              clearTimeout(timer);
              ok(e);
            };
            check();
          }),
        close: () => req.destroy(),
      };
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        stream.raw += chunk;
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const e: SseEvent = { event: "message", id: null, data: "" };
          let any = false;
          for (const line of block.split("\n")) {
            const colon = line.indexOf(": ");
            const name = line.slice(0, colon);
            const value = line.slice(colon + 2);
            if (name === "event") e.event = value;
            else if (name === "id") e.id = value;
            else if (name === "data") {
              e.data = value;
              any = true;
            }
          }
          if (any) events.push(e);
        }
        for (const w of waiters.splice(0)) w();
      });
      res.on("error", () => {});
      resolve(stream);
    });
    req.on("error", (e) => {
      clearTimeout(answered);
      if (e.name !== "AbortError" && !("code" in e && e.code === "ECONNRESET")) reject(e);
    });
    req.end();
  });
}
