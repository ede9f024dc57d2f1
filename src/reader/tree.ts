// The id/parentId tree of a scanned session and its branches (seed: Parser). Everything per
// entry lives in typed arrays indexed by the entry's `index` (its position among the file's
// entry lines), and branches are columns too: a file of millions of tiny entries or roots costs
// a few words per entry, and no step walks more than linear work (no per-branch depth walk).
import { toChatId } from "../protocol/chat-01.ts";
import { IdIndex } from "./id-index.ts";
import {
  continuedScan,
  type EntryRec,
  entryAt,
  firstScan,
  type Header,
  type LineNotice,
  type ScanState,
  scanLines,
} from "./pi.ts";

export const ROOT = 1;
export const MISSING_PARENT = 2;
export const LOOP = 3;
/** Why an entry has no parent: 0 it has one, else ROOT, MISSING_PARENT or LOOP. */
export type RootKind = 0 | typeof ROOT | typeof MISSING_PARENT | typeof LOOP;

/** Branches as columns: branch `b` runs from `start[b]` to `leaf[b]` (entry indexes, -1 none). */
export type Branches = {
  count: number;
  start: Int32Array;
  leaf: Int32Array;
  /** The entry it forks from, -1 for a root. */
  forksFrom: Int32Array;
  /** Entries from the root to the leaf. */
  depth: Int32Array;
};

export type ParsedSession = {
  header: Header;
  scan: ScanState;
  /** Per entry index: 1 when it wins its id (a later duplicate replaces the earlier, SM:694). */
  wins: Uint8Array;
  byId: IdIndex;
  lineNotices: LineNotice[];
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
  /** Hashed branch names to their start entries' indexes, built on first use. */
  hashed?: Map<string, number>;
  /** Per branch, the branches forking from it, built on first use (CSR: offsets and list). */
  forkChildren?: { offsets: Int32Array; list: Int32Array };
};

/** Indexes a snapshot that starts with a valid header (see parseHeader). */
export function parseSession(buf: Buffer, header: Header): ParsedSession {
  return indexEntries(header, scanLines(buf, header, firstScan(buf)));
}

/**
 * Indexes a longer snapshot of the same file whose first `prev.scan.scanned` bytes are verified
 * unchanged: only the appended lines are parsed. `prev` is not modified (other cursors use it).
 */
export function extendSession(prev: ParsedSession, buf: Buffer): ParsedSession {
  return indexEntries(prev.header, scanLines(buf, prev.header, continuedScan(prev.scan)));
}

function indexEntries(header: Header, scan: ScanState): ParsedSession {
  const { entries: table, lineNotices } = scan;
  const n = table.count;
  const { ids, parentIds } = table;
  // The later copy of a duplicate id wins (SM:694); the default leaf is the last entry in file
  // order (SM:695), whatever its type.
  const byId = new IdIndex(table);
  const wins = new Uint8Array(n);
  for (let i = 0; i < n; i++) if (byId.get(ids[i]!) === i) wins[i] = 1;
  const defaultLeaf = n > 0 ? entryAt(table, n - 1) : null;

  const parent = new Int32Array(n).fill(-1);
  const rootKind = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    if (wins[i] === 0) continue;
    const parentId = parentIds[i]!;
    if (parentId === null) rootKind[i] = ROOT;
    else {
      const p = byId.get(parentId);
      if (p < 0) rootKind[i] = MISSING_PARENT;
      else {
        parent[i] = p;
        // Share the parent's id string: one copy per id, however many children name it.
        parentIds[i] = ids[p]!;
      }
    }
  }
  cutLoops(wins, parent, rootKind);

  // Children in file order: the first continues its parent's branch, the others fork.
  const firstChild = new Int32Array(n).fill(-1);
  const nextSibling = new Int32Array(n).fill(-1);
  const lastChild = new Int32Array(n).fill(-1);
  for (let i = 0; i < n; i++) {
    const p = parent[i]!;
    if (p < 0) continue;
    if (firstChild[p] === -1) firstChild[p] = i;
    else nextSibling[lastChild[p]!] = i;
    lastChild[p] = i;
  }

  // Branch starts, breadth first so a fork's parent branch is walked (and its depths known)
  // before the fork: the roots in file order (the first is `main`), then each later child at a
  // fork. `depthAt` is each entry's depth from its root.
  const depthAt = new Int32Array(n);
  const branchOf = new Int32Array(n).fill(-1);
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
  const branches: Branches = {
    count,
    start: new Int32Array(count).fill(-1),
    leaf: new Int32Array(count).fill(-1),
    forksFrom: new Int32Array(count).fill(-1),
    depth: new Int32Array(count),
  };
  const starts = new Int32Array(n);
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
    const leaf = leafOfJob[j]!;
    branches.start[num] = s;
    branches.leaf[num] = leaf;
    branches.forksFrom[num] = parent[s]!;
    branches.depth[num] = depthAt[leaf]!;
  }
  for (let i = 0; i < n; i++) if (branchOf[i]! >= 0) branchOf[i] = numberOfJob[branchOf[i]!]!;
  const main = firstRoot >= 0 ? starts[firstRoot]! - 1 : 0;
  return {
    header,
    scan,
    wins,
    byId,
    lineNotices,
    defaultLeaf,
    parent,
    rootKind,
    branchOf,
    starts,
    branches,
    main,
  };
}

/**
 * Breaks parent cycles: in each cycle, the entry earliest in the file loses its parent link and
 * becomes a root with a `loop` notice. Pi has no such guard (SM:124-145 spins on a cycle).
 */
function cutLoops(wins: Uint8Array, parent: Int32Array, rootKind: Uint8Array): void {
  const state = new Uint8Array(parent.length); // 1: on the current walk, 2: done
  const chain: number[] = [];
  for (let e = 0; e < wins.length; e++) {
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
  for (let i = 0; i < s.starts.length; i++) {
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
