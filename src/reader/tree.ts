// The id/parentId tree of a scanned session and its branches (seed: Parser). Everything per
// entry lives in typed arrays indexed by the entry's `index` (its position among the file's
// entry lines), and branches are columns too: a file of millions of tiny entries or roots costs
// a few words per entry, and no step walks more than linear work (no per-branch depth walk).
import { toChatId } from "../protocol/chat-01.ts";
import {
  type EntryLines,
  type EntryRec,
  entryAt,
  type LineNotice,
  roomFor,
  type Scanner,
  type ScanState,
  type SessionHead,
  trimTable,
} from "./entries.ts";
import { IdIndex } from "./id-index.ts";
import type { SizedPart } from "./parts.ts";
import { work } from "./work.ts";

export const ROOT = 1;
export const MISSING_PARENT = 2;
export const LOOP = 3;
/** Why an entry has no parent: 0 it has one, else ROOT, MISSING_PARENT or LOOP. */
export type RootKind = 0 | typeof ROOT | typeof MISSING_PARENT | typeof LOOP;

/**
 * Branches as columns: branch `b` starts at entry `start[b]` and forks from `forksFrom[b]` (-1
 * for a root); its leaf and depth are read with leafOf and depthOf. Columns may be longer than
 * `count`.
 */
export type Branches = {
  count: number;
  start: Int32Array;
  /** The entry it forks from, -1 for a root. */
  forksFrom: Int32Array;
};

/**
 * What a parse derives per entry row and per branch, shared by the parse that built it and the
 * parses that extended it in place (a follow after an append: extendSession). Rows and branches
 * are only ever added, and a row's values never change once written, except a branch's leaf
 * and depth (a continued branch grows) and `hasChild`, which only the newest parse reads: an
 * earlier parse finds its own leaf by walking up from the newest (leafOf). Columns are
 * reallocated here as they grow, so every parse of the lineage reads them through this object.
 */
type Columns = {
  wins: Uint8Array;
  parent: Int32Array;
  rootKind: Uint8Array;
  branchOf: Int32Array;
  starts: Int32Array;
  /** Per row: entries from its root to it. */
  depthAt: Int32Array;
  /** Per row: 1 when it has a child (read only by the newest parse). */
  hasChild: Uint8Array;
  start: Int32Array;
  leaf: Int32Array;
  forksFrom: Int32Array;
  depth: Int32Array;
  byId: IdIndex;
  /**
   * The parent ids no row has (of MISSING_PARENT roots): an appended row with such an id would
   * re-parent earlier rows. Null when there are too many to keep, and no extension is in place.
   */
  missing: Set<string> | null;
  /** The row count of the one parse that may extend these columns in place; -1 when none may. */
  tip: number;
};

/** More missing parent ids than this and a follow parses the tree again instead. */
const MISSING_MAX = 65_536;

/** What one label line does: set `target`'s label to `text` (whitespace collapsed), or clear it (null). */
export type LabelChange = { target: string; text: string | null };

/** A harness whose entries carry labels says how (RowFormat.labels; branch-labels.ts reads them). */
export type LabelFormat = {
  /** The entry type of a label line. */
  type: string;
  /** What a label line does; null for a line that does neither (not a label Pi would apply). */
  change(buf: Buffer, start: number, end: number): LabelChange | null;
};

/**
 * How a harness shows its entry rows (the shared code renders notices, views and pages; the
 * harness knows what a row says). Methods, so a harness's own session shape stands in.
 */
export interface RowFormat {
  /** The CHAT-01 entry (`n.<id>`) the parts of row `row` belong to, as views name leaves. */
  entryKey(s: ParsedSession, row: number): string;
  /**
   * The parts of an entry row (none for a hidden one): `rec`'s range is its line in `buf`;
   * `lines` reads any other row's line (rows hold offsets in the snapshot), proved as a page's.
   */
  render(s: ParsedSession, buf: Buffer, rec: EntryRec, lines: EntryLines): SizedPart[];
  /** The text a branch starting at this row is labelled by, or null (no text, or hidden). */
  labelText(s: ParsedSession, buf: Buffer, rec: EntryRec, lines: EntryLines): string | null;
  /** How the harness's entries name other entries (Pi's `label` lines), when they can. */
  readonly labels?: LabelFormat;
}

