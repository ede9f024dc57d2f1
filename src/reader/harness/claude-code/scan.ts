// Claude Code's lines to entry rows (docs/claude-code-files.md). A record with a `uuid` is a row
// whose parent is its `parentUuid`, with three corrections so the tree is the conversation
// Claude Code resumes, not the raw links:
// - a compaction boundary (`parentUuid: null`) hangs on its `logicalParentUuid`: the history
//   before it stays on the branch;
// - the lines of one reply (chunks sharing `message.id`) and the tool results written for it
//   hang one after the other below the reply, in file order: 2.1 files hang each parallel
//   result on the chunk of its call, a fork in the raw tree that Claude Code sends as one turn;
// - a subagent's records written into the session (1.0, `isSidechain`) never hang on the main
//   line, nor the main line on them: they are roots of their own, not branches of it.
// Lines without a `uuid` are bookkeeping (queue operations, titles, costs…): no rows, no notices.
// The first record's cwd is checked (head.ts) when it is scanned, also when a follow brings it.
import {
  continuedScan,
  type EntryTable,
  emptyTable,
  forEachLine,
  internType,
  pushEntry,
  roomFor,
  type Scanner,
  type ScanState,
  type SessionHead,
} from "../../entries.ts";
import { type ClaudeRecordFacts, scanClaudeLine, type ValueRange } from "./scan-line.ts";

/** What the scan needs of the file's head: the check of the first record's cwd. */
export type ClaudeHead = SessionHead & {
  /** Refuses `foreign-project` unless `cwd` belongs to the folder the file was read from. */
  checkCwd(cwd: unknown): void;
  /** The conversation id of agent `agentId`'s transcript (claudeAgentId of the folder). */
  agentConversation(agentId: string): string;
};

/**
 * Rows as the shared table, plus what makes one entry of several lines: per row, the first row
 * of its entry (the first chunk of a reply, a compaction's boundary), or -1 when the row is its
 * own entry's first; and the row before it in that entry, or -1. `toolResult` is 1 for a user
 * record carrying tool results (a page looking up a call's name need not parse it to know).
 * `useFrom`/`useTo` are where its `toolUseResult` value lies in its line, in bytes from the
 * line's start (scan-line.ts ValueRange), or -1 when it has none or it names an `agentId`: a
 * page parses the line without those bytes.
 */
export type ClaudeTable = EntryTable & {
  group: Int32Array;
  prevInGroup: Int32Array;
  toolResult: Uint8Array;
  useFrom: Int32Array;
  useTo: Int32Array;
};

/**
 * A reply whose chunks and tool results may still come: they hang on `tail`. Owned by one scan
 * and changed in place; a scan that continues another copies it (copyOpen).
 */
type OpenReply = {
  messageId: string;
  /** Its first chunk's row, and its last chunk's. */
  first: number;
  lastChunk: number;
  /** Its chunks' uuids. */
  chunks: Set<string>;
  /** The row the next chunk or tool result hangs on: the end of the chain below the reply. */
  tail: number;
};

function copyOpen(o: OpenReply | null): OpenReply | null {
  return o === null ? null : { ...o, chunks: new Set(o.chunks) };
}

export type ClaudeScan = ScanState & {
  entries: ClaudeTable;
  /** The first record was seen (and its cwd checked); `primary` is its `isSidechain`. */
  started: boolean;
  primary: boolean;
  /** The uuids of records on the other side (subagent records in a main session, 1.0). */
  other: Set<string>;
  /** The reply being written on each side ([main side, other side]). */
  open: [OpenReply | null, OpenReply | null];
  /** The last compaction boundary: its summary joins its entry. */
  boundary: { uuid: string; row: number } | null;
  /**
   * The latest `progress` records (hook, Bash and agent progress, 2.1): no rows, each by the
   * record its children hang on instead (its own parent, past any progress records). At most
   * PROGRESS_MAX, the oldest let go: a record names the progress written just before it.
   */
  progress: Map<string, string | null>;
};

/** Progress records remembered for the records that hang on them. */
const PROGRESS_MAX = 4096;

