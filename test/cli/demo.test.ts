import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type GrowEntry, startGrowing } from "../../src/cli/demo-grow.ts";
import { type DemoProject, LONG_TURNS, writeDemoProject } from "../../src/cli/demo-sessions.ts";
import type { Part } from "../../src/index.ts";
import {
  type CheckedReader,
  checkedReader,
  entriesOf,
  expectOk,
  readAll,
  rootsOf,
} from "../helpers/reader.ts";

type Demo = { base: string; demo: DemoProject; reader: CheckedReader; ids: Map<string, string> };

/** The conversation ids of the demo by file name (without `.jsonl`). */
function idsOf(reader: CheckedReader): Map<string, string> {
  const ids = new Map<string, string>();
  for (const row of reader.catalogue().conversations) {
    if (row.fileName !== null) ids.set(row.fileName.replace(/\.jsonl$/, ""), row.conversation);
  }
  return ids;
}

function blockTypes(parts: Part[]): Set<string> {
  return new Set(parts.flatMap((p) => p.blocks.map((b) => b.type)));
}

describe("npm start demo", () => {
  let shared: Demo;
  before(async () => {
    const base = mkdtempSync(join(tmpdir(), "cli-demo-"));
    const demo = await writeDemoProject(join(base, "demo-project"));
    const reader = checkedReader(base, { roots: rootsOf(demo.specs, demo.registrations) });
    shared = { base, demo, reader, ids: idsOf(reader) };
  });
  after(() => rmSync(shared.base, { recursive: true, force: true }));

  it("writes eight Pi conversations and a Claude Code seat's when the demo is written", () => {
    const rows = shared.reader.catalogue().conversations;
    assert.deepEqual(
      rows.map((r) => [r.fileName, r.seat, r.unsupportedReason]).sort(),
      [
        ["branches.jsonl", "main", null],
        ["compaction.jsonl", "main", null],
        ["hostile.jsonl", "main", null],
        ["live.jsonl", "main", null],
        ["long.jsonl", "main", null],
        ["malformed.jsonl", "main", null],
        ["review.jsonl", "review", null],
        ["tour.jsonl", "main", null],
        ["c1a0de00-0000-4000-8000-00000000d3e0.jsonl", "claude", null],
      ].sort(),
    );
    assert.ok(rows.every((r) => r.fileName === null || (r.title ?? "").length > 0));
    const claude = rows.find((r) => r.seat === "claude");
    assert.equal(claude?.harness, "claude-code");
    assert.equal(claude?.title, "Claude Code: count the tests");
  });

  it("opens every branch of every demo conversation without a refusal", () => {
    for (const id of shared.ids.values()) {
      const first = expectOk(shared.reader.open({ conversation: id }));
      for (const b of first.view.branches) readAll(shared.reader, id, b.name);
    }
  });

  it("spreads the long conversation over more than three pages", () => {
    const { parts, pages } = readAll(shared.reader, shared.ids.get("long") ?? "");
    assert.ok(parts.length > 300, `${parts.length} parts`);
    assert.equal(entriesOf(parts).length, LONG_TURNS * 4);
    assert.ok(pages > 3, `${pages} pages`);
  });

  it("shows each feature the Console demonstrates when its conversation is read", () => {
    const read = (name: string) => readAll(shared.reader, shared.ids.get(name) ?? "");
    const tour = read("tour");
    for (const type of ["thinking", "tool-call", "tool-result", "image", "bash-command"]) {
      assert.ok(blockTypes(tour.parts).has(type), `tour has ${type}`);
    }
    assert.ok(tour.parts.some((p) => p.kind === "custom-message"));
    const branches = read("branches").last.view.branches;
    assert.equal(branches.length, 4);
    assert.equal(branches.filter((b) => b.forksFrom === null).length, 2, "main and a new root");
    const summary = branches.find((b) => b.forksFrom !== null && b.depth === 8);
    assert.ok(summary, "the branchWithSummary branch");
    const onSummary = readAll(shared.reader, shared.ids.get("branches") ?? "", summary.name);
    assert.ok(onSummary.parts.some((p) => p.kind === "branch-summary"));
    assert.ok(read("compaction").parts.some((p) => p.kind === "compaction"));
    const malformed = read("malformed");
    assert.equal(malformed.last.view.unreadableLines, 1);
    const kinds = malformed.parts.map((p) => p.kind);
    assert.deepEqual(kinds, ["message", "message", "notice", "message", "message"]);
    const review = read("review");
    assert.ok(
      review.parts.some((p) => p.blocks.some((b) => b.type === "tool-result" && b.isError)),
    );
    assert.ok(
      review.parts.some((p) => p.blocks.some((b) => b.type === "notice" && b.code === "stopped")),
    );
  });

  it("appends chained user and assistant entries when the live writer ticks", async () => {
    const id = shared.ids.get("live") ?? "";
    const opened = expectOk(shared.reader.open({ conversation: id }));
    const before = readFileSync(shared.demo.liveFile, "utf8");
    const appended: GrowEntry[] = [];
    const errors: Error[] = [];
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => {
        stop();
        reject(new Error("the writer did not tick twice"));
      }, 5000);
      const stop = startGrowing(shared.demo.liveFile, {
        intervalMs: 20,
        onAppend: (e) => {
          if (appended.push(e) < 2) return;
          stop();
          clearTimeout(deadline);
          resolve();
        },
        onError: (e) => errors.push(e),
      });
    });
    assert.deepEqual(errors, []);
    const text = readFileSync(shared.demo.liveFile, "utf8");
    assert.ok(text.startsWith(before), "only appends");
    const added = text.slice(before.length).split("\n");
    assert.equal(added.pop(), "", "whole lines");
    const entries = added.map((l) => JSON.parse(l) as Record<string, unknown>);
    const lastBefore = JSON.parse(before.trimEnd().split("\n").pop() ?? "{}") as { id: string };
    assert.deepEqual(
      entries.map((e) => [e.type, e.id, e.parentId]),
      [
        ["message", appended[0]?.id, lastBefore.id],
        ["message", appended[1]?.id, appended[0]?.id],
      ],
    );
    assert.deepEqual(
      appended.map((e) => e.role),
      ["user", "assistant"],
    );
    assert.ok(opened.follow);
    const grown = expectOk(
      shared.reader.next({ cursor: opened.follow.id, conversation: id, branch: "main" }),
    );
    assert.deepEqual(
      grown.page.parts.map((p) => [p.entry, p.role]),
      appended.map((e) => [`n.${e.id}`, e.role]),
    );
    assert.equal(grown.view.unreadableLines, 0);
  });

  it("keeps appending when nobody listens to the writer", async () => {
    const size = () => statSync(shared.demo.liveFile).size;
    const start = size();
    const stop = startGrowing(shared.demo.liveFile, { intervalMs: 20 });
    try {
      await waitUntil("an append", () => size() > start);
    } finally {
      stop();
    }
  });
});

/** Resolves once `test` holds, checking every 10 ms; rejects after 5 s. */
async function waitUntil(what: string, test: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