export type ParsedSession = {
  header: SessionHead;
  /** The harness's scan, which a follow continues (extendSession). */
  scanner: Scanner;
  /** The harness's rendering of its rows. */
  rows: RowFormat;
  scan: ScanState;
  /** Per entry index: 1 when it wins its id (a later duplicate replaces the earlier, SM:694). */
  wins: Uint8Array;
  /** Entry ids to rows of this parse. */
  byId: { get(id: string): number };
  /** The scan's line notices; only the first `noticeCount` belong to this parse. */
  lineNotices: readonly LineNotice[];
  noticeCount: number;
  defaultLeaf: EntryRec | null;
  /** Per entry index: the parent's index, or -1 (a root, or a losing duplicate). */
  parent: Int32Array;
  /** Per entry index: why it has no parent (RootKind). */
  rootKind: Uint8Array;
  /** Per entry index: its branch, or -1 for a losing duplicate. */
  branchOf: Int32Array;
  /** Per entry index: 1 + the branch it starts, or 0. */
  starts: Int32Array;
  branches: Branches;
  /** The branch named `main`: the first root's, or the empty branch of a file with no entry. */
  main: number;
  /** The shared columns (see Columns). */
  cols: Columns;
  /** Hashed branch names to their start entries' indexes, built on first use. */
  hashed?: Map<string, number>;
  /** Per branch, the branches forking from it, built on first use (CSR: offsets and list). */
  forkChildren?: { offsets: Int32Array; list: Int32Array };
};

/** Indexes a whole snapshot whose head the harness accepted, with the harness's scan. */
export function parseSession<H extends SessionHead, S extends ScanState>(
  buf: Buffer,
  header: H,
  scanner: Scanner<H, S>,
  rows: RowFormat,
): ParsedSession {
  return indexScan(
    header,
    scanner,
    rows,
    scanner.lines(buf, header, scanner.first(buf, header), 0),
  );
}

/** Indexes a finished scan of a whole snapshot (scanned in steps: parse-sink.ts FreshParse). */
export function indexScan<H extends SessionHead, S extends ScanState>(
  header: H,
  scanner: Scanner<H, S>,
  rows: RowFormat,
  scan: S,
): ParsedSession {
  trimTable(scan.entries);
  return indexEntries({ header, scanner, rows }, scan);
}

/**
 * Indexes a longer snapshot of the same file whose first `prev.scan.scanned` bytes are verified
 * unchanged: only the appended lines are parsed. `prev` reads exactly as before (other cursors
 * use it). When `prev` is the newest parse of its columns and the appended rows only add to the
 * tree (new ids, parents already known), they are added in place, in time proportional to
 * them; otherwise (a duplicate id, a parent not yet seen, a found missing parent, or a second
 * extension of the same parse) the tree is built again over a copy.
 */
export function extendSession(prev: ParsedSession, buf: Buffer, base = 0): ParsedSession {
  const ext = beginExtension(prev);
  prev.scanner.lines(buf, prev.header, ext.scan, base);
  return finishExtension(prev, ext);
}

/** An extension of `prev` under way: the appended lines are scanned into `scan` in steps. */
export type Extension = { scan: ScanState; shared: boolean };

/** Starts extending `prev` (extendSession in steps: scanLines, then finishExtension). */
export function beginExtension(prev: ParsedSession): Extension {
  const c = prev.cols;
  const { scanner } = prev;
  const shared = c.tip === prev.scan.entries.count ? scanner.shared(prev.scan) : null;
  if (!shared) return { scan: scanner.continued(prev.scan), shared: false };
  // Claimed: whatever happens below, no other parse may append to these columns any more.
  c.tip = -1;
  return { scan: shared, shared: true };
}

export function finishExtension(prev: ParsedSession, ext: Extension): ParsedSession {
  if (ext.shared) {
    const extended = extendInPlace(prev, ext.scan);
    if (extended) return extended;
    return indexEntries(prev, ext.scan);
  }
  trimTable(ext.scan.entries);
  return indexEntries(prev, ext.scan);
}

/** Room for `n` rows with a little to spare, so the next follow appends without copying. */
function withSlack(n: number): number {
  return n + Math.min(n >>> 6, 65_536) + 64;
}

function grownInt32(a: Int32Array, n: number, fill: number): Int32Array {
  if (n <= a.length) return a;
  const b = new Int32Array(roomFor(n)).fill(fill);
  b.set(a);
  return b;
}

function grownUint8(a: Uint8Array, n: number): Uint8Array {
  if (n <= a.length) return a;
  const b = new Uint8Array(roomFor(n));
  b.set(a);
  return b;
}