function emptyClaudeTable(): ClaudeTable {
  const t = emptyTable();
  return {
    ...t,
    group: new Int32Array(t.lines.length),
    prevInGroup: new Int32Array(t.lines.length),
    toolResult: new Uint8Array(t.lines.length),
    useFrom: new Int32Array(t.lines.length),
    useTo: new Int32Array(t.lines.length),
  };
}

function firstScan(): ClaudeScan {
  return {
    entries: emptyClaudeTable(),
    lineNotices: [],
    notices: 0,
    malformed: 0,
    scanned: 0,
    line: 0,
    leaf: -1,
    started: false,
    primary: false,
    other: new Set(),
    open: [null, null],
    boundary: null,
    progress: new Map(),
  };
}

function continued(prev: ClaudeScan): ClaudeScan {
  const base = continuedScan(prev);
  const t = base.entries;
  return {
    ...base,
    entries: {
      ...t,
      group: prev.entries.group.slice(0, t.lines.length),
      prevInGroup: prev.entries.prevInGroup.slice(0, t.lines.length),
      toolResult: prev.entries.toolResult.slice(0, t.lines.length),
      useFrom: prev.entries.useFrom.slice(0, t.lines.length),
      useTo: prev.entries.useTo.slice(0, t.lines.length),
    },
    other: new Set(prev.other),
    open: [copyOpen(prev.open[0]), copyOpen(prev.open[1])],
    progress: new Map(prev.progress),
  };
}

function shared(prev: ClaudeScan): ClaudeScan | null {
  const t = prev.entries;
  if (t.ids.length !== t.count || prev.lineNotices.length !== prev.notices) return null;
  // The sets and open replies change as lines are added: copied, prev's stay as they were.
  return {
    ...prev,
    entries: { ...t },
    other: new Set(prev.other),
    open: [copyOpen(prev.open[0]), copyOpen(prev.open[1])],
    progress: new Map(prev.progress),
  };
}

/** Grows the two extra columns with the shared ones (pushEntry grows those). */
function fitColumns(t: ClaudeTable): void {
  if (t.group.length >= t.lines.length) return;
  const n = Math.max(t.lines.length, roomFor(t.group.length));
  const group = new Int32Array(n);
  group.set(t.group);
  const prev = new Int32Array(n);
  prev.set(t.prevInGroup);
  const toolResult = new Uint8Array(n);
  toolResult.set(t.toolResult);
  const useFrom = new Int32Array(n);
  useFrom.set(t.useFrom);
  const useTo = new Int32Array(n);
  useTo.set(t.useTo);
  t.group = group;
  t.prevInGroup = prev;
  t.toolResult = toolResult;
  t.useFrom = useFrom;
  t.useTo = useTo;
}

/** Where the line just scanned holds its `toolUseResult` (one scan runs at a time). */
const USE: ValueRange = { start: -1, end: -1, agentId: false };

/**
 * Scans the whole lines of `buf` from `scan.scanned` on, adding to `scan`. `buf` holds the
 * snapshot's bytes from offset `base` (the snapshot is read in steps and not kept whole).
 */
function scanLines(buf: Buffer, head: ClaudeHead, scan: ClaudeScan, base = 0): ClaudeScan {
  const t = scan.entries;
  const other = scan.other;
  forEachLine(buf, scan, base, (line, start, end) => {
    // What JSON.parse would say of the fields the tree needs, without building the object
    // (scan-line.ts); the whole line is parsed only when a page renders it.
    const f = scanClaudeLine(buf, start, end, !scan.started, USE);
    // A prompt or reply without a uuid has no place in the tree (Claude Code leaves it out of
    // the chain it resumes): said, not dropped in silence as bookkeeping is.
    const placeless =
      f.json && f.object && f.uuid === null && (f.type === "user" || f.type === "assistant");
    if (!f.json || !f.object || (f.type === null && f.uuid === null) || placeless) {
      scan.lineNotices.push({
        line,
        start: base + start,
        end: base + end,
        kind: "malformed-line",
      });
      scan.notices++;
      scan.malformed++;
    } else if (f.uuid !== null) {
      addRecord(scan, t, other, head, f, f.uuid, line, base + start, base + end);
    }
  });
  return scan;
}

