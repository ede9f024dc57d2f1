// The catalogue: one row per session file in the approved roots (Pi's own store counts each of
// its `--…--` directories as a root), plus one row per unsupported root. It stays cheap: a file
// is read only when its (dev, ino, size, mtime) changed since the last listing, and then only
// its first and last 64 KiB (header, title, preview, model); the message count alone reads every
// line, once per file version and from where it stopped when the file only grew
// (message-count.ts).

import type { BigIntStats } from "node:fs";
import { join } from "node:path";
import type {
  Catalogue,
  CatalogueRow,
  ReaderRefusalCode,
  RefusedRoot,
} from "../protocol/chat-01.ts";
import { expandRoots } from "./expand.ts";
import { parentFileOf } from "./fork-parent.ts";
import { harnessOf } from "./harness/index.ts";
import { type Budget, COUNT_BUDGET, type CountState, countMessages } from "./message-count.ts";
import { isRefusal, Refusal } from "./refusal.ts";
import {
  closeDirectory,
  closeFile,
  type DirHandle,
  listDirectory,
  lstatIn,
  openFileIn,
  openSessionsDirectory,
  readRange,
} from "./safe-fs.ts";
import {
  CLAUDE_HARNESS,
  conversationIdOf,
  engineStartedAtFor,
  type FileRoot,
  isFileRoot,
  PI_HARNESS,
  type PiRoot,
  type Root,
  type UnsupportedRoot,
  unsupportedRowId,
} from "./sources.ts";

const HEAD_BYTES = 64 * 1024;
const HEADER_MAX = 1024 * 1024;

/**
 * Lists a root's session file names (`everything`: all its entries) through the descriptor of its sessions directory, reached
 * by a walk that follows no link below the project root (safe-fs.ts).
 */
export function listRoot(root: FileRoot, everything = false): { names: string[] } {
  const dir = openSessionsDirectory(root.projectRoot, root.sessionsDir);
  try {
    return { names: everything ? listDirectory(dir) : namesIn(root, dir) };
  } finally {
    closeDirectory(dir);
  }
}

/**
 * The session files a listing of `roots` finds, root by root (a store read as its folders):
 * a root that is not a folder of files, or whose listing is refused (gone, unsafe), gives none;
 * the catalogue says why. What the search and usage indexes both walk.
 */
export function* listedSessions(
  roots: Root[],
): Generator<{ root: FileRoot; name: string; path: string }> {
  for (const root of expandRoots(roots)) {
    if (!isFileRoot(root)) continue;
    let names: string[];
    try {
      names = listRoot(root).names;
    } catch (e) {
      if (!isRefusal(e)) throw e;
      continue;
    }
    for (const name of names) yield { root, name, path: join(root.sessionsDir, name) };
  }
}

function namesIn(root: FileRoot, dir: DirHandle): string[] {
  return harnessOf(root).sessionNames(listDirectory(dir));
}

/**
 * A row as last read; `count`: its message count so far (done when the row has one);
 * `parentPath`: the parent session its header names (the row's forkedFrom is found per listing).
 */
export type Cached = { stamp: string; row: CatalogueRow; count?: CountState; parentPath?: string };

/** A row and the parent session path its header names, if any. */
type Read = { row: CatalogueRow; parentPath?: string };

/**
 * Reads the catalogue; `cache` keeps rows of unchanged files between listings. A store of Pi's
 * own is listed once and each of its directories read as a root; a store that cannot be listed
 * is one refused root named by its path.
 */
export function readCatalogue(roots: Root[], cache: Map<string, Cached>, now: Date): Catalogue {
  const conversations: CatalogueRow[] = [];
  const refusedRoots: RefusedRoot[] = [];
  const seen = new Set<string>();
  const budget: Budget = { left: COUNT_BUDGET };
  const forks: { at: number; parentPath: string }[] = [];
  for (const root of expandRoots(roots)) {
    if (root.kind === "refused-store") {
      refusedRoots.push({
        project: root.project,
        seat: root.seat,
        code: root.refusal.code as ReaderRefusalCode,
        message: root.refusal.message,
      });
      continue;
    }
    if (root.kind === "unsupported") {
      conversations.push({
        ...emptyRow(root, unsupportedRowId(root), null),
        unsupportedReason: "unsupported-harness",
        harness: root.harness,
      });
      continue;
    }
    let dir: DirHandle | undefined;
    try {
      dir = openSessionsDirectory(root.projectRoot, root.sessionsDir);
      const names = namesIn(root, dir);
      // Every row is read through the same directory descriptor as the listing.
      const at = dir;
      for (const name of names) {
        const read = rowFor(root, at, name, cache, seen, budget);
        if (read.parentPath !== undefined) {
          forks.push({ at: conversations.length, parentPath: read.parentPath });
        }
        conversations.push(read.row);
      }
    } catch (e) {
      if (!isRefusal(e)) throw e;
      refusedRoots.push({
        project: root.project,
        seat: root.seat,
        code: e.code as ReaderRefusalCode,
        message: e.message,
      });
    } finally {
      if (dir) closeDirectory(dir);
    }
  }
  for (const key of cache.keys()) if (!seen.has(key)) cache.delete(key);
  linkForks(roots, conversations, forks);
  return { ok: true, conversations, refusedRoots, generatedAt: now.toISOString() };
}

