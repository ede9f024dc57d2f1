// The `view` a page carries: where Pi's default leaf is, and a bounded list of branches. A file
// can hold millions of branches (every entry a root), so a page lists at most
// LIMITS.branchesPerView of them, chosen so the Console can walk the tree from the branch it
// shows: that branch, the default branch, the branches forking from it (up to half the room),
// the branches it forks from (nearest first), then the others in file order. `branchCount` says how many exist;
// any branch opens by its name (`b.<entry id>`) whether listed or not.
import { type BranchInfo, type ForkedFrom, LIMITS, type View } from "../protocol/chat-01.ts";
import { branchLabels } from "./branch-labels.ts";
import { type EntryLines, entryAt } from "./entries.ts";
import { branchName, defaultBranch, depthOf, forksOf, leafOf, type ParsedSession } from "./tree.ts";

/** The view of a page of branch `shown` (an index into `s.branches`). */
export function viewFor(
  s: ParsedSession,
  shown: number,
  incomplete: boolean,
  lines: EntryLines,
  forkedFrom: ForkedFrom | null = null,
): View {
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
  const named = branchLabels(s, lines);
  return {
    defaultBranch: branchName(s, dflt),
    defaultLeaf: leaf ? s.rows.entryKey(s, leaf.index) : null,
    branches: [...picked].sort((a, b) => a - b).map((b) => branchInfo(s, b, lines, named)),
    branchCount: s.branches.count,
    incomplete,
    forkedFromEarlierSession: s.header.parentSession,
    forkedFrom,
    unreadableLines: unreadableLines(s),
  };
}

function branchInfo(
  s: ParsedSession,
  b: number,
  lines: EntryLines,
  named: Map<number, string>,
): BranchInfo {
  const { start, forksFrom } = s.branches;
  const key = (i: number) => (i >= 0 ? s.rows.entryKey(s, i) : null);
  const from = forksFrom[b]!;
  return {
    name: branchName(s, b),
    leaf: key(leafOf(s, b)),
    start: key(start[b]!),
    forksFrom:
      from >= 0
        ? { branch: branchName(s, s.branchOf[from]!), entry: s.rows.entryKey(s, from) }
        : null,
    depth: depthOf(s, b),
    // The name a person gave it (a Pi label on its own entries), else its first words.
    label: clip(named.get(b) ?? "") ?? labelOf(s, start[b]!, lines),
  };
}

const LABEL_MAX = 60;
/** Lines longer than this give no label: a label must not cost a page the parse of a huge entry. */
const LABEL_LINE_MAX = 256 * 1024;
/**
 * Labels by entry row, per parse lineage (its shared columns: a parse and the follows that
 * extended it in place hold the same bytes at each row): a page's view names up to 100
 * branches every time, and a follow should not render them all again.
 */
const labels = new WeakMap<object, Map<number, string | null>>();

/** A branch's label: the first words of its first entry's text, as Pi's `/tree` shows it. */
function labelOf(s: ParsedSession, row: number, lines: EntryLines): string | null {
  if (row < 0) return null;
  let known = labels.get(s.cols);
  if (!known) {
    known = new Map();
    labels.set(s.cols, known);
  }
  const cached = known.get(row);
  if (cached !== undefined) return cached;
  const rec = entryAt(s.scan.entries, row);
  let label: string | null = null;
  if (rec.end - rec.start <= LABEL_LINE_MAX) {
    // The entry's line, read from the file again (the reader keeps no snapshot bytes).
    const line = lines(rec);
    const text = s.rows.labelText(s, line.buf, line.rec, lines);
    label = clip(text === null ? "" : text.slice(0, 400));
  }
  known.set(row, label);
  return label;
}

/** Text on one line, at most LABEL_MAX characters (cut at a space, with "…"); null when blank. */
function clip(text: string): string | null {
  const words = text.replace(/\s+/g, " ").trim();
  if (words.length === 0) return null;
  if (words.length <= LABEL_MAX) return words;
  // Never end on half a surrogate pair.
  const cut = words.slice(0, LABEL_MAX - 1).replace(/[\uD800-\uDBFF]$/, "");
  const space = cut.lastIndexOf(" ");
  return `${space > 20 ? cut.slice(0, space) : cut}…`;
}

function unreadableLines(s: ParsedSession): number {
  return s.scan.malformed;
}
