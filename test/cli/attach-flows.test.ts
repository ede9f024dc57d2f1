// `conversation attach` used as a person would (issue 8 item 4), in tmux, against a controller
// over fake-pi and over the real pinned Pi with the loopback model: an observer and an operator
// each in their own pane, the history on screen, an observer's Enter refused with the draft kept,
// takeover, a prompt whose slow reply streams in (two different partial screens), an interrupt
// that stops it and leaves it marked aborted, a multi-line bracketed paste that waits for Enter,
// and Ctrl-C closing each pane with exit 0. Every screen the test looks at is kept under
// test-artifacts/attach/<test>/<step>.txt. Harness: test/cli/tmux-pane.ts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { PgroupLauncher } from "../../src/control/cohort/launcher.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { controllerOptions, makeFixture, startController } from "../control/controller-fixture.ts";
import { type FakeModel, startFakeModel } from "../helpers/fake-model.ts";
import { MODEL, settledSession, writeAgentFiles } from "../helpers/real-pi.ts";
import {
  EMPTY_COMPOSER,
  firstLine,
  quit,
  resetArtifacts,
  tmuxSkip as skip,
  startPane,
} from "./tmux-pane.ts";

if (skip) process.stderr.write(`attach-flows: skipped: ${skip}\n`);

const TICK_MS = 60;
const SIZE = { columns: 60, rows: 24 };
const REFUSED = "not admitted: controller";

/** The highest `tick N` on the screen, or -1. */
function lastTick(screen: string): number {
  let max = -1;
  for (const m of screen.matchAll(/tick (\d+)/g)) max = Math.max(max, Number(m[1]));
  return max;
}

const count = (screen: string, text: string) => screen.split(text).length - 1;

type Flow = {
  name: string;
  root: string;
  socket: string;
  /** A prompt the engine answers with an endless slow stream of `tick N `. */
  slowPrompt: string;
  /** What the engine's reply to the pasted two lines shows. */
  pasteReply: string;
};

/** The whole flow; returns after both panes closed with exit 0. */
async function runFlow(t: TestContext, flow: Flow): Promise<void> {
  resetArtifacts(flow.name);
  const open = (grant: string, prefix: string) =>
    startPane(t, flow.root, flow.socket, grant, { ...SIZE, artifacts: flow.name, prefix });

  // An observer (observe only) sees the history; its Enter is refused and its draft kept.
  const obs = await open("g-ro", "");
  await obs.waitScreen("the observer's header", (s) => firstLine(s).startsWith("observer · "));
  const history = await obs.waitScreen(
    "the history",
    (s) => /^ {2}hi$/m.test(s) && /^ {2}hello$/m.test(s),
    {
      step: "01-observer-history",
    },
  );
  assert.match(history, /── user/);
  assert.match(history, /── assistant/);
  await obs.tmux(["send-keys", "-l", "let me in"]);
  await obs.tmux(["send-keys", "Enter"]);
  await obs.waitScreen(
    "the observer's refusal, draft kept",
    (s) => s.includes(REFUSED) && /^> let me in$/m.test(s),
    { step: "02-observer-enter-refused" },
  );

  // An operator attaches; before its takeover it is an observer too.
  const op = await open("g-op", "");
  await op.waitScreen(
    "the operator's history",
    (s) => firstLine(s).startsWith("observer · ") && /^ {2}hello$/m.test(s),
    {
      step: "03-operator-history",
    },
  );
  await op.tmux(["send-keys", "-l", "too early"]);
  await op.tmux(["send-keys", "Enter"]);
  await op.waitScreen(
    "the operator's refusal before takeover, draft kept",
    (s) => s.includes(REFUSED) && /^> too early$/m.test(s),
    { step: "04-operator-enter-refused" },
  );
  // Ctrl-T: control. The draft written before it never goes out under the new controller (S4):
  // it is set aside, and Ctrl-R is the person's way to bring it back (issue 24 item 3).
  await op.tmux(["send-keys", "C-t"]);
  await op.waitScreen(
    "control, saying the draft was set aside",
    (s) =>
      firstLine(s).startsWith("controller · ") &&
      EMPTY_COMPOSER.test(s) &&
      s.includes("you have control; draft set aside: ^R brings it back"),
    { step: "05-operator-control" },
  );
  await op.tmux(["send-keys", "C-r"]);
  await op.waitScreen("the set-aside draft back", (s) => /^> too early$/m.test(s), {
    step: "05b-operator-recall",
  });
  await op.tmux(["send-keys", ...Array<string>("too early".length).fill("BSpace")]);
  await op.waitScreen("the composer emptied by hand", (s) => EMPTY_COMPOSER.test(s));
  // The observer saw the controller change: its draft was cleared (S4), it is still an observer.
  await obs.waitScreen(
    "the observer's draft cleared by the controller change",
    (s) => firstLine(s).startsWith("observer · ") && EMPTY_COMPOSER.test(s),
    { step: "06-observer-after-takeover" },
  );

  // A prompt whose reply streams in slowly: two different partial screens.
  await op.tmux(["send-keys", "-l", flow.slowPrompt]);
  await op.tmux(["send-keys", "Enter"]);
  const first = await op.waitScreen(
    "the reply streaming",
    (s) => s.includes("(streaming)") && lastTick(s) >= 2,
    { step: "07-streaming-1" },
  );
  const second = await op.waitScreen(
    "more of the reply",
    (s) => s.includes("(streaming)") && lastTick(s) >= lastTick(first) + 3,
    { step: "08-streaming-2" },
  );
  assert.notEqual(first, second, "two different partial screens");
  assert.match(second, EMPTY_COMPOSER, "the composer cleared after the submit");
  await obs.waitScreen(
    "the observer watching the stream",
    (s) => s.includes("(streaming)") && lastTick(s) >= 2,
    { step: "09-observer-streaming" },
  );

  // Ctrl-G: the reply stops, and the transcript says it was aborted.
  await op.tmux(["send-keys", "C-g"]);
  const stopped = await op.waitScreen(
    "the interrupted reply",
    (s) =>
      !s.includes("(streaming)") &&
      /assistant · aborted/.test(s) &&
      s.includes("[prompt settled: interrupted]") &&
      // The run can settle before the interrupt's abort is answered; until then admission is
      // fenced and a prompt is refused: the header says when it is open again.
      firstLine(s).includes("admission open"),
    { step: "10-interrupted" },
  );
  await sleep(4 * TICK_MS);
  const later = await op.snap("11-interrupted-later");
  assert.equal(lastTick(later), lastTick(stopped), "no tick arrived after the interrupt");
  assert.ok(!later.includes("(streaming)"), later);

  // A multi-line bracketed paste goes into the composer and is not sent until Enter.
  const sentBefore = count(await op.screen(), "second line");
  await op.tmux(["load-buffer", "-b", "mc-paste", "-"], "first line\nsecond line");
  await op.tmux(["paste-buffer", "-p", "-d", "-b", "mc-paste"]);
  await op.waitScreen(
    "the paste in the composer",
    (s) => /^> first line\n {2}second line$/m.test(s),
    { step: "12-pasted" },
  );
  await sleep(300);
  const waiting = await op.snap("13-pasted-not-sent");
  assert.match(waiting, /^> first line\n {2}second line$/m, "still in the composer");
  assert.equal(count(waiting, "second line"), sentBefore + 1, "only the composer has it");
  assert.doesNotMatch(waiting, /sending…|prompt admitted/);
  await op.tmux(["send-keys", "Enter"]);
  await op.waitScreen(
    "the reply to the paste",
    (s) => s.includes(flow.pasteReply) && EMPTY_COMPOSER.test(s) && !s.includes("(streaming)"),
    { step: "14-paste-reply" },
  );
  await obs.waitScreen("the observer seeing it too", (s) => s.includes(flow.pasteReply), {
    step: "15-observer-final",
  });

  await quit(op);
  await quit(obs);
}