/**
 * Sets forkedFrom on the rows whose header names a parent session that is a readable row of this
 * same listing, matched by its path's text (fork-parent.ts): nothing more is opened. A cached
 * row is never changed in place; the listing gets a copy.
 */
function linkForks(
  roots: Root[],
  rows: CatalogueRow[],
  forks: readonly { at: number; parentPath: string }[],
): void {
  if (forks.length === 0) return;
  const byId = new Map(rows.map((r) => [r.conversation, r]));
  for (const { at, parentPath } of forks) {
    const row = rows[at]!;
    const parent = parentRow(roots, parentPath, (id) => byId.get(id));
    if (parent !== null && parent.conversation !== row.conversation) {
      rows[at] = { ...row, forkedFrom: { conversation: parent.conversation, title: parent.title } };
    }
  }
}

/** The readable row a parent path names, by `rowOf` (an id to its row); null when none. */
export function parentRow(
  roots: readonly Root[],
  parentPath: string,
  rowOf: (id: string, root: PiRoot, name: string) => CatalogueRow | undefined,
): CatalogueRow | null {
  const file = parentFileOf(roots, parentPath);
  if (file === null) return null;
  const row = rowOf(conversationIdOf(file.root, file.name), file.root, file.name);
  return row !== undefined && row.unsupportedReason === null ? row : null;
}

/**
 * One file's row, read as a listing reads it (through its root's directory, never following a
 * link; the message count is left for the listings). Null when the root cannot be opened or
 * does not list the name.
 */
export function readRow(
  root: FileRoot,
  name: string,
  cache: Map<string, Cached>,
): CatalogueRow | null {
  let dir: DirHandle | undefined;
  try {
    dir = openSessionsDirectory(root.projectRoot, root.sessionsDir);
    if (!namesIn(root, dir).includes(name)) return null;
    return rowFor(root, dir, name, cache, new Set(), { left: 0 }).row;
  } catch (e) {
    if (isRefusal(e)) return null;
    throw e;
  } finally {
    if (dir) closeDirectory(dir);
  }
}

function emptyRow(
  root: FileRoot | UnsupportedRoot,
  conversation: string,
  fileName: string | null,
): CatalogueRow {
  return {
    conversation,
    project: root.project,
    seat: root.seat,
    fileName,
    sessionId: null,
    createdAt: null,
    size: null,
    modifiedAt: null,
    engineStartedAt: null,
    title: null,
    preview: null,
    messageCount: null,
    model: null,
    unsupportedReason: null,
    harness:
      root.kind === "pi" ? PI_HARNESS : root.kind === "claude" ? CLAUDE_HARNESS : root.harness,
    forkedFrom: null,
  };
}

function rowFor(
  root: FileRoot,
  dir: DirHandle,
  name: string,
  cache: Map<string, Cached>,
  seen: Set<string>,
  budget: Budget,
): Read {
  const row = emptyRow(root, conversationIdOf(root, name), name);
  // Keyed by the id too: one folder approved two ways (a store, a seat) gives two rows.
  const path = `${row.conversation}\0${join(root.sessionsDir, name)}`;
  seen.add(path);
  let st: BigIntStats;
  try {
    st = lstatIn(dir, name, "The session file");
  } catch (e) {
    if (!isRefusal(e)) throw e;
    return { row: refusedRow(row, e) };
  }
  if (!st.isFile()) {
    return {
      row: refusedRow(
        row,
        new Refusal("unsafe-path", st.isSymbolicLink() ? "symbolic link" : "not a regular file"),
      ),
    };
  }
  row.size = Number(st.size);
  row.modifiedAt = new Date(Number(st.mtimeMs)).toISOString();
  const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  const hit = cache.get(path);
  // A row whose count is not done yet is read again: its count goes on where it stopped.
  if (hit && hit.stamp === stamp && (hit.row.messageCount !== null || !hit.count)) {
    return hit.parentPath === undefined
      ? { row: hit.row }
      : { row: hit.row, parentPath: hit.parentPath };
  }
  const fresh = readHead(root, dir, name, st, row, hit?.count, budget);
  cache.set(path, {
    stamp,
    row: fresh.row,
    ...(fresh.count ? { count: fresh.count } : {}),
    ...(fresh.parentPath === undefined ? {} : { parentPath: fresh.parentPath }),
  });
  return fresh;
}

