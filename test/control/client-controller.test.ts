// The seed's code sample end to end: the real Controller, driven by the real ConversationClient,
// over fake-pi and the fixture-only FakeLauncher (scripted `stopped`, so the force stop's claim
// records a proof). Two clients watch the same stream. Every wait has a deadline; the
// controller, clients and temp dir go in t.after.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ClaimStore } from "../../src/control/claim/claim.ts";
import { ConversationClient } from "../../src/control/client/client.ts";
import { FakeLauncher } from "../../src/control/cohort/launcher.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import type { StopRecord } from "../../src/control/controller/records.ts";
import type {
  ControllerState,
  Dialog,
  Receipt,
  ReceiptReason,
  StreamEvent,
} from "../../src/control/protocol.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import {
  controllerOptions,
  type Fixture,
  makeFixture,
  type Tap,
  TestClient,
  tapController,
  validateRecords,
} from "./controller-fixture.ts";

const T = { timeout: SLOW_TEST_MS };

/** A client that keeps every event, dialog and state it is pushed. */
type Watched = {
  client: ConversationClient;
  events: StreamEvent[];
  dialogs: Dialog[];
  states: ControllerState[];
};

function watch(t: TestContext, socketPath: string, grant: string): Watched {
  const client = new ConversationClient({ socketPath, grant, requestTimeoutMs: 10_000 });
  const w: Watched = { client, events: [], dialogs: [], states: [] };
  client.onEvent((e) => w.events.push(e));
  client.onDialog((d) => w.dialogs.push(d));
  client.onState((s) => w.states.push(s));
  client.onError((issue) => assert.fail(`client issue: ${issue.code}: ${issue.message}`));
  t.after(() => client.close());
  return w;
}

function settledReceipt(w: Watched, receipt: string): Receipt | null {
  for (const e of w.events) {
    const r = e.event.receipt as Receipt | undefined;
    if (e.event.kind === "receipt" && r?.id === receipt && r.state === "settled") return r;
  }
  return null;
}

async function settledWith(w: Watched, receipt: string): Promise<ReceiptReason | undefined> {
  await until(() => settledReceipt(w, receipt) !== null, `receipt ${receipt} settled`);
  return settledReceipt(w, receipt)?.reason;
}

/**
 * A fixture and a Controller over it, not started. One cleanup, registered first so it runs
 * first: the controller stops (ending the engine) before the temp dir goes.
 */
function fixtureController(
  t: TestContext,
  launcher = new FakeLauncher({ defaultStop: { result: "stopped" } }),
): { f: Fixture; ctrl: Controller } {
  const removals: (() => void)[] = [];
  let ctrl: Controller | null = null;
  t.after(async () => {
    await ctrl?.stop();
    for (const rm of removals) rm();
    if (ctrl) validateRecords(ctrl);
  });
  const f = makeFixture({ after: (fn) => removals.push(fn as () => void) });
  ctrl = new Controller(controllerOptions(f, { launcher }));
  return { f, ctrl };
}

/**
 * Starts the controller and puts a tap in front of its socket: every line either way must be
 * valid CHAT-01 (clientMessage, controllerMessage), and some must have passed each way.
 */
async function startTapped(t: TestContext, ctrl: Controller, f: Fixture): Promise<Tap> {
  await ctrl.start(); // claim, launch, K8 load check, listen
  const tap = await tapController(t, ctrl.socketPath, join(f.root, "tap.sock"));
  t.after(() => {
    assert.ok(tap.lines.client > 0 && tap.lines.controller > 0, JSON.stringify(tap.lines));
  });
  return tap;
}

