// The usage report agrees with the peers on the same stores, per day and per model, to the
// token and the cent: ccusage on Claude Code's store, @ccusage/pi on Pi's (both run offline,
// pinned as dev dependencies). Where the counts differ by design, the difference is pinned
// here and explained in docs/usage.md.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ccusageDaily, ccusagePiDaily, oursDaily, oursReport, toCents } from "./peers.ts";
import {
  claudeReply,
  claudeUser,
  piReply,
  piUser,
  writeClaudeSession,
  writeClaudeStore,
  writePiSession,
  writePiStore,
} from "./stores.ts";

const PROJECTS = { a: "/work/app", b: "/work/lib" };

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), "usage-peers-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("usage against ccusage", () => {
  for (const zone of ["UTC", "Asia/Tokyo", "America/Los_Angeles"]) {
    it(`agrees per day and model to the token and the cent on Claude Code's store (${zone})`, (t) => {
      const dir = scratch(t);
      const configDir = join(dir, "claude");
      writeClaudeStore(join(configDir, "projects"), PROJECTS);
      const ours = oursDaily(
        [{ kind: "claude-code", projectsDir: join(configDir, "projects") }],
        zone,
      );
      const peer = ccusageDaily(configDir, zone);
      assert.deepEqual(toCents(ours), toCents(peer));
      // Not vacuous: three days, the fork's copy and the repeated block lines counted once.
      assert.equal(ours.size, zone === "UTC" ? 3 : ours.size);
      const sonnet = [...ours.values()].flatMap((m) =>
        [...m].filter(([k]) => k === "claude-sonnet-4-5-20250929"),
      );
      assert.equal(
        sonnet.reduce((n, [, f]) => n + f.output, 0),
        555,
      );
    });
  }

  it("agrees with @ccusage/pi per day and model on Pi's store with branches and a fork", (t) => {
    const dir = scratch(t);
    const sessionsDir = join(dir, "pi", "sessions");
    writePiStore(sessionsDir, PROJECTS, { summary: false });
    for (const zone of ["UTC", "Asia/Tokyo"]) {
      const ours = oursDaily([{ kind: "pi-agent", sessionsDir }], zone);
      const peer = ccusagePiDaily(sessionsDir, zone);
      assert.deepEqual(toCents(ours), toCents(peer), zone);
    }
    // The fork's four copied lines are not counted again: one sonnet reply of 340 and one of
    // 1500 output tokens, on the 28th (UTC).
    const utc = oursDaily([{ kind: "pi-agent", sessionsDir }], "UTC");
    assert.equal(utc.get("2026-11-28")?.get("claude-sonnet-4-5")?.output, 1840);
  });

  it("counts a Pi summary's request, which @ccusage/pi leaves out (by design)", (t) => {
    const dir = scratch(t);
    const sessionsDir = join(dir, "pi", "sessions");
    writePiStore(sessionsDir, PROJECTS);
    const ours = oursDaily([{ kind: "pi-agent", sessionsDir }], "UTC");
    const peer = ccusagePiDaily(sessionsDir, "UTC");
    // The compaction on the 29th ran on the conversation's model (haiku): 500 in, 100 out, $0.001.
    const o = ours.get("2026-11-29")?.get("claude-haiku-4-5");
    const p = peer.get("2026-11-29")?.get("claude-haiku-4-5");
    assert.ok(o && p);
    assert.equal(o.input - p.input, 500);
    assert.equal(o.output - p.output, 100);
    assert.ok(Math.abs(o.cost - p.cost - 0.001) < 1e-9);
    // Every other day and model agrees.
    ours.get("2026-11-29")?.delete("claude-haiku-4-5");
    peer.get("2026-11-29")?.delete("claude-haiku-4-5");
    assert.deepEqual(toCents(ours), toCents(peer));
  });

  it("counts two Pi replies of one millisecond and the same counts twice, which @ccusage/pi merges (by design)", (t) => {
    const dir = scratch(t);
    const sessionsDir = join(dir, "pi", "sessions");
    const at = "2026-11-28T10:00:00.123Z";
    writePiSession(sessionsDir, PROJECTS.a, "01a00000-0000-7000-8000-0000000000d1", at, [
      piUser("u1", null, at, "go"),
      piReply("a1", "u1", at, "claude-sonnet-4-5", { input: 10, output: 5 }, 0.01),
      piReply("a2", "a1", at, "claude-sonnet-4-5", { input: 10, output: 5 }, 0.01),
    ]);
    const ours = oursDaily([{ kind: "pi-agent", sessionsDir }], "UTC");
    const peer = ccusagePiDaily(sessionsDir, "UTC");
    assert.equal(ours.get("2026-11-28")?.get("claude-sonnet-4-5")?.input, 20);
    assert.equal(peer.get("2026-11-28")?.get("claude-sonnet-4-5")?.input, 10);
  });

  it("counts a reply's lines once when they carry no request id, which ccusage counts each time (by design)", (t) => {
    const dir = scratch(t);
    const configDir = join(dir, "claude");
    const s = "0bbbbbbb-0000-4000-8000-000000000001";
    writeClaudeSession(join(configDir, "projects"), PROJECTS.a, s, [
      claudeUser(s, PROJECTS.a, "u1", "2026-11-28T09:00:00.000Z", "go"),
      ...claudeReply({
        session: s,
        cwd: PROJECTS.a,
        id: "msg_old",
        at: "2026-11-28T09:00:01.000Z",
        model: "claude-sonnet-4-5",
        blocks: 3,
        requestId: null,
        usage: { input_tokens: 100, output_tokens: 10 },
      }),
    ]);
    const ours = oursDaily(
      [{ kind: "claude-code", projectsDir: join(configDir, "projects") }],
      "UTC",
    );
    const peer = ccusageDaily(configDir, "UTC");
    assert.equal(ours.get("2026-11-28")?.get("claude-sonnet-4-5")?.input, 100);
    assert.equal(peer.get("2026-11-28")?.get("claude-sonnet-4-5")?.input, 300);
  });

  it("takes a streamed reply's final output count, where ccusage takes its first line's (by design)", (t) => {
    // 2.1.39 writes each line of a reply as it streams: the first line's output_tokens is what had
    // been generated then (spotter's recorded transcripts: 9, then 120 on the last line).
    const dir = scratch(t);
    const configDir = join(dir, "claude");
    const s = "0ccccccc-0000-4000-8000-000000000001";
    const lines = claudeReply({
      session: s,
      cwd: PROJECTS.a,
      id: "msg_streamed",
      at: "2026-11-28T09:00:01.000Z",
      model: "claude-sonnet-4-5",
      blocks: 2,
      usage: { input_tokens: 100, output_tokens: 9 },
    });
    const lastLine = lines[1] as { message: { usage: unknown } };
    lastLine.message = { ...lastLine.message, usage: { input_tokens: 100, output_tokens: 120 } };
    writeClaudeSession(join(configDir, "projects"), PROJECTS.a, s, [
      claudeUser(s, PROJECTS.a, "u1", "2026-11-28T09:00:00.000Z", "go"),
      ...lines,
    ]);
    const ours = oursDaily(
      [{ kind: "claude-code", projectsDir: join(configDir, "projects") }],
      "UTC",
    );
    const peer = ccusageDaily(configDir, "UTC");
    assert.equal(ours.get("2026-11-28")?.get("claude-sonnet-4-5")?.output, 120);
    assert.equal(peer.get("2026-11-28")?.get("claude-sonnet-4-5")?.output, 9);
    assert.equal(ours.get("2026-11-28")?.get("claude-sonnet-4-5")?.input, 100);
  });

  it("counts a session's subagents, whose transcripts are no rows, under the session, as ccusage counts them", (t) => {
    const dir = scratch(t);
    const configDir = join(dir, "claude");
    const projectsDir = join(configDir, "projects");
    const s = "0ddddddd-0000-4000-8000-000000000001";
    const file = writeClaudeSession(projectsDir, PROJECTS.a, s, [
      claudeUser(s, PROJECTS.a, "u1", "2026-11-28T09:00:00.000Z", "go"),
      ...claudeReply({
        session: s,
        cwd: PROJECTS.a,
        id: "msg_main",
        at: "2026-11-28T09:00:01.000Z",
        model: "claude-sonnet-4-5",
        usage: { input_tokens: 100, output_tokens: 10 },
      }),
    ]);
    // 2.1's layout: <session>/subagents/agent-<id>.jsonl, the agent's own requests.
    const agents = join(file.slice(0, -".jsonl".length), "subagents");
    mkdirSync(agents, { recursive: true });
    const agentReply = claudeReply({
      session: s,
      cwd: PROJECTS.a,
      id: "msg_agent",
      at: "2026-11-28T09:00:02.000Z",
      model: "claude-sonnet-4-5",
      usage: { input_tokens: 7, output_tokens: 3, cache_read_input_tokens: 50 },
    }).map((l) => ({ ...l, isSidechain: true, agentId: "a1" }));
    writeFileSync(
      join(agents, "agent-a1.jsonl"),
      agentReply.map((l) => `${JSON.stringify(l)}\n`).join(""),
    );
    const specs = [{ kind: "claude-code" as const, projectsDir }];
    const ours = oursDaily(specs, "UTC");
    assert.deepEqual(toCents(ours), toCents(ccusageDaily(configDir, "UTC")));
    assert.equal(ours.get("2026-11-28")?.get("claude-sonnet-4-5")?.input, 107);
    // One conversation: the session's, with its agent's spend.
    const byConversation = oursReport(specs, "UTC", "conversation").rows;
    assert.equal(byConversation.length, 1);
    assert.equal(byConversation[0]?.input, 107);
  });

  it("counts a 2.0 subagent's transcript beside the sessions under its own conversation", (t) => {
    const dir = scratch(t);
    const configDir = join(dir, "claude");
    const projectsDir = join(configDir, "projects");
    const s = "0eeeeeee-0000-4000-8000-000000000001";
    const file = writeClaudeSession(projectsDir, PROJECTS.a, s, [
      claudeUser(s, PROJECTS.a, "u1", "2026-11-28T09:00:00.000Z", "go"),
      ...claudeReply({
        session: s,
        cwd: PROJECTS.a,
        id: "msg_main2",
        at: "2026-11-28T09:00:01.000Z",
        model: "claude-sonnet-4-5",
        usage: { input_tokens: 100, output_tokens: 10 },
      }),
    ]);
    const agentReply = claudeReply({
      session: s,
      cwd: PROJECTS.a,
      id: "msg_agent2",
      at: "2026-11-28T09:00:02.000Z",
      model: "claude-sonnet-4-5",
      usage: { input_tokens: 7, output_tokens: 3 },
    }).map((l) => ({ ...l, isSidechain: true, agentId: "b2" }));
    writeFileSync(
      join(file, "..", "agent-b2.jsonl"),
      agentReply.map((l) => `${JSON.stringify(l)}\n`).join(""),
    );
    const specs = [{ kind: "claude-code" as const, projectsDir }];
    assert.deepEqual(toCents(oursDaily(specs, "UTC")), toCents(ccusageDaily(configDir, "UTC")));
    const rows = oursReport(specs, "UTC", "conversation").rows;
    assert.deepEqual(
      rows.map((r) => r.input).sort((a, b) => a - b),
      [7, 100],
    );
  });
});
