// What a branch's pages list, in order: its whole path from the root, each line notice at its
// file position (every branch gets every line notice, after the leaf too, so earlier items never
// move while the file grows), the root's missing-parent or loop notice, and the forked-session
// notice. Held as one Int32Array (an entry index, or a notice as -1 - its number), and made into
// objects only for the items a page renders.
import { createHash, type Hash } from "node:crypto";
import {
  type EntryRec,
  type EntryTable,
  entryAt,
  keyOf,
  type LineNotice,
  roomFor,
} from "./entries.ts";
import { LOOP, leafOf, MISSING_PARENT, type ParsedSession } from "./tree.ts";
import { work } from "./work.ts";

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

/**
 * The codes of a branch's item lists and their notices, shared by a list and the lists that
 * extend it in place (a follow): codes are only appended, so each list reads its own prefix.
 */
type ItemStore = { codes: Int32Array; used: number; notices: NoticeItem[] };

/** A branch's items, read by position. */
export class BranchItems {
  readonly #store: ItemStore;
  readonly #codes: Int32Array;
  readonly #length: number;
  /** How many of the store's notices this list has. */
  readonly #notices: number;
  readonly #entries: EntryTable;
  /** SHA-256 state after every item's key, once asked for (a follow cursor's digest). */
  #hash: Hash | null = null;
  #digest: string | null = null;
  /** The digest of the list this one extends, at its length. */
  readonly #base: { length: number; digest: string } | null;

  constructor(
    store: ItemStore,
    length: number,
    notices: number,
    entries: EntryTable,
    base: { length: number; digest: string; hash: Hash } | null,
    added: number,
  ) {
    this.#store = store;
    this.#codes = store.codes;
    this.#length = length;
    this.#notices = notices;
    this.#entries = entries;
    this.#base = base && { length: base.length, digest: base.digest };
    if (base) {
      const h = base.hash.copy();
      this.#hashKeys(h, base.length, length);
      work.keysHashed += added;
      this.#hash = h;
    }
  }

  get length(): number {
    return this.#length;
  }

