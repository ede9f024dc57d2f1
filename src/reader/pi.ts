// The Pi session parser, pinned against @earendil-works/pi-coding-agent 0.85.1
// (docs/session-format.md, dist/core/session-manager.js, cited as SM:<line>): the header, and a
// scan of the snapshot's lines into entry records (tree.ts builds the tree and branches from
// them). Entry content is parsed again only when a page renders it, so a record holds a byte
// range and the three keys the tree needs, not the object: memory per entry stays small.
import { toChatId } from "../protocol/chat-01.ts";
import { scanLine } from "./line-scan.ts";
import { checkStoreCwd } from "./pi-store.ts";
import { Refusal } from "./refusal.ts";
import { isCwdInsideProject } from "./safe-fs.ts";
import type { PiRoot } from "./sources.ts";
import { work } from "./work.ts";

/**
 * A valid entry line: a JSON object with a string id. Made on demand from the entry table
 * (entryAt); the parse itself keeps only the table's columns.
 */
export type EntryRec = {
  /** The native id (or `line-<n>` for v1 files, which have none). */
  id: string;
  parentId: string | null;
  type: string;
  line: number;
  start: number;
  end: number;
  /** Position among the file's entry lines (duplicates included), stable while it grows. */
  index: number;
};

/**
 * Every entry line of a snapshot in file order, duplicates included, as columns: a few words
 * per entry (an id string, shared parent id and type strings, three 32-bit numbers) instead of
 * an object each. Columns may be longer than `count`; only the first `count` rows are entries.
 * A longer snapshot of the same file may append its rows to the same columns (sharedScan): the
 * rows below `count` never change, so this table still reads exactly as it did.
 */
export type EntryTable = {
  count: number;
  ids: string[];
  /** Parent ids; a resolved one is the parent's own id string (tree.ts shares it). */
  parentIds: (string | null)[];
  types: string[];
  lines: Uint32Array;
  starts: Uint32Array;
  ends: Uint32Array;
};

/** The entry at row `i` (0 <= i < count). */
export function entryAt(t: EntryTable, i: number): EntryRec {
  return {
    id: t.ids[i]!,
    parentId: t.parentIds[i]!,
    type: t.types[i]!,
    line: t.lines[i]!,
    start: t.starts[i]!,
    end: t.ends[i]!,
    index: i,
  };
}

/** `n.` + the CHAT-01 form of an id: a part's entry and, after `b.`, a branch name. */
export function keyOfId(id: string): string {
  return `n.${toChatId(id)}`;
}

/** `n.` + the CHAT-01 form of the entry's id. */
export function keyOf(rec: EntryRec): string {
  return keyOfId(rec.id);
}

function emptyTable(): EntryTable {
  const cap = 64;
  return {
    count: 0,
    ids: [],
    parentIds: [],
    types: [],
    lines: new Uint32Array(cap),
    starts: new Uint32Array(cap),
    ends: new Uint32Array(cap),
  };
}

/** A copy to append to: the parse that owns `t` must not see rows added for a longer one. */
function copyTable(t: EntryTable): EntryTable {
  work.rowsCopied += t.count;
  return {
    count: t.count,
    ids: t.ids.slice(0, t.count),
    parentIds: t.parentIds.slice(0, t.count),
    types: t.types.slice(0, t.count),
    lines: t.lines.slice(),
    starts: t.starts.slice(),
    ends: t.ends.slice(),
  };
}

/**
 * Room for `n` rows and some to spare: a follow appends a few rows without reallocating, and
 * growth by an eighth keeps appends amortized constant while wasting at most an eighth.
 */
export function roomFor(n: number): number {
  return n + Math.max(64, n >>> 3);
}

function grow(a: Uint32Array): Uint32Array {
  const b = new Uint32Array(roomFor(a.length));
  b.set(a);
  return b;
}

/** Lets go of all but a little of the columns' spare room once a whole scan is done. */
export function trimTable(t: EntryTable): void {
  const room = t.count + Math.min(t.count >>> 6, 65_536) + 64;
  if (t.lines.length <= room) return;
  t.lines = t.lines.slice(0, room);
  t.starts = t.starts.slice(0, room);
  t.ends = t.ends.slice(0, room);
}