/** Adds `scan`'s rows past `prev`'s to prev's columns; null when they change earlier rows. */
function extendInPlace(prev: ParsedSession, scan: ScanState): ParsedSession | null {
  const c = prev.cols;
  const table = scan.entries;
  const from = prev.scan.entries.count;
  const n = table.count;
  const missing = c.missing;
  if (from === 0 || missing === null) return null;
  c.wins = grownUint8(c.wins, n);
  c.parent = grownInt32(c.parent, n, -1);
  c.rootKind = grownUint8(c.rootKind, n);
  c.branchOf = grownInt32(c.branchOf, n, -1);
  c.starts = grownInt32(c.starts, n, 0);
  c.depthAt = grownInt32(c.depthAt, n, 0);
  c.hasChild = grownUint8(c.hasChild, n);
  let count = prev.branches.count;
  const fork = (row: number, from: number) => {
    const b = count++;
    c.start = grownInt32(c.start, count, -1);
    c.leaf = grownInt32(c.leaf, count, -1);
    c.forksFrom = grownInt32(c.forksFrom, count, -1);
    c.depth = grownInt32(c.depth, count, 0);
    c.start[b] = row;
    c.forksFrom[b] = from;
    c.depth[b] = c.depthAt[row]!;
    c.branchOf[row] = b;
    c.starts[row] = b + 1;
    // The leaf last: an earlier parse walking up from it finds the parent link already written.
    c.leaf[b] = row;
  };
  const { ids, parentIds } = table;
  for (let j = from; j < n; j++) {
    const id = ids[j]!;
    // A duplicate replaces an earlier row; a missing parent found re-parents earlier rows.
    if (c.byId.get(id) >= 0 || missing.has(id)) return null;
    const parentId = parentIds[j]!;
    const p = parentId === null ? -1 : c.byId.get(parentId);
    // A parent not seen yet (missing, or later in the file) is left to the whole parse.
    if (parentId !== null && p < 0) return null;
    work.rowsIndexed++;
    c.byId.add(j);
    c.wins[j] = 1;
    c.hasChild[j] = 0;
    if (p < 0) {
      c.parent[j] = -1;
      c.rootKind[j] = ROOT;
      c.depthAt[j] = 1;
      c.starts[j] = 0;
      fork(j, -1);
      continue;
    }
    parentIds[j] = ids[p]!;
    c.parent[j] = p;
    c.rootKind[j] = 0;
    c.depthAt[j] = c.depthAt[p]! + 1;
    c.starts[j] = 0;
    if (c.hasChild[p] === 0) {
      // The parent was the leaf of its branch: the branch continues.
      const b = c.branchOf[p]!;
      c.branchOf[j] = b;
      c.depth[b] = c.depthAt[j]!;
      c.leaf[b] = j;
    } else fork(j, p);
    c.hasChild[p] = 1;
  }
  c.tip = n;
  return sessionOf(prev, scan, c, count, prev.main);
}

/** What a parse takes from its harness and keeps through its follows. */
type Format = Pick<ParsedSession, "header" | "scanner" | "rows">;

function sessionOf(
  format: Format,
  scan: ScanState,
  c: Columns,
  branchCount: number,
  main: number,
): ParsedSession {
  const table = scan.entries;
  const n = table.count;
  const { byId } = c;
  return {
    header: format.header,
    scanner: format.scanner,
    rows: format.rows,
    scan,
    wins: c.wins,
    byId: { get: (id) => byId.get(id, n) },
    lineNotices: scan.lineNotices,
    noticeCount: scan.notices,
    defaultLeaf: leafRowOf(scan, n) >= 0 ? entryAt(table, leafRowOf(scan, n)) : null,
    parent: c.parent,
    rootKind: c.rootKind,
    branchOf: c.branchOf,
    starts: c.starts,
    branches: { count: branchCount, start: c.start, forksFrom: c.forksFrom },
    main,
    cols: c,
  };
}

/** The default leaf's row: the harness's, else the last entry in file order (SM:695). */
function leafRowOf(scan: ScanState, n: number): number {
  return scan.leaf === undefined ? n - 1 : Math.min(scan.leaf, n - 1);
}

/** The leaf of branch `b` in this parse (the columns may hold a longer parse's). */
export function leafOf(s: ParsedSession, b: number): number {
  const rows = s.scan.entries.count;
  const { leaf, parent } = s.cols;
  let l = leaf[b]!;
  while (l >= rows) l = parent[l]!;
  return l;
}

