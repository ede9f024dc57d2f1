// The parse cache: parsed snapshots shared by every cursor on them, at most two per file
// (the one being paged and the one a follow just took) and at most 512 MiB of parse memory in
// all (estimated: heldBytes), least recently used first out. Snapshots hold no bytes.
// A follow extends its file's cached parse with only the appended lines instead of parsing the
// whole file again, in place: the two snapshots of a file share their structures as
// prefixes (tree.ts), so they hold about one copy, not two.
import type { BranchItems } from "./items.ts";
import type { SnapshotData } from "./snapshot.ts";
import type { ParsedSession } from "./tree.ts";

/** A parsed snapshot and what is derived from it. */
export type Parsed = {
  data: SnapshotData;
  session: ParsedSession;
  /** Each branch's items, computed on first use (the branch-entries cache). */
  items: Map<number, BranchItems>;
};

export const SNAPSHOTS_PER_FILE = 2;
/** The bound on the cached parses' memory, as heldBytes estimates it. */
export const CACHE_BYTES = 512 * 1024 * 1024;

export class ParseCache {
  /** Keyed by `dev:ino:project root`; each list oldest first. Map order is the LRU order of files. */
  readonly #files = new Map<string, Parsed[]>();
  readonly #maxBytes: number;

  constructor(maxBytes = CACHE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /**
   * The cached parse of exactly this snapshot, read through `root`, if any. The root is part of
   * the key: the same inode reached through another project's root (a hard link) must pass that
   * project's header check, never borrow a parse that passed another's.
   */
  get(
    root: string,
    data: { dev: bigint; ino: bigint; snapshot: { digest: string } },
  ): Parsed | undefined {
    const key = keyOf(root, data.dev, data.ino);
    const list = this.#files.get(key);
    const hit = list?.find((p) => p.data.snapshot.digest === data.snapshot.digest);
    if (hit && list) {
      this.#files.delete(key);
      this.#files.set(key, list);
    }
    return hit;
  }

  /** The newest cached snapshot of a file, if any. */
  latest(root: string, dev: bigint, ino: bigint): Parsed | undefined {
    const list = this.#files.get(keyOf(root, dev, ino));
    return list?.[list.length - 1];
  }

  put(root: string, parsed: Parsed): void {
    const key = keyOf(root, parsed.data.dev, parsed.data.ino);
    const list = (this.#files.get(key) ?? []).filter(
      (p) => p.data.snapshot.digest !== parsed.data.snapshot.digest,
    );
    list.push(parsed);
    while (list.length > SNAPSHOTS_PER_FILE) list.shift();
    this.#files.delete(key);
    this.#files.set(key, list);
    let bytes = 0;
    for (const l of this.#files.values()) bytes += heldBytes(l);
    for (const [k, l] of this.#files) {
      if (bytes <= this.#maxBytes || k === key) continue;
      bytes -= heldBytes(l);
      this.#files.delete(k);
    }
  }

  get snapshots(): number {
    let n = 0;
    for (const l of this.#files.values()) n += l.length;
    return n;
  }
}

/** Memory a parsed entry row costs, about (docs/reader.md, Hostile inputs: about 110 bytes). */
const ROW_BYTES = 128;

/**
 * The memory a file's cached parses hold, estimated: snapshots keep no bytes (snapshot.ts), only
 * their parse — rows shared by a file's lineage (counted once: the longest), each branch's item
 * list, and the block tags.
 */
function heldBytes(list: readonly Parsed[]): number {
  let rows = 0;
  let n = 0;
  for (const p of list) {
    rows = Math.max(rows, p.session.scan.entries.count);
    n += p.data.tags.whole.length + 4096;
    for (const items of p.items.values()) n += 4 * items.length;
  }
  return n + rows * ROW_BYTES;
}

function keyOf(root: string, dev: bigint, ino: bigint): string {
  return `${dev}:${ino}:${root}`;
}
