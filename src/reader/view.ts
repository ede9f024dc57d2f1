// The `view` a page carries: where Pi's default leaf is, and a bounded list of branches. A file
// can hold millions of branches (every entry a root), so a page lists at most
// LIMITS.branchesPerView of them, chosen so the Console can walk the tree from the branch it
// shows: that branch, the default branch, the branches forking from it (up to half the room),
// the branches it forks from (nearest first), then the others in file order. `branchCount` says how many exist;
// any branch opens by its name (`b.<entry id>`) whether listed or not.
import { type BranchInfo, LIMITS, type View } from "../protocol/chat-01.ts";
import { keyOf, keyOfId } from "./pi.ts";
import { branchName, defaultBranch, forksOf, type ParsedSession } from "./tree.ts";

/** The view of a page of branch `shown` (an index into `s.branches`). */
export function viewFor(s: ParsedSession, shown: number, incomplete: boolean): View {
  const cap = LIMITS.branchesPerView;
  const picked = new Set<number>();
  const pick = (b: number) => {
    if (picked.size < cap) picked.add(b);
  };
  const dflt = defaultBranch(s);
  pick(shown);
  pick(dflt);
  // Down one level (up to half the room), up the tree nearest first, the rest of the forks,
  // then the others in file order: from any branch, its parent and its forks are a click away.
  const forks = forksOf(s, shown);
  let f = 0;
  for (; f < forks.length && picked.size < cap / 2; f++) pick(forks[f]!);
  for (let b = shown; picked.size < cap; ) {
    const from = s.branches.forksFrom[b]!;
    if (from < 0) break;
    b = s.branchOf[from]!;
    pick(b);
  }
  for (; f < forks.length && picked.size < cap; f++) pick(forks[f]!);
  for (let b = 0; b < s.branches.count && picked.size < cap; b++) pick(b);
  const leaf = s.defaultLeaf;
  return {
    defaultBranch: branchName(s, dflt),
    defaultLeaf: leaf ? keyOf(leaf) : null,
    branches: [...picked].sort((a, b) => a - b).map((b) => branchInfo(s, b)),
    branchCount: s.branches.count,
    incomplete,
    forkedFromEarlierSession: s.header.parentSession,
    unreadableLines: unreadableLines(s),
  };
}

function branchInfo(s: ParsedSession, b: number): BranchInfo {
  const { start, leaf, forksFrom, depth } = s.branches;
  const ids = s.scan.entries.ids;
  const key = (i: number) => (i >= 0 ? keyOfId(ids[i]!) : null);
  const from = forksFrom[b]!;
  return {
    name: branchName(s, b),
    leaf: key(leaf[b]!),
    start: key(start[b]!),
    forksFrom:
      from >= 0 ? { branch: branchName(s, s.branchOf[from]!), entry: keyOfId(ids[from]!) } : null,
    depth: depth[b]!,
  };
}

/** Counted once per parse: the scan's notices do not change. */
const unreadable = new WeakMap<ParsedSession, number>();
function unreadableLines(s: ParsedSession): number {
  let n = unreadable.get(s);
  if (n === undefined) {
    n = 0;
    for (const l of s.lineNotices) if (l.kind === "malformed-line") n++;
    unreadable.set(s, n);
  }
  return n;
}
