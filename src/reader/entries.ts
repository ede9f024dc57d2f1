// What every harness's scan produces and the shared reader indexes (tree.ts): the snapshot's
// entry lines as columns (an id, a parent id, an interned type, line and byte range), the line
// notices, and where the scan stopped. A harness (harness/<name>/) decides which lines are
// entries and what their ids and parents are; everything above this file is the same for all.
import { isUtf8 } from "node:buffer";
import { toChatId } from "../protocol/chat-01.ts";
import { parseLongValues } from "./line-value.ts";
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
  /**
   * A second choice of parent for a few rows, taken when the row's parent is no row earlier in
   * the file (missing, itself, or later). Claude Code's compaction boundary hangs on the record
   * it continues (`logicalParentUuid`), which a writer may have moved below the summary (a
   * preserved record written again there): then it hangs on the record written before it.
   */
  fallbackParents: Map<number, string>;
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

export function emptyTable(): EntryTable {
  const cap = 64;
  return {
    count: 0,
    ids: [],
    parentIds: [],
    types: [],
    lines: new Uint32Array(cap),
    starts: new Uint32Array(cap),
    ends: new Uint32Array(cap),
    fallbackParents: new Map(),
  };
}

/** A copy to append to: the parse that owns `t` must not see rows added for a longer one. */
export function copyTable(t: EntryTable): EntryTable {
  work.rowsCopied += t.count;
  return {
    count: t.count,
    ids: t.ids.slice(0, t.count),
    parentIds: t.parentIds.slice(0, t.count),
    types: t.types.slice(0, t.count),
    lines: t.lines.slice(),
    starts: t.starts.slice(),
    ends: t.ends.slice(),
    // Only its own rows': a longer scan sharing the columns may have added some past `count`.
    fallbackParents: new Map([...t.fallbackParents].filter(([row]) => row < t.count)),
  };
}

/**
 * Room for `n` rows and some to spare: a follow appends a few rows without reallocating, and
 * growth by an eighth keeps appends amortized constant while wasting at most an eighth.
 */
export function roomFor(n: number): number {
  return n + Math.max(64, n >>> 3);
}