function pushEntry(
  t: EntryTable,
  id: string,
  parentId: string | null,
  type: string,
  line: number,
  start: number,
  end: number,
): void {
  const i = t.count++;
  if (i >= t.lines.length) {
    t.lines = grow(t.lines);
    t.starts = grow(t.starts);
    t.ends = grow(t.ends);
  }
  t.ids.push(id);
  t.parentIds.push(parentId);
  t.types.push(type);
  t.lines[i] = line;
  t.starts[i] = start;
  t.ends[i] = end;
}

/** A line that is not an entry: malformed JSON, not an object, no string id, or a 2nd header. */
export type LineNotice = {
  line: number;
  start: number;
  end: number;
  kind: "malformed-line" | "ignored-header";
};

export type Header = {
  id: string;
  cwd: string;
  timestamp: string | null;
  version: number;
  parentSession: boolean;
};

const NL = 0x0a;
/** The longest recorded time CHAT-01 copies (`recordedTime`). */
const RECORDED_TIME_MAX = 256;

/** Parses one line as JSON; undefined when it is not JSON. */
function parseLine(buf: Buffer, start: number, end: number): unknown {
  try {
    return JSON.parse(buf.toString("utf8", start, end));
  } catch {
    // A malformed line becomes a notice at its position; Pi skips it silently (SM:265-275).
    return undefined;
  }
}

