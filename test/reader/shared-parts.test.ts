// The parts of shared history kept for the next branch (src/reader/shared-parts.ts) change no
// byte of any page: a traversal of every branch of multi-branch Claude files reads the same
// pages, views and cursor positions with the cache on as with it off (bound 0), and a rewrite
// of shared history between pages is refused as before.
import assert from "node:assert/strict";
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { writeClaudeSession } from "../../bench/claude-sessions.ts";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import type { Reader, ReadResult } from "../../src/reader/reader.ts";
import { checkedReader, expectOk, expectRefusal, rootsOf, tempDir } from "../helpers/reader.ts";

/** Every page of every branch (open, then each `next`), cursor ids left out. */
function traversal(reader: Reader, conversation: string): unknown[] {
  const out: unknown[] = [];
  const shown = (r: ReadResult) => {
    const ok = expectOk(r);
    out.push({
      page: { ...ok.page, nextCursor: ok.page.nextCursor !== null },
      cursor: ok.cursor ? { ...ok.cursor, id: "", expiresAt: "" } : null,
      follow: ok.follow ? { ...ok.follow, id: "", expiresAt: "" } : null,
      view: ok.view,
    });
    return ok;
  };
  const first = shown(reader.open({ conversation }));
  const walk = (start: ReturnType<typeof shown>) => {
    let r = start;
    while (r.cursor) {
      const cursor = r.cursor.id;
      r = shown(reader.next({ cursor, conversation, branch: r.page.branch }));
    }
  };
  walk(first);
  for (const b of first.view.branches) {
    if (b.name !== first.page.branch) walk(shown(reader.open({ conversation, branch: b.name })));
  }
  return out;
}

function session(t: Parameters<typeof tempDir>[0], mib: number, seed: number) {
  const base = tempDir(t);
  const projectsDir = join(base, "projects");
  const cwd = "/work/shared parts";
  const file = join(
    projectsDir,
    encodeClaudeCwd(cwd),
    "5e55e55e-0000-4000-8000-000000000001.jsonl",
  );
  writeClaudeSession(file, cwd, mib, seed);
  const roots = rootsOf([{ kind: "claude-code", projectsDir }]);
  const reader = (sharedPartsBytes?: number) =>
    checkedReader(base, {
      roots,
      racyWindowMs: 0,
      ...(sharedPartsBytes === undefined ? {} : { sharedPartsBytes }),
    });
  const conversation = reader(0).catalogue().conversations[0]!.conversation;
  return { file, reader, conversation };
}

describe("shared parts", () => {
  for (const [mib, seed] of [
    [0.3, 1],
    [1, 2],
    [2, 3],
  ] as const) {
    it(`reads the same pages with and without kept parts (${mib} MiB, seed ${seed})`, (t) => {
      const s = session(t, mib, seed);
      const off = traversal(s.reader(0), s.conversation);
      assert.ok(off.length > 3);
      for (const bound of [undefined, 64 * 1024, 1 << 30]) {
        const on = s.reader(bound);
        assert.deepEqual(traversal(on, s.conversation), off, `bound ${bound}`);
        // Twice on one reader: parts kept by the first traversal serve the second.
        assert.deepEqual(traversal(on, s.conversation), off, `bound ${bound}, again`);
      }
    });
  }

  it("refuses a page whose shared history was rewritten, as without kept parts", (t) => {
    for (const bound of [0, 1 << 30]) {
      const s = session(t, 1, 4);
      const reader = s.reader(bound);
      traversal(reader, s.conversation);
      const first = expectOk(reader.open({ conversation: s.conversation }));
      // The fork half-way: its pages show the first half of the default branch again.
      const other = first.view.branches
        .filter((b) => b.name !== first.page.branch)
        .sort((a, b) => b.depth - a.depth)[0]!;
      const r = expectOk(reader.open({ conversation: s.conversation, branch: other.name }));
      assert.ok(r.cursor);
      // A byte of a line on the branch's later pages, changed in place (same size).
      const bytes = readFileSync(s.file);
      const at = bytes.indexOf("reader", Math.floor(bytes.length * 0.3), "utf8");
      assert.ok(at > 0);
      const fd = openSync(s.file, "r+");
      writeSync(fd, Buffer.from("X"), 0, 1, at);
      closeSync(fd);
      expectRefusal(
        reader.next({ cursor: r.cursor.id, conversation: s.conversation, branch: other.name }),
        "source-replaced",
      );
    }
  });
});
