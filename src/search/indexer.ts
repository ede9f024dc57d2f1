// Brings one session file's index up to date. An unchanged file (same device, inode, size and
// change time) costs one lstat. A grown file whose first and last indexed 4 KiB still hash the
// same is read from where the index stopped: only the appended bytes. Anything else (another
// inode, shorter, the same size with a new change time, different head or tail bytes) drops the
// file's rows and indexes it again from the start. The file is opened as the reader opens it
// (safe-fs: no links, no swaps); nothing is ever written to it.
import { createHash } from "node:crypto";
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { type Block, toChatId } from "../protocol/chat-01.ts";
import { renderEntry } from "../reader/blocks.ts";
import { parseHeader } from "../reader/pi.ts";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, openSessionFile, readRange } from "../reader/safe-fs.ts";
import type { PiRoot } from "../reader/sources.ts";
import type { FileRow, Store } from "./store.ts";

/** Bytes hashed at the start and before the end of what was indexed, to notice a rewrite. */
const EDGE_BYTES = 4096;
/** Bytes read at a time while indexing. */
const CHUNK_BYTES = 8 * 1024 * 1024;

export type CatchUp = "unchanged" | "appended" | "indexed" | "refused";

type NodeState = { branch: string; hasChild: boolean };

export type Identity = { dev: string; ino: string; size: number; ctime: string };

/** Whether the file is exactly as indexed (device, inode, size, change time): one lstat. */
export function isUnchanged(path: string, known: Identity | undefined): boolean {
  if (!known) return false;
  try {
    const st = lstatSync(path, { bigint: true });
    return (
      known.dev === String(st.dev) &&
      known.ino === String(st.ino) &&
      known.size === Number(st.size) &&
      known.ctime === String(st.ctimeNs)
    );
  } catch {
    // Gone: not unchanged; catching up finds out why.
    return false;
  }
}

/**
 * Indexes what is new in `<root>/<name>`; "refused" when the reader would refuse the file. The
 * caller holds a transaction (refresh batches many files in one: a commit per file would cost
 * more than the file's rows).
 */
export function catchUpFile(store: Store, root: PiRoot, name: string): CatchUp {
  const path = join(root.sessionsDir, name);
  const row = store.fileByPath.get(path) as FileRow | undefined;
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path, { bigint: true });
  } catch {
    // Gone since the listing: its rows go with the next refresh's sweep.
    return "refused";
  }
  if (
    row &&
    row.dev === String(st.dev) &&
    row.ino === String(st.ino) &&
    row.size === Number(st.size) &&
    row.ctime === String(st.ctimeNs)
  ) {
    return "unchanged";
  }
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
      indexFrom(store, file.fd, row, size, identity);
      return "appended";
    }
    {
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
      const header = headerEnd(file.fd, size, root);
      if (header === "refused") {
        // Kept with no entries at its current size: it is not read again until it changes.
        fresh.size = size;
        insertRow(store, fresh);
        return "indexed";
      }
      fresh.size = header;
      insertRow(store, fresh);
      indexFrom(store, file.fd, fresh, size, identity);
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
  for (const r of store.entryIdsOfFile.all(fileId) as { rowid: number }[]) {
    store.deleteText.run(r.rowid);
  }
  store.deleteEntries.run(fileId);
  store.deleteNodes.run(fileId);
  store.deleteFile.run(fileId);
}

function canAppend(
  row: FileRow,
  identity: { dev: string; ino: string; ctime: string },
  size: number,
  fd: number,
): boolean {
  if (row.dev !== identity.dev || row.ino !== identity.ino) return false;
  // Same size with a new change time: rewritten in place, not appended.
  if (size <= row.size) return false;
  const { head, tail } = edgeHashes(fd, row.size);
  return head === row.head && tail === row.tail;
}

