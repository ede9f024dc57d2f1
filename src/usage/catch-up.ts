// Brings one session file's spends up to date in the usage index, as search's indexer does for
// text: an unchanged file (same device, inode, size and change time) costs one lstat; a grown
// file whose first and last read 4 KiB still hash the same is read from where the index
// stopped; anything else (another inode, shorter, rewritten) is read again from the start. The
// file is opened as the reader opens it (safe-fs: no links, no swaps); nothing is written to it.
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, openSessionFile } from "../reader/safe-fs.ts";
import type { FileRoot } from "../reader/sources.ts";
import { edgeHashes, hasSameEdges, isUnchanged } from "../search/file-change.ts";
import type { Harness } from "./lines.ts";
import { scanSpends } from "./scan.ts";
import type { UsageStore } from "./store.ts";

export type CatchUp = "unchanged" | "appended" | "indexed" | "refused";

export function harnessOfRoot(root: FileRoot): Harness {
  return root.kind === "claude" ? "claude-code" : "pi";
}

/** Indexes what is new in `<root>/<name>`; returns what it did and the file's row id. */
export function catchUpFile(
  store: UsageStore,
  root: FileRoot,
  name: string,
): { did: CatchUp; id: number | null } {
  const path = join(root.sessionsDir, name);
  const row = store.fileByPath(path);
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path, { bigint: true });
  } catch {
    if (row) store.dropFile(row.id);
    return { did: "refused", id: null };
  }
  if (row && isUnchanged(row, st)) return { did: "unchanged", id: row.id };
  let file: ReturnType<typeof openSessionFile>;
  try {
    file = openSessionFile(root.projectRoot, root.sessionsDir, name);
  } catch (e) {
    if (!isRefusal(e)) throw e;
    if (row) store.dropFile(row.id);
    return { did: "refused", id: null };
  }
  try {
    const ident = file.identity;
    const size = ident.size;
    const dev = String(ident.dev);
    const ino = String(ident.ino);
    const ctime = String(ident.ctimeNs);
    const harness = harnessOfRoot(root);
    const grown =
      row !== undefined &&
      row.dev === dev &&
      row.ino === ino &&
      size > row.size &&
      row.end > 0 &&
      hasSameEdges(file.fd, row.end, row);
    const from = grown ? row.end : 0;
    const scanned = scanSpends(file.fd, harness, from, size, grown ? row.lastModel : undefined);
    const edges = edgeHashes(file.fd, scanned.end);
    if (row && !grown) store.dropFile(row.id);
    const id = store.putFile({
      path,
      dev,
      ino,
      size,
      ctime,
      end: scanned.end,
      head: edges.head,
      tail: edges.tail,
      lastModel: scanned.lastModel,
    });
    store.addSpends(id, scanned.spends);
    return { did: grown ? "appended" : "indexed", id };
  } finally {
    closeFile(file);
  }
}
