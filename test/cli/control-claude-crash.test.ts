// `conversation control --harness claude-code` killed outright mid-turn and recovered (issue 26),
// on the REAL pinned Claude Code 2.1.328 against the loopback Anthropic stand-in, as a person runs
// it: `--new` with `--agent-from` a folder holding Claude Code's settings and its OAuth
// `.credentials.json`. The credentials reach the sealed engine (the stand-in sees their token;
// the copy in the seat's config folder is 0600) and never the output. SIGKILL of the controller
// while a reply streams: no Claude Code process is left, the credentials copies are gone; the
// next `control --session` proves the dead engine's stop from its cgroup (the seed's recovery,
// recorded as a proof beside the claim), takes the claim, and the conversation goes on under it;
// SIGTERM then stops it with a proof, leaving no process and no credentials. Needs a writable
// cgroup v2 (skips and says why otherwise, unless CI is set).
import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import { CgroupLauncher } from "../../src/control/cohort/cohort.ts";
import { seatCredentials } from "../../src/control/engine/claude-code/claude-credentials.ts";
import type { Receipt, StreamEvent } from "../../src/control/protocol.ts";
import { until } from "../helpers/deadline.ts";
import { startFakeAnthropic } from "../helpers/fake-anthropic.ts";
import { type Child, startCli } from "./run-cli.ts";

const probe = await CgroupLauncher.probe({ termGraceMs: 1000, killTimeoutMs: 3000 });
const skip = probe.ok || process.env.CI ? false : `no writable cgroup v2 here: ${probe.reason}`;
if (skip) console.log(`# control-claude-crash skips: ${skip}`);

const START_MS = 90_000;
const WAIT_MS = 60_000;
const TOKEN = "sk-ant-oat01-test-token-never-printed";
const CREDENTIALS = JSON.stringify({
  claudeAiOauth: {
    accessToken: TOKEN,
    refreshToken: "sk-ant-ort01-test-refresh",
    expiresAt: Date.now() + 24 * 3600_000,
    scopes: ["user:inference", "user:profile"],
    subscriptionType: "max",
  },
});

/** Live processes whose command line names `needle` (the session id: Claude's --session-id/--resume). */
function processesNaming(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const state = readFileSync(`/proc/${name}/stat`, "utf8").split(") ")[1]?.[0];
      if (cmdline.includes(needle) && state !== "Z") out.push(Number(name));
    } catch {
      // Ended while we looked: not running.
    }
  }
  return out;
}

async function started(cli: Child): Promise<{ socket: string; conversation: string }> {
  await cli.waitFor("the Attach line", (c) => /\nAttach: .*\n/.test(c.stdout()), START_MS);
  const out = cli.stdout();
  const socket = /^Socket: (.+)$/m.exec(out)?.[1];
  const conversation = /^Controlling (cc-[0-9a-f]{40})$/m.exec(out)?.[1];
  assert.ok(socket && conversation, out);
  return { socket, conversation };
}

async function connect(t: TestContext, socketPath: string) {
  const client = new ConversationClient({
    socketPath,
    grant: "operator",
    requestTimeoutMs: 20_000,
  });
  t.after(() => client.close());
  const events: StreamEvent[] = [];
  client.onEvent((e) => events.push(e));
  await client.connect();
  return { client, events };
}

function settled(events: StreamEvent[], id: string): string | null {
  for (const e of events) {
    const r = e.event.receipt as Receipt | undefined;
    if (e.event.kind === "receipt" && r?.id === id && r.state === "settled") return r.reason ?? "";
  }
  return null;
}

