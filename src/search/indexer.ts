// Brings one session file's index up to date. An unchanged file (same device, inode, size and
// change time) costs one lstat. A grown file whose first and last indexed 4 KiB still hash the
// same is read from where the index stopped: only the appended bytes. Anything else (another
// inode, shorter, the same size with a new change time, different head or tail bytes) drops the
// file's rows and indexes it again from the start. The file is opened as the reader opens it
// (safe-fs: no links, no swaps); nothing is ever written to it.
//
// A hit's branch and entry are the reader's (tree.ts), so that the Console opens it. A file
// that Pi wrote (every parent on an earlier line, every id new) is named line by line as it is
// read: the first root is main, a later root or a later child starts b.<its id>, the first
// child continues its parent's branch. Any other line (a parent not seen yet or never there, an
// id seen before) names the whole file with the reader's own tree, and so does a Pi v1 file
// (no ids: the reader numbers them by line). The nodes table then holds the reader's branch of
// every entry (and the missing parents), so an append that is regular against that tree is
// still read line by line; v1 files, which Pi rewrites before it appends, are read whole again.
import { createHash } from "node:crypto";
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { type Block, toChatId } from "../protocol/chat-01.ts";
import { entryAt, keyOfId } from "../reader/entries.ts";
import { harnessOf } from "../reader/harness/index.ts";
import { renderEntry } from "../reader/harness/pi/blocks.ts";
import { type Header, parseHeader } from "../reader/harness/pi/pi.ts";
import { parsePiSession } from "../reader/harness/pi/rows.ts";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, openSessionFile, readRange } from "../reader/safe-fs.ts";
import type { FileRoot, PiRoot } from "../reader/sources.ts";
import { branchName, MISSING_PARENT, type ParsedSession } from "../reader/tree.ts";
import { edgeHashes, hasSameEdges, isUnchanged } from "./file-change.ts";
import type { FileRow, Store } from "./store.ts";

/** Bytes hashed at the start and before the end of what was indexed, to notice a rewrite. */
/** Bytes read at a time while indexing. */
const CHUNK_BYTES = 8 * 1024 * 1024;

export type CatchUp = "unchanged" | "appended" | "indexed" | "refused";

type NodeState = { branch: string; hasChild: boolean };

/**
 * `roots` (else the count of the file's roots, so an appended root is named) of a file named
 * whole by the reader's tree at every change: a Pi v1 file, whose ids are line numbers (the
 * reader's, as Pi's migration chains them), not kept in the nodes table.
 */
const WHOLE_ONLY = -1;
/** The branch stored for an id that an entry names as its parent but no entry has. */
const MISSING = "";

type FileIdentity = { dev: string; ino: string; ctime: string };

export type Identity = { dev: string; ino: string; size: number; ctime: string };

/**
 * Indexes what is new in `<root>/<name>`; "refused" when the reader would refuse the file. The
 * caller holds a transaction (refresh batches many files in one: a commit per file would cost
 * more than the file's rows).
 */
export function catchUpFile(store: Store, root: FileRoot, name: string): CatchUp {
  const path = join(root.sessionsDir, name);
  const row = store.fileByPath.get(path) as FileRow | undefined;
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path, { bigint: true });
  } catch {
    // Gone since the listing: its rows go with the next refresh's sweep.
    return "refused";
  }
  if (row && isUnchanged(row, st)) return "unchanged";
  let file: ReturnType<typeof openSessionFile>;
  try {
    file = openSessionFile(root.projectRoot, root.sessionsDir, name);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    if (row) dropFile(store, row.id);
    return "refused";
  }
  try {
    const id = file.identity;
    const size = id.size;
    const identity = { dev: String(id.dev), ino: String(id.ino), ctime: String(id.ctimeNs) };
    if (row && canAppend(row, identity, size, file.fd)) {
      if (row.roots !== WHOLE_ONLY && root.kind === "pi") {
        if (indexFrom(store, file.fd, row, size, identity, false) === "irregular") {
          indexWhole(store, file.fd, row, size, identity, root);
        }
        return "appended";
      }
      // A file read whole at each change (Pi v1, another harness), but not while all that was
      // added is a partial line.
      if (!hasNewline(file.fd, row.size, size)) return "unchanged";
    }
    if (row) dropFile(store, row.id);
    const fresh: FileRow = {
      id: 0,
      path,
      ...identity,
      size: 0,
      head: "",
      tail: "",
      roots: 0,
      lastId: null,
    };
    if (root.kind === "claude") {
      insertRow(store, fresh);
      indexByParse(store, file.fd, fresh, size, identity, root);
      return "indexed";
    }
    const header = headerOf(file.fd, size, root);
    if (header === "refused") {
      // Kept with no entries at its current size: it is not read again until it changes.
      fresh.size = size;
      insertRow(store, fresh);
      return "indexed";
    }
    insertRow(store, fresh);
    if (header === "incomplete") {
      // Size 0: indexed from the start (header included) once line 1 is complete.
      finish(store, file.fd, fresh, 0, size, identity);
    } else if (
      header.version < 2 ||
      indexFrom(store, file.fd, fresh, size, identity, true) === "irregular"
    ) {
      indexWhole(store, file.fd, fresh, size, identity, root, header, true);
    }
    return "indexed";
  } finally {
    closeFile(file);
  }
}

