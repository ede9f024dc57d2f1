// fake-pi's session file, kept as Pi's SessionManager keeps it (session-manager.js:739-816):
// header, entries, a leaf that is the last entry, appends as whole lines, and a new file written
// only once it holds an assistant message. Entry ids are 8 hex digits, derived from the header
// id and a counter so runs are deterministic.
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { encodeLine } from "../../src/control/engine/framing.ts";

export type Entry = { type: string; id: string; parentId: string | null; [key: string]: unknown };
export type Message = { role: string; [key: string]: unknown };

/** A file fake-pi cannot load; it exits 1 with the message, as Pi does. */
export class SessionError extends Error {}

/** The session file as Pi's SessionManager keeps it: header, entries, leaf, lazy first write. */
export class Session {
  readonly file: string;
  header: { type: "session"; id: string; cwd: string; [key: string]: unknown };
  entries: Entry[] = [];
  leafId: string | null = null;
  // Pi writes a new file only once it holds an assistant message (session-manager.js:739-768).
  #flushed: boolean;
  #counter = 0;

  constructor(file: string) {
    this.file = file;
    const exists = existsSync(file);
    if (exists && statSync(file).size > 0) {
      const lines = readFileSync(file, "utf8").split("\n");
      const parsed: unknown[] = [];
      for (const line of lines) {
        if (!line.trim()) continue;
        try {
          parsed.push(JSON.parse(line));
        } catch {
          // Pi drops malformed lines on load too (research §1.2); the fake models only that.
        }
      }
      const [head, ...rest] = parsed as Entry[];
      if (head?.type !== "session")
        throw new SessionError(`fake-pi: ${file} has no session header`);
      this.header = head as unknown as Session["header"];
      this.entries = rest.filter((e) => typeof e.id === "string");
      this.leafId = this.entries.at(-1)?.id ?? null;
      this.#flushed = true;
    } else {
      const id = `01f00000-0000-7000-8000-${hash(file).slice(0, 12)}`;
      this.header = {
        type: "session",
        version: 3,
        id,
        timestamp: new Date().toISOString(),
        cwd: process.cwd(),
      };
      // A 0-byte file becomes a new session written at once (session-manager.js:625-635).
      this.#flushed = exists;
      if (exists) writeFileSync(file, encodeLine(this.header));
    }
  }

  branch(): Entry[] {
    const byId = new Map(this.entries.map((e) => [e.id, e]));
    const out: Entry[] = [];
    for (let id = this.leafId; id !== null; ) {
      const e = byId.get(id);
      if (!e || out.includes(e)) break;
      out.push(e);
      id = e.parentId;
    }
    return out.reverse();
  }

  contextMessages(): number {
    return this.branch().filter((e) => e.type === "message").length;
  }

  append(fields: { type: string; [key: string]: unknown }): Entry {
    // Key order as session-manager.js:781-816 writes it.
    const { type, ...rest } = fields;
    const entry: Entry = {
      type,
      id: this.#newId(),
      parentId: this.leafId,
      timestamp: new Date().toISOString(),
      ...rest,
    };
    this.entries.push(entry);
    this.leafId = entry.id;
    const hasAssistant = this.entries.some(
      (e) => e.type === "message" && (e.message as Message).role === "assistant",
    );
    if (this.#flushed) appendFileSync(this.file, encodeLine(entry));
    else if (hasAssistant) {
      writeFileSync(this.file, [this.header, ...this.entries].map(encodeLine).join(""), {
        flag: "wx",
      });
      this.#flushed = true;
    }
    return entry;
  }

  tree(): unknown[] {
    type Node = { entry: Entry; children: Node[] };
    const nodes = new Map<string, Node>(
      this.entries.map((e) => [e.id, { entry: e, children: [] }]),
    );
    const roots: Node[] = [];
    for (const e of this.entries) {
      const node = nodes.get(e.id)!;
      const parent = e.parentId === null ? undefined : nodes.get(e.parentId);
      (parent ? parent.children : roots).push(node);
    }
    const ms = (n: Node) => Date.parse(String(n.entry.timestamp));
    for (const n of nodes.values()) n.children.sort((a, b) => ms(a) - ms(b));
    return roots;
  }

  #newId(): string {
    const taken = new Set(this.entries.map((e) => e.id));
    for (;;) {
      const id = hash(`${this.header.id}:${++this.#counter}`).slice(0, 8);
      if (!taken.has(id)) return id;
    }
  }
}

function hash(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}
