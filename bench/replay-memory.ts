// The replay buffer's memory (issue 16 item 1): the heap an EventStream holds when full at each
// bound. Fills one stream with events shaped like a run's (a text-delta of ~60 characters, and
// for the byte bound a message-ended carrying a 64 KiB tool output), forces a GC, and compares
// heapUsed with an empty stream's. Run with --expose-gc:
//
//   node --expose-gc bench/replay-memory.ts
import {
  EventStream,
  REPLAY_MAX_BYTES,
  REPLAY_MAX_EVENTS,
} from "../src/control/controller/events.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error("run with --expose-gc");
  process.exit(2);
}

function heap(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

function measure(name: string, fill: (s: EventStream) => void): void {
  const before = heap();
  const s = new EventStream();
  fill(s);
  const after = heap();
  const { events, bytes } = s.kept;
  const mib = (n: number) => (n / 1024 / 1024).toFixed(2);
  console.log(
    `${name}: ${events} events, ${mib(bytes)} MiB of lines, heap +${mib(after - before)} MiB`,
  );
  // Keep the stream alive until measured.
  if (s.nextSequence < 0) console.log(s);
}

measure(`count bound (${REPLAY_MAX_EVENTS} text deltas)`, (s) => {
  for (let n = 0; n < REPLAY_MAX_EVENTS * 2; n++) {
    s.next({ kind: "text-delta", delta: `word ${n} `.padEnd(60, "x") });
  }
});

measure(`byte bound (${REPLAY_MAX_BYTES / 1024 / 1024} MiB, 64 KiB messages)`, (s) => {
  const output = "y".repeat(64 * 1024);
  for (let n = 0; n < 400; n++) {
    s.next({
      kind: "message-ended",
      role: "toolResult",
      stopReason: null,
      message: { role: "toolResult", content: [{ type: "text", text: output }] },
    });
  }
});