function insertRow(store: Store, row: FileRow): void {
  const r = store.insertFile.run(
    row.path,
    row.dev,
    row.ino,
    row.size,
    row.ctime,
    row.head,
    row.tail,
    row.roots,
    row.lastId,
  );
  row.id = Number(r.lastInsertRowid);
}

/** Removes a file and everything indexed from it. */
export function dropFile(store: Store, fileId: number): void {
  clearFile(store, fileId);
  store.deleteFile.run(fileId);
}

/**
 * Removes what was indexed from a file (its entries, texts and tree), keeping its row. The
 * deleted texts' words stay in FTS5's segments until the store is purged (store.ts
 * purgeDeleted), so they are counted; `sameBytes`: they were indexed from the very bytes about
 * to be indexed again in this pass, so nothing is left behind that the file does not hold.
 */
function clearFile(store: Store, fileId: number, sameBytes = false): void {
  const rows = store.entryIdsOfFile.all(fileId) as { rowid: number }[];
  for (const r of rows) store.deleteText.run(r.rowid);
  if (!sameBytes) store.unpurged += rows.length;
  store.deleteEntries.run(fileId);
  store.deleteNodes.run(fileId);
}

function canAppend(row: FileRow, identity: FileIdentity, size: number, fd: number): boolean {
  if (row.dev !== identity.dev || row.ino !== identity.ino) return false;
  // Same size with a new change time: rewritten in place, not appended. Size 0: the header was
  // not complete, and it is checked only on a read from the start.
  if (size <= row.size || row.size === 0) return false;
  return hasSameEdges(fd, row.size, row);
}

function hash(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex").slice(0, 32);
}

function hasNewline(fd: number, from: number, to: number): boolean {
  for (let at = from; at < to; ) {
    const chunk = readRange(fd, at, Math.min(CHUNK_BYTES, to - at));
    if (chunk.length === 0) return false;
    if (chunk.includes(10)) return true;
    at += chunk.length;
  }
  return false;
}

/** Line 1 when it is a Pi header the reader accepts ("incomplete": no newline after it yet). */
function headerOf(fd: number, size: number, root: PiRoot): Header | "refused" | "incomplete" {
  // Headers are short; a longer one (the reader takes any length) is read whole: the open
  // refused a file over the reader's size limit.
  let first = readRange(fd, 0, Math.min(size, 1024 * 1024));
  if (first.indexOf(10) < 0 && first.length < size) first = readRange(fd, 0, size);
  if (first.indexOf(10) < 0) return "incomplete";
  try {
    return parseHeader(first, false, root);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    return "refused";
  }
}

/**
 * Indexes the complete lines in [row.size, size) one by one and moves the row's end to the last
 * of them; "irregular" (leaving the file to be named whole) at a line the reader's tree would
 * name differently: its parent is not an entry seen before, or its id is not new. `fresh`: the
 * file has no rows yet, so ids not met in this pass need no look-up.
 */