function edgeHashes(fd: number, end: number): { head: string; tail: string } {
  const head = hash(readRange(fd, 0, Math.min(EDGE_BYTES, end)));
  const from = Math.max(0, end - EDGE_BYTES);
  const tail = hash(readRange(fd, from, end - from));
  return { head, tail };
}

function hash(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex").slice(0, 32);
}

/** The end of line 1 when it is a Pi header the reader accepts; 0 when it is not complete. */
function headerEnd(fd: number, size: number, root: PiRoot): number | "refused" {
  const first = readRange(fd, 0, Math.min(size, 1024 * 1024));
  const nl = first.indexOf(10);
  if (nl < 0) return size >= 1024 * 1024 ? "refused" : 0;
  try {
    parseHeader(first.subarray(0, nl + 1), false, root);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    return "refused";
  }
  return nl + 1;
}

/** Indexes the complete lines in [row.size, size) and moves the row's end to the last of them. */
function indexFrom(
  store: Store,
  fd: number,
  row: FileRow,
  size: number,
  identity: { dev: string; ino: string; ctime: string },
): void {
  const nodes = new Map<string, NodeState>();
  const nodeOf = (id: string): NodeState | null => {
    const known = nodes.get(id);
    if (known) return known;
    const r = store.node.get(row.id, id) as { branch: string; hasChild: number } | undefined;
    if (!r) return null;
    const state = { branch: r.branch, hasChild: r.hasChild === 1 };
    nodes.set(id, state);
    return state;
  };
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
      indexLine(store, row, buf.subarray(lineStart, nl), carryStart + lineStart, nodeOf, nodes);
      lineStart = nl + 1;
    }
    carry = buf.subarray(lineStart);
    carryStart += lineStart;
  }
  // A partial last line is read again, whole, when it is finished.
  const end = carryStart;
  for (const [id, s] of nodes) {
    store.putNode.run(row.id, id, s.branch);
    if (s.hasChild) store.markChild.run(row.id, id);
  }
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

function indexLine(
  store: Store,
  row: FileRow,
  line: Buffer,
  start: number,
  nodeOf: (id: string) => NodeState | null,
  nodes: Map<string, NodeState>,
): void {
  let obj: unknown;
  try {
    obj = JSON.parse(line.toString("utf8"));
  } catch {
    // A malformed line: the reader shows it as a notice; there is no text to find in it.
    return;
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return;
  const entry = obj as Record<string, unknown>;
  const id = entry.id;
  if (typeof id !== "string" || entry.type === "session") return;
  // Branch names as the reader gives them (pi.ts): the first root is main, a later root or a
  // later child of a node starts b.<its id>, the first child continues its parent's branch.
  const parentId = typeof entry.parentId === "string" ? entry.parentId : null;
  const parent = parentId === null ? null : nodeOf(parentId);
  let branch: string;
  if (parent === null) {
    branch = row.roots === 0 ? "main" : `b.${toChatId(id)}`;
    row.roots++;
  } else if (!parent.hasChild) {
    branch = parent.branch;
    parent.hasChild = true;
  } else {
    branch = `b.${toChatId(id)}`;
  }
  if (nodeOf(id) === null) nodes.set(id, { branch, hasChild: false });
  row.lastId = id;
  const text = textOf(entry);
  if (text === "") return;
  const ts = typeof entry.timestamp === "string" ? entry.timestamp.slice(0, 64) : null;
  const r = store.insertEntry.run(
    row.id,
    `n.${toChatId(id)}`,
    branch,
    start,
    start + line.length,
    hash(line),
    ts,
  );
  store.insertText.run(r.lastInsertRowid, text);
}

/** The searchable text of an entry: what the reader shows of it, images left out. */
export function textOf(entry: Record<string, unknown>): string {
  const draft = renderEntry(entry);
  if (!draft) return "";
  return draft.blocks
    .map(blockText)
    .filter((s) => s !== "")
    .join("\n");
}

function blockText(b: Block): string {
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
    default:
      return "";
  }
}
