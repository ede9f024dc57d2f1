// Follow latency after a one-line append, against the bare prefix check, in the same run.

import { randomBytes } from "node:crypto";
import { appendFileSync, lstatSync, readFileSync } from "node:fs";
import type { Cursor, Reader } from "../../src/index.ts";
import { gc, type Series, summarize, timed } from "../stats.ts";
import { expectOk, type Traversal } from "../traverse.ts";
import { barePrefixCheck } from "./baselines.ts";
import { leafIdOf, type Session } from "./session.ts";

export type FollowResult = {
  mib: number;
  bytesBefore: number;
  bytesAfter: number;
  samples: number;
  follow: Series;
  bare: Series;
};

/**
 * Follow latency: on a reader that paged to the end of the default branch (the last warm
 * traversal), append one user message to the (temporary copy of the) file, then time `next`
 * with the follow cursor; the bare check reads the pinned prefix and hashes it.
 */
export function measureFollow(
  s: Session,
  reader: Reader,
  traversal: Traversal,
  samples: number,
): FollowResult {
  const branch = traversal.defaultBranch;
  let cursor: Cursor | undefined = traversal.end.get(branch)?.follow;
  if (!cursor) throw new Error("no follow cursor on the default branch");
  let leaf = leafIdOf(traversal.defaultLeaf);
  const follow: number[] = [];
  const bare: number[] = [];
  const bytesBefore = lstatSync(s.file).size;
  const taken = new Set<string>();
  for (let k = 0; k < samples; k++) {
    let id = randomBytes(4).toString("hex");
    const text = readFileSync(s.file, "latin1");
    while (taken.has(id) || text.includes(`"id":"${id}"`)) id = randomBytes(4).toString("hex");
    taken.add(id);
    const at = Date.now();
    const entry = {
      type: "message",
      id,
      parentId: leaf,
      timestamp: new Date(at).toISOString(),
      message: { role: "user", content: `Follow sample ${k}: one more question.`, timestamp: at },
    };
    appendFileSync(s.file, `${JSON.stringify(entry)}\n`);

    const pinned = cursor.snapshot;
    gc();
    const b = timed(() => barePrefixCheck(s.file, pinned));
    if (!b.value) throw new Error("the bare check found a different prefix");
    bare.push(b.ms);

    const cursorId = cursor.id;
    gc();
    const f = timed(() => reader.next({ cursor: cursorId, conversation: s.conversation, branch }));
    follow.push(f.ms);
    const r = expectOk(f.value, "follow after append");
    const parts = r.page.parts;
    if (parts.length !== 1 || parts[0]?.entry !== `n.${id}` || !r.follow) {
      throw new Error(`follow returned ${parts.length} parts (${parts[0]?.entry}), not n.${id}`);
    }
    if (r.view.defaultLeaf !== `n.${id}`) throw new Error(`default leaf ${r.view.defaultLeaf}`);
    cursor = r.follow;
    leaf = id;
  }
  return {
    mib: s.cached.mib,
    bytesBefore,
    bytesAfter: lstatSync(s.file).size,
    samples,
    follow: summarize(follow),
    bare: summarize(bare),
  };
}
