// Test helper: a started Controller over a real pinned Pi (sealed, the default engine command,
// the PgroupLauncher, the loopback fake model through `agentDir`), for any pinned version. One
// cleanup stops the clients, the controller (which ends the engine), the model and the temp dir,
// in that order. Used by the real-Pi controller suites and the terminal's tmux suite.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import { PgroupLauncher } from "../../src/control/cohort/launcher.ts";
import { Controller, type ControllerOptions } from "../../src/control/controller/controller.ts";
import type { PiVersion } from "../../src/control/engine/pi/pi-pin.ts";
import type { StreamEvent } from "../../src/control/protocol.ts";
import { type FakeModel, type ModelReply, startFakeModel } from "../helpers/fake-model.ts";
import { MODEL, settledSession, writeAgentFiles } from "../helpers/real-pi.ts";
import {
  controllerOptions,
  type Fixture,
  makeFixture,
  validateRecords,
} from "./controller-fixture.ts";

export type Running = {
  ctrl: Controller;
  f: Fixture;
  model: FakeModel;
  agentDir: string;
  /** A connected client (on grant `g-op` unless named); `events` keeps what it was pushed. */
  client(grant?: string): Promise<{ client: ConversationClient; events: StreamEvent[] }>;
  /** Stops the controller once (the cleanup calls it too). */
  stop(): Promise<void>;
};

/** A started Controller over the real Pi on `session`, with `replies` queued at the model. */
export async function startReal(
  t: TestContext,
  options: {
    session?: (cwd: string) => object[];
    replies?: ModelReply[];
    /** Which pinned Pi runs (REAL_PI_VERSIONS); default 0.85.1. */
    piVersion?: PiVersion;
    /** Runs between construction and start: another writer, for example. */
    beforeStart?: (f: Fixture) => void;
    /** Options the controller is given besides the fixture's (a budget, grants, a sink). */
    controller?: Partial<ControllerOptions>;
  } = {},
): Promise<Running> {
  // Cleanups run in this order: clients, controller (engine ended), model, temp dir.
  const clients: ConversationClient[] = [];
  const removals: (() => void)[] = [];
  let ctrl: Controller | null = null;
  let model: FakeModel | null = null;
  let stopped: Promise<void> | null = null;
  const stop = () => {
    stopped ??= ctrl?.stop() ?? Promise.resolve();
    return stopped;
  };
  t.after(async () => {
    for (const c of clients) await c.close();
    const engine = ctrl?.execution?.link;
    await stop();
    // Checked after everything else is cleaned up, so a failure here leaks nothing.
    const ended = engine === undefined || engine.exit !== null;
    await model?.close();
    for (const rm of removals) rm();
    assert.ok(ended, "controller.stop() ended the engine");
    if (ctrl) validateRecords(ctrl);
  });
  const f = makeFixture(
    { after: (fn) => removals.push(fn as () => void) },
    (cwd) => (options.session ?? settledSession)(cwd) as Record<string, unknown>[],
  );
  model = await startFakeModel(options.replies ? { replies: options.replies } : {});
  const agentDir = join(f.root, "agent");
  writeAgentFiles(agentDir, model.baseUrl);
  const base = controllerOptions(f);
  const { engine: _fakeEngine, ...rest } = base;
  ctrl = new Controller({
    ...rest,
    launcher: new PgroupLauncher({ termGraceMs: 2000, killGraceMs: 2000 }),
    engine: { extraArgs: ["--model", MODEL] },
    agentDir,
    ...(options.piVersion === undefined ? {} : { piVersion: options.piVersion }),
    ...options.controller,
  });
  options.beforeStart?.(f);
  await ctrl.start();
  const socketPath = ctrl.socketPath;
  return {
    ctrl,
    f,
    model,
    agentDir,
    async client(grant = "g-op") {
      const client = new ConversationClient({
        socketPath,
        grant,
        requestTimeoutMs: 15_000,
      });
      clients.push(client);
      const events: StreamEvent[] = [];
      client.onEvent((e) => events.push(e));
      client.onError((issue) => assert.fail(`client issue: ${issue.code}: ${issue.message}`));
      await client.connect();
      return { client, events };
    },
    stop,
  };
}
