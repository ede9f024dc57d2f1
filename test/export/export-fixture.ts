// Sessions and sinks for the export suites: a long session of many pages (tool output of a
// known size per turn), an export read into a string with the size of each chunk it came in,
// and a reader that replaces the session file part-way through a read.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { type ExportFormat, openExport } from "../../src/export/index.ts";
import type { Reader } from "../../src/reader/reader.ts";
import {
  assistant,
  header,
  project,
  readerFor,
  tempDir,
  ts,
  user,
  writeSession,
} from "../helpers/reader.ts";

export const NOW = new Date("2026-02-03T04:05:06.000Z");

/** One turn's tool output: `bytes` of numbered lines, so every line is different. */
export function outputOf(turn: number, bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `turn ${turn} line ${i}: the quick brown fox jumps over the lazy dog`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

function toolTurn(n: number, parent: string | null, output: string): object[] {
  const call = `call_${n}`;
  return [
    user(`u${n}`, parent, `Run step ${n}`, 3 * n),
    {
      type: "message",
      id: `a${n}`,
      parentId: `u${n}`,
      timestamp: ts(3 * n + 1),
      message: {
        role: "assistant",
        content: [
          { type: "toolCall", id: call, name: "bash", arguments: { command: `step ${n}` } },
        ],
        stopReason: "toolUse",
        usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, cost: { total: 0.001 } },
        timestamp: 3 * n + 1,
      },
    },
    {
      type: "message",
      id: `r${n}`,
      parentId: `a${n}`,
      timestamp: ts(3 * n + 2),
      message: {
        role: "toolResult",
        toolCallId: call,
        toolName: "bash",
        isError: false,
        content: [{ type: "text", text: output }],
        timestamp: 3 * n + 2,
      },
    },
  ];
}

export type LongSession = {
  reader: Reader;
  conversation: string;
  file: string;
  projectRoot: string;
};

/** A session of `turns` tool turns of `outputBytes` each, ending with an assistant's reply. */
export function writeLongSession(
  t: TestContext,
  turns: number,
  outputBytes: number,
  extra: object[] = [],
): LongSession {
  const p = project(tempDir(t, "export-long-"));
  const lines: object[] = [header(p.projectRoot)];
  let last: string | null = null;
  for (let n = 0; n < turns; n++) {
    lines.push(...toolTurn(n, last, outputOf(n, outputBytes)));
    last = `r${n}`;
  }
  for (const line of extra) {
    lines.push({ ...line, parentId: last });
    last = (line as { id: string }).id;
  }
  lines.push(assistant("end", last, "All steps ran.", 3 * turns + 10));
  const file = writeSession(p.sessionsDir, "long.jsonl", lines);
  const reader = readerFor(p).raw;
  const row = reader.catalogue().conversations[0];
  if (row === undefined) throw new Error("no conversation in the long session");
  return { reader, conversation: row.conversation, file, projectRoot: p.projectRoot };
}

export type Exported = {
  text: string;
  chunks: number;
  largestChunk: number;
  end: Awaited<ReturnType<Extract<ReturnType<typeof openExport>, { ok: true }>["value"]["write"]>>;
};

/** The export of the default branch in `format`, read into a string chunk by chunk. */
export async function exportText(
  reader: Reader,
  conversation: string,
  format: ExportFormat,
  onChunk: (text: string) => void = () => {},
): Promise<Exported> {
  const opened = openExport(reader, { conversation, format }, NOW);
  if (!opened.ok) throw new Error(`export refused: ${opened.refusal.code}`);
  const parts: string[] = [];
  let largestChunk = 0;
  const end = await opened.value.write({
    write(text) {
      parts.push(text);
      largestChunk = Math.max(largestChunk, text.length);
      onChunk(text);
    },
  });
  return { text: parts.join(""), chunks: parts.length, largestChunk, end };
}

/**
 * `reader`, except that its `after`-th `next` first replaces the session file by another (a
 * rename over it, as an editor or a sync tool does), so that read and every later one refuse.
 */
export function replacingReader(reader: Reader, file: string, after = 1): Reader {
  let calls = 0;
  return {
    catalogue: () => reader.catalogue(),
    open: (request) => reader.open(request),
    next(request) {
      calls++;
      if (calls === after) {
        const aside = join(file, "..", "replacement.tmp");
        writeFileSync(aside, `${JSON.stringify(header("/elsewhere"))}\n`);
        renameSync(aside, file);
      }
      return reader.next(request);
    },
  };
}
