// How Claude Code's rows show (RowFormat). A reply written on several lines is one entry,
// `n.<first chunk's uuid>`: each chunk renders its own blocks as the entry's next parts
// (`continues: true`), so a follow that brings a reply's later lines appends to it and nothing
// already shown changes; a compaction's summary continues its boundary the same way. A part's
// number is the count of parts the entry's earlier lines rendered, remembered per row.

import { isObj, type Obj, str } from "../../draft.ts";
import {
  decodedUtf8,
  type EntryLines,
  type EntryRec,
  entryAt,
  entryObject,
  entryObjectUtf8,
  entryOfText,
  keyOfId,
  objectOf,
} from "../../entries.ts";
import { parseLongValues } from "../../line-value.ts";
import type { SizedPart } from "../../parts.ts";
import { partsOfLine } from "../../render.ts";
import type { ParsedSession, RowFormat } from "../../tree.ts";
import { isHiddenType, labelTextOf, renderRecord } from "./blocks.ts";
import type { ClaudeHead, ClaudeTable } from "./scan.ts";

/**
 * Per parse lineage (its shared columns): the last row rendered with its first part's number and
 * its part count (pages render rows in order, so the next chunk of an entry finds its start
 * there), and the tool names found while looking for calls.
 */
type Memo = { row: number; first: number; count: number; tools: Map<string, string> };
const memos = new WeakMap<object, Memo>();

/**
 * The last lineage asked for and its memo: a page asks for the same one for every row, and a
 * WeakMap lookup each time was 2% of a traversal. Held weakly, as the WeakMap holds it.
 */
let lastCols: WeakRef<object> | null = null;
let lastMemo: Memo | null = null;

function memoOf(s: ParsedSession): Memo {
  if (lastCols !== null && lastCols.deref() === s.cols) return lastMemo!;
  let m = memos.get(s.cols);
  if (!m) {
    m = { row: -1, first: 0, count: 0, tools: new Map() };
    memos.set(s.cols, m);
  }
  lastCols = new WeakRef(s.cols);
  lastMemo = m;
  return m;
}

function tableOf(s: ParsedSession): ClaudeTable {
  return s.scan.entries as ClaudeTable;
}

/** The row that begins the entry row `row` belongs to. */
function headRow(s: ParsedSession, row: number): number {
  const g = tableOf(s).group[row]!;
  return g >= 0 ? g : row;
}

export const CLAUDE_ROWS: RowFormat = {
  entryKey: (s, row) => keyOfId(s.scan.entries.ids[headRow(s, row)]!),
  render(s, buf, rec, lines) {
    const first = firstPart(s, lines, rec.index);
    const parts = partsOf(s, buf, rec, lines, first);
    const memo = memoOf(s);
    memo.row = rec.index;
    memo.first = first;
    memo.count = parts.length;
    return parts;
  },
  labelText(s, buf, rec, lines) {
    if (isHiddenType(rec.type)) return null;
    return labelTextOf(renderRecord(entryObject(buf, rec), contextOf(s, rec, lines)));
  },
};

/** `rec`'s range is its line in `buf`; `lines` reads the other rows' lines (toolNameOf). */
function partsOf(
  s: ParsedSession,
  buf: Buffer,
  rec: EntryRec,
  lines: EntryLines,
  first: number,
): SizedPart[] {
  if (isHiddenType(rec.type)) return [];
  const { obj, utf8 } = recordObject(s, buf, rec);
  // A reply's calls, remembered as it renders: the results below it find their names here
  // instead of parsing the reply's line again (toolNameOf).
  if (rec.type === "assistant") {
    const { tools } = memoOf(s);
    for (const [callId, name] of callsOf(obj)) tools.set(callId, name);
  }
  const draft = renderRecord(obj, contextOf(s, rec, lines));
  const key = keyOfId(s.scan.entries.ids[headRow(s, rec.index)]!);
  return draft ? partsOfLine(key, draft, buf, rec, first, utf8) : [];
}

/**
 * The record of `rec`'s line, parsed without its `toolUseResult` value when the scan found one
 * that names no `agentId` (scan.ts useFrom): Claude Code's structured copy of a tool's output
 * (a Read's whole file, an Edit's original file) is never shown, and a page reads only its
 * `agentId` (blocks.ts toolResults). Else the whole line is parsed. `utf8`: whether the bytes
 * parsed are valid UTF-8, so that the line's length bounds what its parts serialize to
 * (parts.ts sourceBound): every string they hold comes from those bytes, none from the cut.
 */