describe("ConversationClient against the Controller (fake-pi)", () => {
  it("runs the seed's code sample end to end, with a second client watching", T, async (t) => {
    const launcher = new FakeLauncher({ stops: [{ result: "stopped" }] });
    const { f, ctrl } = fixtureController(t, launcher);
    const tap = await startTapped(t, ctrl, f);

    const a = watch(t, tap.path, "g-op");
    const welcome = await a.client.connect(); // starts as an observer
    assert.equal(welcome.role, "observer");
    assert.equal(welcome.conversation, ctrl.conversation);
    assert.equal(a.client.role, "observer");

    // observe: a reader page and the seam record.
    const seen = await a.client.observe({ limit: 10 });
    assert.equal(seen.outcome, "admitted", JSON.stringify(seen));
    assert.ok(seen.outcome === "admitted");
    const execution = ctrl.execution;
    assert.ok(execution);
    assert.deepEqual(seen.seam, {
      replay: "available", // the controller keeps the epoch's events from fromSequence on
      streamEpoch: execution.stream.epoch,
      fromSequence: 1,
      reconcile: true,
      quiet: true,
    });
    assert.equal(seen.result.limitAdvisory, true);
    const page = JSON.stringify(seen.result.page);
    assert.ok(page.includes('"hi"') && page.includes('"hello"'), page);

    // takeover: the state (generation + 1) arrives before the reply.
    const took = await a.client.takeover(); // becomes the controller
    assert.equal(took.outcome, "admitted", JSON.stringify(took));
    assert.equal(a.client.role, "controller");
    assert.equal(a.client.state?.generation, welcome.state.generation + 1);
    assert.equal(await a.client.takeover().then((r) => r.outcome), "refused:already-controller");

    // A second client, an observer.
    const b = watch(t, tap.path, "g-op");
    const bWelcome = await b.client.connect();
    // What a saw before b joined (its takeover's act) is not b's to see.
    const aBefore = a.events.length;
    assert.equal(bWelcome.role, "observer");
    assert.equal(bWelcome.state.controllerConnection, welcome.connection);
    // b joined after the takeover's act: the state itself says who controls.
    assert.equal(welcome.state.controllerActor, undefined, "nobody controlled at a's welcome");
    assert.equal(typeof bWelcome.state.controllerActor, "string");
    assert.equal(bWelcome.state.controllerActor, a.client.state?.controllerActor);

    // prompt: admitted with a receipt, settled `completed` on the stream.
    const r = await a.client.prompt("hello");
    assert.equal(r.outcome, "admitted", JSON.stringify(r));
    assert.ok(r.outcome === "admitted");
    assert.equal(r.receipt.state, "admitted");
    assert.equal(r.receipt.execution, execution.execution);
    assert.equal(r.receipt.generation, a.client.state?.generation);
    assert.equal(await settledWith(a, r.receipt.id), "completed");

    // The second client is an observer: refused `controller`.
    const fromB = await b.client.prompt("from b");
    assert.equal(fromB.outcome, "refused:controller", JSON.stringify(fromB));
    assert.equal(await b.client.interrupt().then((x) => x.outcome), "refused:controller");

    // A prompt that opens a dialog holds the run: the dialog goes to both clients, disabled;
    // a second prompt meanwhile is refused `busy` (one dispatch slot, no queue).
    const held = await a.client.prompt("dialog:confirm please");
    assert.equal(held.outcome, "admitted", JSON.stringify(held));
    assert.ok(held.outcome === "admitted");
    await until(() => a.dialogs.length === 1 && b.dialogs.length === 1, "dialog on both clients");
    assert.deepEqual(a.dialogs, b.dialogs);
    const dialog = a.dialogs[0];
    assert.equal(dialog?.method, "confirm");
    assert.equal(dialog?.disabled, true);
    assert.ok(dialog?.reason);
    assert.equal(execution.dialogs.length, 1);
    assert.equal(execution.dialogs[0]?.id, dialog?.id);

    const busy = await a.client.prompt("again");
    assert.equal(busy.outcome, "refused:busy", JSON.stringify(busy));

    // interrupt: fence, clear the queue, abort; the receipt settles `interrupted`.
    const stopped = await a.client.interrupt();
    assert.equal(stopped.outcome, "admitted", JSON.stringify(stopped));
    assert.ok(stopped.outcome === "admitted");
    const interrupt = (stopped.result as { stop: StopRecord }).stop;
    assert.equal(interrupt.trigger, "interrupt");
    assert.equal(interrupt.result, "interrupted");
    assert.equal(interrupt.approvalDisposition, "uncertain", "a dialog was seen");
    assert.equal(await settledWith(a, held.receipt.id), "interrupted");
    await until(() => a.client.state?.admission === "open", "admission open again");
    assert.equal(await a.client.interrupt().then((x) => x.outcome), "refused:no-turn");

    // Slash text is refused, even after leading whitespace.
    for (const text of ["/llama", "  /skill:x"]) {
      const slash = await a.client.prompt(text);
      assert.equal(slash.outcome, "refused:text-policy", `${text}: ${JSON.stringify(slash)}`);
    }

    // The page now holds the first exchange; read while idle, the cut is quiet.
    const again = await a.client.observe();
    assert.ok(again.outcome === "admitted", JSON.stringify(again));
    assert.ok(JSON.stringify(again.result.page).includes("echo: hello"));
    assert.equal(again.seam.quiet, true);
    assert.equal(again.seam.fromSequence, (a.events.at(-1)?.sequence ?? 0) + 1);

    // confirmed("force-stop"): issue, answer, then use a confirmation; the stop is proven.
    const forced = await a.client.confirmed("force-stop");
    assert.equal(forced.outcome, "admitted", JSON.stringify(forced));
    assert.ok(forced.outcome === "admitted");
    assert.equal(forced.step, "use");
    const force = (forced.result as { stop: StopRecord }).stop;
    assert.equal(force.trigger, "force-stop");
    assert.equal(force.result, "stopped");
    assert.match(String(force.proofDigest), /^[0-9a-f]{64}$/);
    assert.equal(launcher.stopCalls, 1);
    assert.equal(ctrl.claim?.state, "stopped-proven");
    const claims = new ClaimStore({ root: f.claimRoot });
    const inspected = await claims.inspect({
      seatKey: { projectRoot: f.projectRoot, seat: "main" },
      sessionKey: ctrl.sessionKey,
    });
    assert.equal(inspected.session?.state, "stopped-proven");
    assert.equal(inspected.session?.proof, force.proofDigest);
    await until(() => a.client.state?.admission === "fenced", "fenced after the stop");
    assert.equal(await a.client.prompt("after").then((x) => x.outcome), "refused:fenced");

    // Both clients saw the same stream: same epoch, same sequences and ids, same bytes.
    await until(() => b.events.length === a.events.length - aBefore, "b caught up with a");
    assert.ok(a.events.length > 10);
    assert.deepEqual(b.events, a.events.slice(aBefore));
    a.events.forEach((e, i) => {
      assert.equal(e.streamEpoch, execution.stream.epoch);
      assert.equal(e.sequence, i + 1);
      assert.equal(e.id, `${e.streamEpoch}.${e.sequence}`);
    });
    const kinds = a.events.map((e) => e.event.kind);
    for (const k of ["run-started", "message-started", "text-delta", "message-ended", "receipt"]) {
      assert.ok(kinds.includes(k), `${k} in ${kinds.join(",")}`);
    }
    assert.equal(kinds.filter((k) => k === "receipt").length, 2, "one settle per admitted prompt");
    assert.equal(b.client.state?.generation, a.client.state?.generation);
  });

  it(
    "answers a prompt at Pi's ack: the receipt as of the ack, before the run's events",
    T,
    async (t) => {
      const { f, ctrl } = fixtureController(t);
      const tap = await startTapped(t, ctrl, f);
      // A raw client sees its replies and the stream in the order they were written.
      const { c, welcome } = await TestClient.welcomed(t, tap.path);
      let generation = (welcome.state as ControllerState).generation;
      assert.equal((await c.request({ op: "takeover", generation })).outcome, "admitted");
      generation++;
      // fake-pi writes the response and the whole run back to back, often in one chunk.
      for (let n = 1; n <= 8; n++) {
        const id = `p${n}`;
        const from = c.messages.length;
        const draft = { id: `d${n}`, revision: 1 };
        const line = { type: "request", id, op: "prompt", text: `hi ${n}`, draft, generation };
        c.raw(`${JSON.stringify(line)}\n`);
        const settled = (m: Record<string, unknown>) =>
          m.type === "event" && (m.event as { kind: string }).kind === "receipt";
        await c.waitFor(settled, `receipt ${n} settled`, from);
        const after = c.messages.slice(from);
        const replyAt = after.findIndex((m) => m.type === "reply" && m.id === id);
        const runAt = after.findIndex(
          (m) => m.type === "event" && (m.event as { kind: string }).kind === "run-started",
        );
        assert.ok(replyAt !== -1 && replyAt < runAt, `reply ${replyAt}, run-started ${runAt}`);
        const reply = after[replyAt] as unknown as { outcome: string; receipt: Receipt };
        assert.equal(reply.outcome, "admitted");
        assert.equal(reply.receipt.state, "admitted");
        const settle = after.find(settled) as unknown as { event: { receipt: Receipt } };
        assert.deepEqual(settle.event.receipt, {
          ...reply.receipt,
          state: "settled",
          reason: "completed",
        });
      }
    },
  );

  it(
    "recovers after a proven stop and launches a new execution through the client",
    T,
    async (t) => {
      const { f, ctrl } = fixtureController(t);
      const tap = await startTapped(t, ctrl, f);
      const a = watch(t, tap.path, "g-op");
      const welcome = await a.client.connect();
      assert.equal((await a.client.takeover()).outcome, "admitted");
      const first = await a.client.prompt("before the stop");
      assert.ok(first.outcome === "admitted", JSON.stringify(first));
      assert.equal(await settledWith(a, first.receipt.id), "completed");
      // Recovery without a verified stop is refused; the confirmation is spent by the refusal.
      const early = await a.client.confirmed("recover");
      assert.deepEqual([early.outcome, early.step], ["refused:stop-proof", "use"]);

      const forced = await a.client.confirmed("force-stop");
      assert.equal(forced.outcome, "admitted", JSON.stringify(forced));
      const recovered = await a.client.confirmed("recover");
      assert.ok(recovered.outcome === "admitted", JSON.stringify(recovered));
      assert.match(recovered.eligibility, /^el-/);

      const oldExecution = welcome.state.execution;
      const launched = await a.client.launch(recovered.eligibility);
      assert.ok(launched.outcome === "admitted", JSON.stringify(launched));
      const state = (launched.result as { state: ControllerState }).state;
      // The state came before the reply: the client already holds the new execution.
      assert.deepEqual(a.client.state, state);
      assert.notEqual(state.execution, oldExecution);
      assert.notEqual(state.incarnation, welcome.state.incarnation);
      assert.equal(state.controllerConnection, null, "nobody controls after a launch");
      assert.equal(state.admission, "open");
      assert.equal(a.client.role, "observer");
      const again = await a.client.launch(recovered.eligibility);
      assert.equal(again.outcome, "refused:eligibility", JSON.stringify(again));

      assert.equal((await a.client.takeover()).outcome, "admitted");
      const next = await a.client.prompt("after the launch");
      assert.ok(next.outcome === "admitted", JSON.stringify(next));
      assert.equal(next.receipt.execution, state.execution);
      assert.equal(await settledWith(a, next.receipt.id), "completed");
      const epochs = new Set(a.events.map((e) => e.streamEpoch));
      assert.equal(epochs.size, 2, "the relaunch started a new stream epoch");
      const seen = await a.client.observe();
      assert.ok(seen.outcome === "admitted");
      assert.equal(seen.seam.streamEpoch, ctrl.execution?.stream.epoch);
      const page = JSON.stringify(seen.result.page);
      assert.ok(page.includes("before the stop") && page.includes("echo: after the launch"));
    },
  );
});
