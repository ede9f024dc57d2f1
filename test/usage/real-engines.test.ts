// The peers' agreement on stores the real pinned engines wrote, offline: Claude Code 2.1.328
// against the loopback Anthropic stand-in (a reply of several blocks, a tool turn, a session
// resumed with --fork-session, which copies its history), and Pi 0.85.1 against the loopback
// model with prices in its models.json (two turns, then a clone, which copies the branch with
// the same ids, and one more turn). ccusage and @ccusage/pi read the same stores.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { EngineLink } from "../../src/control/engine/engine.ts";
import { RecordLog } from "../control/link-watch.ts";
import { SLOW_TEST_MS } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { tempDir } from "../helpers/reader.ts";
import { readJsonl, realClaude } from "../helpers/real-claude.ts";
import { MODEL, PI_CLI } from "../helpers/real-pi.ts";
import { ccusageDaily, ccusagePiDaily, oursDaily, oursReport, toCents } from "./peers.ts";

const T = { timeout: SLOW_TEST_MS };

describe("usage on stores the real engines wrote", () => {
  it("agrees with ccusage on the real Claude Code's store, fork included", T, async (t) => {
    const usage = (i: number, o: number, w: number, r: number) => ({
      input_tokens: i,
      output_tokens: o,
      cache_creation_input_tokens: w,
      cache_read_input_tokens: r,
    });
    const rc = await realClaude(t, {
      replies: [
        {
          kind: "message",
          content: [
            { type: "thinking", thinking: "look first" },
            { type: "text", text: "I will list it." },
            { type: "tool_use", id: "toolu_u1", name: "Bash", input: { command: "echo hi" } },
          ],
          usage: usage(1000, 555, 2000, 0),
        },
        {
          kind: "message",
          content: [{ type: "text", text: "It said hi." }],
          usage: usage(12, 34, 100, 2000),
        },
        {
          kind: "message",
          content: [{ type: "text", text: "Forked on." }],
          usage: usage(7, 8000, 0, 2100),
        },
      ],
    });
    const id = "0ccccccc-0000-4000-8000-000000000001";
    const first = rc.start({ sessionId: id });
    first.send("run echo hi");
    await first.waitForResult(1, 120_000);
    await first.close();
    const fork = rc.start({ resume: id, fork: true });
    fork.send("and now?");
    await fork.waitForResult(1, 120_000);
    await fork.close();
    const folder = dirname(rc.sessionFile(id));
    const files = readdirSync(folder).filter((n) => n.endsWith(".jsonl"));
    assert.equal(files.length, 2, "the fork is a second file");
    const forked = files.find((n) => n !== `${id}.jsonl`)!;
    const copied = readJsonl(join(folder, forked)).filter(
      (l) => (l.message as { id?: string } | undefined)?.id === "msg_fake_0001",
    );
    assert.ok(copied.length > 0, "the fork copies the first reply's lines");

    const specs = [{ kind: "claude-code" as const, projectsDir: rc.scratch.projectsDir }];
    for (const zone of ["UTC", "Pacific/Kiritimati"]) {
      assert.deepEqual(
        toCents(oursDaily(specs, zone)),
        toCents(ccusageDaily(rc.scratch.configDir, zone)),
        zone,
      );
    }
    // Each of the three requests once: the fork's copy and the per-block lines are not counted.
    const totals = oursReport(specs, "UTC").totals;
    assert.deepEqual(
      [totals.requests, totals.input, totals.output, totals.cacheWrite, totals.cacheRead],
      [3, 1019, 8589, 2100, 4100],
    );
  });

  it("agrees with @ccusage/pi on the real Pi's store, clone included", T, async (t) => {
    const base = tempDir(t, "usage-real-pi-");
    const home = join(base, "home");
    const agentDir = join(base, "agent");
    const cwd = join(base, "code", "app");
    mkdirSync(home);
    mkdirSync(cwd, { recursive: true });
    const model = await startFakeModel();
    t.after(() => model.close());
    mkdirSync(agentDir, { recursive: true });
    // Prices per million tokens, so Pi works out a cost for each reply (12 in, 5 out).
    writeFileSync(
      join(agentDir, "models.json"),
      JSON.stringify({
        providers: {
          loopback: {
            baseUrl: model.baseUrl,
            api: "openai-completions",
            apiKey: "dummy",
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [
              {
                id: "fake-1",
                name: "Fake 1",
                reasoning: false,
                input: ["text"],
                cost: { input: 3000, output: 15000, cacheRead: 300, cacheWrite: 3750 },
                contextWindow: 128000,
                maxTokens: 4096,
              },
            ],
          },
        },
      }),
    );
    writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 50 } }));
    const link = EngineLink.start({
      command: process.execPath,
      args: [
        PI_CLI,
        "--mode",
        "rpc",
        "--no-extensions",
        "--no-prompt-templates",
        "--no-themes",
        "--offline",
        "--model",
        MODEL,
      ],
      env: {
        PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
        HOME: home,
        PI_CODING_AGENT_DIR: agentDir,
      },
      cwd,
    });
    t.after(() => link.close({ eofGraceMs: 2000, termGraceMs: 2000 }));
    const log = new RecordLog(link);
    const turn = async (text: string) => {
      const from = log.records.length;
      await link.request({ type: "prompt", message: text });
      await log.waitForEvent("agent_settled", { from, timeoutMs: 60_000 });
    };
    await turn("one");
    await turn("two");
    // Not a command the controller sends (its union leaves it out); Pi takes it over RPC.
    const cloned = await link.request({ type: "clone" } as unknown as Parameters<
      EngineLink["request"]
    >[0]);
    assert.equal(cloned.success, true, JSON.stringify(cloned));
    await turn("three");
    await link.close({ eofGraceMs: 2000, termGraceMs: 2000 });

    const sessionsDir = join(agentDir, "sessions");
    const [dir] = readdirSync(sessionsDir);
    const files = readdirSync(join(sessionsDir, dir!)).sort();
    assert.equal(files.length, 2, "the clone is a second file");
    const replies = (f: string) =>
      readFileSync(join(sessionsDir, dir!, f), "utf8")
        .split("\n")
        .filter((l) => l.includes('"role":"assistant"')).length;
    assert.deepEqual(files.map(replies), [2, 3], "the clone copies both replies");

    const specs = [{ kind: "pi-agent" as const, sessionsDir }];
    for (const zone of ["UTC", "Asia/Kathmandu"]) {
      assert.deepEqual(
        toCents(oursDaily(specs, zone)),
        toCents(ccusagePiDaily(sessionsDir, zone)),
        zone,
      );
    }
    const totals = oursReport(specs, "UTC").totals;
    assert.deepEqual([totals.requests, totals.input, totals.output], [3, 36, 15]);
    // 12 × $3000/M + 5 × $15000/M per reply, as Pi worked it out.
    assert.ok(Math.abs(totals.cost - 3 * (0.036 + 0.075)) < 1e-9, String(totals.cost));
  });
});
