// How usage counts: each request once (across branches, forks and the repeated lines of one
// Claude reply), in the conversation that had it first; only files the reader would open; the
// index caught up with appends and rewrites; prices as the pinned table says; days in a zone.
import assert from "node:assert/strict";
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import type { BoardSpec } from "../../src/reader/sources.ts";
import { openUsage, type Usage } from "../../src/usage/index.ts";
import { claudeSpend } from "../../src/usage/lines.ts";
import { costAt, priceOf } from "../../src/usage/prices.ts";
import { dayNamer } from "../../src/usage/report.ts";
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

function setup(t: { after(fn: () => void): void }): {
  dir: string;
  open(specs: BoardSpec[]): Usage;
} {
  const dir = mkdtempSync(join(tmpdir(), "usage-count-"));
  const opened: Usage[] = [];
  t.after(() => {
    for (const u of opened) u.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    open(specs) {
      const roots = () => rootsFromSpecs(specs, []);
      const reader = createReader({ roots });
      const o = openUsage({
        roots,
        catalogue: () => reader.catalogue(),
        cacheDir: join(dir, "cache"),
      });
      if (!o.ok) throw new Error(o.reason);
      opened.push(o.usage);
      return o.usage;
    },
  };
}

describe("usage/index", () => {
  it("counts a fork's copied history in its parent conversation, once", (t) => {
    const s = setup(t);
    const sessionsDir = join(s.dir, "sessions");
    writePiStore(sessionsDir, PROJECTS, { summary: false });
    const usage = s.open([{ kind: "pi-agent", sessionsDir }]);
    const rows = usage.report({ by: "conversation", timeZone: "UTC" }).rows;
    assert.equal(rows.length, 3);
    // The parent holds its three replies; the fork only the one it added.
    assert.deepEqual(rows.map((r) => r.requests).sort(), [1, 1, 3]);
    const fork = rows.find((r) => r.models.some((m) => m.name === "claude-opus-4-7"));
    assert.equal(fork?.requests, 1);
  });

  it("catches up with an append, reads a rewritten file again and leaves a torn last line for later", (t) => {
    const s = setup(t);
    const sessionsDir = join(s.dir, "sessions");
    const file = writePiSession(
      sessionsDir,
      PROJECTS.a,
      "01a00000-0000-7000-8000-0000000000f1",
      "2026-11-28T10:00:00.000Z",
      [
        piUser("u1", null, "2026-11-28T10:00:00.000Z", "hi"),
        piReply("a1", "u1", "2026-11-28T10:00:01.000Z", "m", { input: 10, output: 1 }, 0.5),
      ],
    );
    const usage = s.open([{ kind: "pi-agent", sessionsDir }]);
    const first = usage.counted();
    assert.equal(first.stats.indexed, 1);
    assert.equal(first.counted.length, 1);
    const again = usage.counted();
    assert.equal(again.stats.unchanged, 1);
    const line = JSON.stringify(
      piReply("a2", "a1", "2026-11-28T10:00:02.000Z", "m", { input: 20, output: 2 }, 0.25),
    );
    // Half a line: Pi is writing it. Not counted yet.
    appendFileSync(file, line.slice(0, 40));
    assert.equal(usage.counted().counted.length, 1);
    appendFileSync(file, `${line.slice(40)}\n`);
    const appended = usage.counted();
    assert.equal(appended.stats.appended, 1);
    assert.equal(appended.counted.length, 2);
    assert.equal(usage.report({ by: "day", timeZone: "UTC" }).totals.cost, 0.75);
    // Rewritten shorter in place (another history): read again from the start.
    writePiSession(
      sessionsDir,
      PROJECTS.a,
      "01a00000-0000-7000-8000-0000000000f1",
      "2026-11-28T10:00:00.000Z",
      [piReply("b1", null, "2026-11-28T11:00:01.000Z", "m", { input: 1, output: 1 }, 0.125)],
    );
    const rewritten = usage.counted();
    assert.equal(rewritten.stats.indexed, 1);
    assert.deepEqual(
      rewritten.counted.map((c) => c.spend.cost),
      [0.125],
    );
  });

  it("counts nothing of a file the reader refuses (a link in the store)", (t) => {
    const s = setup(t);
    const sessionsDir = join(s.dir, "sessions");
    const [real] = writePiStore(join(s.dir, "elsewhere"), PROJECTS, { summary: false });
    mkdirSync(join(sessionsDir, "--work-app--"), { recursive: true });
    symlinkSync(
      real!,
      join(
        sessionsDir,
        "--work-app--",
        "2026-11-28T10-00-00-000Z_01a00000-0000-7000-8000-00000000a001.jsonl",
      ),
    );
    const usage = s.open([{ kind: "pi-agent", sessionsDir }]);
    assert.equal(usage.report({ by: "day", timeZone: "UTC" }).totals.requests, 0);
  });

  it("counts a session's subagents, and never through a subagents folder or file planted as a link", (t) => {
    const s = setup(t);
    const projectsDir = join(s.dir, "claude", "projects");
    const reply = (session: string, id: string) =>
      claudeReply({
        session,
        cwd: PROJECTS.a,
        id,
        at: "2026-11-28T09:00:01.000Z",
        model: "claude-sonnet-4-5",
        usage: { input_tokens: 10, output_tokens: 1 },
      });
    const agentFile = (dir: string, name: string, session: string, id: string) => {
      mkdirSync(dir, { recursive: true });
      const lines = reply(session, id).map((l) => ({ ...l, isSidechain: true }));
      writeFileSync(join(dir, name), lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    };
    const session = (n: number) => {
      const id = `0fffffff-0000-4000-8000-00000000000${n}`;
      const file = writeClaudeSession(projectsDir, PROJECTS.a, id, [
        claudeUser(id, PROJECTS.a, `u${n}`, "2026-11-28T09:00:00.000Z", "go"),
        ...reply(id, `msg_main${n}`),
      ]);
      return { id, agents: join(file.slice(0, -".jsonl".length), "subagents") };
    };
    // One session with a real subagent; one whose subagents folder is a link to a folder
    // elsewhere; one whose agent file is a link to a file elsewhere.
    const real = session(1);
    agentFile(real.agents, "agent-a1.jsonl", real.id, "msg_agent1");
    const elsewhere = join(s.dir, "elsewhere");
    const folderLink = session(2);
    agentFile(elsewhere, "agent-a2.jsonl", folderLink.id, "msg_agent2");
    mkdirSync(join(folderLink.agents, ".."), { recursive: true });
    symlinkSync(elsewhere, folderLink.agents);
    const fileLink = session(3);
    agentFile(join(s.dir, "other"), "agent-a3.jsonl", fileLink.id, "msg_agent3");
    mkdirSync(fileLink.agents, { recursive: true });
    symlinkSync(join(s.dir, "other", "agent-a3.jsonl"), join(fileLink.agents, "agent-a3.jsonl"));

    const usage = s.open([{ kind: "claude-code", projectsDir }]);
    const r = usage.report({ by: "day", timeZone: "UTC" });
    // Three sessions' replies and the real subagent's: the linked ones are never read.
    assert.equal(r.totals.requests, 4);
    assert.equal(r.totals.input, 40);
  });

  it("counts a Claude reply of three lines once and prices it by the table", (t) => {
    const s = setup(t);
    const projectsDir = join(s.dir, "claude", "projects");
    writeClaudeStore(projectsDir, PROJECTS);
    const usage = s.open([{ kind: "claude-code", projectsDir }]);
    const r = usage.report({ by: "model", timeZone: "UTC" });
    const sonnet = r.rows.find((x) => x.key === "claude-sonnet-4-5-20250929");
    assert.equal(sonnet?.requests, 1);
    assert.equal(sonnet?.output, 555);
    // 1000 × $3/M + 555 × $15/M + 200 × $3.75/M + 3000 × $0.30/M.
    assert.ok(Math.abs((sonnet?.cost ?? 0) - 0.012975) < 1e-12);
    assert.deepEqual(r.unpriced, ["claude-fake-9"]);
    // The old costUSD is taken as recorded.
    assert.equal(r.rows.find((x) => x.key === "claude-sonnet-4-20250514")?.cost, 0.4242);
  });

  it("keeps the days of the named zone, --since and --until included", (t) => {
    const s = setup(t);
    const projectsDir = join(s.dir, "claude", "projects");
    writeClaudeStore(projectsDir, PROJECTS);
    const usage = s.open([{ kind: "claude-code", projectsDir }]);
    const utc = usage.report({ by: "day", timeZone: "UTC" }).rows.map((r) => r.key);
    assert.deepEqual(utc, ["2026-11-28", "2026-11-29", "2026-11-30"]);
    const tokyo = usage.report({
      by: "day",
      timeZone: "Asia/Tokyo",
      since: "2026-11-29",
      until: "2026-11-29",
    });
    // In Tokyo the reply at 23:59:59.990 UTC on the 28th is on the 29th, with the one 20 ms later.
    assert.deepEqual(
      tokyo.rows.map((r) => [r.key, r.requests]),
      [["2026-11-29", 2]],
    );
  });
});

describe("usage/prices", () => {
  it("prices each kind of token above 200k at the tier's rate, and a fast reply at its factor", () => {
    const sonnet = priceOf("claude-sonnet-4-5");
    assert.ok(sonnet);
    const c = costAt(sonnet, { input: 300_000, output: 0, cacheRead: 0, cacheWrite: 0 }, false);
    assert.ok(Math.abs(c - (200_000 * 3e-6 + 100_000 * 6e-6)) < 1e-12);
    const opus = priceOf("claude-opus-4-6");
    assert.ok(opus);
    assert.equal(
      costAt(opus, { input: 1000, output: 0, cacheRead: 0, cacheWrite: 0 }, true),
      1000 * 5e-6 * 6,
    );
  });

  it("matches a model the table names differently by containment, in the table's order", () => {
    assert.equal(
      priceOf("claude-3-5-sonnet-20241022")?.model,
      "anthropic.claude-3-5-sonnet-20241022-v2:0",
    );
    assert.equal(priceOf("claude-fake-9"), null);
  });

  it("keeps the largest counts of a Claude reply's lines and no key for a line with no id", () => {
    const line = (o: number) => ({
      timestamp: "2026-11-28T00:00:00.000Z",
      requestId: "r",
      message: { id: "m", model: "claude-haiku-4-5", usage: { input_tokens: 1, output_tokens: o } },
    });
    assert.equal(claudeSpend(line(3))?.key, claudeSpend(line(9))?.key);
    const noId = {
      timestamp: "2026-11-28T00:00:00.000Z",
      message: { usage: { input_tokens: 1, output_tokens: 1 } },
    };
    assert.equal(claudeSpend(noId)?.key, null);
    assert.equal(
      claudeSpend({ ...noId, message: { ...noId.message, model: "<synthetic>" } }),
      null,
    );
  });
});

describe("usage/report", () => {
  it("names the day of an instant in zones a quarter hour off", () => {
    const kathmandu = dayNamer("Asia/Kathmandu");
    // +05:45: 18:14 UTC is 23:59 there, 18:15 is midnight.
    assert.equal(kathmandu(Date.parse("2026-11-28T18:14:59.999Z")), "2026-11-28");
    assert.equal(kathmandu(Date.parse("2026-11-28T18:15:00.000Z")), "2026-11-29");
  });
});
