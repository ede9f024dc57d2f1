// A fork names its parent (issue 24 item 14): sessions forked by the pinned Pi's own code
// (SessionManager.forkFrom, what `pi --fork` runs, and createBranchedSession, what /fork runs)
// name their parent in the header; the catalogue and the view link it when the parent is a
// readable session of an approved root, and only then.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, it } from "node:test";
import { encodeCwd } from "../../src/index.ts";
import { piMessages } from "../helpers/pi-messages.ts";
import { checkedReader, expectOk, project, rootsOf, tempDir } from "../helpers/reader.ts";

const { user, reply } = piMessages(Date.parse("2026-03-03T09:00:00.000Z"));

/** Pi's store with one titled session of `cwd`, a /fork of it beside it, and a fork into a seat. */
async function forkedByPi(base: string) {
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  const app = join(base, "code", "app");
  mkdirSync(app, { recursive: true });
  const store = join(base, "agent", "sessions");
  const folder = join(store, encodeCwd(app));
  const sm = SessionManager.create(app, folder);
  sm.appendSessionInfo("Parent title");
  sm.appendMessage(user("Plan the release."));
  const leaf = sm.appendMessage(reply("Tag, build, publish."));
  const parent = sm.getSessionFile();
  assert.ok(parent);
  // /fork: a new file in the same folder, its header naming the parent (createBranchedSession).
  const sibling = sm.createBranchedSession(leaf);
  assert.ok(sibling);
  const p = project(base, "app-seat");
  // pi --fork: the whole history into another project's folder (SessionManager.forkFrom).
  const seatFork = SessionManager.forkFrom(parent, p.projectRoot, p.sessionsDir).getSessionFile();
  assert.ok(seatFork);
  return { store, folder, parent, sibling, seatFork, p };
}

describe("fork parent", () => {
  it("names and links the parent in the catalogue and the view when Pi forked it from an approved root", async (t) => {
    const base = tempDir(t);
    const f = await forkedByPi(base);
    const reader = checkedReader(base, {
      roots: rootsOf([
        { kind: "pi-agent", sessionsDir: f.store },
        { kind: "repository", projectRoot: f.p.projectRoot, seat: f.p.seat },
      ]),
    });
    const rows = reader.catalogue().conversations;
    const byFile = (path: string) => rows.find((r) => r.fileName === basename(path));
    const parent = byFile(f.parent);
    assert.ok(parent);
    assert.equal(parent.forkedFrom, null);
    const expected = { conversation: parent.conversation, title: "Parent title" };
    assert.deepEqual(byFile(f.sibling)?.forkedFrom, expected);
    assert.deepEqual(byFile(f.seatFork)?.forkedFrom, expected);
    for (const fork of [f.sibling, f.seatFork]) {
      const id = byFile(fork)?.conversation;
      assert.ok(id);
      const view = expectOk(reader.open({ conversation: id })).view;
      assert.equal(view.forkedFromEarlierSession, true);
      assert.deepEqual(view.forkedFrom, expected);
    }
  });

  it("names no parent when the parent's root is not approved", async (t) => {
    const base = tempDir(t);
    const f = await forkedByPi(base);
    const reader = checkedReader(base, {
      roots: rootsOf([{ kind: "repository", projectRoot: f.p.projectRoot, seat: f.p.seat }]),
    });
    const row = reader.catalogue().conversations.find((r) => r.fileName === basename(f.seatFork));
    assert.ok(row);
    assert.equal(row.forkedFrom, null);
    const view = expectOk(reader.open({ conversation: row.conversation })).view;
    assert.equal(view.forkedFromEarlierSession, true);
    assert.equal(view.forkedFrom, null);
  });
});
