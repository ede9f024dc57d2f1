// The walk through directory descriptors (safe-fs.ts) as an API another source can use: a root
// plus components, every step relative to the descriptor before it, nothing resolved twice.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { isRefusal } from "../../src/reader/refusal.ts";
import {
  closeDirectory,
  closeFile,
  componentsBelow,
  listDirectory,
  openDirectory,
  openFileIn,
  readRange,
} from "../../src/reader/safe-fs.ts";
import { tempDir } from "../helpers/reader.ts";

function refusalOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    if (isRefusal(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error("expected a refusal");
}

describe("the walk through directory descriptors", () => {
  it("keeps reading the directory it walked to after that directory is renamed and replaced by a link", (t) => {
    const base = tempDir(t, "fd-walk-");
    const dir = join(base, "root", "a", "b");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "s.jsonl"), "inside\n");
    const outside = join(base, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "s.jsonl"), "outside\n");
    const handle = openDirectory(join(base, "root"), ["a", "b"]);
    t.after(() => closeDirectory(handle));
    // Exchange b for a link to the outside: the descriptor still holds the real directory.
    renameSync(dir, `${dir}.moved`);
    symlinkSync(outside, dir);
    assert.deepEqual(listDirectory(handle), ["s.jsonl"]);
    const file = openFileIn(handle, "s.jsonl");
    try {
      assert.equal(readRange(file.fd, 0, 100).toString(), "inside\n");
    } finally {
      closeFile(file);
    }
    // A new walk meets the link and refuses it.
    const r = refusalOf(() => openDirectory(join(base, "root"), ["a", "b"]));
    assert.equal(r.code, "unsafe-path");
    assert.match(r.message, /a\/b is a symbolic link/);
    assert.equal(readFileSync(join(outside, "s.jsonl"), "utf8"), "outside\n");
  });

  it("refuses each kind of bad component with a code and a message", (t) => {
    const base = tempDir(t, "fd-walk-");
    mkdirSync(join(base, "a"));
    writeFileSync(join(base, "file"), "x");
    const cases: [string[], string, RegExp][] = [
      [["file"], "unsafe-path", /file is not a directory/],
      [["missing"], "unavailable", /does not exist/],
      [[".."], "unsafe-path", /not valid/],
      [["a/b"], "unsafe-path", /not valid/],
      [[""], "unsafe-path", /not valid/],
    ];
    for (const [parts, code, message] of cases) {
      const r = refusalOf(() => openDirectory(base, parts));
      assert.equal(r.code, code, parts.join("/"));
      assert.match(r.message, message);
    }
    assert.equal(refusalOf(() => openDirectory(join(base, "nope"), [])).code, "unavailable");
    assert.equal(refusalOf(() => openDirectory(join(base, "file"), [])).code, "unsafe-path");
  });

  it("accepts only a directory strictly below the root", () => {
    assert.deepEqual(componentsBelow("/p", "/p/.pi/state/main/sessions"), [
      ".pi",
      "state",
      "main",
      "sessions",
    ]);
    for (const dir of ["/p", "/", "/q/x", "/p/../q"]) {
      assert.equal(refusalOf(() => componentsBelow("/p", dir)).code, "unsafe-path", dir);
    }
  });
});
