// The reader's full traversal as the benchmark times it: open (default branch), every page of
// every branch listed in view.branches, then one follow on each branch. A refusal is an error.
import type { Cursor, Reader, ReadResult } from "../src/index.ts";

export type OkResult = Extract<ReadResult, { ok: true }>;

export type Traversal = {
  /** Page reads: each open and each `next` with a page cursor. */
  pages: number;
  /** `next` calls with a follow cursor (one per branch). */
  follows: number;
  parts: number;
  branches: number;
  /** Milliseconds of each `open`. */
  openMs: number[];
  /** Milliseconds of each `next` with a page cursor. */
  pageMs: number[];
  /** Milliseconds of each final follow. */
  followMs: number[];
  defaultBranch: string;
  defaultLeaf: string | null;
  /** The follow cursor each branch ended with, and the entry of its last part. */
  end: Map<string, { follow: Cursor; lastEntry: string | null }>;
};

export function expectOk(r: ReadResult, what: string): OkResult {
  if (!r.ok) throw new Error(`${what}: refused ${r.refusal.code}: ${r.refusal.message}`);
  return r;
}

/** `onCall` runs after every reader call (the memory worker samples RSS there). */
export function traverse(
  reader: Reader,
  conversation: string,
  onCall: () => void = () => {},
): Traversal {
  const t: Traversal = {
    pages: 0,
    follows: 0,
    parts: 0,
    branches: 0,
    openMs: [],
    pageMs: [],
    followMs: [],
    defaultBranch: "",
    defaultLeaf: null,
    end: new Map(),
  };
  const call = (times: number[], what: string, fn: () => ReadResult): OkResult => {
    const start = performance.now();
    const r = fn();
    times.push(performance.now() - start);
    onCall();
    return expectOk(r, what);
  };

  const walk = (first: OkResult, branch: string): void => {
    let r = first;
    let lastEntry: string | null = null;
    for (;;) {
      t.pages++;
      t.parts += r.page.parts.length;
      lastEntry = r.page.parts[r.page.parts.length - 1]?.entry ?? lastEntry;
      if (!r.cursor) break;
      const cursor = r.cursor.id;
      r = call(t.pageMs, `next ${branch}`, () => reader.next({ cursor, conversation, branch }));
    }
    const follow = r.follow;
    if (!follow) throw new Error(`branch ${branch}: the last page has no follow cursor`);
    const f = call(t.followMs, `follow ${branch}`, () =>
      reader.next({ cursor: follow.id, conversation, branch }),
    );
    t.follows++;
    t.parts += f.page.parts.length;
    if (!f.follow) throw new Error(`branch ${branch}: the follow page has no follow cursor`);
    t.end.set(branch, { follow: f.follow, lastEntry });
    t.branches++;
  };

  const first = call(t.openMs, "open", () => reader.open({ conversation }));
  t.defaultBranch = first.view.defaultBranch;
  t.defaultLeaf = first.view.defaultLeaf;
  const names = first.view.branches.map((b) => b.name);
  walk(first, first.page.branch);
  for (const branch of names) {
    if (branch === first.page.branch) continue;
    walk(
      call(t.openMs, `open ${branch}`, () => reader.open({ conversation, branch })),
      branch,
    );
  }
  return t;
}
