// The Pi session parser, pinned against @earendil-works/pi-coding-agent 0.85.1
// (docs/session-format.md, dist/core/session-manager.js, cited as SM:<line>). It indexes a
// snapshot's lines into the id/parentId tree, names branches, and lists each branch's items
// (entries and notices) in order. Entry content is parsed again only when a page renders it,
// so the index holds byte ranges, not objects.
import { toChatId } from "../protocol/chat-01.ts";
import { scanLine } from "./line-scan.ts";
import { checkStoreCwd } from "./pi-store.ts";
import { Refusal } from "./refusal.ts";
import { isCwdInsideProject } from "./safe-fs.ts";
import type { PiRoot } from "./sources.ts";

/** A valid entry line: a JSON object with a string id. */
export type EntryRec = {
  /** The native id (or `line-<n>` for v1 files, which have none). */
  id: string;
  /** `n.` + the CHAT-01 form of the id. */
  key: string;
  parentId: string | null;
  type: string;
  line: number;
  start: number;
  end: number;
};

/** A line that is not an entry: malformed JSON, not an object, no string id, or a 2nd header. */
export type LineNotice = {
  line: number;
  start: number;
  end: number;
  kind: "malformed-line" | "ignored-header";
};

export type RootKind = "root" | "missing-parent" | "loop";

export type Header = {
  id: string;
  cwd: string;
  timestamp: string | null;
  version: number;
  parentSession: boolean;
};

export type BranchRec = {
  name: string;
  start: EntryRec | null;
  leaf: EntryRec | null;
  forksFrom: EntryRec | null;
  depth: number;
};

/** What a branch's pages list, in order. */
export type Item =
  | { kind: "entry"; rec: EntryRec }
  | { kind: "notice"; id: string; code: NoticeItemCode; text: string; line?: number };
export type NoticeItemCode =
  | "malformed-line"
  | "ignored-header"
  | "missing-parent"
  | "loop"
  | "forked-from-earlier-session";

export type ParsedSession = {
  header: Header;
  scan: ScanState;
  /** Winning entries (a later duplicate id replaces the earlier, SM:694), in file order. */
  entries: EntryRec[];
  byId: Map<string, EntryRec>;
  lineNotices: LineNotice[];
  defaultLeaf: EntryRec | null;
  branches: BranchRec[];
  branchByName: Map<string, BranchRec>;
  branchOf: Map<EntryRec, string>;
  parentOf: Map<EntryRec, EntryRec>;
  rootKind: Map<EntryRec, RootKind>;
};

const NL = 0x0a;

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
    timestamp: typeof obj.timestamp === "string" ? obj.timestamp : null,
    version,
    parentSession: typeof obj.parentSession === "string" && obj.parentSession.length > 0,
  };
}

/** Where a scan of the file's lines stopped, so a longer snapshot can continue from there. */
export type ScanState = {
  /** Every entry line in file order, duplicates included. */
  all: EntryRec[];
  lineNotices: LineNotice[];
  /** Bytes scanned (always the end of a whole line) and the last line number seen. */
  scanned: number;
  line: number;
  lastV1: string | null;
};

/** Indexes a snapshot that starts with a valid header (see parseHeader). */
export function parseSession(buf: Buffer, header: Header): ParsedSession {
  const scan: ScanState = {
    all: [],
    lineNotices: [],
    scanned: buf.indexOf(NL) + 1,
    line: 1,
    lastV1: null,
  };
  return indexEntries(header, scanLines(buf, header, scan));
}

/**
 * Indexes a longer snapshot of the same file whose first `prev.scan.scanned` bytes are verified
 * unchanged: only the appended lines are parsed. `prev` is not modified (other cursors use it).
 */
export function extendSession(prev: ParsedSession, buf: Buffer): ParsedSession {
  const scan: ScanState = {
    ...prev.scan,
    all: [...prev.scan.all],
    lineNotices: [...prev.scan.lineNotices],
  };
  return indexEntries(prev.header, scanLines(buf, prev.header, scan));
}