/** The entries from the root to the leaf of branch `b` in this parse. */
export function depthOf(s: ParsedSession, b: number): number {
  const rows = s.scan.entries.count;
  const { leaf, parent, depth } = s.cols;
  let d = depth[b]!;
  for (let l = leaf[b]!; l >= rows; l = parent[l]!) d--;
  return d;
}

function indexEntries(format: Format, scan: ScanState): ParsedSession {
  const table = scan.entries;
  const n = table.count;
  work.rowsIndexed += n;
  const { ids, parentIds, fallbackParents: fallbacks } = table;
  const room = withSlack(n);
  // The later copy of a duplicate id wins (SM:694); the default leaf is the last entry in file
  // order (SM:695), whatever its type.
  const byId = new IdIndex(table);
  const wins = new Uint8Array(room);
  for (let i = 0; i < n; i++) if (byId.get(ids[i]!) === i) wins[i] = 1;

  const parent = new Int32Array(room).fill(-1);
  const rootKind = new Uint8Array(room);
  let missing: Set<string> | null = new Set();
  for (let i = 0; i < n; i++) {
    if (wins[i] === 0) continue;
    const parentId = parentIds[i]!;
    if (parentId === null) rootKind[i] = ROOT;
    else {
      const p = byId.get(parentId);
      if (p < 0) {
        missing?.add(parentId);
        if (missing && missing.size > MISSING_MAX) missing = null;
      }
      // A link to no earlier row may have a second choice (EntryTable.fallbackParents).
      const second = p < i && p >= 0 ? undefined : fallbacks.get(i);
      const q = second === undefined ? -1 : byId.get(second);
      if (q >= 0 && q < i) parent[i] = q;
      else if (p < 0) rootKind[i] = MISSING_PARENT;
      else {
        parent[i] = p;
        // Share the parent's id string: one copy per id, however many children name it.
        parentIds[i] = ids[p]!;
      }
    }
  }
  cutLoops(n, wins, parent, rootKind);

  // Children in file order: the first continues its parent's branch, the others fork.
  const firstChild = new Int32Array(n).fill(-1);
  const nextSibling = new Int32Array(n).fill(-1);
  const lastChild = new Int32Array(n).fill(-1);
  const hasChild = new Uint8Array(room);
  for (let i = 0; i < n; i++) {
    const p = parent[i]!;
    if (p < 0) continue;
    if (firstChild[p] === -1) firstChild[p] = i;
    else nextSibling[lastChild[p]!] = i;
    lastChild[p] = i;
    hasChild[p] = 1;
  }

  // Branch starts, breadth first so a fork's parent branch is walked (and its depths known)
  // before the fork: the roots in file order (the first is `main`), then each later child at a
  // fork. `depthAt` is each entry's depth from its root.
  const depthAt = new Int32Array(room);
  const branchOf = new Int32Array(room).fill(-1);
  const jobs: number[] = [];
  for (let i = 0; i < n; i++) if (wins[i] === 1 && parent[i] === -1) jobs.push(i);
  const firstRoot = jobs.length > 0 ? jobs[0]! : -1;
  const leafOfJob: number[] = [];
  for (let j = 0; j < jobs.length; j++) {
    const s = jobs[j]!;
    const from = parent[s]!;
    let depth = from >= 0 ? depthAt[from]! : 0;
    let leaf = s;
    for (let cur = s; cur >= 0; cur = firstChild[cur]!) {
      depthAt[cur] = ++depth;
      branchOf[cur] = j; // a job number for now; renumbered in file order below
      leaf = cur;
      for (let k = nextSibling[firstChild[cur]!] ?? -1; k >= 0; k = nextSibling[k]!) jobs.push(k);
    }
    leafOfJob.push(leaf);
  }

  // Branches in file order of their start entries (an entry starts at most one branch).
  const count = Math.max(1, jobs.length);
  const branchRoom = withSlack(count);
  const start = new Int32Array(branchRoom).fill(-1);
  const leaf = new Int32Array(branchRoom).fill(-1);
  const forksFrom = new Int32Array(branchRoom).fill(-1);
  const depth = new Int32Array(branchRoom);
  const starts = new Int32Array(room);
  const numberOfJob = new Int32Array(jobs.length);
  let b = 0;
  for (const s of jobs) starts[s] = 1;
  for (let i = 0; i < n; i++) {
    if (starts[i] === 0) continue;
    starts[i] = b + 1;
    b++;
  }
  for (let j = 0; j < jobs.length; j++) {
    const s = jobs[j]!;
    const num = starts[s]! - 1;
    numberOfJob[j] = num;
    const l = leafOfJob[j]!;
    start[num] = s;
    leaf[num] = l;
    forksFrom[num] = parent[s]!;
    depth[num] = depthAt[l]!;
  }
  for (let i = 0; i < n; i++) if (branchOf[i]! >= 0) branchOf[i] = numberOfJob[branchOf[i]!]!;
  const main = firstRoot >= 0 ? starts[firstRoot]! - 1 : 0;
  const cols: Columns = {
    wins,
    parent,
    rootKind,
    branchOf,
    starts,
    depthAt,
    hasChild,
    start,
    leaf,
    forksFrom,
    depth,
    byId,
    missing,
    tip: n,
  };
  return sessionOf(format, scan, cols, count, main);
}

