// Pi's labels name branches (issue 24 item 14): sessions written by the pinned Pi's own
// SessionManager (appendLabelChange sets and clears, as Pi's /tree does), read by the reader.
import assert from "node:assert/strict";
import { appendFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { piMessages } from "../helpers/pi-messages.ts";
import { expectOk, idOf, project, readerFor, tempDir } from "../helpers/reader.ts";

const { user, reply, tick } = piMessages(Date.parse("2026-03-01T10:00:00.000Z"));

/**
 * main: u1 → a1 → u2 → a2, labelled on u2; `alt` forks from a1 (u3 → a3), labelled on u3 and
 * later on a3; `gone` forks from a1 too, labelled then cleared. A label on u1 set and cleared
 * again from `alt` (label lines are entries of whatever branch is current when they are made).
 */
async function writeLabelled(dir: string, cwd: string) {
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  const sm = SessionManager.create(cwd, dir);
  const u1 = sm.appendMessage(user("How do I parse the config file?"));
  const a1 = sm.appendMessage(reply("Read it with JSON.parse."));
  const u2 = sm.appendMessage(user("And validate it?"));
  sm.appendMessage(reply("Check each field by hand."));
  sm.appendLabelChange(u2, "validation plan");
  sm.branch(a1);
  const u3 = sm.appendMessage(user("Try a schema library instead."));
  sm.appendLabelChange(u3, "schema idea");
  const a3 = sm.appendMessage(reply("Zod would do."));
  sm.appendLabelChange(a3, "zod it is");
  sm.appendLabelChange(u1, "first words are better");
  sm.appendLabelChange(u1, undefined);
  sm.branch(a1);
  const u4 = sm.appendMessage(user("What about YAML?"));
  sm.appendLabelChange(u4, "yaml detour");
  sm.appendMessage(reply("YAML needs a parser."));
  sm.appendLabelChange(u4, "");
  const file = sm.getSessionFile();
  assert.ok(file);
  return { file, u1, u3, u4 };
}

describe("branch labels", () => {
  it("names each branch by the latest label still set on its own entries when Pi labels them", async (t) => {
    const p = project(tempDir(t));
    const { file, u1, u3, u4 } = await writeLabelled(p.sessionsDir, p.projectRoot);
    const name = "labelled.jsonl";
    renameSync(file, join(p.sessionsDir, name));
    const reader = readerFor(p);
    const id = idOf(reader, name);
    const view = expectOk(reader.open({ conversation: id, branch: "main" })).view;
    const label = (start: string) => view.branches.find((b) => b.start === `n.${start}`)?.label;
    assert.equal(label(u1), "validation plan");
    assert.equal(label(u3), "zod it is");
    // Set, then cleared with "": the branch is told by its first words again.
    assert.equal(label(u4), "What about YAML?");
  });

  it("follows a label set or cleared by lines appended after the first read", async (t) => {
    const p = project(tempDir(t));
    const { file, u3 } = await writeLabelled(p.sessionsDir, p.projectRoot);
    const name = "grows.jsonl";
    const path = join(p.sessionsDir, name);
    renameSync(file, path);
    const reader = readerFor(p);
    const id = idOf(reader, name);
    const first = expectOk(reader.open({ conversation: id, branch: `b.${u3}` }));
    assert.equal(first.view.branches.find((b) => b.start === `n.${u3}`)?.label, "zod it is");
    // Pi writes a label change as one line, a child of the current leaf (appendLabelChange).
    const leaf = first.view.defaultLeaf?.slice(2) ?? null;
    const line = (label: string | undefined, n: number) =>
      `${JSON.stringify({ type: "label", id: `ffff000${n}`, parentId: n === 1 ? leaf : "ffff0001", timestamp: new Date(tick()).toISOString(), targetId: u3, label })}\n`;
    appendFileSync(path, line("renamed", 1));
    assert.ok(first.follow);
    const grown = expectOk(
      reader.next({ cursor: first.follow.id, conversation: id, branch: `b.${u3}` }),
    );
    assert.equal(grown.view.branches.find((b) => b.start === `n.${u3}`)?.label, "renamed");
    appendFileSync(path, line(undefined, 2));
    const cleared = expectOk(reader.open({ conversation: id, branch: `b.${u3}` }));
    // u3's label is gone; a3's ("zod it is") is still set on the same segment.
    assert.equal(cleared.view.branches.find((b) => b.start === `n.${u3}`)?.label, "zod it is");
  });

  it("ignores a label that is not text, and clips a long one to 60 characters", (t) => {
    const p = project(tempDir(t));
    const at = (n: number) => new Date(Date.parse("2026-03-02T00:00:00Z") + n).toISOString();
    const lines = [
      {
        type: "session",
        version: 3,
        id: "01a00000-0000-7000-8000-00000000a1a1",
        timestamp: at(0),
        cwd: p.projectRoot,
      },
      {
        type: "message",
        id: "aaaa0001",
        parentId: null,
        timestamp: at(1),
        message: { role: "user", content: "Hello there", timestamp: 1 },
      },
      {
        type: "label",
        id: "aaaa0002",
        parentId: "aaaa0001",
        timestamp: at(2),
        targetId: "aaaa0001",
        label: "x".repeat(80),
      },
      {
        type: "label",
        id: "aaaa0003",
        parentId: "aaaa0002",
        timestamp: at(3),
        targetId: "aaaa0001",
        label: { evil: true },
      },
    ];
    const name = "odd.jsonl";
    appendFileSync(join(p.sessionsDir, name), lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    const reader = readerFor(p);
    const view = expectOk(reader.open({ conversation: idOf(reader, name) })).view;
    assert.equal(view.branches[0]?.label, `${"x".repeat(59)}…`);
  });
});
