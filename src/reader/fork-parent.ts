// Which conversation a forked session came from (issue 24 item 14). Pi records the parent as a
// path in the header (`parentSession`, session-manager.js forkFrom and createBranchedSession: the
// source's resolved path). That path is never opened or even looked at on disk: it is matched as
// text against the approved roots, and only a file name a root would list, directly in that
// root's folder, names a conversation. Whether it exists and what it is called is then the
// catalogue's business (a row read through the root like any other), so a header pointing
// outside the roots, at a link or at something that is not a session gets no parent at all.
import { basename, dirname, isAbsolute, resolve } from "node:path";
import { isStoreDirName, storeDirRoot } from "./harness/pi/pi-store.ts";
import { isSessionFileName } from "./safe-fs.ts";
import type { PiRoot, Root } from "./sources.ts";

/** Longer parent paths are not matched (PATH_MAX): no root's file has such a path. */
const PARENT_PATH_MAX = 4096;

/**
 * The Pi root and file name a parent session path names, by its text alone: an absolute,
 * normalized path (as Pi writes it: no `.`, `..` or doubled separators) whose folder is a
 * repository seat's sessions folder or a `--…--` folder of an approved store. Null otherwise.
 */
export function parentFileOf(
  roots: readonly Root[],
  path: string,
): { root: PiRoot; name: string } | null {
  if (path.length === 0 || path.length > PARENT_PATH_MAX) return null;
  if (!isAbsolute(path) || resolve(path) !== path || path.includes("\0")) return null;
  const dir = dirname(path);
  const name = basename(path);
  if (!isSessionFileName(name)) return null;
  for (const root of roots) {
    if (root.kind === "pi" && root.sessionsDir === dir) return { root, name };
    if (root.kind === "pi-store" && dirname(dir) === root.storeDir) {
      const folder = basename(dir);
      if (isStoreDirName(folder)) return { root: storeDirRoot(root.storeDir, folder), name };
    }
  }
  return null;
}
