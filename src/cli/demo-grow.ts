// The demo's live writer: appends one message entry at a time to a session file, as Pi's
// `_persist` does (one whole line per write, session-manager.js:739-768), chained to the
// file's last valid entry. It never creates the file; it stops after `maxAppends`, and
// `restoreLive` puts the file back as first written when `npm start` starts, so the demo
// stays small however often and long it runs.
import { randomUUID } from "node:crypto";
import { closeSync, constants, copyFileSync, openSync, readFileSync, writeSync } from "node:fs";

/** Appends per run: at the demo's 3 s, six minutes of live messages (about 50 KB). */
export const MAX_APPENDS = 120;

type Role = "user" | "assistant";
export type GrowEntry = { id: string; parentId: string | null; role: Role };

const SCRIPT: [user: string, assistant: string][] = [
  ["Is the build still green?", "Yes: 214 tests passed in 9.1 s."],
  ["Anything new in the logs?", "One warning: a cursor expired while a tab was in the background."],
  ["Is that a problem?", "No. The Console re-reads from the start when a cursor expires."],
  ["How big is the session file now?", "Still small; the reader hashes it on every page anyway."],
  ["Run the browser test again.", "Done: catalogue, branches, load more and follow all pass."],
  ["Thanks. Keep watching.", "Watching. I'll write here when something changes."],
];

/** The last entry in `text` that has a string id (the session header excluded). */
function lastEntry(
  text: string,
): { id: string; role: unknown; ids: Set<string>; users: number } | null {
  const ids = new Set<string>();
  let users = 0;
  let last: { id: string; role: unknown } | null = null;
  for (const line of text.split("\n")) {
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch {
      // A malformed or empty line holds no entry to chain to; the reader shows it as a notice.
      continue;
    }
    if (typeof obj !== "object" || obj === null) continue;
    const e = obj as { type?: unknown; id?: unknown; message?: { role?: unknown } };
    if (e.type === "session" || typeof e.id !== "string") continue;
    ids.add(e.id);
    if (e.type === "message" && e.message?.role === "user") users++;
    last = { id: e.id, role: e.type === "message" ? e.message?.role : undefined };
  }
  return last ? { ...last, ids, users } : null;
}

/** Pi's entry ids: 8 hex digits, unique in the file (session-manager.js:21-29). */
function newId(taken: Set<string>): string {
  for (;;) {
    const id = randomUUID().slice(0, 8);
    if (!taken.has(id)) return id;
  }
}

/** A Pi message entry for `file`: a fresh id, the file's last entry as parent. */
export function messageEntry(file: string, role: Role, text: string): Record<string, unknown> {
  const last = lastEntry(readFileSync(file, "utf8"));
  const now = Date.now();
  const message =
    role === "user"
      ? { role, content: text, timestamp: now }
      : {
          role,
          content: [{ type: "text", text }],
          api: "anthropic-messages",
          provider: "anthropic",
          model: "claude-sonnet-4-5",
          usage: {
            input: 900,
            output: 40,
            cacheRead: 0,
            cacheWrite: 0,
            reasoning: 0,
            totalTokens: 940,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
          },
          stopReason: "stop",
          timestamp: now,
        };
  return {
    type: "message",
    id: newId(last?.ids ?? new Set()),
    parentId: last?.id ?? null,
    timestamp: new Date(now).toISOString(),
    message,
  };
}

/**
 * Appends the next message of the script: a question after an assistant message, else the
 * answer to the last question asked.
 */
export function appendNext(file: string): GrowEntry {
  const last = lastEntry(readFileSync(file, "utf8"));
  const users = last?.users ?? 0;
  const role: Role = last?.role === "user" ? "assistant" : "user";
  const text =
    role === "user"
      ? SCRIPT[users % SCRIPT.length]![0]
      : SCRIPT[(users + SCRIPT.length - 1) % SCRIPT.length]![1];
  const entry = messageEntry(file, role, text);
  // O_APPEND without O_CREAT: a file that is gone is not made again.
  const fd = openSync(file, constants.O_WRONLY | constants.O_APPEND);
  try {
    writeSync(fd, `${JSON.stringify(entry)}\n`);
  } finally {
    closeSync(fd);
  }
  return { id: entry.id as string, parentId: entry.parentId as string | null, role };
}

export type GrowOptions = {
  /** Milliseconds between appends (default 3000). */
  intervalMs?: number;
  /** Appends before the writer stops (default MAX_APPENDS). */
  maxAppends?: number;
  /** Called once when the writer stops at maxAppends. */
  onCapped?: (appends: number) => void;
  onAppend?: (entry: GrowEntry) => void;
  /** A failed append (the file is gone); the writer keeps trying at the next tick. */
  onError?: (error: Error) => void;
};

/**
 * Appends an entry to `file` every interval until the returned stop function is called, or
 * until `maxAppends` entries were appended (a failed append doesn't count).
 */
export function startGrowing(file: string, options: GrowOptions = {}): () => void {
  const max = options.maxAppends ?? MAX_APPENDS;
  let appends = 0;
  const timer = setInterval(() => {
    try {
      // Appended first: `onAppend?.(appendNext(...))` would skip the append with no listener.
      const entry = appendNext(file);
      appends++;
      options.onAppend?.(entry);
    } catch (e) {
      options.onError?.(e as Error);
    }
    if (appends >= max) {
      clearInterval(timer);
      options.onCapped?.(appends);
    }
  }, options.intervalMs ?? 3000);
  return () => clearInterval(timer);
}

/**
 * Puts the demo's live file back as first written, from the copy `saveLive` kept (outside the
 * demo project, where no reader looks). The demo owns both files; a reader following the old
 * content sees a rewrite and starts again.
 */
export function restoreLive(copy: string, file: string): void {
  copyFileSync(copy, file);
}

/** Keeps the live file as first written, for restoreLive. */
export function saveLive(file: string, copy: string): void {
  copyFileSync(file, copy);
}