function indexFrom(
  store: Store,
  fd: number,
  row: FileRow,
  size: number,
  identity: FileIdentity,
  fresh: boolean,
): "ok" | "irregular" {
  const nodes = new Map<string, NodeState>();
  const nodeOf = (id: string): NodeState | null => {
    const known = nodes.get(id);
    if (known) return known;
    if (fresh) return null;
    const r = store.node.get(row.id, id) as { branch: string; hasChild: number } | undefined;
    if (!r) return null;
    const state = { branch: r.branch, hasChild: r.hasChild === 1 };
    nodes.set(id, state);
    return state;
  };
  const roots = row.roots;
  let at = row.size;
  let carry: Buffer = Buffer.alloc(0);
  let carryStart = at;
  while (at < size) {
    const chunk = readRange(fd, at, Math.min(CHUNK_BYTES, size - at));
    if (chunk.length === 0) break;
    at += chunk.length;
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let lineStart = 0;
    for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10, lineStart)) {
      const line = buf.subarray(lineStart, nl);
      if (!indexLine(store, row, line, carryStart + lineStart, nodeOf, nodes)) {
        row.roots = roots;
        return "irregular";
      }
      lineStart = nl + 1;
    }
    carry = buf.subarray(lineStart);
    carryStart += lineStart;
  }
  for (const [id, s] of nodes) {
    store.putNode.run(row.id, id, s.branch);
    if (s.hasChild) store.markChild.run(row.id, id);
  }
  // A partial last line is read again, whole, when it is finished.
  finish(store, fd, row, carryStart, size, identity);
  return "ok";
}

/** Records that the file is indexed up to `end` (the end of its last whole line). */
function finish(
  store: Store,
  fd: number,
  row: FileRow,
  end: number,
  size: number,
  identity: FileIdentity,
): void {
  const { head, tail } = edgeHashes(fd, end);
  store.updateFile.run(
    identity.dev,
    identity.ino,
    end,
    end === size ? identity.ctime : "partial",
    head,
    tail,
    row.roots,
    row.lastId,
    row.id,
  );
  row.size = end;
}