function addRecord(
  scan: ClaudeScan,
  t: ClaudeTable,
  other: Set<string>,
  head: ClaudeHead,
  f: ClaudeRecordFacts,
  uuid: string,
  line: number,
  start: number,
  end: number,
): void {
  if (!scan.started) {
    head.checkCwd(f.cwd);
    scan.started = true;
    scan.primary = f.isSidechain;
  }
  const type = f.type !== null ? internType(f.type) : "";
  // A progress record is never shown, and in the tree it would fork the conversation wherever a
  // tool's result hangs on the call beside the progress of its hooks: it is passed through.
  const progress = scan.progress;
  const above = f.parentUuid !== null && progress.size > 0 ? progress.get(f.parentUuid) : undefined;
  let parent = above === undefined ? f.parentUuid : above;
  if (type === "progress") {
    progress.set(uuid, parent);
    if (progress.size > PROGRESS_MAX) {
      for (const oldest of progress.keys()) {
        progress.delete(oldest);
        break;
      }
    }
    return;
  }
  const side = f.isSidechain !== scan.primary ? 1 : 0;
  const boundary = type === "system" && f.compactBoundary;
  if (parent === null && boundary) {
    parent = f.logicalParentUuid;
    // The record it continues may be written again below its summary (a preserved record, as
    // some versions write it): then the history before it hangs on the record written before it.
    const before = scan.leaf ?? -1;
    if (parent !== null && side === 0 && before >= 0)
      t.fallbackParents.set(t.count, t.ids[before]!);
  }
  // The two sides never hang on each other.
  if (side === 1) other.add(uuid);
  if (parent !== null && other.has(parent) !== (side === 1)) parent = null;

  const row = t.count;
  let group = -1;
  let prevInGroup = -1;
  const open = scan.open[side];
  const messageId = type === "assistant" ? f.messageId : null;
  if (
    messageId !== null &&
    open?.messageId === messageId &&
    parent !== null &&
    (open.chunks.has(parent) || parent === t.ids[open.tail])
  ) {
    if (open.chunks.has(parent)) {
      // The next chunk of the reply: one entry with the chunks before it.
      group = open.first;
      prevInGroup = open.lastChunk;
    } else {
      // A chunk hanging on the result of an earlier call of its own reply (2.1 runs a tool
      // while the reply is still written): it goes on below that result, as an entry of its
      // own (shown as one under the result, not as a continuation of the reply above it).
      open.first = row;
    }
    // Either way below the end of the chain, and the results of its reply's calls hang on.
    parent = t.ids[open.tail]!;
    open.lastChunk = row;
    open.chunks.add(uuid);
    open.tail = row;
  } else if (messageId !== null) {
    scan.open[side] = { messageId, first: row, lastChunk: row, chunks: new Set([uuid]), tail: row };
  } else if (
    open &&
    parent !== null &&
    type === "user" &&
    f.toolResult &&
    open.chunks.has(parent)
  ) {
    parent = t.ids[open.tail]!;
    open.tail = row;
  } else if (
    type === "user" &&
    f.isCompactSummary &&
    scan.boundary !== null &&
    parent === scan.boundary.uuid
  ) {
    group = scan.boundary.row;
    prevInGroup = scan.boundary.row;
  }
  // Whatever hangs on the end of the chain below an open reply extends that chain.
  const now = scan.open[side];
  if (now && now.tail !== row && parent !== null && parent === t.ids[now.tail]) now.tail = row;
  if (boundary) scan.boundary = { uuid, row };

  pushEntry(t, uuid, parent, type, line, start, end);
  fitColumns(t);
  t.group[row] = group;
  t.prevInGroup[row] = prevInGroup;
  t.toolResult[row] = type === "user" && f.toolResult ? 1 : 0;
  // A copy that names a subagent is parsed with its line (rows.ts recordObject).
  t.useFrom[row] = USE.agentId ? -1 : USE.start;
  t.useTo[row] = USE.agentId ? -1 : USE.end;
  if (side === 0) scan.leaf = row;
}

/** Claude Code's scan, as tree.ts drives it. */
export const CLAUDE_SCANNER: Scanner<ClaudeHead, ClaudeScan> = {
  first: () => firstScan(),
  lines: scanLines,
  continued,
  shared,
};
