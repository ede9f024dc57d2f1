// A reply whose body is sent as it is made (the export route): the socket asks for each chunk
// once the last one is written, so at most a chunk or two is held however long the body.
// The status is sent before the body is known whole, so a body that stops early (a refusal
// part-way) cannot change it: the body says so in its last section, and the response is cut
// without its terminating chunk, so no HTTP client takes it as whole (docs/board.md, Export).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ExportEnd, ExportSink } from "../export/index.ts";

/** The end of a streamed body: whole, or stopped early (said in the body itself). */
export type StreamEnd = "complete" | "stopped";

export type Pulled = { chunk: Buffer } | { end: StreamEnd };

/** A body made on demand: `pull` gives the next chunk or the end; `cancel` stops the making. */
export type ReplyStream = {
  pull(): Promise<Pulled>;
  cancel(): void;
};

/**
 * `write` (an export's) as a stream read by pulls: it runs on the first pull, and each chunk it
 * writes waits until a pull takes it. Cancelled, it stops at its next chunk and reads no more.
 */
export function pulledFrom(
  write: (sink: ExportSink, signal: AbortSignal) => Promise<ExportEnd>,
  log: (line: string) => void,
): ReplyStream {
  const abort = new AbortController();
  let held: Buffer | null = null;
  let taken: (() => void) | null = null;
  let waiting: ((p: Pulled) => void) | null = null;
  let ended: StreamEnd | null = null;
  let started = false;
  const offer = (p: Pulled) => {
    const wake = waiting;
    waiting = null;
    wake?.(p);
  };
  const sink: ExportSink = {
    write(text) {
      if (abort.signal.aborted) return;
      const chunk = Buffer.from(text, "utf8");
      return new Promise<void>((resolve) => {
        if (waiting !== null) {
          // A pull is waiting: it takes the chunk now, and the export goes on.
          offer({ chunk });
          resolve();
          return;
        }
        held = chunk;
        taken = resolve;
      });
    },
  };
  const run = () => {
    started = true;
    write(sink, abort.signal).then(
      (end) => finish(end.ok ? "complete" : "stopped"),
      // A bug in the export: logged, and the body is cut (its client sees it incomplete).
      (e: unknown) => {
        log(`board: internal error in an export: ${e instanceof Error ? e.stack : e}`);
        finish("stopped");
      },
    );
  };
  const finish = (end: StreamEnd) => {
    ended = end;
    if (held === null) offer({ end });
  };
  return {
    pull() {
      if (held !== null) {
        const chunk = held;
        held = null;
        const resume = taken;
        taken = null;
        resume?.();
        return Promise.resolve({ chunk });
      }
      if (ended !== null) return Promise.resolve({ end: ended });
      const next = new Promise<Pulled>((resolve) => {
        waiting = resolve;
      });
      if (!started) run();
      return next;
    },
    cancel() {
      abort.abort();
      held = null;
      const resume = taken;
      taken = null;
      resume?.();
      offer({ end: "stopped" });
    },
  };
}

/**
 * Sends a streamed reply: the head (no Content-Length: chunked), then each chunk once the last
 * is written. A complete body ends the response; a stopped one is cut once its last chunk is
 * out. HEAD sends the head only; a client that goes away cancels the stream.
 */
export async function sendStream(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  stream: ReplyStream,
): Promise<void> {
  if (req.method === "HEAD" || res.destroyed) {
    stream.cancel();
    if (!res.destroyed) {
      res.writeHead(status, headers);
      res.end();
    }
    return;
  }
  res.once("close", () => stream.cancel());
  res.writeHead(status, headers);
  let written: Promise<void> = Promise.resolve();
  for (;;) {
    const next = await stream.pull();
    if (res.destroyed) return;
    if ("chunk" in next) {
      written = new Promise((resolve) => {
        if (!res.write(next.chunk, () => resolve())) void drained(res).then(() => resolve());
      });
      await written;
      continue;
    }
    if (next.end === "complete") {
      res.end();
      return;
    }
    // The last chunk is handed to the socket first; then the connection goes without the
    // terminating chunk of the chunked body.
    await written;
    res.destroy();
    return;
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}
