// Generators of the hostile session files issue 17 measured, written straight to disk (no Pi:
// the shapes are what matters, and some cannot come from Pi). Shared by bench/hostile.bench.ts
// and the reader's hostile-input tests.
import { closeSync, openSync, writeSync } from "node:fs";

function headerLine(cwd: string): string {
  return `${JSON.stringify({ type: "session", version: 3, id: "hostile", timestamp: "2026-01-01T00:00:00.000Z", cwd })}\n`;
}

/** Appends text through one descriptor in 1 MiB batches. */
function writeBatched(path: string, first: string, count: number, line: (i: number) => string) {
  const fd = openSync(path, "w");
  try {
    writeSync(fd, first);
    let batch = "";
    for (let i = 0; i < count; i++) {
      batch += line(i);
      if (batch.length >= 1 << 20) {
        writeSync(fd, batch);
        batch = "";
      }
    }
    if (batch) writeSync(fd, batch);
  } finally {
    closeSync(fd);
  }
}

const hex8 = (i: number): string => i.toString(16).padStart(8, "0");

/**
 * `count` tiny user messages (about 96 bytes a line). `shape` "chain": each the child of the
 * one before (one branch); "roots": every entry a root (one branch each).
 */
export function writeTinyEntries(
  path: string,
  cwd: string,
  count: number,
  shape: "chain" | "roots",
) {
  writeBatched(path, headerLine(cwd), count, (i) => {
    const parent = shape === "roots" || i === 0 ? "null" : `"${hex8(i - 1)}"`;
    return `{"type":"message","id":"${hex8(i)}","parentId":${parent},"message":{"role":"user","content":""}}\n`;
  });
}

/** One user message whose text is `count` escaped lone surrogates (`\ud83d`, 6 bytes each). */
export function writeLoneSurrogates(path: string, cwd: string, count: number) {
  const text = "\\ud83d".repeat(count);
  writeBatched(path, headerLine(cwd), 1, () => {
    return `{"type":"message","id":"m1","parentId":null,"message":{"role":"user","content":"${text}"}}\n`;
  });
}

/** An assistant tool call whose arguments are arrays nested `depth` deep. */
export function deepToolCallLine(id: string, depth: number): string {
  const args = `{"a":${"[".repeat(depth)}${"]".repeat(depth)}}`;
  return `{"type":"message","id":"${id}","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"x","arguments":${args}}],"stopReason":"toolUse"}}`;
}
