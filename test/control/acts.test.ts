// Who did what, told to every client (issue 29 item 3): each admitted act on the socket —
// takeover, prompt, interrupt, release — is pushed as an `act` stream event naming the person
// the connection acts for (a delegating grant's hello, else the grant's actor), in order with
// the run's own events; a refused request is not announced. The live transcript keeps each as
// an `act` item, and the shared words say it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import { TranscriptState } from "../../src/control/client/transcript-state.ts";
import { actOf } from "../../src/control/controller/acts.ts";
import type { Connection } from "../../src/control/controller/socket.ts";
import { type Grant, OPERATIONS, type StreamEvent } from "../../src/control/protocol.ts";
import { actLine } from "../../src/present/acts.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { startController, TestClient } from "./controller-fixture.ts";

const T = { timeout: SLOW_TEST_MS };
const GRANTS: Grant[] = [
  { id: "g-op", actor: "the-board", capabilities: [...OPERATIONS], delegate: true },
  { id: "g-plain", actor: "local-operator", capabilities: [...OPERATIONS] },
  { id: "g-ro", actor: "local-operator", capabilities: ["observe"] },
];

const actsIn = (events: StreamEvent[]) =>
  events
    .filter((e) => e.event.kind === "act")
    .map((e) => `${String(e.event.actor)} ${String(e.event.op)}`);

