// Steering through the board with the real pinned Pi (issue 15): a Controller over Pi and the
// loopback fake model, registered in --state-dir's registry; a logged-in session takes control
// and prompts through POST /control, and a live stream shows the run's events and the reply
// appended to the file. Raw HTTP: the Console side is covered with fake-pi in Chromium.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PgroupLauncher } from "../../src/control/cohort/launcher.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { controllerOptions, makeFixture } from "../control/controller-fixture.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { type FakeModel, startFakeModel } from "../helpers/fake-model.ts";
import { logIn } from "../helpers/login.ts";
import { MODEL, settledSession, writeAgentFiles } from "../helpers/real-pi.ts";
import { boardOverController } from "./controlled-board.ts";
import { send } from "./http-client.ts";
import { openStream, type SseEvent } from "./sse-client.ts";

describe("board steering with the real pinned Pi", () => {
  it("takes control, prompts and streams the run and its reply", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    // Cleanups in order: board, controller (ends the engine), model, temp dir.
    const removals: (() => void)[] = [];
    let ctrl: Controller | null = null;
    let model: FakeModel | null = null;
    let stopBoard = async () => {};
    t.after(async () => {
      await stopBoard();
      await ctrl?.stop();
      await model?.close();
      for (const rm of removals) rm();
    });
    const f = makeFixture(
      { after: (fn) => removals.push(fn as () => void) },
      (cwd) => settledSession(cwd) as Record<string, unknown>[],
    );
    model = await startFakeModel({
      replies: [{ kind: "text", text: "hello from the real Pi", pieces: 4 }],
    });
    const agentDir = join(f.root, "agent");
    writeAgentFiles(agentDir, model.baseUrl);
    const { engine: _fake, ...rest } = controllerOptions(f);
    ctrl = new Controller({
      ...rest,
      launcher: new PgroupLauncher({ termGraceMs: 2000, killGraceMs: 2000 }),
      engine: { extraArgs: ["--model", MODEL] },
      agentDir,
    });
    await ctrl.start();
    const { board, conversation, unregister } = await boardOverController(f, ctrl.socketPath);
    removals.unshift(unregister);
    stopBoard = () => board.close();

    const page = await send(board.port, `/api/conversations/${conversation}/page`);
    assert.equal(page.status, 200);
    const r = page.json as { follow: { id: string }; page: { branch: string } };
    const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id });
    const stream = await openStream(board.port, `/api/conversations/${conversation}/live?${q}`);
    t.after(() => stream.close());

    const { headers } = await logIn(board.loginUrl);
    const steer = (body: object) =>
      send(board.port, `/api/conversations/${conversation}/control`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        timeoutMs: DEADLINE_MS,
      });
    assert.equal((await steer({ op: "takeover" })).status, 200);
    const prompted = await steer({ op: "prompt", text: "say hello" });
    assert.equal(prompted.status, 200, JSON.stringify(prompted.json));

    const kinds = new Set<string>();
    let replied = false;
    const until = Date.now() + 60_000;
    while (!(replied && kinds.has("text-delta") && kinds.has("run-settled"))) {
      assert.ok(Date.now() < until, `saw ${[...kinds].join(",")}; reply ${replied}`);
      const e: SseEvent = await stream.next(Math.max(1, until - Date.now()));
      if (e.event === "event") {
        kinds.add((JSON.parse(e.data) as { event: { kind: string } }).event.kind);
      }
      if (e.event === "page" && e.data.includes("hello from the real Pi")) replied = true;
    }
  });
});
