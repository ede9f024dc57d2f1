// The Claude Code load check's tolerance for what Claude Code itself appends as it starts: its
// bookkeeping records (2.1.328 writes an `atis-latch` line while or just after it answers
// `initialize`, so the check saw it or not by timing — control-claude-crash.test.ts failed in CI
// once on it). Only that: any conversation record, another session's record, a line that is not
// a record, or a change to the lines read before the launch is another writer.
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  appendedSince,
  readClaudeFile,
} from "../../src/control/engine/claude-code/claude-files.ts";

const ID = "9c81aa1f-5671-497a-bd7f-9f7731f7cffe";
const OTHER = "11111111-2222-4333-8444-555555555555";

const line = (r: object) => `${JSON.stringify(r)}\n`;
const prompt = line({
  type: "user",
  uuid: "u1",
  parentUuid: null,
  sessionId: ID,
  message: { role: "user", content: "stream for a while" },
});

function sessionFile(t: TestContext, content: string | null): string {
  const dir = mkdtempSync(join(tmpdir(), "cc-append-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, `${ID}.jsonl`);
  if (content !== null) writeFileSync(file, content);
  return file;
}

describe("appendedSince (Claude Code's load check)", () => {
  it("accepts Claude Code's own bookkeeping appended at its start and names it", (t) => {
    const file = sessionFile(t, prompt);
    const basis = readClaudeFile(file);
    appendFileSync(file, line({ type: "atis-latch", atis: "", sessionId: ID }));
    appendFileSync(file, line({ type: "mode", mode: "default" }));
    assert.deepEqual(appendedSince(file, basis), { ok: true, types: ["atis-latch", "mode"] });
    assert.equal(readClaudeFile(file).leafId, "u1", "the leaf is the one resumed");
  });

  it("accepts nothing appended, and a partial line still being written", (t) => {
    const file = sessionFile(t, prompt);
    const basis = readClaudeFile(file);
    assert.deepEqual(appendedSince(file, basis), { ok: true, types: [] });
    appendFileSync(file, '{"type":"atis-la');
    assert.deepEqual(appendedSince(file, basis), { ok: true, types: [] });
  });

  it("accepts a new session's file holding only bookkeeping, and no file at all", (t) => {
    const file = sessionFile(t, null);
    const basis = readClaudeFile(file);
    assert.deepEqual(appendedSince(file, basis), { ok: true, types: [] });
    writeFileSync(file, line({ type: "atis-latch", atis: "", sessionId: ID }));
    assert.deepEqual(appendedSince(file, basis), { ok: true, types: ["atis-latch"] });
  });

  it("refuses a conversation record appended while Claude Code started", (t) => {
    const file = sessionFile(t, prompt);
    const basis = readClaudeFile(file);
    appendFileSync(
      file,
      line({ type: "user", uuid: "u2", parentUuid: "u1", sessionId: ID, message: {} }),
    );
    assert.deepEqual(appendedSince(file, basis), {
      ok: false,
      why: "a conversation record was added",
    });
  });

  it("refuses a record of another session, a line that is not a record, and a typeless one", (t) => {
    for (const [added, why] of [
      [line({ type: "atis-latch", sessionId: OTHER }), "a record of another session was added"],
      ["not json\n", "a line that is not a record was added"],
      ["[1,2]\n", "a line that is not a record was added"],
      [line({ atis: "" }), "a conversation record was added"],
    ] as const) {
      const file = sessionFile(t, prompt);
      const basis = readClaudeFile(file);
      appendFileSync(file, added);
      assert.deepEqual(appendedSince(file, basis), { ok: false, why }, added);
    }
  });

  it("refuses when the lines read before the launch changed, shrank or went", (t) => {
    const file = sessionFile(t, prompt);
    const basis = readClaudeFile(file);
    writeFileSync(file, prompt.replace("stream", "STREAM"));
    assert.deepEqual(appendedSince(file, basis), { ok: false, why: "its earlier lines changed" });
    writeFileSync(file, "{}\n");
    assert.deepEqual(appendedSince(file, basis), { ok: false, why: "the file is shorter" });
    rmSync(file);
    assert.deepEqual(appendedSince(file, basis), { ok: false, why: "the file is gone" });
  });
});
