// What a branch's pages list, in order: its whole path from the root, each line notice at its
// file position (every branch gets every line notice, after the leaf too, so earlier items never
// move while the file grows), the root's missing-parent or loop notice, and the forked-session
// notice. Held as one Int32Array (an entry index, or a notice as -1 - its number), and made into
// objects only for the items a page renders.
import { type EntryRec, type EntryTable, entryAt, keyOf, type LineNotice } from "./pi.ts";
import { LOOP, MISSING_PARENT, type ParsedSession } from "./tree.ts";

export type NoticeItemCode =
  | "malformed-line"
  | "ignored-header"
  | "missing-parent"
  | "loop"
  | "forked-from-earlier-session";

export type NoticeItem = {
  kind: "notice";
  id: string;
  code: NoticeItemCode;
  text: string;
  line?: number;
};
export type Item = { kind: "entry"; rec: EntryRec } | NoticeItem;

/** A branch's items, read by position. */
export class BranchItems {
  readonly #codes: Int32Array;
  readonly #entries: EntryTable;
  readonly #notices: NoticeItem[];

  constructor(codes: Int32Array, entries: EntryTable, notices: NoticeItem[]) {
    this.#codes = codes;
    this.#entries = entries;
    this.#notices = notices;
  }

  get length(): number {
    return this.#codes.length;
  }

  /** The item at `i` (0 <= i < length). */
  at(i: number): Item {
    const code = this.#codes[i];
    if (code === undefined) throw new RangeError(`no item ${i} in a branch of ${this.length}`);
    return code >= 0
      ? { kind: "entry", rec: entryAt(this.#entries, code) }
      : this.#notices[-1 - code]!;
  }
}

/** The items of branch `b`. */
export function branchItems(parsed: ParsedSession, b: number): BranchItems {
  const notices: NoticeItem[] = [];
  const codes: number[] = [];
  const notice = (item: NoticeItem) => {
    notices.push(item);
    codes.push(-notices.length);
  };
  if (parsed.header.parentSession) {
    notice({
      kind: "notice",
      id: "forked",
      code: "forked-from-earlier-session",
      text: "This conversation was forked from an earlier session, which is not opened here.",
    });
  }
  const path: number[] = [];
  const leaf = parsed.branches.leaf[b]!;
  for (let cur = leaf; cur >= 0; cur = parsed.parent[cur]!) path.push(cur);
  path.reverse();
  const lines = parsed.lineNotices;
  const table = parsed.scan.entries;
  let ni = 0;
  const flushBefore = (line: number) => {
    while (ni < lines.length && lines[ni]!.line < line) notice(lineNoticeItem(lines[ni++]!));
  };
  for (let i = 0; i < path.length; i++) {
    const rec = entryAt(table, path[i]!);
    flushBefore(rec.line);
    if (i === 0) {
      const kind = parsed.rootKind[rec.index];
      if (kind === MISSING_PARENT) notice(missingParentItem(parsed, rec));
      else if (kind === LOOP) {
        notice({
          kind: "notice",
          id: `loop-${chatIdOf(rec)}`,
          code: "loop",
          text: `The history stops here: entry ${rec.id.slice(0, 200)} is its own ancestor, so its parent link is not followed.`,
          line: rec.line,
        });
      }
    }
    codes.push(rec.index);
  }
  flushBefore(Number.POSITIVE_INFINITY);
  return new BranchItems(Int32Array.from(codes), table, notices);
}

function chatIdOf(rec: EntryRec): string {
  return keyOf(rec).slice(2);
}

function lineNoticeItem(n: LineNotice): NoticeItem {
  return n.kind === "ignored-header"
    ? {
        kind: "notice",
        id: `header-${n.line}`,
        code: "ignored-header",
        text: `Line ${n.line} is a second session header; Pi ignores it.`,
        line: n.line,
      }
    : {
        kind: "notice",
        id: `line-${n.line}`,
        code: "malformed-line",
        text: `Line ${n.line} could not be read as a session entry; it is skipped.`,
        line: n.line,
      };
}

function missingParentItem(parsed: ParsedSession, rec: EntryRec): NoticeItem {
  // Unreadable lines right before the entry are the likely place of its parent.
  const near: number[] = [];
  // Line notices are in line order: start at the last one above the entry.
  const notices = parsed.lineNotices;
  let lo = 0;
  let hi = notices.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (notices[mid]!.line < rec.line) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo - 1; i >= 0; i--) {
    const n = notices[i]!;
    if (n.kind !== "malformed-line" || n.line !== rec.line - 1 - near.length) break;
    near.push(n.line);
  }
  const parent = String(rec.parentId).slice(0, 200);
  const where =
    near.length === 0
      ? ""
      : near.length === 1
        ? ` It was probably on unreadable line ${near[0]}.`
        : ` It was probably on one of the unreadable lines ${near[near.length - 1]}–${near[0]}.`;
  return {
    kind: "notice",
    id: `missing-parent-${chatIdOf(rec)}`,
    code: "missing-parent",
    text: `The history before this point is missing: the parent entry ${parent} is not in the file.${where}`,
    line: rec.line,
  };
}

/** The stable key of an item, for comparing a branch's earlier items across snapshots. */
export function itemKey(item: Item): string {
  return item.kind === "entry"
    ? `n.${JSON.stringify(item.rec.id)}@${item.rec.start}`
    : `x.${item.id}`;
}