function recordObject(
  s: ParsedSession,
  buf: Buffer,
  rec: EntryRec,
): { obj: Record<string, unknown>; utf8: boolean } {
  const t = tableOf(s);
  const from = t.useFrom[rec.index]!;
  if (from < 0) return entryObjectUtf8(buf, rec);
  const a = rec.start + from;
  const b = rec.start + t.useTo[rec.index]!;
  // The module read every string outside the cut, and takes only UTF-8.
  const fast = parseLongValues(buf, rec.start, rec.end, a, b);
  if (fast) return { obj: objectOf(fast.value, rec), utf8: true };
  // The cut is at ASCII bytes (the value's first and last), so each side decodes as it would
  // within the whole line.
  const before = buf.toString("utf8", rec.start, a);
  const after = buf.toString("utf8", b, rec.end);
  return {
    obj: entryOfText(`${before}null${after}`, rec),
    utf8: decodedUtf8(before, buf, rec.start, a) && decodedUtf8(after, buf, b, rec.end),
  };
}

/**
 * The number of the first part of `row`: the parts its entry's earlier lines render. The row
 * before it was usually the last rendered (memo); else the entry's earlier lines are counted
 * again, once. A part count does not depend on its numbering (parts.ts toParts).
 */
function firstPart(s: ParsedSession, lines: EntryLines, row: number): number {
  const t = tableOf(s);
  const prev = t.prevInGroup[row]!;
  if (prev < 0) return 0;
  const memo = memoOf(s);
  if (memo.row === prev) return memo.first + memo.count;
  const before: number[] = [];
  for (let r = prev; r >= 0; r = t.prevInGroup[r]!) before.push(r);
  let n = 0;
  for (let i = before.length - 1; i >= 0; i--) {
    const line = lines(entryAt(t, before[i]!));
    n += partsOf(s, line.buf, line.rec, lines, n).length;
  }
  return n;
}

function contextOf(s: ParsedSession, rec: EntryRec, lines: EntryLines) {
  const head = s.header as ClaudeHead;
  return {
    continues: tableOf(s).group[rec.index]! >= 0,
    toolName: (id: string) => toolNameOf(s, rec, lines, id),
    agentConversation: (agentId: string) => head.agentConversation(agentId),
  };
}

/** How far up a tool result looks for its call. */
const CALL_SEARCH_ROWS = 256;

/**
 * The name of the call a tool result answers: found in the replies above it, walking up its
 * branch past other results of the same turn (2.0 chains parallel results one below the other).
 */
function toolNameOf(s: ParsedSession, rec: EntryRec, lines: EntryLines, id: string): string {
  const { tools } = memoOf(s);
  const known = tools.get(id);
  if (known !== undefined) return known;
  const t = tableOf(s);
  let row = s.parent[rec.index]!;
  for (let steps = 0; row >= 0 && steps < CALL_SEARCH_ROWS; steps++, row = s.parent[row]!) {
    const type = t.types[row];
    if (type === "assistant") {
      const obj = objectAt(lines, t, row);
      for (const [callId, name] of callsOf(obj)) tools.set(callId, name);
      const found = tools.get(id);
      if (found !== undefined) return found;
    } else if (type === "user") {
      // A prompt ends the turn: the call is not above it.
      if (t.toolResult[row] !== 1) break;
    }
  }
  return "";
}

/** Row `row`'s object, its line read again through `lines`. */
function objectAt(lines: EntryLines, t: ClaudeTable, row: number): Obj {
  const line = lines(entryAt(t, row));
  return entryObject(line.buf, line.rec);
}

function callsOf(obj: Obj): [string, string][] {
  const m = obj.message;
  if (!isObj(m) || !Array.isArray(m.content)) return [];
  const out: [string, string][] = [];
  for (const c of m.content) {
    if (!isObj(c) || (c.type !== "tool_use" && c.type !== "server_tool_use")) continue;
    const callId = str(c.id);
    const name = str(c.name);
    if (callId !== undefined && name !== undefined) out.push([callId, name]);
  }
  return out;
}
