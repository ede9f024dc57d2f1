import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Snapshot } from "../../src/protocol/chat-01.ts";
import { CursorStore } from "../../src/reader/cursors.ts";

// Cursor ids are drawn from a pool of CSPRNG bytes refilled every 256 cursors (cursors.ts): each
// id must still be 160 bits of its own, never one another cursor has or had.
describe("cursor ids", () => {
  it("are 40 hex digits each and never repeat, across many refills of the random pool", () => {
    const store = new CursorStore({ cap: 5_000 });
    const binding = { actor: "a", purpose: "p", conversation: "c", branch: "main" };
    const pinned = {
      snapshot: { bytes: 1, sha256: "00" } as unknown as Snapshot,
      sourceEpoch: "e",
      dev: 1n,
      ino: 2n,
    };
    const resume = {
      position: { item: 0, part: 0 },
      itemCount: 0,
      itemsDigest: "",
      incomplete: false,
    };
    const ids = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const { id } = store.issue("page", binding, pinned, resume);
      assert.match(id, /^c-[0-9a-f]{40}$/);
      ids.add(id);
    }
    assert.equal(ids.size, 2_000, "no id was issued twice");
    // No two ids share their random half either: a pool read twice would repeat whole tokens.
    const halves = new Set([...ids].map((id) => id.slice(2, 22)));
    assert.equal(halves.size, 2_000);
  });
});