function scanLines(buf: Buffer, header: Header, scan: ScanState): ScanState {
  const v1 = header.version < 2;
  let start = scan.scanned;
  while (start < buf.length) {
    const line = ++scan.line;
    let end = buf.indexOf(NL, start);
    if (end < 0) end = buf.length;
    if (!isBlank(buf, start, end)) {
      // Exactly what JSON.parse would say about validity and the three keys, without building
      // the object (line-scan.ts); the content is parsed only when a page renders the entry.
      const f = scanLine(buf, start, end);
      if (f.json && f.object && f.type === "session") {
        // Pi ignores header lines after the first (research §1.2, fixture 16).
        scan.lineNotices.push({ line, start, end, kind: "ignored-header" });
      } else if (f.json && f.object && (v1 || (typeof f.id === "string" && f.id.length > 0))) {
        // v1 files have no ids: Pi's migration chains them linearly in file order (SM:31-54).
        const id = v1 || typeof f.id !== "string" ? `line-${line}` : f.id;
        const parentId = v1 ? scan.lastV1 : typeof f.parentId === "string" ? f.parentId : null;
        if (v1) scan.lastV1 = id;
        scan.all.push({
          id,
          key: `n.${toChatId(id)}`,
          parentId: parentId === "" ? null : parentId,
          type: typeof f.type === "string" ? f.type : "",
          line,
          start,
          end,
        });
      } else {
        scan.lineNotices.push({ line, start, end, kind: "malformed-line" });
      }
    }
    start = end + 1;
  }
  scan.scanned = Math.max(scan.scanned, buf.length);
  return scan;
}

function indexEntries(header: Header, scan: ScanState): ParsedSession {
  const { all, lineNotices } = scan;
  // The later copy of a duplicate id wins (SM:694); the default leaf is the last entry in file
  // order (SM:695), whatever its type.
  const byId = new Map<string, EntryRec>();
  for (const e of all) byId.set(e.id, e);
  const entries = all.length === byId.size ? all : all.filter((e) => byId.get(e.id) === e);
  const defaultLeaf = all.length > 0 ? (all[all.length - 1] ?? null) : null;

  const parentOf = new Map<EntryRec, EntryRec>();
  const rootKind = new Map<EntryRec, RootKind>();
  for (const e of entries) {
    if (e.parentId === null) rootKind.set(e, "root");
    else {
      const p = byId.get(e.parentId);
      if (p === undefined) rootKind.set(e, "missing-parent");
      else parentOf.set(e, p);
    }
  }
  cutLoops(entries, parentOf, rootKind);

  const children = new Map<EntryRec, EntryRec[]>();
  for (const e of entries) {
    const p = parentOf.get(e);
    if (p === undefined) continue;
    const list = children.get(p);
    if (list) list.push(e);
    else children.set(p, [e]);
  }

  // Branch names (seed: Parser): the first root is `main`; each later root and each later child
  // at a fork starts `b.<entry id>`; the earliest child in file order continues its parent's.
  const branches: BranchRec[] = [];
  const branchOf = new Map<EntryRec, string>();
  const roots = entries.filter((e) => !parentOf.has(e));
  const startBranch = (start: EntryRec, forksFrom: EntryRec | null, name: string) => {
    let depth = forksFrom ? depthOf(forksFrom, parentOf) : 0;
    let leaf = start;
    for (let cur: EntryRec | undefined = start; cur; cur = children.get(cur)?.[0]) {
      branchOf.set(cur, name);
      leaf = cur;
      depth++;
    }
    branches.push({ name, start, leaf, forksFrom, depth });
  };
  if (roots.length === 0)
    branches.push({ name: "main", start: null, leaf: null, forksFrom: null, depth: 0 });
  // Iterative: one pass per branch start, in an order where each fork's parent is named first.
  const queue: { start: EntryRec; forksFrom: EntryRec | null; name: string }[] = roots.map(
    (r, i) => ({
      start: r,
      forksFrom: null,
      name: i === 0 ? "main" : `b.${r.key.slice(2)}`,
    }),
  );
  for (let qi = 0; qi < queue.length; qi++) {
    const job = queue[qi]!;
    startBranch(job.start, job.forksFrom, job.name);
    for (let cur: EntryRec | undefined = job.start; cur; cur = children.get(cur)?.[0]) {
      const kids = children.get(cur);
      if (!kids) continue;
      for (let k = 1; k < kids.length; k++) {
        const kid = kids[k]!;
        queue.push({ start: kid, forksFrom: cur, name: `b.${kid.key.slice(2)}` });
      }
    }
  }
  branches.sort((a, b) => (a.start?.line ?? 0) - (b.start?.line ?? 0));
  const branchByName = new Map(branches.map((b) => [b.name, b]));
  return {
    header,
    scan,
    entries,
    byId,
    lineNotices,
    defaultLeaf,
    branches,
    branchByName,
    branchOf,
    parentOf,
    rootKind,
  };
}