/** False when the line's name cannot be given line by line (see indexFrom). */
function indexLine(
  store: Store,
  row: FileRow,
  line: Buffer,
  start: number,
  nodeOf: (id: string) => NodeState | null,
  nodes: Map<string, NodeState>,
): boolean {
  let obj: unknown;
  try {
    obj = JSON.parse(line.toString("utf8"));
  } catch {
    // A malformed line: the reader shows it as a notice; there is no text to find in it.
    return true;
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return true;
  const entry = obj as Record<string, unknown>;
  const id = entry.id;
  // As the reader's scan (pi.ts): an entry has a non-empty string id; a second header is not one.
  if (typeof id !== "string" || id === "" || entry.type === "session") return true;
  // A duplicate id (the later copy wins: earlier children move to it), or the missing parent
  // of an earlier entry (which it now adopts): the tree changes before this line.
  if (nodeOf(id) !== null) return false;
  const parentId =
    typeof entry.parentId === "string" && entry.parentId !== "" ? entry.parentId : null;
  let branch: string;
  if (parentId === null) {
    branch = row.roots === 0 ? "main" : `b.${toChatId(id)}`;
    row.roots++;
  } else {
    const parent = nodeOf(parentId);
    // A parent on a later line, or none: only the whole file says where this entry hangs.
    if (parent === null || parent.branch === MISSING) return false;
    if (!parent.hasChild) {
      branch = parent.branch;
      parent.hasChild = true;
    } else {
      branch = `b.${toChatId(id)}`;
    }
  }
  nodes.set(id, { branch, hasChild: false });
  row.lastId = id;
  const text = textOf(entry);
  if (text === "") return true;
  const ts = typeof entry.timestamp === "string" ? entry.timestamp.slice(0, 64) : null;
  insertEntry(store, row.id, `n.${toChatId(id)}`, branch, start, line, text, ts);
  return true;
}

function insertEntry(
  store: Store,
  fileId: number,
  entry: string,
  branch: string,
  start: number,
  line: Buffer,
  text: string,
  ts: string | null,
): void {
  const r = store.insertEntry.run(
    fileId,
    entry,
    branch,
    start,
    start + line.length,
    hash(line),
    ts,
  );
  store.insertText.run(r.lastInsertRowid, text);
}

/**
 * Indexes the file's whole lines again from the start, named by the reader's own tree
 * (tree.ts: duplicates, parents on later lines or missing, cycles, v1 line ids), and keeps that
 * naming in the nodes table for appends: each winning entry's branch and whether it has a
 * child, and each missing parent (MISSING), whose arrival would move its children.
 */
function indexWhole(
  store: Store,
  fd: number,
  row: FileRow,
  size: number,
  identity: FileIdentity,
  root: PiRoot,
  known?: Header,
  sameBytes = false,
): void {
  clearFile(store, row.id, sameBytes);
  const all = readRange(fd, 0, size);
  const buf = all.subarray(0, all.lastIndexOf(10) + 1);
  // The header was accepted when the file was first read; it is checked again as it is now.
  let header = known;
  if (header === undefined) {
    try {
      header = parseHeader(buf, false, root);
    } catch (e) {
      if (!isRefusal(e)) throw e;
      row.roots = 0;
      finish(store, fd, row, size, size, identity);
      return;
    }
  }
  const s = parsePiSession(buf, header);
  const table = s.scan.entries;
  const v1 = header.version < 2;
  const hasChild = new Uint8Array(table.count);
  let roots = 0;
  for (let i = 0; i < table.count; i++) {
    const p = s.parent[i]!;
    if (p >= 0) hasChild[p] = 1;
    else if (s.wins[i] === 1) roots++;
  }
  for (let i = 0; i < table.count; i++) {
    // A losing duplicate is on no branch: the reader shows the later copy under its id.
    if (s.wins[i] === 0) continue;
    const rec = entryAt(table, i);
    const branch = branchName(s, s.branchOf[i]!);
    if (!v1) {
      store.putNode.run(row.id, rec.id, branch);
      if (hasChild[i] === 1) store.markChild.run(row.id, rec.id);
      if (s.rootKind[i] === MISSING_PARENT && rec.parentId !== null) {
        store.putNode.run(row.id, rec.parentId, MISSING);
      }
    }
    row.lastId = rec.id;
    const line = buf.subarray(rec.start, rec.end);
    const entry = parseObject(line);
    const text = entry === null ? "" : textOf(entry);
    if (text === "") continue;
    const ts = typeof entry?.timestamp === "string" ? entry.timestamp.slice(0, 64) : null;
    insertEntry(store, row.id, keyOfId(rec.id), branch, rec.start, line, text, ts);
  }
  row.roots = v1 ? WHOLE_ONLY : roots;
  finish(store, fd, row, buf.length, size, identity);
}

/**
 * Indexes a file of another harness whole (Claude Code's: no line-by-line naming here), named by
 * the reader's own parse: each winning row under its branch and the entry its parts show. Read
 * whole again on every change (WHOLE_ONLY); a file the reader refuses keeps no entries.
 */
function indexByParse(
  store: Store,
  fd: number,
  row: FileRow,
  size: number,
  identity: FileIdentity,
  root: FileRoot,
): void {
  clearFile(store, row.id);
  const all = readRange(fd, 0, size);
  const buf = all.subarray(0, all.lastIndexOf(10) + 1);
  row.roots = WHOLE_ONLY;
  let s: ParsedSession;
  try {
    s = harnessOf(root).parse(buf, buf.length < all.length, root);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    finish(store, fd, row, size, size, identity);
    return;
  }
  const table = s.scan.entries;
  for (let i = 0; i < table.count; i++) {
    if (s.wins[i] === 0) continue;
    const rec = entryAt(table, i);
    const line = buf.subarray(rec.start, rec.end);
    const entry = parseObject(line);
    const text = entry === null ? "" : textOf(entry, root);
    if (text === "") continue;
    const ts = typeof entry?.timestamp === "string" ? entry.timestamp.slice(0, 64) : null;
    const branch = branchName(s, s.branchOf[i]!);
    insertEntry(store, row.id, s.rows.entryKey(s, i), branch, rec.start, line, text, ts);
  }
  finish(store, fd, row, buf.length, size, identity);
}

function parseObject(line: Buffer): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(line.toString("utf8"));
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  } catch {
    // The reader's scan found an object here; the same bytes parse the same way.
    return null;
  }
}

/**
 * The searchable text of an entry: what the reader shows of it, images left out (`root`: read
 * by that root's harness; Pi's otherwise).
 */
export function textOf(entry: Record<string, unknown>, root?: FileRoot): string {
  const draft = root ? harnessOf(root).draftOf(entry) : renderEntry(entry);
  if (!draft) return "";
  return draft.blocks
    .map(blockText)
    .filter((s) => s !== "")
    .join("\n");
}

/** What the index keeps of one block ("" for none): text, never markup or images. */
export function blockText(b: Block): string {
  switch (b.type) {
    case "text":
    case "thinking":
    case "bash-command":
    case "bash-output":
      return b.text;
    case "tool-call":
      return `${b.name} ${b.text}`;
    case "tool-result":
      return b.toolName;
    case "notice":
      // A failed reply shows Pi's error message; the reader's other notices are its own words.
      return b.code === "stopped" ? b.text : "";
    default:
      return "";
  }
}