/**
 * Breaks parent cycles: in each cycle, the entry earliest in the file loses its parent link and
 * becomes a root with a `loop` notice. Pi has no such guard (SM:124-145 spins on a cycle).
 */
function cutLoops(n: number, wins: Uint8Array, parent: Int32Array, rootKind: Uint8Array): void {
  const state = new Uint8Array(n); // 1: on the current walk, 2: done
  const chain: number[] = [];
  for (let e = 0; e < n; e++) {
    if (wins[e] === 0 || state[e] !== 0) continue;
    chain.length = 0;
    let cur = e;
    while (cur >= 0 && state[cur] === 0) {
      state[cur] = 1;
      chain.push(cur);
      cur = parent[cur]!;
    }
    if (cur >= 0 && state[cur] === 1) {
      // Indexes follow file order, so the smallest index in the cycle is the earliest line.
      let first = cur;
      for (let i = chain.lastIndexOf(cur); i < chain.length; i++)
        first = Math.min(first, chain[i]!);
      parent[first] = -1;
      rootKind[first] = LOOP;
    }
    for (const c of chain) state[c] = 2;
  }
}

/** A branch's name: `main`, or `b.` + the CHAT-01 id of its start entry. */
export function branchName(s: ParsedSession, b: number): string {
  if (b === s.main) return "main";
  const start = s.branches.start[b]!;
  return `b.${toChatId(s.scan.entries.ids[start]!)}`;
}

/** The branch holding Pi's default leaf (`main` when the file has no entry). */
export function defaultBranch(s: ParsedSession): number {
  const leaf = s.defaultLeaf;
  return leaf ? Math.max(0, s.branchOf[leaf.index]!) : s.main;
}

/** The branch with this name, or -1. */
export function findBranch(s: ParsedSession, name: string): number {
  if (name === "main") return s.main;
  if (!name.startsWith("b.")) return -1;
  const chatId = name.slice(2);
  const ids = s.scan.entries.ids;
  let i = s.byId.get(chatId);
  if (i >= 0 && toChatId(ids[i]!) !== chatId) i = -1;
  if (i < 0 && chatId.startsWith("h-")) i = hashedIds(s).get(chatId) ?? -1;
  if (i < 0) return -1;
  const b = s.starts[i]! - 1;
  return b >= 0 && b !== s.main ? b : -1;
}

function hashedIds(s: ParsedSession): Map<string, number> {
  if (s.hashed) return s.hashed;
  const map = new Map<string, number>();
  const ids = s.scan.entries.ids;
  for (let i = 0; i < s.scan.entries.count; i++) {
    if (s.starts[i] === 0) continue;
    const chatId = toChatId(ids[i]!);
    if (chatId !== ids[i]) map.set(chatId, i);
  }
  s.hashed = map;
  return map;
}

/** The branches forking from branch `b` (from entries on it), in file order. */
export function forksOf(s: ParsedSession, b: number): Int32Array {
  if (!s.forkChildren) {
    const { count, forksFrom } = s.branches;
    const offsets = new Int32Array(count + 1);
    for (let c = 0; c < count; c++) {
      const from = forksFrom[c]!;
      if (from >= 0) offsets[s.branchOf[from]! + 1]!++;
    }
    for (let c = 0; c < count; c++) offsets[c + 1]! += offsets[c]!;
    const fill = offsets.slice(0, count);
    const list = new Int32Array(offsets[count]!);
    for (let c = 0; c < count; c++) {
      const from = forksFrom[c]!;
      if (from >= 0) list[fill[s.branchOf[from]!]!++] = c;
    }
    s.forkChildren = { offsets, list };
  }
  const { offsets, list } = s.forkChildren;
  return list.subarray(offsets[b]!, offsets[b + 1]!);
}