  /** The item at `i` (0 <= i < length). */
  at(i: number): Item {
    if (!(i >= 0 && i < this.#length)) {
      throw new RangeError(`no item ${i} in a branch of ${this.length}`);
    }
    const code = this.#codes[i]!;
    return code >= 0
      ? { kind: "entry", rec: entryAt(this.#entries, code) }
      : this.#store.notices[-1 - code]!;
  }

  /**
   * SHA-256 over the keys of the first `count` items, one per line: what a follow cursor pins
   * of a branch's earlier history. Kept for the whole list and the list it extends, so a chain
   * of follows hashes each item once.
   */
  digestOf(count: number): string {
    if (count === this.#length) return this.#full().digest;
    if (this.#base && count === this.#base.length) return this.#base.digest;
    const h = createHash("sha256");
    this.#hashKeys(h, 0, count);
    work.keysHashed += count;
    return h.digest("hex");
  }

  /**
   * Feeds the keys of items [from, to) to `h`, one per line, read from the columns and handed
   * over in pieces of about 16 K characters: the same bytes as one update per key, at a small
   * part of the cost (an update call per item was 5% of a page traversal).
   */
  #hashKeys(h: Hash, from: number, to: number): void {
    const t = this.#entries;
    let piece = "";
    for (let i = from; i < to; i++) {
      const code = this.#codes[i]!;
      piece +=
        code >= 0
          ? `${entryItemKey(t.ids[code]!, t.starts[code]!)}\n`
          : `${noticeItemKey(this.#store.notices[-1 - code]!)}\n`;
      if (piece.length >= 16_384) {
        h.update(piece);
        piece = "";
      }
    }
    if (piece.length > 0) h.update(piece);
  }

  #full(): { digest: string; hash: Hash } {
    if (!this.#hash) {
      const h = createHash("sha256");
      this.#hashKeys(h, 0, this.#length);
      work.keysHashed += this.#length;
      this.#hash = h;
    }
    this.#digest ??= this.#hash.copy().digest("hex");
    return { digest: this.#digest, hash: this.#hash };
  }

  /**
   * This list followed by `codes` (entry rows, or notices numbered from `notices`'s first as
   * -1 - k), over the longer parse's table: in place when nothing else was appended to the
   * store since, else copied. The new list's digest continues this one's when it is known.
   */
  extended(
    codes: readonly number[],
    notices: readonly NoticeItem[],
    entries: EntryTable,
  ): BranchItems {
    const s = this.#store;
    const n = this.#length;
    const total = n + codes.length;
    let store: ItemStore;
    if (s.used === n && s.notices.length === this.#notices) {
      store = s;
    } else {
      // Another list already appended here: copy this one's prefix (rare: a second follow from
      // the same snapshot after a different append).
      work.itemsListed += n;
      store = { codes: this.#codes, used: n, notices: s.notices.slice(0, this.#notices) };
    }
    if (store.codes.length < total || store !== s) {
      const grown = new Int32Array(roomFor(total));
      grown.set(store.codes.subarray(0, n));
      store.codes = grown;
    }
    const first = store.notices.length;
    // One at a time: a spread of a huge list of notices would overflow the stack.
    for (const notice of notices) store.notices.push(notice);
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i]!;
      store.codes[n + i] = c >= 0 ? c : -1 - (first + (-1 - c));
    }
    store.used = total;
    work.itemsListed += codes.length;
    const base = this.#hash ? { length: n, ...this.#full() } : null;
    return new BranchItems(store, total, first + notices.length, entries, base, codes.length);
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
  const leaf = leafOf(parsed, b);
  for (let cur = leaf; cur >= 0; cur = parsed.parent[cur]!) path.push(cur);
  path.reverse();
  const lines = parsed.lineNotices;
  const lineCount = parsed.noticeCount;
  const table = parsed.scan.entries;
  let ni = 0;
  const flushBefore = (line: number) => {
    while (ni < lineCount && lines[ni]!.line < line) notice(lineNoticeItem(lines[ni++]!));
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
  work.itemsListed += codes.length;
  const store = { codes: Int32Array.from(codes), used: codes.length, notices };
  return new BranchItems(store, codes.length, notices.length, table, null, 0);
}

/**
 * The items of branch `b` of `next`, a parse that extended `prev` in place (tree.ts), from
 * `prev`'s list of the same branch: the entries appended to the branch and the line notices
 * appended to the file, in the order branchItems gives them, in time proportional to them.
 * Null when `next` is not such an extension or the branch did not just grow at its leaf.
 */
export function extendBranchItems(
  prev: ParsedSession,
  prevItems: BranchItems,
  next: ParsedSession,
  b: number,
): BranchItems | null {
  if (next.cols !== prev.cols || b >= prev.branches.count) return null;
  const from = prev.scan.entries.count;
  const oldLeaf = leafOf(prev, b);
  const added: number[] = [];
  let cur = leafOf(next, b);
  for (; cur >= from; cur = next.parent[cur]!) added.push(cur);
  if (cur !== oldLeaf) return null;
  added.reverse();
  const table = next.scan.entries;
  const notices: NoticeItem[] = [];
  const codes: number[] = [];
  const lines = next.lineNotices;
  let ni = prev.noticeCount;
  const flushBefore = (line: number) => {
    while (ni < next.noticeCount && lines[ni]!.line < line) {
      notices.push(lineNoticeItem(lines[ni++]!));
      codes.push(-notices.length);
    }
  };
  for (const row of added) {
    flushBefore(table.lines[row]!);
    codes.push(row);
  }
  flushBefore(Number.POSITIVE_INFINITY);
  return prevItems.extended(codes, notices, table);
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
  let hi = parsed.noticeCount;
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

/**
 * The stable key of an item, for comparing a branch's earlier items across snapshots: an entry
 * by its id and where its line starts, a notice by its id.
 */
export function itemKey(item: Item): string {
  return item.kind === "entry" ? entryItemKey(item.rec.id, item.rec.start) : noticeItemKey(item);
}

function entryItemKey(id: string, start: number): string {
  // The id's length first makes the key unambiguous whatever the id holds, without escaping it
  // (JSON.stringify here was half the cost of hashing a branch's keys).
  return `n${id.length}.${id}@${start}`;
}

function noticeItemKey(notice: NoticeItem): string {
  return `x.${notice.id}`;
}
