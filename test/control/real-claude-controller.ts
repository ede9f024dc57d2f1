// Test helper: a started Controller over the real pinned Claude Code (harness `claude-code`,
// sealed, the pinned binary, the PgroupLauncher) talking to the loopback Anthropic stand-in
// through the seat's settings file (`agentDir/settings.json`, passed with `--settings`). The
// session is new unless the test writes one first. One cleanup stops the clients, the
// controller (which ends the engine), the stand-in and the temp dir, in that order.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import { PgroupLauncher } from "../../src/control/cohort/launcher.ts";
import { Controller, type ControllerOptions } from "../../src/control/controller/controller.ts";
import { FixtureVerifier } from "../../src/control/controller/records.ts";
import { claudeSessionFile } from "../../src/control/engine/claude-code/claude-files.ts";
import type { Dialog, StreamEvent } from "../../src/control/protocol.ts";
import {
  type AnthropicReply,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake-anthropic.ts";
import { sealedClaudeSettings } from "../helpers/real-claude.ts";
import { GRANTS, validateRecords } from "./controller-fixture.ts";

export type ClaudeRun = {
  ctrl: Controller;
  fake: FakeAnthropic;
  /** The run's temp dir (removed at the end): a test may keep its own state under it. */
  root: string;
  projectRoot: string;
  sessionFile: string;
  /** A connected client (on grant `g-op` unless named). */
  client(
    grant?: string,
  ): Promise<{ client: ConversationClient; events: StreamEvent[]; dialogs: Dialog[] }>;
  stop(): Promise<void>;
};

export async function startClaude(
  t: TestContext,
  options: {
    replies?: AnthropicReply[];
    sessionId?: string;
    /** Options the controller is given besides these (a budget, grants, a sink). */
    controller?: Partial<ControllerOptions>;
    /** Claude Code's OAuth login file, written into the agent dir beside the settings. */
    credentials?: string;
  } = {},
): Promise<ClaudeRun> {
  const root = mkdtempSync("/tmp/mcc-");
  const fixtureRoot = join(root, "fx");
  const projectRoot = join(fixtureRoot, "proj");
  mkdirSync(projectRoot, { recursive: true });
  const agentDir = join(root, "agent");
  mkdirSync(agentDir);
  const clients: ConversationClient[] = [];
  let ctrl: Controller | null = null;
  let stopped: Promise<void> | null = null;
  const stop = () => {
    stopped ??= ctrl?.stop() ?? Promise.resolve();
    return stopped;
  };
  const fake = await startFakeAnthropic(options.replies ? { replies: options.replies } : {});
  t.after(async () => {
    for (const c of clients) await c.close();
    const engine = ctrl?.execution?.link;
    await stop();
    const ended = engine === undefined || engine.exit !== null;
    await fake.close();
    rmSync(root, { recursive: true, force: true });
    assert.ok(ended, "controller.stop() ended the engine");
    if (ctrl) validateRecords(ctrl);
  });
  writeFileSync(
    join(agentDir, "settings.json"),
    JSON.stringify(sealedClaudeSettings(fake.baseUrl)),
  );
  if (options.credentials !== undefined) {
    writeFileSync(join(agentDir, ".credentials.json"), options.credentials, { mode: 0o600 });
  }
  const sessionFile = claudeSessionFile(projectRoot, "main", options.sessionId ?? randomUUID());
  ctrl = new Controller({
    harness: "claude-code",
    fixtureRoot,
    claimRoot: join(root, "claims"),
    socketDir: join(root, "s"),
    sessionFile,
    seat: "main",
    verifier: new FixtureVerifier({ fixtureRoot }),
    grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    launcher: new PgroupLauncher({ termGraceMs: 2000, killGraceMs: 2000 }),
    engine: { extraArgs: ["--model", "claude-sonnet-4-5"] },
    agentDir,
    ...options.controller,
  });
  await ctrl.start();
  const socketPath = ctrl.socketPath;
  return {
    ctrl,
    fake,
    root,
    projectRoot,
    sessionFile,
    async client(grant = "g-op") {
      const client = new ConversationClient({
        socketPath,
        grant,
        requestTimeoutMs: 30_000,
      });
      clients.push(client);
      const events: StreamEvent[] = [];
      const dialogs: Dialog[] = [];
      client.onEvent((e) => events.push(e));
      client.onDialog((d) => dialogs.push(d));
      client.onError((issue) => assert.fail(`client issue: ${issue.code}: ${issue.message}`));
      await client.connect();
      return { client, events, dialogs };
    },
    stop,
  };
}