describe("controller acts", () => {
  it("pushes each admitted act to every client, naming the person", T, async (t) => {
    const { ctl } = await startController(t, {
      grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    });
    const alice = new ConversationClient({
      socketPath: ctl.socketPath,
      grant: "g-op",
      actor: "alice",
    });
    const terminal = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-plain" });
    const watcher = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-ro" });
    const seen: StreamEvent[] = [];
    watcher.onEvent((e) => seen.push(e));
    for (const c of [alice, terminal, watcher]) {
      t.after(() => c.close());
      await c.connect();
    }
    assert.equal((await alice.takeover()).outcome, "admitted");
    const sent = await alice.prompt("hello");
    assert.ok(sent.outcome === "admitted", JSON.stringify(sent));
    // Refused (alice controls): not announced.
    assert.equal((await terminal.prompt("me too")).outcome, "refused:controller");
    await until(() => seen.some((e) => e.event.kind === "run-settled"), "the run settled");
    assert.equal((await terminal.takeover()).outcome, "admitted");
    assert.equal((await terminal.release()).outcome, "admitted");
    await until(() => actsIn(seen).length === 4, "four acts pushed");
    assert.deepEqual(actsIn(seen), [
      "alice takeover",
      "alice prompt",
      "local-operator takeover",
      "local-operator release",
    ]);
    const prompt = seen.find((e) => e.event.kind === "act" && e.event.op === "prompt");
    assert.equal(prompt?.event.receipt, sent.receipt.id, "the prompt's act names its receipt");
    assert.equal(prompt?.event.connection, alice.welcome?.connection);
    assert.equal(JSON.stringify(prompt).includes("hello"), false, "no prompt text in the act");
    // Before the run it started: the act comes ahead of run-started.
    const at = (f: (e: StreamEvent) => boolean) => seen.findIndex(f);
    assert.ok(
      at((e) => e.event.kind === "act" && e.event.op === "prompt") <
        at((e) => e.event.kind === "run-started"),
    );
  });

  it(
    "names the person who controls in the state, for a client welcomed after the act",
    T,
    async (t) => {
      const { ctl } = await startController(t, {
        grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
      });
      const alice = new ConversationClient({
        socketPath: ctl.socketPath,
        grant: "g-op",
        actor: "alice",
      });
      t.after(() => alice.close());
      assert.equal((await alice.connect()).state.controllerActor, undefined, "nobody controls");
      assert.equal((await alice.takeover()).outcome, "admitted");
      const late = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-ro" });
      t.after(() => late.close());
      const welcome = await late.connect();
      assert.equal(welcome.state.controllerConnection, alice.welcome?.connection);
      assert.equal(welcome.state.controllerActor, "alice", "the delegated person, not the grant's");
      assert.equal((await alice.release()).outcome, "admitted");
      await until(() => late.state?.controllerConnection === null, "the release's state");
      assert.equal(late.state?.controllerActor, undefined);
    },
  );

  it("announces an identical retry's act once", T, async (t) => {
    const { ctl } = await startController(t, {
      grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    });
    const watcher = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-ro" });
    const seen: StreamEvent[] = [];
    watcher.onEvent((e) => seen.push(e));
    t.after(() => watcher.close());
    await watcher.connect();
    const { c } = await TestClient.welcomed(t, ctl.socketPath, "g-plain");
    const take = { id: "t-1", op: "takeover", generation: 1 };
    const first = await c.request(take);
    assert.equal(first.outcome, "admitted");
    // The same id and content again: the protocol's idempotent retry, the same reply.
    const from = c.messages.length;
    c.raw(`${JSON.stringify({ type: "request", ...take })}\n`);
    assert.deepEqual(await c.reply("t-1", from), first);
    assert.equal((await c.request({ op: "release", generation: 2 })).outcome, "admitted");
    await until(() => actsIn(seen).includes("local-operator release"), "the release announced");
    assert.deepEqual(actsIn(seen), ["local-operator takeover", "local-operator release"]);
  });

  it("names an answer's approval and decision, and nothing for a refusal", () => {
    const conn = { id: "cn-1", actor: "otto" } as Connection;
    const answer = {
      type: "request" as const,
      id: "q-1",
      op: "answer" as const,
      dialog: "dl-1",
      decision: "deny" as const,
      message: "no",
    };
    const act = actOf(conn, answer, { type: "reply", id: "q-1", outcome: "admitted" }, "x");
    assert.deepEqual(
      { ...act, at: undefined },
      {
        kind: "act",
        op: "answer",
        actor: "otto",
        connection: "cn-1",
        at: undefined,
        dialog: "dl-1",
        decision: "deny",
      },
    );
    const refused = { type: "reply" as const, id: "q-1", outcome: "refused:dialog" as const };
    assert.equal(actOf(conn, answer, refused, "x"), null);
    const observe = { type: "request" as const, id: "q-2", op: "observe" as const };
    assert.equal(
      actOf(conn, observe, { type: "reply", id: "q-2", outcome: "admitted" }, "x"),
      null,
    );
  });

  it("keeps acts in the live transcript and says them in words", () => {
    const s = new TranscriptState();
    s.applyPage(
      { parts: [] },
      { replay: "available", streamEpoch: "se-1", fromSequence: 1, reconcile: true, quiet: true },
    );
    const ev = (sequence: number, event: StreamEvent["event"]): StreamEvent => ({
      type: "event",
      streamEpoch: "se-1",
      sequence,
      id: `se-1.${sequence}`,
      event,
    });
    s.applyEvent(ev(1, { kind: "act", op: "takeover", actor: "alice", connection: "cn-1" }));
    s.applyEvent(
      ev(2, { kind: "act", op: "answer", actor: "bob", decision: "allow", dialog: "dl-1" }),
    );
    const words = s.items().flatMap((i) => (i.kind === "act" ? [actLine(i)] : []));
    assert.deepEqual(words, ["alice took control", "bob allowed an approval"]);
    assert.equal(actLine({ op: "interrupt", actor: "c", decision: null }), "c interrupted the run");
    assert.equal(actLine({ op: "budget", actor: "d", decision: null }), "d did budget");
    const budget = (decision: string | null) => ({
      op: "answer",
      actor: "e",
      decision,
      about: "budget",
    });
    assert.equal(actLine(budget("allow")), "e raised the budget");
    assert.equal(actLine(budget("deny")), "e stopped at the budget");
    assert.equal(actLine({ ...budget("deny"), about: "approval" }), "e denied an approval");
  });
});