function depthOf(e: EntryRec, parentOf: Map<EntryRec, EntryRec>): number {
  let d = 0;
  for (let cur: EntryRec | undefined = e; cur; cur = parentOf.get(cur)) d++;
  return d;
}

/**
 * Breaks parent cycles: in each cycle, the entry earliest in the file loses its parent link and
 * becomes a root with a `loop` notice. Pi has no such guard (SM:124-145 spins on a cycle).
 */
function cutLoops(
  entries: EntryRec[],
  parentOf: Map<EntryRec, EntryRec>,
  rootKind: Map<EntryRec, RootKind>,
): void {
  const state = new Map<EntryRec, 1 | 2>(); // 1: on the current walk, 2: done
  for (const e of entries) {
    if (state.has(e)) continue;
    const chain: EntryRec[] = [];
    let cur: EntryRec | undefined = e;
    while (cur && !state.has(cur)) {
      state.set(cur, 1);
      chain.push(cur);
      cur = parentOf.get(cur);
    }
    if (cur && state.get(cur) === 1) {
      const cycle = chain.slice(chain.indexOf(cur));
      let first = cycle[0]!;
      for (const c of cycle) if (c.line < first.line) first = c;
      parentOf.delete(first);
      rootKind.set(first, "loop");
    }
    for (const c of chain) state.set(c, 2);
  }
}

/** The entries from the root to `leaf`, in order (Pi's getBranch, SM:958-968, loop-safe). */
export function pathTo(parsed: ParsedSession, leaf: EntryRec): EntryRec[] {
  const path: EntryRec[] = [];
  for (let cur: EntryRec | undefined = leaf; cur; cur = parsed.parentOf.get(cur)) path.push(cur);
  return path.reverse();
}

/**
 * The items of a branch: its whole path from the root, each line notice at its file position
 * (every branch gets every line notice, after the leaf too, so earlier items never move while
 * the file grows), the root's missing-parent or loop notice, and the forked-session notice.
 */
export function branchItems(parsed: ParsedSession, branch: BranchRec): Item[] {
  const items: Item[] = [];
  if (parsed.header.parentSession) {
    items.push({
      kind: "notice",
      id: "forked",
      code: "forked-from-earlier-session",
      text: "This conversation was forked from an earlier session, which is not opened here.",
    });
  }
  const path = branch.leaf ? pathTo(parsed, branch.leaf) : [];
  const notices = parsed.lineNotices;
  let ni = 0;
  const flushBefore = (line: number) => {
    while (ni < notices.length && notices[ni]!.line < line)
      items.push(lineNoticeItem(notices[ni++]!));
  };
  for (const [i, rec] of path.entries()) {
    flushBefore(rec.line);
    if (i === 0) {
      const kind = parsed.rootKind.get(rec);
      if (kind === "missing-parent") items.push(missingParentItem(parsed, rec));
      else if (kind === "loop") {
        items.push({
          kind: "notice",
          id: `loop-${rec.key.slice(2)}`,
          code: "loop",
          text: `The history stops here: entry ${rec.id} is its own ancestor, so its parent link is not followed.`,
          line: rec.line,
        });
      }
    }
    items.push({ kind: "entry", rec });
  }
  flushBefore(Number.POSITIVE_INFINITY);
  return items;
}

function lineNoticeItem(n: LineNotice): Item {
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

function missingParentItem(parsed: ParsedSession, rec: EntryRec): Item {
  // Unreadable lines right before the entry are the likely place of its parent.
  const near: number[] = [];
  for (let i = parsed.lineNotices.length - 1; i >= 0; i--) {
    const n = parsed.lineNotices[i]!;
    if (n.line >= rec.line) continue;
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
    id: `missing-parent-${rec.key.slice(2)}`,
    code: "missing-parent",
    text: `The history before this point is missing: the parent entry ${parent} is not in the file.${where}`,
    line: rec.line,
  };
}

/** The JSON object of an entry, parsed again from the snapshot. */
export function entryObject(buf: Buffer, rec: EntryRec): Record<string, unknown> {
  const obj = parseLine(buf, rec.start, rec.end);
  if (!isObject(obj)) throw new Error(`entry at line ${rec.line} no longer parses`);
  return obj;
}

/** The stable key of an item, for comparing a branch's earlier items across snapshots. */
export function itemKey(item: Item): string {
  return item.kind === "entry" ? `${item.rec.key}@${item.rec.start}` : `x.${item.id}`;
}
