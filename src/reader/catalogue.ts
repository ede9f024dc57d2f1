// The catalogue: one row per session file in the approved roots (Pi's own store counts each of
// its `--…--` directories as a root), plus one row per unsupported root. It stays cheap: a file
// is read only when its (dev, ino, size, mtime) changed since the last listing, and then only
// its first and last 64 KiB (header, title), never the whole file.

import type { BigIntStats } from "node:fs";
import { join, resolve } from "node:path";
import type {
  Catalogue,
  CatalogueRow,
  ReaderRefusalCode,
  RefusedRoot,
} from "../protocol/chat-01.ts";
import { toChatId } from "../protocol/chat-01.ts";
import { parseHeader } from "./harness/pi/pi.ts";
import { expandRoots } from "./harness/pi/pi-store.ts";
import { isRefusal, Refusal } from "./refusal.ts";
import {
  closeDirectory,
  closeFile,
  type DirHandle,
  isSessionFileName,
  listDirectory,
  lstatIn,
  openFileIn,
  openSessionsDirectory,
  readRange,
} from "./safe-fs.ts";
import {
  conversationIdOf,
  engineStartedAtFor,
  type PiRoot,
  type Root,
  STORE_SEAT,
  type UnsupportedRoot,
  unsupportedRowId,
} from "./sources.ts";

const HEAD_BYTES = 64 * 1024;
const HEADER_MAX = 1024 * 1024;
const TITLE_CHARS = 120;

/**
 * Lists a Pi root's session file names through the descriptor of its sessions directory, reached
 * by a walk that follows no link below the project root (safe-fs.ts).
 */
export function listRoot(root: PiRoot): { names: string[] } {
  const dir = openSessionsDirectory(root.projectRoot, root.sessionsDir);
  try {
    return { names: namesIn(dir) };
  } finally {
    closeDirectory(dir);
  }
}

function namesIn(dir: DirHandle): string[] {
  return listDirectory(dir).filter(isSessionFileName).sort();
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
        project: root.storeDir,
        seat: STORE_SEAT,
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
      const names = namesIn(dir);
      // Every row is read through the same directory descriptor as the listing.
      const at = dir;
      const rows = names.map((name) => rowFor(root, at, name, cache));
      for (const name of names) seen.add(join(root.sessionsDir, name));
      conversations.push(...rows);
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
  root: PiRoot | UnsupportedRoot,
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
    harness: root.kind === "pi" ? "pi" : root.harness,
  };
}

function rowFor(
  root: PiRoot,
  dir: DirHandle,
  name: string,
  cache: Map<string, Cached>,
): CatalogueRow {
  const path = join(root.sessionsDir, name);
  const row = emptyRow(root, conversationIdOf(root, name), name);
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
  root: PiRoot,
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
    const header = parseHeader(whole, lastNl + 1 < head.length || size > head.length, root);
    const createdAt = header.timestamp;
    let name = findSessionName(whole);
    if (size > whole.length) {
      // The tail starts where the head's whole lines end, or 64 KiB before the end: a line that
      // straddles the head's edge is read whole, and a tail that starts mid-line skips that line.
      const tailStart = Math.max(whole.length, size - HEAD_BYTES);
      const tail = readRange(fd, tailStart, size - tailStart);
      const nl = tail.indexOf(0x0a);
      const from = tailStart === whole.length ? 0 : nl + 1;
      const end = tail.lastIndexOf(0x0a) + 1;
      if (nl >= 0 && end > from) name = findSessionName(tail.subarray(from, end)) ?? name;
    }
    return {
      ...row,
      // In Pi's store the project is the header's cwd, now that it is known to match.
      ...(root.store ? { project: resolve(header.cwd) } : {}),
      sessionId: toChatId(header.id),
      createdAt,
      engineStartedAt: recordedTime(engineStartedAtFor(root, createdAt)),
      title: name ?? findFirstUserText(whole),
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

function* lines(buf: Buffer, needle: string): Generator<Record<string, unknown>> {
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    const hit = buf.indexOf(needle, start);
    if (hit >= 0 && hit < end) {
      try {
        const v: unknown = JSON.parse(buf.toString("utf8", start, end));
        if (typeof v === "object" && v !== null && !Array.isArray(v))
          yield v as Record<string, unknown>;
      } catch {
        // A malformed line has no title to give.
      }
    } else if (hit < 0) {
      return;
    }
    start = end + 1;
  }
}

/** The latest session_info name, as Pi's getSessionName (SM:861-872); "" clears it. */
function findSessionName(buf: Buffer): string | null | undefined {
  let name: string | null | undefined;
  for (const obj of lines(buf, '"session_info"')) {
    if (obj.type !== "session_info") continue;
    const n = typeof obj.name === "string" ? obj.name.replace(/\s+/g, " ").trim() : "";
    name = n === "" ? null : clip(n);
  }
  return name === null ? undefined : name;
}

function findFirstUserText(buf: Buffer): string | null {
  for (const obj of lines(buf, '"user"')) {
    const m = obj.message;
    if (obj.type !== "message" || typeof m !== "object" || m === null) continue;
    const msg = m as Record<string, unknown>;
    if (msg.role !== "user") continue;
    const c = msg.content;
    let text = typeof c === "string" ? c : "";
    if (Array.isArray(c)) {
      for (const item of c) {
        if (
          typeof item === "object" &&
          item !== null &&
          (item as { type?: unknown }).type === "text"
        ) {
          const t = (item as { text?: unknown }).text;
          if (typeof t === "string") {
            text = t;
            break;
          }
        }
      }
    }
    text = text.replace(/\s+/g, " ").trim();
    if (text) return clip(text);
  }
  return null;
}

/** A title-length prefix, cut on a code point boundary. */
function clip(s: string): string {
  // This many UTF-16 units hold at least TITLE_CHARS + 1 code points: enough to know to clip.
  const cps = Array.from(s.slice(0, (TITLE_CHARS + 1) * 2));
  return cps.length > TITLE_CHARS ? `${cps.slice(0, TITLE_CHARS).join("")}…` : cps.join("");
}
