// The reader as every suite uses it: each call is checked against the CHAT-01 schema and runs
// inside a fingerprint of the fixture tree, so no suite can forget either guarantee.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import {
  type BoardSpec,
  type Catalogue,
  createReader,
  type NextRequest,
  type OpenRequest,
  type Reader,
  type ReaderOptions,
  type ReadResult,
  type Root,
  rootsFromSpecs,
  type SeatRegistration,
  sessionsDirOf,
} from "../../src/index.ts";
import { assertUnchanged, fingerprintTree } from "./fingerprint.ts";
import { assertReadResult, assertValid } from "./schema.ts";

/** A fresh temporary directory, removed when the test ends. */
export function tempDir(t: TestContext, prefix = "conv-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export type Project = { base: string; projectRoot: string; seat: string; sessionsDir: string };

/** `<base>/<project>` with `.pi/state/<seat>/sessions` created. */
export function project(base: string, name = "demo", seat = "main"): Project {
  const projectRoot = join(base, name);
  const sessionsDir = sessionsDirOf(projectRoot, seat);
  mkdirSync(sessionsDir, { recursive: true });
  return { base, projectRoot, seat, sessionsDir };
}

export const T0 = Date.parse("2026-01-01T00:00:00.000Z");
export function ts(n: number): string {
  return new Date(T0 + n * 1000).toISOString();
}

export function header(cwd: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "session",
    version: 3,
    id: "01a00000-0000-7000-8000-000000000001",
    timestamp: ts(0),
    cwd,
    ...extra,
  };
}

export function user(
  id: string,
  parentId: string | null,
  text: string,
  n = 1,
): Record<string, unknown> {
  return {
    type: "message",
    id,
    parentId,
    timestamp: ts(n),
    message: { role: "user", content: text, timestamp: T0 + n },
  };
}

export function assistant(
  id: string,
  parentId: string | null,
  text: string,
  n = 2,
): Record<string, unknown> {
  return {
    type: "message",
    id,
    parentId,
    timestamp: ts(n),
    message: {
      role: "assistant",
      content: [{ type: "text", text }],
      stopReason: "stop",
      timestamp: T0 + n,
    },
  };
}

/** Writes a session file from lines: objects are JSON-encoded, strings written as they are. */
export function writeSession(
  dir: string,
  name: string,
  lines: (object | string)[],
  tail = "\n",
): string {
  const path = join(dir, name);
  const body = lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n");
  writeFileSync(path, lines.length === 0 ? "" : body + tail);
  return path;
}

export type CheckedReader = Reader & { raw: Reader };

/**
 * A reader over `roots` whose every call is fingerprinted (the tree under `watch` must not
 * change) and whose every result is schema-valid.
 */
export function checkedReader(watch: string, options: ReaderOptions): CheckedReader {
  const raw = createReader(options);
  const guard = <T>(fn: () => T): T => {
    const before = fingerprintTree(watch);
    const out = fn();
    assertUnchanged(before, fingerprintTree(watch));
    return out;
  };
  return {
    raw,
    catalogue(): Catalogue {
      const c = guard(() => raw.catalogue());
      assertValid("catalogue", c);
      return c;
    },
    open(req: OpenRequest): ReadResult {
      const r = guard(() => raw.open(req));
      assertReadResult(r);
      return r;
    },
    next(req: NextRequest): ReadResult {
      const r = guard(() => raw.next(req));
      assertReadResult(r);
      return r;
    },
  };
}

export function rootsOf(specs: BoardSpec[], registrations: SeatRegistration[] = []): () => Root[] {
  return () => rootsFromSpecs(specs, registrations);
}

/** A checked reader over one project's seat. */
export function readerFor(p: Project, extra: Partial<ReaderOptions> = {}): CheckedReader {
  return checkedReader(p.base, {
    roots: rootsOf([{ kind: "repository", projectRoot: p.projectRoot, seat: p.seat }]),
    ...extra,
  });
}

/** The single conversation id of a file name in the project (from the catalogue). */
export function idOf(reader: Reader, fileName: string): string {
  const row = reader.catalogue().conversations.find((r) => r.fileName === fileName);
  if (!row) throw new Error(`no catalogue row for ${fileName}`);
  return row.conversation;
}

export function expectOk(r: ReadResult): Extract<ReadResult, { ok: true }> {
  if (!r.ok)
    throw new Error(`expected a page, got refusal ${r.refusal.code}: ${r.refusal.message}`);
  return r;
}

export function expectRefusal(r: ReadResult, code: string): void {
  if (r.ok) throw new Error(`expected refusal ${code}, got a page`);
  if (r.refusal.code !== code) {
    throw new Error(`expected refusal ${code}, got ${r.refusal.code}: ${r.refusal.message}`);
  }
}

/** Reads a whole branch: open, then every page; returns the parts and the final result. */
export function readAll(
  reader: Reader,
  conversation: string,
  branch?: string,
): {
  parts: Extract<ReadResult, { ok: true }>["page"]["parts"];
  last: Extract<ReadResult, { ok: true }>;
  pages: number;
} {
  let r = expectOk(reader.open(branch === undefined ? { conversation } : { conversation, branch }));
  const parts = [...r.page.parts];
  let pages = 1;
  while (r.cursor) {
    r = expectOk(reader.next({ cursor: r.cursor.id, conversation, branch: r.page.branch }));
    parts.push(...r.page.parts);
    pages++;
  }
  return { parts, last: r, pages };
}

/** Entry keys of the parts in order, each entry once. */
export function entriesOf(parts: { entry: string }[]): string[] {
  const out: string[] = [];
  for (const p of parts) if (out[out.length - 1] !== p.entry) out.push(p.entry);
  return out;
}
