// Replay after a reconnect (issue 16 item 1): the controller keeps the current epoch's recent
// events; a hello with `resume` gets the ones after its point, same ids and bytes, before any
// live one. A client dropped at many points of a run (fake-pi hold points) and resumed sees
// exactly what a client that never dropped saw. Every wait has a deadline; controllers, clients
// and temp dirs go in t.after.
import assert from "node:assert/strict";
import { createConnection, type Socket } from "node:net";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  ConversationClient,
  type ConversationClientOptions,
  parseEventId,
} from "../../src/control/client/client.ts";
import { Transcript } from "../../src/control/client/transcript.ts";
import { EventStream } from "../../src/control/controller/events.ts";
import { LineSplitter } from "../../src/control/engine/framing.ts";
import { parseClientMessage, type StreamEvent } from "../../src/control/protocol.ts";
import { DEADLINE_MS, SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { startController, TestClient, tapController } from "./controller-fixture.ts";
import type { HoldPoint } from "./fake-pi.ts";
import { holdPoint } from "./fake-pi-harness.ts";

const T = { timeout: SLOW_TEST_MS };
const PROMPT = "replay every piece of this";

type Watched = { client: ConversationClient; events: StreamEvent[]; issues: string[] };

function watch(
  t: TestContext,
  socketPath: string,
  options: Partial<ConversationClientOptions> = {},
): Watched {
  const client = new ConversationClient({
    socketPath,
    grant: "g-op",
    requestTimeoutMs: 10_000,
    ...options,
  });
  const w: Watched = { client, events: [], issues: [] };
  client.onEvent((e) => w.events.push(e));
  client.onError((i) => w.issues.push(`${i.code}: ${i.message}`));
  t.after(() => client.close());
  return w;
}

const settled = (w: Watched) =>
  w.events.some(
    (e) =>
      e.event.kind === "receipt" && (e.event.receipt as { state?: string }).state === "settled",
  );

/** The ids in order, then the whole events: equal lists mean no gap, duplicate or change. */
function assertSameStream(seen: StreamEvent[], expected: StreamEvent[]): void {
  assert.deepEqual(
    seen.map((e) => e.id),
    expected.map((e) => e.id),
  );
  assert.deepEqual(seen, expected);
}

describe("EventStream's replay buffer", () => {
  it("replays the events after a point, as the very lines broadcast", () => {
    const s = new EventStream("se-a");
    const lines = [1, 2, 3].map((n) => s.next({ kind: "text-delta", delta: `d${n}` }).line);
    const plan = s.plan("se-a", 1);
    assert.ok(plan.ok);
    assert.deepEqual(plan, {
      ok: true,
      streamEpoch: "se-a",
      fromSequence: 2,
      toSequence: 3,
      lines: lines.slice(1),
    });
    // Up to date: an empty range, toSequence = fromSequence - 1.
    const none = s.plan("se-a", 3);
    assert.ok(none.ok);
    assert.equal(none.fromSequence, 4);
    assert.equal(none.toSequence, 3);
    assert.deepEqual(none.lines, []);
  });

  it("says why it cannot: another epoch, older than kept, ahead of the stream", () => {
    const s = new EventStream("se-a", { maxEvents: 3 });
    for (let n = 0; n < 5; n++) s.next({ kind: "text-delta", delta: "x" });
    assert.equal(s.firstKept, 3);
    assert.deepEqual(s.kept.events, 3);
    const reasons = [s.plan("se-b", 0), s.plan("se-a", 1), s.plan("se-a", 6)].map((p) =>
      p.ok ? "ok" : p.reason,
    );
    assert.deepEqual(reasons, ["another-epoch", "older-than-kept", "ahead-of-stream"]);
    // The oldest kept event is still replayable: a client that saw 2 gets 3, 4, 5.
    const plan = s.plan("se-a", 2);
    assert.ok(plan.ok);
    assert.equal(plan.lines.length, 3);
    assert.ok(plan.lines[0]?.includes('"sequence":3'));
  });

  it("drops the oldest events once the bytes pass the bound, and counts them exactly", () => {
    const s = new EventStream("se-a", { maxBytes: 1000 });
    const line = s.next({ kind: "text-delta", delta: "y".repeat(300) }).line;
    const size = Buffer.byteLength(line);
    for (let n = 0; n < 9; n++) s.next({ kind: "text-delta", delta: "y".repeat(300) });
    assert.equal(s.kept.events, Math.floor(1000 / size));
    const kept = s.plan("se-a", s.firstKept - 1);
    assert.ok(kept.ok);
    const bytes = kept.lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
    assert.equal(s.kept.bytes, bytes);
    assert.ok(bytes <= 1000 && bytes + size > 1000, `${bytes} bytes kept`);
    // Many more than the count bound: the array is compacted, the figures stay exact.
    const c = new EventStream("se-c", { maxEvents: 5 });
    for (let n = 0; n < 5000; n++) c.next({ kind: "text-delta", delta: "z" });
    assert.equal(c.kept.events, 5);
    assert.equal(c.firstKept, 4996);
    const plan = c.plan("se-c", 4995);
    assert.ok(plan.ok && plan.lines.length === 5 && plan.lines[4]?.includes('"sequence":5000'));
  });
});

describe("hello's resume on the wire", () => {
  it("parses a resume and refuses a malformed one", () => {
    const ok = parseClientMessage(
      JSON.stringify({
        type: "hello",
        protocol: 2,
        grant: "g-op",
        resume: { streamEpoch: "se-1", afterSequence: 4 },
      }),
    );
    assert.deepEqual(ok, {
      ok: true,
      message: {
        type: "hello",
        protocol: 2,
        grant: "g-op",
        resume: { streamEpoch: "se-1", afterSequence: 4 },
      },
    });
    for (const resume of [
      { streamEpoch: "se-1" },
      { streamEpoch: "se-1", afterSequence: -1 },
      { streamEpoch: "se 1", afterSequence: 1 },
      { streamEpoch: "se-1", afterSequence: 1, extra: true },
      "se-1.4",
    ]) {
      const bad = parseClientMessage(
        JSON.stringify({ type: "hello", protocol: 2, grant: "g-op", resume }),
      );
      assert.deepEqual(bad, {
        ok: false,
        reason: "hello's resume is { streamEpoch, afterSequence }",
      });
    }
  });

  it("maps an event id (an SSE Last-Event-ID) to a resume point", () => {
    assert.deepEqual(parseEventId("se-51c0.13"), { streamEpoch: "se-51c0", afterSequence: 13 });
    assert.deepEqual(parseEventId("se-a.b.7"), { streamEpoch: "se-a.b", afterSequence: 7 });
    assert.equal(parseEventId("se-51c0"), null);
    assert.equal(parseEventId("se-51c0.x"), null);
    assert.equal(parseEventId(".7"), null);
  });

  it("welcomes a resume with a range and the same bytes, or says why not", T, async (t) => {
    const { ctl } = await startController(t, { replay: { maxEvents: 4 } });
    const epoch = ctl.execution?.stream.epoch;
    assert.ok(epoch);
    // A live client collects the raw lines of a run.
    const live = await rawClient(t, ctl.socketPath);
    live.write({ type: "hello", protocol: 2, grant: "g-op" });
    await live.until((l) => l.includes('"type":"welcome"'), "welcome");
    live.write({
      type: "request",
      id: "t1",
      op: "takeover",
      generation: 1,
      incarnation: ctl.execution?.incarnation,
    });
    await live.until((l) => l.includes('"id":"t1"'), "takeover reply");
    live.write({
      type: "request",
      id: "p1",
      op: "prompt",
      text: "hi",
      draft: { id: "d-1", revision: 1 },
      generation: 2,
      incarnation: ctl.execution?.incarnation,
    });
    await live.until((l) => l.includes('"state":"settled"'), "settled receipt");
    const events = live.lines.filter((l) => l.startsWith('{"type":"event"'));
    const last = events.length;
    assert.ok(last > 4, `a run streams more than the 4 kept: ${last}`);

    // Within what is kept: the welcome names the range, the lines follow, byte for byte.
    const back = await rawClient(t, ctl.socketPath);
    back.write({
      type: "hello",
      protocol: 2,
      grant: "g-op",
      resume: { streamEpoch: epoch, afterSequence: last - 2 },
    });
    await back.until(() => back.lines.length >= 3, "welcome and two events");
    const welcome = JSON.parse(back.lines[0] ?? "{}") as Record<string, unknown>;
    assert.deepEqual(welcome.replay, {
      streamEpoch: epoch,
      fromSequence: last - 1,
      toSequence: last,
    });
    assert.deepEqual(back.lines.slice(1), events.slice(-2));

    // Why not: older than kept, another epoch, ahead of the stream. Nothing is replayed.
    const cases: [Record<string, unknown>, string][] = [
      [{ streamEpoch: epoch, afterSequence: 1 }, "older-than-kept"],
      [{ streamEpoch: "se-gone", afterSequence: 1 }, "another-epoch"],
      [{ streamEpoch: epoch, afterSequence: last + 5 }, "ahead-of-stream"],
    ];
    for (const [resume, reason] of cases) {
      const c = await TestClient.connect(t, ctl.socketPath);
      c.raw(`${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op", resume })}\n`);
      const w = await c.waitFor((m) => m.type === "welcome", "welcome");
      assert.equal(w.replay, "unavailable");
      assert.equal(w.replayReason, reason);
      assert.ok(typeof w.replayMessage === "string" && w.replayMessage.length > 0);
      const obs = await c.request({ op: "observe" });
      assert.equal(obs.outcome, "admitted");
      assert.ok(!c.messages.some((m) => m.type === "event"), `${reason}: nothing replayed`);
    }

    // A hello without resume is welcomed as before: no replay field, no events.
    const plain = await TestClient.welcomed(t, ctl.socketPath);
    assert.equal("replay" in plain.welcome, false);
    // A malformed resume is refused `malformed` and the connection stays unwelcomed.
    const bad = await TestClient.connect(t, ctl.socketPath);
    bad.raw(
      `${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op", resume: { streamEpoch: epoch } })}\n`,
    );
    const refused = await bad.waitFor((m) => m.type === "reply", "refusal");
    assert.equal(refused.outcome, "refused:malformed");
  });

  it("an observe seam says whether replay covers the cut", T, async (t) => {
    const { ctl } = await startController(t, { replay: { maxEvents: 2 } });
    const a = watch(t, ctl.socketPath);
    await a.client.connect();
    const first = await a.client.observe();
    assert.ok(first.outcome === "admitted");
    // Nothing streamed yet: the seam's cut (after sequence 0) is covered.
    assert.equal(first.seam.replay, "available");
    await a.client.takeover();
    const p = await a.client.prompt("hi");
    assert.equal(p.outcome, "admitted");
    await until(() => settled(a), "the run settled");
    const second = await a.client.observe();
    assert.ok(second.outcome === "admitted");
    assert.equal(second.seam.replay, "available");
    assert.equal(second.seam.fromSequence, a.events.length + 1);
    // A client resuming at an old seam is older than the two kept: the controller says so.
    const late = watch(t, ctl.socketPath, {
      resume: { streamEpoch: first.seam.streamEpoch, afterSequence: first.seam.fromSequence - 1 },
    });
    const w = await late.client.connect();
    assert.equal(w.replay, "unavailable");
    assert.equal(w.replayReason, "older-than-kept");
    // It joins the live stream where it is now.
    assert.deepEqual(late.client.position, {
      streamEpoch: first.seam.streamEpoch,
      afterSequence: a.events.length,
    });
  });
});

type DropPoint = { point: HoldPoint; n: number; what: string };
const DROP_POINTS: DropPoint[] = [
  { point: "run-start", n: 1, what: "before the run starts" },
  { point: "assistant-delta", n: 1, what: "before the first delta" },
  { point: "assistant-delta", n: 2, what: "between the first and second delta" },
  { point: "assistant-delta", n: 3, what: "between the second and third delta" },
  { point: "assistant-end", n: 1, what: "after the last delta" },
  { point: "settled", n: 1, what: "between run-ended and run-settled" },
];

/**
 * A controller whose fake-pi holds at `point` #n; A (the controller) never drops, B observes
 * through a tap (every line schema-checked) with automatic reconnect.
 */
async function dropScene(t: TestContext, { point, n }: DropPoint) {
  const { ctl, f } = await startController(t, { script: { holds: [point] } });
  const tap = await tapController(t, ctl.socketPath, join(f.root, "tap.sock"));
  const a = watch(t, ctl.socketPath);
  const b = watch(t, tap.path, { reconnect: { delaysMs: [10, 20, 50, 100] } });
  await a.client.connect();
  await b.client.connect();
  assert.equal((await a.client.takeover()).outcome, "admitted");
  // Every earlier hold of this point is let go; the n-th is where B drops.
  for (let k = 1; k < n; k++) {
    const h = holdPoint(f, point, k);
    void h.reached.then(h.release, () => undefined);
  }
  const held = holdPoint(f, point, n);
  const prompted = a.client.prompt(PROMPT);
  await held.reached;
  await until(() => b.events.length === a.events.length, "B caught up before the drop");
  // Later holds of the same point (another delta) go on at once.
  for (let k = n + 1; k <= n + 8; k++) {
    const h = holdPoint(f, point, k, 20_000);
    void h.reached.then(h.release, () => undefined);
    // Most of these never come: their waits end with the test, not 20 s later.
    t.after(h.cancel);
  }
  return { ctl, f, tap, a, b, held, prompted };
}

describe("a client dropped mid-run and resumed sees what a client that never dropped saw", () => {
  for (const dp of DROP_POINTS) {
    it(
      `drops ${dp.what} (${dp.point} #${dp.n}), misses the rest of the run, resumes`,
      T,
      async (t) => {
        const { a, b, held, prompted } = await dropScene(t, dp);
        await b.client.close(); // away for the rest of the run
        held.release();
        assert.equal((await prompted).outcome, "admitted");
        await until(() => settled(a), "A saw the receipt settle");
        const before = b.events.length;
        assert.ok(before < a.events.length, "B missed events while away");
        const w = await b.client.connect(); // resumes from its last event
        assert.deepEqual(w.replay, {
          streamEpoch: a.events[0]?.streamEpoch,
          fromSequence: before + 1,
          toSequence: a.events.length,
        });
        await until(() => b.events.length >= a.events.length, "B replayed");
        assertSameStream(b.events, a.events);
        assert.deepEqual(b.issues, []);
      },
    );

    it(
      `drops ${dp.what} (${dp.point} #${dp.n}) and comes back mid-run: replay, then live`,
      T,
      async (t) => {
        const { a, b, tap, held, prompted } = await dropScene(t, dp);
        const welcomes: unknown[] = [];
        b.client.onState(() => welcomes.push(b.client.welcome));
        tap.drop(); // a network drop: B reconnects by itself while the engine is held
        await until(() => b.client.connected && welcomes.length > 0, "B reconnected");
        assert.equal(b.client.welcome?.replay !== "unavailable", true);
        held.release();
        assert.equal((await prompted).outcome, "admitted");
        await until(() => settled(a) && settled(b), "both saw the receipt settle");
        await until(() => b.events.length >= a.events.length, "B has every event");
        assertSameStream(b.events, a.events);
        assert.deepEqual(b.issues, []);
      },
    );
  }

  it("keeps no gap or duplicate across many drops while events stream", T, async (t) => {
    const { ctl, f } = await startController(t, { script: { tickMs: 3 } });
    const tap = await tapController(t, ctl.socketPath, join(f.root, "tap.sock"));
    const a = watch(t, ctl.socketPath);
    const b = watch(t, tap.path, { reconnect: { delaysMs: [0, 5, 10, 50, 100] } });
    await a.client.connect();
    await b.client.connect();
    await a.client.takeover();
    assert.equal((await a.client.prompt("slow stream")).outcome, "admitted");
    // Cut B's socket ten times as deltas stream, each once it is back.
    for (let k = 0; k < 10; k++) {
      await until(() => b.client.connected, `B back after drop ${k}`);
      const seen = a.events.length;
      await until(() => a.events.length > seen + 3, "more deltas");
      tap.drop();
    }
    await until(() => b.client.connected, "B back after the last drop");
    assert.equal((await a.client.interrupt()).outcome, "admitted");
    await until(() => settled(a) && settled(b), "both saw the receipt settle");
    await until(() => b.events.length >= a.events.length, "B has every event");
    assertSameStream(b.events, a.events);
  });

  it("Transcript over an auto-reconnecting client shows no seam after a drop", T, async (t) => {
    const { a, b, tap, held, prompted } = await dropScene(t, {
      point: "assistant-delta",
      n: 2,
      what: "",
    });
    const viewA = new Transcript({ client: a.client });
    const viewB = new Transcript({ client: b.client });
    t.after(() => {
      viewA.close();
      viewB.close();
    });
    // Count each client's page reads: the drop must cost B no read that A (never dropped)
    // did not make too (both re-read once the run settles after a cut that was not quiet).
    const reads = { a: 0, b: 0 };
    for (const [k, c] of [
      ["a", a.client],
      ["b", b.client],
    ] as const) {
      const observe = c.observe.bind(c);
      c.observe = (o) => {
        reads[k]++;
        return observe(o);
      };
    }
    await until(() => viewB.state.seam !== null && !viewB.reading, "B's first page");
    await until(() => viewA.state.seam !== null && !viewA.reading, "A's first page");
    tap.drop();
    await until(() => b.client.connected && b.client.welcome?.replay !== undefined, "B back");
    assert.equal(b.client.welcome?.replay === "unavailable", false);
    held.release();
    await prompted;
    await until(() => settled(a) && settled(b), "both saw the receipt settle");
    await until(() => b.events.length >= a.events.length, "B has every event");
    await until(() => !viewA.reading && !viewB.reading, "no reads in flight");
    assert.deepEqual(reads, { a: reads.a, b: reads.a }, "the reconnect read no page");
    const kinds = viewB.items().map((i) => i.kind);
    assert.ok(!kinds.includes("seam"), kinds.join(","));
    assert.deepEqual(viewB.items(), viewA.items());
  });
});

/** A raw socket client that keeps each line exactly as received. */
async function rawClient(t: TestContext, path: string) {
  const socket: Socket = createConnection(path);
  t.after(() => socket.destroy());
  await new Promise<void>((ok, fail) => {
    socket.once("connect", ok);
    socket.once("error", fail);
  });
  const lines: string[] = [];
  const splitter = new LineSplitter();
  socket.on("data", (chunk: Buffer) => lines.push(...splitter.push(chunk)));
  return {
    lines,
    write: (v: unknown) => socket.write(`${JSON.stringify(v)}\n`),
    until: (cond: (line: string) => boolean, what: string) =>
      until(() => lines.some(cond), what, DEADLINE_MS),
  };
}

describe("automatic reconnect", () => {
  it(
    "gives up after its delays with a reconnect-failed issue, and close() cancels it",
    T,
    async (t) => {
      const { ctl } = await startController(t);
      const b = watch(t, ctl.socketPath, { reconnect: { delaysMs: [10, 10, 10] } });
      const c = watch(t, ctl.socketPath, { reconnect: { delaysMs: [10_000] } });
      await b.client.connect();
      await c.client.connect();
      const closes: boolean[] = [];
      b.client.onClose(() => closes.push(b.client.reconnecting));
      await ctl.stop(); // the socket goes away for good
      await until(() => b.issues.length > 0, "B gave up");
      assert.deepEqual(closes, [true], "the close listener already saw the reconnect coming");
      assert.match(b.issues[0] ?? "", /^reconnect-failed: gave up reconnecting after 3 attempts/);
      assert.equal(b.client.reconnecting, false);
      await until(() => c.client.reconnecting, "C waits to reconnect");
      await c.client.close();
      assert.equal(c.client.reconnecting, false, "close() cancels the pending attempt");
    },
  );
});

describe("replay and the slow-client limit", () => {
  it(
    "caps the kept bytes at half of maxQueuedBytes, so a whole replay never trips it",
    T,
    async (t) => {
      const maxQueuedBytes = 64 * 1024;
      const { ctl } = await startController(t, { maxQueuedBytes, script: { tickMs: 1 } });
      const a = watch(t, ctl.socketPath);
      await a.client.connect();
      await a.client.takeover();
      assert.equal((await a.client.prompt("slow ticks")).outcome, "admitted");
      const stream = ctl.execution?.stream;
      assert.ok(stream);
      await until(() => stream.firstKept > 1, "the buffer dropped its oldest events");
      assert.equal((await a.client.interrupt()).outcome, "admitted");
      await until(() => settled(a), "settled");
      assert.ok(stream.kept.bytes <= maxQueuedBytes / 2, `${stream.kept.bytes} bytes kept`);
      // The oldest kept event on: the whole buffer, written at once after the welcome.
      const c = await rawClient(t, ctl.socketPath);
      c.write({
        type: "hello",
        protocol: 2,
        grant: "g-op",
        resume: { streamEpoch: stream.epoch, afterSequence: stream.firstKept - 1 },
      });
      const owed = stream.kept.events;
      await c.until(() => c.lines.length >= owed + 1, "the whole replay");
      assert.ok(!c.lines.some((l) => l.includes('"refused:channel"')), "not cut as a slow client");
      assert.equal(c.lines.filter((l) => l.startsWith('{"type":"event"')).length, owed);
    },
  );
});