function isBlank(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = buf[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Checks line 1 of a snapshot: a complete Pi header whose cwd is inside the project (or, in Pi's
 * own store, encodes to the root's directory name). `buf` is the snapshot (whole lines only);
 * `hasPartial` says bytes followed the last newline.
 */
export function parseHeader(
  buf: Buffer,
  hasPartial: boolean,
  root: Pick<PiRoot, "projectRoot" | "store">,
): Header {
  const nl = buf.indexOf(NL);
  if (nl < 0) {
    throw new Refusal(
      "incomplete-header",
      hasPartial
        ? "The session header is not complete yet (no newline after line 1)."
        : "The session file is empty; Pi has not written its header yet.",
    );
  }
  const obj = parseLine(buf, 0, nl);
  if (!isObject(obj) || obj.type !== "session" || typeof obj.id !== "string") {
    throw new Refusal("not-a-pi-session", "Line 1 is not a Pi session header.");
  }
  const cwd = obj.cwd;
  if (typeof cwd !== "string" || cwd.length === 0) {
    throw new Refusal("foreign-project", "The session header records no working directory.");
  }
  if (root.store) checkStoreCwd(cwd, root.store.dirName);
  else if (!isCwdInsideProject(cwd, root.projectRoot)) {
    throw new Refusal(
      "foreign-project",
      "The session's working directory is relative or outside this project.",
    );
  }
  // A missing version is v1, and Pi compares whatever is there with `<` (SM:75-85), so "1" is v1
  // too and a version that is not a number at all is not.
  const raw = obj.version ?? 1;
  const n = typeof raw === "number" || typeof raw === "string" ? Number(raw) : Number.NaN;
  const version = Number.isNaN(n) ? 3 : n;
  return {
    id: obj.id,
    cwd,
    // CHAT-01 copies recorded times of at most 256 characters (catalogue `createdAt`).
    timestamp:
      typeof obj.timestamp === "string" && obj.timestamp.length <= RECORDED_TIME_MAX
        ? obj.timestamp
        : null,
    version,
    parentSession: typeof obj.parentSession === "string" && obj.parentSession.length > 0,
  };
}

/** Where a scan of the file's lines stopped, so a longer snapshot can continue from there. */
export type ScanState = {
  /** Every entry line in file order, duplicates included. */
  entries: EntryTable;
  /** Line notices in line order; only the first `notices` belong to this scan (see EntryTable). */
  lineNotices: LineNotice[];
  notices: number;
  /** How many of them are malformed lines. */
  malformed: number;
  /** Bytes scanned (always the end of a whole line) and the last line number seen. */
  scanned: number;
  line: number;
  lastV1: string | null;
};

/** A scan that starts after the header line of `buf`. */
export function firstScan(buf: Buffer): ScanState {
  return {
    entries: emptyTable(),
    lineNotices: [],
    notices: 0,
    malformed: 0,
    scanned: buf.indexOf(NL) + 1,
    line: 1,
    lastV1: null,
  };
}

/** A copy of `prev` to continue (`prev` stays as it was: other cursors use its parse). */
export function continuedScan(prev: ScanState): ScanState {
  return {
    ...prev,
    entries: copyTable(prev.entries),
    lineNotices: prev.lineNotices.slice(0, prev.notices),
  };
}

/**
 * `prev` continued in its own columns, when no other scan appended to them since `prev` ended
 * (tree.ts tracks which parse may; the lengths are checked again here): rows and notices past
 * `prev`'s counts are free. `prev` still reads exactly as before: it looks at its own counts
 * only. Null when the columns are not free.
 */
export function sharedScan(prev: ScanState): ScanState | null {
  const t = prev.entries;
  if (t.ids.length !== t.count || prev.lineNotices.length !== prev.notices) return null;
  return { ...prev, entries: { ...t } };
}

/** Entry types seen, so millions of entries share a few type strings (bounded: types are few). */
const TYPES = new Map<string, string>();
const TYPES_MAX = 256;

function internType(type: string): string {
  const known = TYPES.get(type);
  if (known !== undefined) return known;
  if (TYPES.size < TYPES_MAX && type.length <= 64) TYPES.set(type, type);
  return type;
}

/**
 * Scans the whole lines of `buf` from `scan.scanned` on, adding to `scan`. `buf` holds the
 * snapshot's bytes from offset `base` (the snapshot is read in steps and not kept whole).
 */
export function scanLines(buf: Buffer, header: Header, scan: ScanState, base = 0): ScanState {
  // Byte offsets are kept in 32 bits: snapshots are at most 256 MiB (LIMITS.fileBytes).
  if (base + buf.length > 0xffffffff) throw new Error("a snapshot over 4 GiB cannot be indexed");
  const v1 = header.version < 2;
  let start = scan.scanned - base;
  while (start < buf.length) {
    const line = ++scan.line;
    let end = buf.indexOf(NL, start);
    if (end < 0) end = buf.length;
    if (!isBlank(buf, start, end)) {
      // Exactly what JSON.parse would say about validity and the three keys, without building
      // the object (line-scan.ts); the content is parsed only when a page renders the entry.
      const f = scanLine(buf, start, end);
      const at = { start: base + start, end: base + end };
      if (f.json && f.object && f.type === "session") {
        // Pi ignores header lines after the first (research §1.2, fixture 16).
        scan.lineNotices.push({ line, ...at, kind: "ignored-header" });
        scan.notices++;
      } else if (f.json && f.object && (v1 || (typeof f.id === "string" && f.id.length > 0))) {
        // v1 files have no ids: Pi's migration chains them linearly in file order (SM:31-54).
        const id = v1 || typeof f.id !== "string" ? `line-${line}` : f.id;
        const parentId = v1 ? scan.lastV1 : typeof f.parentId === "string" ? f.parentId : null;
        if (v1) scan.lastV1 = id;
        const type = typeof f.type === "string" ? internType(f.type) : "";
        pushEntry(
          scan.entries,
          id,
          parentId === "" ? null : parentId,
          type,
          line,
          at.start,
          at.end,
        );
      } else {
        scan.lineNotices.push({ line, ...at, kind: "malformed-line" });
        scan.notices++;
        scan.malformed++;
      }
    }
    start = end + 1;
  }
  scan.scanned = Math.max(scan.scanned, base + buf.length);
  return scan;
}

/** The JSON object of an entry, parsed again from the snapshot. */
export function entryObject(buf: Buffer, rec: EntryRec): Record<string, unknown> {
  const obj = parseLine(buf, rec.start, rec.end);
  if (!isObject(obj)) throw new Error(`entry at line ${rec.line} no longer parses`);
  return obj;
}
