// What became of a session file since an index read it, one rule for the search index and the
// usage index: the same device, inode, size and change time is unchanged (one lstat, nothing
// read); a grown file whose first and last EDGE_BYTES of what was read still hash the same was
// appended to; anything else is read again from the start. Never writes the file.
import { createHash } from "node:crypto";
import type { BigIntStats } from "node:fs";
import { readRange } from "../reader/safe-fs.ts";

const EDGE_BYTES = 4096;

/** The columns both indexes keep for a file they read: who it was, and its edges' hashes. */
export type IndexedFile = {
  id: number;
  path: string;
  dev: string;
  ino: string;
  size: number;
  ctime: string;
  head: string;
  tail: string;
};

/** True when `st` (an lstat with bigint) shows the identity, size and change time `row` has. */
export function isUnchanged(
  row: IndexedFile,
  st: Pick<BigIntStats, "dev" | "ino" | "size" | "ctimeNs">,
): boolean {
  return (
    row.dev === String(st.dev) &&
    row.ino === String(st.ino) &&
    row.size === Number(st.size) &&
    row.ctime === String(st.ctimeNs)
  );
}

/** The hashes of the first and last EDGE_BYTES of the file's bytes before `end`. */
export function edgeHashes(fd: number, end: number): { head: string; tail: string } {
  const head = hash(readRange(fd, 0, Math.min(EDGE_BYTES, end)));
  const from = Math.max(0, end - EDGE_BYTES);
  return { head, tail: hash(readRange(fd, from, end - from)) };
}

/** True when the bytes before `end` still have the edges `row` recorded for them. */
export function hasSameEdges(
  fd: number,
  end: number,
  row: Pick<IndexedFile, "head" | "tail">,
): boolean {
  const now = edgeHashes(fd, end);
  return now.head === row.head && now.tail === row.tail;
}

function hash(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex").slice(0, 32);
}