function refusedRow(row: CatalogueRow, r: Refusal): CatalogueRow {
  return { ...row, unsupportedReason: r.code as ReaderRefusalCode };
}

/**
 * Header, title, preview and model from the first and last 64 KiB, and the message count; the
 * file must still be the lstat'ed one. `prev`: the count of an earlier version of the file.
 */
function readHead(
  root: FileRoot,
  dir: DirHandle,
  fileName: string,
  st: BigIntStats,
  row: CatalogueRow,
  prev: CountState | undefined,
  budget: Budget,
): Read & { count?: CountState } {
  const refused = (r: Refusal) => ({ row: refusedRow(row, r) });
  if (row.size !== null && row.size > 256 * 1024 * 1024) {
    return refused(new Refusal("too-large", "over 256 MiB"));
  }
  let file: ReturnType<typeof openFileIn>;
  try {
    file = openFileIn(dir, fileName, false);
  } catch (e) {
    if (isRefusal(e)) return refused(e);
    // An unexpected errno: the row says unreadable rather than failing the whole catalogue.
    return refused(new Refusal("unreadable", "unexpected error"));
  }
  const fd = file.fd;
  try {
    const fst = file.identity;
    if (fst.dev !== st.dev || fst.ino !== st.ino) {
      return refused(new Refusal("unsafe-path", "swapped"));
    }
    const size = fst.size;
    let head = readRange(fd, 0, Math.min(size, HEAD_BYTES));
    // A header may carry a long cwd or metadata: Pi scans up to 1 MiB for it (SM:258).
    if (head.indexOf(0x0a) < 0 && size > head.length)
      head = readRange(fd, 0, Math.min(size, HEADER_MAX));
    const lastNl = head.lastIndexOf(0x0a);
    const whole = head.subarray(0, lastNl + 1);
    let tail: Buffer | null = null;
    if (size > whole.length) {
      // The tail starts where the head's whole lines end, or 64 KiB before the end: a line that
      // straddles the head's edge is read whole, and a tail that starts mid-line skips that line.
      const tailStart = Math.max(whole.length, size - HEAD_BYTES);
      const bytes = readRange(fd, tailStart, size - tailStart);
      const nl = bytes.indexOf(0x0a);
      const from = tailStart === whole.length ? 0 : nl + 1;
      const end = bytes.lastIndexOf(0x0a) + 1;
      if (nl >= 0 && end > from) tail = bytes.subarray(from, end);
    }
    const partial = lastNl + 1 < head.length || size > head.length;
    const harness = harnessOf(root);
    const facts = harness.describe(whole, partial, tail, root);
    const count = countMessages(fd, size, fst, prev, harness.isMessageLine, whole, budget);
    return {
      row: {
        ...row,
        ...(facts.project === undefined ? {} : { project: facts.project }),
        sessionId: facts.sessionId,
        createdAt: facts.createdAt,
        engineStartedAt: recordedTime(engineStartedAtFor(root, facts.createdAt)),
        title: facts.title,
        preview: facts.preview,
        messageCount: count.done ? count.state.count : null,
        model: facts.model,
      },
      count: count.state,
      ...(facts.parentPath === undefined ? {} : { parentPath: facts.parentPath }),
    };
  } catch (e) {
    if (isRefusal(e)) return refused(e);
    throw e;
  } finally {
    closeFile(file);
  }
}

/**
 * A time copied from a registration, when CHAT-01 may carry it (at most 256 characters):
 * `Date.parse` accepts much longer text ("Jan 1 2026 (…comment…)").
 */
function recordedTime(t: string | null): string | null {
  return t !== null && t.length <= 256 ? t : null;
}