/** A started Controller over the real pinned Pi on the settled session, answered by `model`. */
async function startRealController(t: TestContext): Promise<{
  ctrl: Controller;
  root: string;
  model: FakeModel;
}> {
  const removals: (() => void)[] = [];
  let ctrl: Controller | null = null;
  let model: FakeModel | null = null;
  // One cleanup, in order: the controller (which ends Pi), the model, the temp dir.
  t.after(async () => {
    await ctrl?.stop();
    await model?.close();
    for (const rm of removals) rm();
  });
  const f = makeFixture(
    { after: (fn) => removals.push(fn as () => void) },
    (cwd) => settledSession(cwd) as Record<string, unknown>[],
  );
  model = await startFakeModel({
    replies: [
      { kind: "slow", tickMs: TICK_MS },
      { kind: "text", text: "Got two lines from you." },
    ],
  });
  const agentDir = join(f.root, "agent");
  writeAgentFiles(agentDir, model.baseUrl);
  const { engine: _fakeEngine, ...rest } = controllerOptions(f);
  ctrl = new Controller({
    ...rest,
    launcher: new PgroupLauncher({ termGraceMs: 2000, killGraceMs: 2000 }),
    engine: { extraArgs: ["--model", MODEL] },
    agentDir,
  });
  await ctrl.start();
  assert.equal(ctrl.state().admission, "open", "Pi loaded the session without appending");
  return { ctrl, root: f.root, model };
}

describe("conversation attach flows in tmux", { concurrency: 2, skip }, () => {
  it("fake-pi: observe, refused Enter, takeover, stream, interrupt, paste, quit", async (t) => {
    const { ctl, f } = await startController(t, { script: { tickMs: TICK_MS } });
    await runFlow(t, {
      name: "fake-pi",
      root: f.root,
      socket: ctl.socketPath,
      slowPrompt: "count slow please",
      pasteReply: "echo: first line",
    });
  });

  it("real Pi: observe, refused Enter, takeover, stream, interrupt, paste, quit", async (t) => {
    const { ctrl, root, model } = await startRealController(t);
    await runFlow(t, {
      name: "real-pi",
      root,
      socket: ctrl.socketPath,
      slowPrompt: "count slowly",
      pasteReply: "Got two lines from you.",
    });
    // The paste reached the model as one prompt with its newline.
    assert.equal(model.requests.length, 2);
    const body = JSON.stringify(model.requests[1]?.body);
    assert.ok(body.includes("first line\\nsecond line"), body);
  });
});
