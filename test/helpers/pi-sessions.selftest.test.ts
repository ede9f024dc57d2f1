import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  appendRawLines,
  makeProject,
  piOracle,
  writeLongSession,
  writeRichSession,
} from "./pi-sessions.ts";

async function freshDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "pi-sessions-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

type Line = Record<string, unknown> & { message?: Record<string, unknown> };

function readLines(file: string): Line[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);
}

function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

const MIB = 1024 * 1024;

describe("pi-sessions", () => {
  it("writes the rich session under the seat with four leaves and the main tip as default", async (t) => {
    const { projectRoot, sessionsDir } = makeProject(await freshDir(t), { seat: "s1" });
    assert.ok(sessionsDir.endsWith(join("project", ".pi", "state", "s1", "sessions")));
    const { path, ids } = await writeRichSession(sessionsDir, "rich", projectRoot);
    assert.equal(path, join(sessionsDir, "rich.jsonl"));
    const oracle = await piOracle(path);
    assert.ok(oracle.leaves.length >= 4);
    assert.equal(oracle.defaultLeafId, ids.mainTip);
    assert.equal(oracle.sessionName, "Rich fixture");
    assert.equal(oracle.hasCycle, false);
    const leafIds = oracle.leaves.map((l) => l.id);
    for (const name of ["mainTip", "forkAssistant", "summaryAssistant", "root2Assistant"]) {
      assert.ok(leafIds.includes(ids[name] ?? ""), name);
    }
    const fork = oracle.leaves.find((l) => l.id === ids.forkAssistant);
    assert.deepEqual(fork?.path.slice(-3), [ids.forkPoint, ids.forkUser, ids.forkAssistant]);
    assert.deepEqual(oracle.leaves.find((l) => l.id === ids.root2Assistant)?.path, [
      ids.root2User,
      ids.root2Assistant,
    ]);
  });

  it("puts every listed entry kind in the rich session", async (t) => {
    const { projectRoot, sessionsDir } = makeProject(await freshDir(t));
    const { path, ids } = await writeRichSession(sessionsDir, "rich", projectRoot);
    const [header, ...entries] = readLines(path);
    assert.equal(header?.type, "session");
    assert.equal(header?.cwd, projectRoot);
    const byId = new Map(entries.map((e) => [e.id, e]));
    const types = new Set(entries.map((e) => e.type));
    for (const type of [
      "message",
      "model_change",
      "thinking_level_change",
      "label",
      "session_info",
      "branch_summary",
      "compaction",
      "custom",
      "custom_message",
    ]) {
      assert.ok(types.has(type), type);
    }
    const roles = new Set(entries.map((e) => e.message?.role));
    for (const role of ["user", "assistant", "toolResult", "bashExecution"]) {
      assert.ok(roles.has(role), role);
    }
    const json = (name: string): string => JSON.stringify(byId.get(ids[name]));
    assert.match(json("assistantToolUse"), /"type":"thinking".*"type":"toolCall".*"name":"read"/);
    assert.match(json("userImage"), /"type":"image","data":"iVBOR/);
    assert.match(
      json("assistantRedacted"),
      /"thinking":"","thinkingSignature":"[^"]+","redacted":true/,
    );
    assert.match(json("assistantAborted"), /"stopReason":"aborted".*"errorMessage"/);
    assert.match(json("toolResultOpenAI"), /"toolCallId":"call_abc123\|fc_def456"/);
    assert.match(json("bashExecution"), /"exitCode":0,"cancelled":false,"truncated":false/);
    assert.equal(byId.get(ids.customMessageShown)?.display, true);
    assert.equal(byId.get(ids.customMessageHidden)?.display, false);
    assert.equal(byId.get(ids.compaction)?.firstKeptEntryId, ids.userOpenAI);
    assert.equal(byId.get(ids.branchSummary)?.parentId, ids.summaryPoint);
    assert.equal(entries.filter((e) => e.parentId === null).length, 2);
    assert.equal(entries.at(-1)?.id, ids.mainTip);
  });

  it("writes a long session to within 5% of its target, the same shape for the same seed", async (t) => {
    const { projectRoot, sessionsDir } = makeProject(await freshDir(t));
    const opts = { targetBytes: 2 * MIB, seed: 42, branches: true, compactionEveryBytes: MIB / 2 };
    const a = await writeLongSession(sessionsDir, "a", projectRoot, opts);
    const b = await writeLongSession(sessionsDir, "b", projectRoot, opts);
    assert.ok(a.bytes >= opts.targetBytes && a.bytes <= opts.targetBytes * 1.05, `${a.bytes}`);
    assert.equal(a.bytes, b.bytes);
    assert.equal(a.entries, b.entries);
    const shape = (file: string): string[] =>
      readLines(file).map((e) => `${e.type}/${e.message?.role ?? ""}/${e.parentId === null}`);
    assert.deepEqual(shape(a.path), shape(b.path));
    assert.equal(shape(a.path).filter((s) => s.startsWith("compaction/")).length, 4);
    const oracle = await piOracle(a.path);
    assert.equal(oracle.leaves.length, 4);
    assert.equal(oracle.defaultLeafId, a.ids.mainTip);
    assert.equal(oracle.entryIds.length, a.entries);
  });

  it("leaves the original file's bytes alone when Pi would write to its copy", async (t) => {
    const { projectRoot, sessionsDir } = makeProject(await freshDir(t));
    const { path } = await writeRichSession(sessionsDir, "rich", projectRoot);
    const unterminated = join(sessionsDir, "unterminated.jsonl");
    writeFileSync(unterminated, readFileSync(path, "utf8").replace(/\n$/, ""));
    for (const file of [path, unterminated]) {
      const before = sha256(file);
      const oracle = await piOracle(file);
      assert.ok(oracle.entryIds.length > 0, basename(file));
      assert.equal(sha256(file), before, basename(file));
    }
  });

  it("reports a parent cycle instead of walking it", async (t) => {
    const { projectRoot, sessionsDir } = makeProject(await freshDir(t));
    const { path, ids } = await writeRichSession(sessionsDir, "rich", projectRoot);
    const at = new Date().toISOString();
    appendRawLines(path, [
      { type: "custom", customType: "x", id: "cyc00001", parentId: "cyc00002", timestamp: at },
      { type: "custom", customType: "x", id: "cyc00002", parentId: "cyc00001", timestamp: at },
    ]);
    const oracle = await piOracle(path);
    assert.equal(oracle.hasCycle, true);
    assert.deepEqual(oracle.leaves, []);
    assert.equal(oracle.defaultLeafId, "cyc00002");
    assert.ok(oracle.entryIds.includes(ids.mainTip ?? ""));
  });
});