export function grow(a: Uint32Array): Uint32Array {
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

export function pushEntry(
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

/** A line that is not an entry: malformed JSON, not an object, no id, or (Pi) a 2nd header. */
export type LineNotice = {
  line: number;
  start: number;
  end: number;
  kind: "malformed-line" | "ignored-header";
};

/** What the shared code needs of a session's head (Pi's header line, Claude's first record). */
export type SessionHead = {
  /** The session names an earlier one it was forked from, which is never opened. */
  parentSession: boolean;
  /** The parent session's path as recorded (fork-parent.ts matches it to a root), if any. */
  parentPath?: string;
};

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
  /**
   * The row of the default leaf, when a harness says it is not the last entry row (Claude Code
   * resumes from its main line's last record, never a subagent's); -1 for none.
   */
  leaf?: number;
};

/**
 * The whole lines of `buf` from `scan.scanned` on, each numbered (`scan.line`) and, unless
 * blank (spaces, tabs, CRs: skipped silently, as Pi does), handed to `each` with its range in
 * `buf`; then `scan.scanned` moves past them. `buf` holds the snapshot's bytes from offset
 * `base` (the snapshot is read in steps and not kept whole): how every harness's scan walks a
 * snapshot's lines.
 */
export function forEachLine(
  buf: Buffer,
  scan: ScanState,
  base: number,
  each: (line: number, start: number, end: number) => void,
): void {
  // Byte offsets are kept in 32 bits: snapshots are at most 256 MiB (LIMITS.fileBytes).
  if (base + buf.length > 0xffffffff) throw new Error("a snapshot over 4 GiB cannot be indexed");
  let start = scan.scanned - base;
  while (start < buf.length) {
    const line = ++scan.line;
    let end = buf.indexOf(NL, start);
    if (end < 0) end = buf.length;
    if (!isBlank(buf, start, end)) each(line, start, end);
    start = end + 1;
  }
  scan.scanned = Math.max(scan.scanned, base + buf.length);
}

const NL = 0x0a;

/**
 * A harness's line scan, as tree.ts drives it: a first scan, the lines of a snapshot from where
 * a scan stopped, and the two ways a longer snapshot continues an earlier scan (a copy, or the
 * same columns when no other scan appended to them). Methods, so a scanner of a narrower head
 * or scan type stands in for this one.
 */
export interface Scanner<H extends SessionHead = SessionHead, S extends ScanState = ScanState> {
  /** A scan before any line; `buf` is the snapshot's first lines (from byte 0) or empty. */
  first(buf: Buffer, head: H): S;
  /** Scans the whole lines of `buf`, the snapshot's bytes from offset `base`, into `scan`. */
  lines(buf: Buffer, head: H, scan: S, base: number): S;
  continued(prev: S): S;
  shared(prev: S): S | null;
}

/** A copy of `prev` to continue (`prev` stays as it was: other cursors use its parse). */
export function continuedScan<S extends ScanState>(prev: S): S {
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
export function sharedScan<S extends ScanState>(prev: S): S | null {
  const t = prev.entries;
  if (t.ids.length !== t.count || prev.lineNotices.length !== prev.notices) return null;
  return { ...prev, entries: { ...t } };
}

/** Entry types seen, so millions of entries share a few type strings (bounded: types are few). */
const TYPES = new Map<string, string>();
const TYPES_MAX = 256;

export function internType(type: string): string {
  const known = TYPES.get(type);
  if (known !== undefined) return known;
  if (TYPES.size < TYPES_MAX && type.length <= 64) TYPES.set(type, type);
  return type;
}

/** Parses one line as JSON; undefined when it is not JSON. */
export function parseLine(buf: Buffer, start: number, end: number): unknown {
  try {
    return JSON.parse(buf.toString("utf8", start, end));
  } catch {
    // A malformed line becomes a notice at its position (Pi skips it silently, SM:265-275).
    return undefined;
  }
}

/** A line of spaces, tabs and CRs only: skipped silently, as Pi does. */
export function isBlank(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = buf[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Reads an entry's line again for a page: `rec` (offsets in the snapshot) to the buffer that
 * holds its bytes, proved the snapshot's (page-bytes.ts), with `rec`'s range moved into it.
 */
export type EntryLines = (rec: EntryRec) => { buf: Buffer; rec: EntryRec };

/**
 * The JSON object of an entry, parsed again from the snapshot: with its long string values
 * decoded outside JSON.parse where that applies (line-value.ts), else its whole line.
 */
export function entryObject(buf: Buffer, rec: EntryRec): Record<string, unknown> {
  const fast = parseLongValues(buf, rec.start, rec.end);
  if (fast) return objectOf(fast.value, rec);
  return entryOfText(buf.toString("utf8", rec.start, rec.end), rec);
}

/**
 * The JSON object `text` (an entry's line, or one a harness put together from it) holds; an
 * entry the scan found to be an object that no longer parses as one is an error.
 */
export function entryOfText(text: string, rec: EntryRec): Record<string, unknown> {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    obj = undefined;
  }
  return objectOf(obj, rec);
}

/** An entry the scan found to be an object that no longer parses as one is an error. */
export function objectOf(obj: unknown, rec: EntryRec): Record<string, unknown> {
  if (!isObject(obj)) throw new Error(`entry at line ${rec.line} no longer parses`);
  return obj;
}

/**
 * entryObject, and whether the line is valid UTF-8, from one decoding of the line (a page
 * sizes a valid line's parts from its bytes: parts.ts sourceBound).
 */
export function entryObjectUtf8(
  buf: Buffer,
  rec: EntryRec,
): { obj: Record<string, unknown>; utf8: boolean } {
  // It applies to valid UTF-8 only.
  const fast = parseLongValues(buf, rec.start, rec.end);
  if (fast) return { obj: objectOf(fast.value, rec), utf8: true };
  const text = buf.toString("utf8", rec.start, rec.end);
  return { obj: entryOfText(text, rec), utf8: decodedUtf8(text, buf, rec.start, rec.end) };
}

/**
 * Whether bytes [start, end) of `buf`, which decoded to `text`, are valid UTF-8. The decoder
 * writes U+FFFD for every ill-formed sequence, so a text without one came from valid bytes; a
 * text with one (an ill-formed sequence, or a U+FFFD the line holds) has its bytes checked.
 */
export function decodedUtf8(text: string, buf: Buffer, start: number, end: number): boolean {
  return !text.includes("\uFFFD") || isUtf8(buf.subarray(start, end));
}
