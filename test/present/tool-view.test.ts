// How a tool call reads to a person (src/present/tool-view.ts), shared by the Console and the
// exports: Pi's tools and Claude Code's own (capitalized names, `file_path`, `old_string` /
// `new_string`, a Bash timeout in milliseconds) as the same views.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { harnessLabel } from "../../src/present/labels.ts";
import { toolCallView } from "../../src/present/tool-view.ts";

const view = (name: string, args: unknown) => toolCallView(name, JSON.stringify(args));

describe("tool-view", () => {
  it("shows Claude Code's Edit as a diff of old_string to new_string", () => {
    assert.deepEqual(
      view("Edit", { file_path: "/p/a.txt", old_string: "a\nb", new_string: "a\nc" }),
      {
        kind: "edit",
        path: "/p/a.txt",
        hunks: [
          [
            { op: " ", text: "a" },
            { op: "-", text: "b" },
            { op: "+", text: "c" },
          ],
        ],
      },
    );
  });

  it("shows a MultiEdit as one hunk per edit", () => {
    const v = view("MultiEdit", {
      file_path: "/p/a.ts",
      edits: [
        { old_string: "x", new_string: "y" },
        { old_string: "1", new_string: "2" },
      ],
    });
    assert.equal(v.kind, "edit");
    assert.equal(v.kind === "edit" && v.hunks.length, 2);
  });

  it("shows Write as the file with its language, Read as path and range", () => {
    assert.deepEqual(view("Write", { file_path: "/p/n.py", content: "print(1)\n" }), {
      kind: "write",
      path: "/p/n.py",
      content: "print(1)\n",
      lang: "python",
    });
    assert.deepEqual(view("Read", { file_path: "/p/n.py", offset: 10, limit: 5 }), {
      kind: "read",
      path: "/p/n.py",
      offset: 10,
      limit: 5,
    });
  });

  it("gives a Claude Bash timeout in seconds, as Pi's bash states its own", () => {
    assert.deepEqual(view("Bash", { command: "npm test", timeout: 120000 }), {
      kind: "bash",
      command: "npm test",
      timeout: 120,
    });
    assert.deepEqual(view("bash", { command: "ls", timeout: 30 }), {
      kind: "bash",
      command: "ls",
      timeout: 30,
    });
  });

  it("shows a Claude call whose arguments do not fit its tool as JSON, not half a view", () => {
    assert.equal(view("Edit", { file_path: "/p/a", old_string: 1, new_string: "b" }).kind, "json");
    assert.equal(view("Write", { path: "/p/a", content: "x" }).kind, "json");
    // Pi's argument names do not make a Claude tool's view, nor Claude's a Pi tool's.
    assert.equal(view("Edit", { path: "/p/a", oldText: "a", newText: "b" }).kind, "json");
    assert.equal(
      view("edit", { file_path: "/p/a", old_string: "a", new_string: "b" }).kind,
      "json",
    );
  });

  it("names harnesses as people do", () => {
    assert.equal(harnessLabel("claude-code"), "Claude Code");
    assert.equal(harnessLabel("pi"), "Pi");
    assert.equal(harnessLabel(null), "");
  });
});