/** Every file under `dir` holding `needle` (the token must be nowhere once the engine is gone). */
function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(p);
      else if (st?.isFile() && readFileSync(p, "utf8").includes(needle)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

describe("conversation control --harness claude-code, killed and recovered", { skip }, () => {
  it("SIGKILL mid-turn: no claude left, no credentials left; the next controller proves the stop and goes on", {
    timeout: 300_000,
  }, async (t) => {
    const fake = await startFakeAnthropic({
      replies: [
        { kind: "hold", content: [{ type: "text", text: "streaming slowly" }], tickMs: 50 },
      ],
    });
    t.after(() => fake.close());
    const root = mkdtempSync("/tmp/ccc-");
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const project = join(root, "proj");
    const state = join(root, "st");
    const agentSrc = join(root, "agent-src");
    mkdirSync(project);
    mkdirSync(agentSrc);
    // No API key: the OAuth credentials are the only way the engine can reach the model.
    writeFileSync(
      join(agentSrc, "settings.json"),
      JSON.stringify({
        env: {
          ANTHROPIC_BASE_URL: fake.baseUrl,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
          CLAUDE_CODE_MAX_RETRIES: "0",
        },
      }),
    );
    writeFileSync(join(agentSrc, ".credentials.json"), CREDENTIALS, { mode: 0o600 });
    const base = [
      "--harness",
      "claude-code",
      "--project",
      project,
      "--seat",
      "main",
      "--state-dir",
      state,
    ];
    const args = [...base, "--agent-from", agentSrc, "--model", "claude-sonnet-4-5"];
    const first = startCli(t, ["control", ...args, "--new"]);
    const one = await started(first);
    const sessionFile = /^New conversation: Claude Code writes (.+) at its first turn$/m.exec(
      first.stdout(),
    )?.[1];
    assert.ok(sessionFile, first.stdout());
    const sessionId = /([0-9a-f-]{36})\.jsonl$/.exec(sessionFile)?.[1] ?? "";
    const placed = seatCredentials(project, "main");
    assert.equal(
      readFileSync(placed, "utf8"),
      CREDENTIALS,
      "the credentials reached the engine's config folder",
    );
    assert.equal(statSync(placed).mode & 0o777, 0o600);

    const a = await connect(t, one.socket);
    assert.equal((await a.client.takeover()).outcome, "admitted");
    const r = await a.client.prompt("stream for a while");
    assert.ok(r.outcome === "admitted", JSON.stringify(r));
    await until(
      () => a.events.some((e) => e.event.kind === "text-delta"),
      "the reply streaming",
      WAIT_MS,
    );
    assert.equal(
      fake.messages()[0]?.headers.authorization,
      `Bearer ${TOKEN}`,
      "the engine used them",
    );
    const engines = processesNaming(sessionId);
    assert.ok(engines.length > 0, "Claude Code runs");
    // Claude Code writes its session file on its own schedule, not before the reply streams: on
    // a busy machine the first deltas came while the prompt's line was still in its buffer, and
    // a SIGKILL then left no file to recover. The case is a kill after the turn was written.
    await until(
      () =>
        existsSync(sessionFile) && readFileSync(sessionFile, "utf8").includes("stream for a while"),
      "Claude Code writing the first turn to its session file",
      WAIT_MS,
    );

    first.proc.kill("SIGKILL");
    await first.exited;
    await until(
      () => processesNaming(sessionId).length === 0,
      "no Claude Code process left",
      WAIT_MS,
    );
    await until(() => !existsSync(placed), "the credentials gone with the controller", WAIT_MS);
    assert.deepEqual(
      filesHolding(state, TOKEN),
      [],
      "no copy of the credentials under the state dir",
    );
    assert.ok(existsSync(sessionFile), "the first turn wrote the session");

    // The next controller on the session: it proves the dead engine's stop and takes over.
    fake.enqueue({ kind: "message", content: [{ type: "text", text: "after the crash" }] });
    const second = startCli(t, ["control", ...args, "--session", sessionFile]);
    const two = await started(second);
    assert.equal(two.conversation, one.conversation, "the same conversation");
    assert.match(second.stdout(), /^Recovered: /m);
    const proofs = readdirSync(join(state, "claims", "proofs"));
    assert.equal(proofs.length, 1, "the proof of the dead engine's stop is kept beside the claim");
    const proof = JSON.parse(
      readFileSync(join(state, "claims", "proofs", proofs[0] ?? ""), "utf8"),
    ) as {
      kind: string;
    };
    assert.equal(proof.kind, "cohort-proof");
    assert.equal(readFileSync(placed, "utf8"), CREDENTIALS, "placed again for the new engine");
    // A failure below must not leave this controller (and its Claude Code) running: the hooks
    // registered before it (the stand-in's close, the root's removal) run first, and one of
    // them then waited on it for ever (seen once, when the load check failed).
    try {
      const b = await connect(t, two.socket);
      assert.equal((await b.client.takeover()).outcome, "admitted");
      const next = await b.client.prompt("go on");
      assert.ok(
        next.outcome === "admitted",
        `${JSON.stringify(next)}\n${second.stdout()}\n${second.stderr()}`,
      );
      await until(
        () => settled(b.events, next.receipt.id) !== null,
        "the next turn settled",
        WAIT_MS,
      );
      assert.equal(settled(b.events, next.receipt.id), "completed");
      const text = b.events
        .filter((e) => e.event.kind === "text-delta")
        .map((e) => e.event.delta)
        .join("");
      assert.equal(text, "after the crash");
      const lines = readFileSync(sessionFile, "utf8");
      assert.ok(
        lines.includes("stream for a while") && lines.includes("go on"),
        "one conversation",
      );
      await b.client.close();
    } catch (e) {
      second.proc.kill("SIGKILL");
      throw e;
    }
    second.proc.kill("SIGTERM");
    const exit = await second.exited;
    assert.equal(exit.code, 0, second.stderr());
    assert.match(second.stdout(), /Stopped: the engine's stop is proven/);
    assert.equal(processesNaming(sessionId).length, 0, "no Claude Code process left");
    assert.equal(existsSync(placed), false, "the credentials removed at the stop");
    assert.deepEqual(filesHolding(state, TOKEN), []);
    assert.deepEqual(filesHolding(project, TOKEN), []);
    for (const out of [first.stdout(), first.stderr(), second.stdout(), second.stderr()]) {
      assert.ok(!out.includes(TOKEN), "the token is never printed");
    }
    assert.equal(
      readFileSync(join(agentSrc, ".credentials.json"), "utf8"),
      CREDENTIALS,
      "never written back",
    );
  });
});
