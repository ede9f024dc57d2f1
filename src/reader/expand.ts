// Configured roots as the catalogue and the reader walk them: each store (Pi's, Claude Code's)
// and each Claude seat replaced by its folders, listed once per call; a store or seat that cannot
// be listed stays one refused root, named by its path, so it shows instead of vanishing.
import { listClaudeSeat, listClaudeStore } from "./harness/claude-code/store.ts";
import { listStore } from "./harness/pi/pi-store.ts";
import { Refusal } from "./refusal.ts";
import {
  CLAUDE_STORE_SEAT,
  type FileRoot,
  type Root,
  STORE_SEAT,
  type UnsupportedRoot,
} from "./sources.ts";

/** A store or seat folder that could not be listed: what approved it, and why. */
export type RefusedListing = {
  kind: "refused-store";
  /** The folder that was to be listed. */
  storeDir: string;
  /** The project and seat its refused-root entry shows. */
  project: string;
  seat: string;
  /** Its approval key (approvalKey of the configured root). */
  key: string;
  refusal: Refusal;
};

export type ExpandedRoot = FileRoot | UnsupportedRoot | RefusedListing;

/** The roots with each store and Claude seat replaced by its folders. */
export function expandRoots(roots: Root[]): ExpandedRoot[] {
  const out: ExpandedRoot[] = [];
  for (const root of roots) {
    if (root.kind === "pi" || root.kind === "unsupported") {
      out.push(root);
      continue;
    }
    try {
      if (root.kind === "pi-store") out.push(...listStore(root));
      else if (root.kind === "claude-store") out.push(...listClaudeStore(root));
      else out.push(...listClaudeSeat(root));
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      const seat =
        root.kind === "pi-store"
          ? { project: root.storeDir, seat: STORE_SEAT, storeDir: root.storeDir }
          : root.kind === "claude-store"
            ? { project: root.storeDir, seat: CLAUDE_STORE_SEAT, storeDir: root.storeDir }
            : { project: root.project, seat: root.seat, storeDir: root.sessionsDir };
      out.push({ kind: "refused-store", ...seat, key: approvalKey(root), refusal: e });
    }
  }
  return out;
}

/**
 * What approves a root: a repository seat's sessions folder, or the store or Claude seat a
 * folder was listed from. A remembered conversation is found again only while its key is current.
 */
export function approvalKey(root: Root | FileRoot): string {
  if (root.kind === "pi-store" || root.kind === "claude-store") return `store:${root.storeDir}`;
  if ((root.kind === "pi" || root.kind === "claude") && root.store) {
    return `store:${root.store.storeDir}`;
  }
  if (root.kind === "claude") return `root:${root.identity[1]}:${root.seat}`;
  if (root.kind === "claude-seat") return `root:${root.projectRoot}:${root.seat}`;
  return `root:${root.sessionsDir}`;
}
