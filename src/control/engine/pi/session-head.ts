// What the controller reads of its session file: the Pi header id (the claim's session key) and
// the default leaf as Pi loads it (the last valid entry in file order, reader parser rule).
// Reads only; never writes or renames the file (W11). Refuses `mapping`, `configuration`.
import { lstatSync, readFileSync } from "node:fs";
import { ID_PATTERN } from "../../../protocol/chat-01.ts";
import { ControlRefusal } from "../../refusal.ts";

export type SessionHead = { headerId: string; leafId: string | null; bytes: number };

/**
 * Reads the header id and the default leaf. Refuses `mapping` when the file is gone or is no
 * longer a regular file at its place, `configuration` when line 1 is not a Pi header whose id
 * is a CHAT-01 id.
 */
export function readSessionHead(file: string): SessionHead {
  let buf: Buffer;
  try {
    const st = lstatSync(file);
    if (!st.isFile()) throw new ControlRefusal("mapping", `${file} is no longer a regular file`);
    buf = readFileSync(file);
  } catch (e) {
    if (e instanceof ControlRefusal) throw e;
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new ControlRefusal("mapping", `the session file can't be read at its place (${code})`);
  }
  const text = buf.toString("utf8");
  // Only complete lines count, as the reader's snapshots: a trailing partial line is left out.
  const complete = text.slice(0, text.lastIndexOf("\n") + 1);
  const lines = complete.split("\n").filter((l) => l.trim() !== "");
  const header = parseObject(lines[0]);
  if (header === null || header.type !== "session" || typeof header.id !== "string") {
    throw new ControlRefusal("configuration", "the session file's first line is not a Pi header");
  }
  if (!ID_PATTERN.test(header.id)) {
    throw new ControlRefusal("configuration", "the session header id is not a CHAT-01 id");
  }
  let leafId: string | null = null;
  for (const line of lines.slice(1)) {
    const entry = parseObject(line);
    if (entry !== null && typeof entry.id === "string" && typeof entry.type === "string") {
      leafId = entry.id;
    }
  }
  return { headerId: header.id, leafId, bytes: buf.length };
}

function parseObject(line: string | undefined): Record<string, unknown> | null {
  if (line === undefined) return null;
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  } catch {
    // A malformed line is not an entry; Pi skips it on load too (research §1.2).
    return null;
  }
}
