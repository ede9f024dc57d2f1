// A stand-in read worker for read-pool tests: speaks the same messages, answers 200 with the
// thread id, exits on a target ending `/exit` and throws on one ending `/throw`, so a test can crash a lane on purpose;
// one ending `/slow` holds the lane for half a second first. One ending `/stream` answers a
// streamed body of three chunks, a chunk per pull; `/stream-exit` exits at the second pull;
// each cancel is answered with a log line, so a test sees it arrive.
import { parentPort, threadId } from "node:worker_threads";
import type { FromWorker } from "../../src/board/read-messages.ts";
import { isToWorker } from "../../src/board/read-messages.ts";

const port = parentPort;
if (port === null) throw new Error("crashing-worker.ts runs only as a worker thread");
const post = (message: FromWorker) => port.postMessage(message);
const streams = new Map<number, { target: string; sent: number }>();
port.on("message", (message: unknown) => {
  if (!isToWorker(message)) return;
  if (message.type === "cancel") {
    streams.delete(message.id);
    post({ type: "log", line: `cancelled ${message.id}` });
    return;
  }
  if (message.type === "pull") {
    const stream = streams.get(message.id);
    if (stream === undefined) return;
    stream.sent++;
    if (stream.target.endsWith("/stream-exit") && stream.sent === 2) process.exit(4);
    if (stream.sent > 3) {
      streams.delete(message.id);
      post({ type: "end", id: message.id, end: "complete" });
      return;
    }
    post({ type: "chunk", id: message.id, body: Buffer.from(`chunk ${stream.sent};`) });
    return;
  }
  const { target } = message.request;
  if (target.endsWith("/stream") || target.endsWith("/stream-exit")) {
    streams.set(message.id, { target, sent: 0 });
    const reply = { status: 200, headers: {}, body: new Uint8Array(0) };
    post({ type: "reply", id: message.id, reply, streamed: true });
    return;
  }
  if (target.endsWith("/exit")) process.exit(3);
  if (target.endsWith("/throw")) throw new Error("a bug in the worker");
  // A read that holds the lane for a while, as a large conversation's page does.
  if (target.endsWith("/slow")) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  const body = Buffer.from(JSON.stringify({ threadId, target }));
  post({ type: "reply", id: message.id, reply: { status: 200, headers: {}, body } });
});
post({ type: "ready" });
