// The catalogue: one row per session file in the approved roots (Pi's own store counts each of
// its `--…--` directories as a root), plus one row per unsupported root. It stays cheap: a file
// is read only when its (dev, ino, size, mtime) changed since the last listing, and then only
// its first and last 64 KiB (header, title), never the whole file.

import type { BigIntStats } from "node:fs";
import { join } from "node:path";
import type {
  Catalogue,
  CatalogueRow,
  ReaderRefusalCode,
  RefusedRoot,
} from "../protocol/chat-01.ts";
import { expandRoots } from "./expand.ts";
import { harnessOf } from "./harness/index.ts";
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
  PI_HARNESS,
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

function namesIn(root: FileRoot, dir: DirHandle): string[] {
  return harnessOf(root).sessionNames(listDirectory(dir));
}

type Cached = { stamp: string; row: CatalogueRow };

/**
 * Reads the catalogue; `cache` keeps rows of unchanged files between listings. A store of Pi's
 * own is listed once and each of its directories read as a root; a store that cannot be listed
 * is one refused root named by its path.
 */
export function readCatalogue(roots: Root[], cache: Map<string, Cached>, now: Date): Catalogue {
  const conversations: CatalogueRow[] = [];
  const refusedRoots: RefusedRoot[] = [];
  const seen = new Set<string>();
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
      conversations.push(...names.map((name) => rowFor(root, at, name, cache, seen)));
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
  return { ok: true, conversations, refusedRoots, generatedAt: now.toISOString() };
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
    unsupportedReason: null,
    harness:
      root.kind === "pi" ? PI_HARNESS : root.kind === "claude" ? CLAUDE_HARNESS : root.harness,
  };
}

function rowFor(
  root: FileRoot,
  dir: DirHandle,
  name: string,
  cache: Map<string, Cached>,
  seen: Set<string>,
): CatalogueRow {
  const row = emptyRow(root, conversationIdOf(root, name), name);
  // Keyed by the id too: one folder approved two ways (a store, a seat) gives two rows.
  const path = `${row.conversation}\0${join(root.sessionsDir, name)}`;
  seen.add(path);
  let st: BigIntStats;
  try {
    st = lstatIn(dir, name, "The session file");
  } catch (e) {
    if (!isRefusal(e)) throw e;
    return refusedRow(row, e);
  }
  if (!st.isFile()) {
    return refusedRow(
      row,
      new Refusal("unsafe-path", st.isSymbolicLink() ? "symbolic link" : "not a regular file"),
    );
  }
  row.size = Number(st.size);
  row.modifiedAt = new Date(Number(st.mtimeMs)).toISOString();
  const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  const hit = cache.get(path);
  if (hit && hit.stamp === stamp) return hit.row;
  const fresh = readHead(root, dir, name, st, row);
  cache.set(path, { stamp, row: fresh });
  return fresh;
}

function refusedRow(row: CatalogueRow, r: Refusal): CatalogueRow {
  return { ...row, unsupportedReason: r.code as ReaderRefusalCode };
}

/** Header and title from the first and last 64 KiB; the file must still be the lstat'ed one. */
function readHead(
  root: FileRoot,
  dir: DirHandle,
  fileName: string,
  st: BigIntStats,
  row: CatalogueRow,
): CatalogueRow {
  if (row.size !== null && row.size > 256 * 1024 * 1024) {
    return refusedRow(row, new Refusal("too-large", "over 256 MiB"));
  }
  let file: ReturnType<typeof openFileIn>;
  try {
    file = openFileIn(dir, fileName, false);
  } catch (e) {
    if (isRefusal(e)) return refusedRow(row, e);
    // An unexpected errno: the row says unreadable rather than failing the whole catalogue.
    return refusedRow(row, new Refusal("unreadable", "unexpected error"));
  }
  const fd = file.fd;
  try {
    const fst = file.identity;
    if (fst.dev !== st.dev || fst.ino !== st.ino) {
      return refusedRow(row, new Refusal("unsafe-path", "swapped"));
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
    const facts = harnessOf(root).describe(whole, partial, tail, root);
    return {
      ...row,
      ...(facts.project === undefined ? {} : { project: facts.project }),
      sessionId: facts.sessionId,
      createdAt: facts.createdAt,
      engineStartedAt: recordedTime(engineStartedAtFor(root, facts.createdAt)),
      title: facts.title,
    };
  } catch (e) {
    if (isRefusal(e)) return refusedRow(row, e);
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
