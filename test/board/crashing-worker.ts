// A stand-in read worker for read-pool tests: speaks the same messages, answers 200 with the
// thread id, exits on a target ending `/exit` and throws on one ending `/throw`, so a test can crash a lane on purpose;
// one ending `/slow` holds the lane for half a second first.
import { parentPort, threadId } from "node:worker_threads";
import type { FromWorker } from "../../src/board/read-messages.ts";
import { isToWorker } from "../../src/board/read-messages.ts";

const port = parentPort;
if (port === null) throw new Error("crashing-worker.ts runs only as a worker thread");
const post = (message: FromWorker) => port.postMessage(message);
port.on("message", (message: unknown) => {
  if (!isToWorker(message) || message.type !== "request") return;
  const { target } = message.request;
  if (target.endsWith("/exit")) process.exit(3);
  if (target.endsWith("/throw")) throw new Error("a bug in the worker");
  // A read that holds the lane for a while, as a large conversation's page does.
  if (target.endsWith("/slow")) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  const body = Buffer.from(JSON.stringify({ threadId, target }));
  post({ type: "reply", id: message.id, reply: { status: 200, headers: {}, body } });
});
post({ type: "ready" });
