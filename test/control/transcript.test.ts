import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ConversationClient, ObserveOutcome, Seam } from "../../src/control/client/client.ts";
import {
  Transcript,
  type TranscriptClient,
  type TranscriptItem,
  TranscriptState,
} from "../../src/control/client/transcript.ts";
import type { ControllerState, StreamEvent, Welcome } from "../../src/control/protocol.ts";
import type { Part } from "../../src/protocol/chat-01.ts";
import { renderEntry } from "../../src/reader/harness/pi/blocks.ts";

// ConversationClient is what the terminal passes: it must fit the interface Transcript takes.
const fits = (c: ConversationClient): TranscriptClient => c;
void fits;

const EPOCH = "se-a";

function ev(sequence: number, event: StreamEvent["event"], epoch = EPOCH): StreamEvent {
  return { type: "event", streamEpoch: epoch, sequence, id: `${epoch}.${sequence}`, event };
}

function seam(fromSequence: number, quiet: boolean, streamEpoch = EPOCH): Seam {
  return { replay: "unavailable", streamEpoch, fromSequence, reconcile: true, quiet };
}

function user(id: string, text: string): Part {
  return { id, entry: `n.${id}`, kind: "message", role: "user", blocks: [{ type: "text", text }] };
}

function assistant(id: string, text: string, calls: string[] = []): Part {
  return {
    id,
    entry: `n.${id}`,
    kind: "message",
    role: "assistant",
    blocks: [
      { type: "text", text },
      ...calls.map((c) => ({ type: "tool-call" as const, id: c, name: "bash", text: "{}" })),
    ],
  };
}

function toolResult(id: string, call: string): Part {
  return {
    id,
    entry: `n.${id}`,
    kind: "message",
    role: "toolResult",
    blocks: [
      { type: "tool-result", toolCallId: call, toolName: "bash", isError: false },
      { type: "text", text: "ok" },
    ],
  };
}

const started = (role: string) => ({ kind: "message-started", role });
const delta = (text: string) => ({ kind: "text-delta", delta: text });
const ended = (message: object) => ({
  kind: "message-ended",
  role: (message as { role: string }).role,
  message,
});
const said = (role: "user" | "assistant", text: string) =>
  ended({ role, content: [{ type: "text", text }] });
const answered = (call: string) =>
  ended({ role: "toolResult", toolCallId: call, toolName: "bash", content: "ok", isError: false });

/** One line per item: `page:<text>`, `live:<text>`, `streaming:<text>`, `tool:<id>:<state>`,
 * `seam:<reason>`, `notice:<text>`, `receipt:<reason>`, `act:<actor>:<op>`, `event:<kind>`. */
function lines(items: readonly TranscriptItem[]): string[] {
  return items.map((i) => {
    switch (i.kind) {
      case "part": {
        const text = i.part.blocks.map((b) => (b.type === "text" ? b.text : `[${b.type}]`));
        return `${i.source}:${text.join("")}`;
      }
      case "streaming":
        return `streaming:${i.text}`;
      case "tool":
        return `tool:${i.toolCallId}:${i.state}`;
      case "seam":
        return `seam:${i.reason}`;
      case "notice":
        return `notice:${i.text}`;
      case "receipt":
        return `receipt:${i.reason}`;
      case "act":
        return `act:${i.actor}:${i.op}`;
      case "event":
        return `event:${i.eventKind}`;
      default: {
        const never: never = i;
        throw new Error(`unknown item ${JSON.stringify(never)}`);
      }
    }
  });
}

function apply(s: TranscriptState, events: StreamEvent[]): string[] {
  return events.flatMap((e) => s.applyEvent(e).map((a) => a.reason));
}

describe("TranscriptState", () => {
  it("E1: shows the page and every event from fromSequence, with no marker, when the cut is quiet", () => {
    const s = new TranscriptState();
    // Events before the first page wait for it; those the page covers are dropped.
    assert.deepEqual(
      apply(s, [ev(3, said("user", "covered")), ev(4, { kind: "run-settled" })]),
      [],
    );
    assert.deepEqual(apply(s, [ev(5, started("user"))]), []);
    assert.deepEqual(lines(s.items()), []);
    assert.deepEqual(
      s.applyPage({ parts: [user("u1", "hi"), assistant("a1", "hello")] }, seam(5, true)),
      [],
    );
    assert.equal(s.held, 0);
    const actions = apply(s, [
      ev(6, said("user", "next")),
      ev(7, { kind: "run-started" }),
      ev(8, started("assistant")),
      ev(9, delta("Hel")),
    ]);
    assert.deepEqual(actions, []);
    assert.equal(s.running, true);
    assert.deepEqual(lines(s.items()), ["page:hi", "page:hello", "live:next", "streaming:Hel"]);
    apply(s, [ev(10, delta("lo"))]);
    assert.deepEqual(lines(s.items()).at(-1), "streaming:Hello");
    const after = apply(s, [
      ev(11, said("assistant", "Hello")),
      ev(12, { kind: "run-ended", willRetry: false }),
      ev(13, { kind: "run-settled" }),
    ]);
    // A quiet cut missed nothing: a settled run needs no second read.
    assert.deepEqual(after, []);
    assert.equal(s.wantsRead, false);
    assert.equal(s.running, false);
    assert.deepEqual(lines(s.items()), ["page:hi", "page:hello", "live:next", "live:Hello"]);
  });

  it("E2: puts a reconcile marker at the seam when the cut is not quiet", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [user("u1", "hi")] }, seam(7, false));
    assert.equal(s.running, true);
    apply(s, [ev(7, started("assistant")), ev(8, delta("partial"))]);
    assert.deepEqual(lines(s.items()), ["page:hi", "seam:reconcile", "streaming:partial"]);
    const marker = s.items()[1];
    assert.equal(
      marker?.kind === "seam" && marker.detail.includes("may repeat or be missing"),
      true,
    );
    // Only the run settling asks for a read: a run ending with a retry to come does not.
    assert.deepEqual(apply(s, [ev(9, { kind: "run-ended", willRetry: true })]), []);
  });

  it("E3: a sequence gap marks the seam, re-reads at once and holds the events past it", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [user("u1", "hi")] }, seam(1, true));
    apply(s, [ev(1, started("assistant")), ev(2, delta("Hel"))]);
    assert.deepEqual(apply(s, [ev(4, delta("XYZ"))]), ["gap"]);
    assert.equal(s.wantsRead, true);
    // Held, never concatenated onto the message before the gap.
    assert.deepEqual(apply(s, [ev(5, delta("!")), ev(6, said("assistant", "HelloXYZ!"))]), []);
    assert.equal(s.held, 3);
    assert.deepEqual(lines(s.items()), ["page:hi", "streaming:Hel", "seam:gap"]);
    // A page read before event 3 was sent still leaves the hole: read again.
    s.beginRead();
    assert.deepEqual(
      s.applyPage({ parts: [user("u1", "hi")] }, seam(2, false)).map((a) => a.reason),
      ["gap"],
    );
    assert.deepEqual(lines(s.items()), ["page:hi", "seam:reconcile", "streaming:Hel", "seam:gap"]);
    // The next page covers the missing event: the held ones after it apply, the marker goes.
    s.beginRead();
    const parts = [user("u1", "hi")];
    assert.deepEqual(s.applyPage({ parts }, seam(4, true)), []);
    assert.equal(s.held, 0);
    // Event 6 ends the message that events 4 and 5 streamed: it takes the streaming item's place.
    assert.deepEqual(lines(s.items()), ["page:hi", "live:HelloXYZ!"]);
  });

  it("E3: a new stream epoch marks the seam and re-reads at once", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [user("u1", "hi")] }, seam(1, true));
    apply(s, [ev(1, said("user", "one"))]);
    assert.deepEqual(apply(s, [ev(1, said("user", "relaunched"), "se-b")]), ["new-epoch"]);
    assert.deepEqual(lines(s.items()), ["page:hi", "live:one", "seam:new-epoch"]);
    apply(s, [ev(2, said("assistant", "two"), "se-b")]);
    s.beginRead();
    // The new execution's page covers its first event; the second follows it.
    const page = { parts: [user("u1", "hi"), user("u2", "one"), user("u3", "relaunched")] };
    assert.deepEqual(s.applyPage(page, seam(2, true, "se-b")), []);
    assert.deepEqual(lines(s.items()), ["page:hi", "page:one", "page:relaunched", "live:two"]);
  });

  it("E3: a repeated event id with different bytes marks the seam and re-reads at once", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, true));
    apply(s, [ev(1, started("assistant")), ev(2, delta("Hel"))]);
    assert.deepEqual(apply(s, [ev(2, delta("Jel"))]), ["changed-repeat"]);
    assert.deepEqual(lines(s.items()), ["streaming:Hel", "seam:changed-repeat"]);
    apply(s, [ev(3, delta("lo"))]);
    assert.deepEqual(lines(s.items()), ["streaming:Hel", "seam:changed-repeat"]);
    // A page whose seam is at or before the conflict cannot settle it.
    s.beginRead();
    assert.deepEqual(
      s.applyPage({ parts: [] }, seam(2, false)).map((a) => a.reason),
      ["changed-repeat"],
    );
    s.beginRead();
    assert.deepEqual(s.applyPage({ parts: [assistant("a1", "Hello")] }, seam(4, true)), []);
    assert.deepEqual(lines(s.items()), ["page:Hello"]);
  });

  it("E3: an identical repeat is dropped", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, true));
    apply(s, [ev(1, started("assistant")), ev(2, delta("Hel"))]);
    const version = s.version;
    assert.deepEqual(apply(s, [ev(2, delta("Hel")), ev(1, started("assistant"))]), []);
    assert.equal(s.version, version);
    assert.equal(s.held, 0);
    apply(s, [ev(3, delta("lo"))]);
    assert.deepEqual(lines(s.items()), ["streaming:Hello"]);
  });

  it("E4: re-reads after the next run-settled and clears the marker once a read is quiet", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [user("u1", "hi")] }, seam(3, false));
    assert.deepEqual(apply(s, [ev(3, said("assistant", "hello"))]), []);
    assert.deepEqual(apply(s, [ev(4, { kind: "run-settled" })]), ["run-settled"]);
    assert.equal(s.wantsRead, true);
    // That read found another run active: the marker stays until a read is quiet.
    s.beginRead();
    assert.deepEqual(
      s.applyPage({ parts: [user("u1", "hi"), assistant("a1", "hello")] }, seam(5, false)),
      [],
    );
    assert.equal(s.wantsRead, false);
    assert.deepEqual(lines(s.items()), ["page:hi", "page:hello", "seam:reconcile"]);
    assert.deepEqual(apply(s, [ev(5, { kind: "run-settled" })]), ["run-settled"]);
    s.beginRead();
    assert.deepEqual(
      s.applyPage({ parts: [user("u1", "hi"), assistant("a1", "hello")] }, seam(6, true)),
      [],
    );
    assert.deepEqual(lines(s.items()), ["page:hi", "page:hello"]);
    assert.deepEqual(apply(s, [ev(6, { kind: "run-settled" })]), []);
  });

  it("E4: a run-settled that arrives while the page is read is applied after it", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, false));
    s.beginRead();
    // Arrives before the reply: it follows the new page, so the new page asks for a read.
    apply(s, [ev(1, said("assistant", "hello")), ev(2, { kind: "run-settled" })]);
    const actions = s.applyPage({ parts: [] }, seam(2, false));
    assert.deepEqual(
      actions.map((a) => a.reason),
      ["run-settled"],
    );
    assert.equal(s.wantsRead, true);
  });

  it("E5: shows a running tool call until a finished message from the stream carries its result", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, true));
    apply(s, [
      ev(1, { kind: "run-started" }),
      ev(2, ended({ role: "assistant", content: [{ type: "toolCall", id: "c1", name: "bash" }] })),
      ev(3, { kind: "tool-started", toolCallId: "c1", toolName: "bash" }),
    ]);
    assert.deepEqual(lines(s.items()), ["live:[tool-call]", "tool:c1:running"]);
    apply(s, [ev(4, { kind: "tool-progress", toolCallId: "c1", toolName: "bash" })]);
    const progress = s.items()[1];
    assert.equal(progress?.kind === "tool" && progress.updates, 1);
    apply(s, [ev(5, { kind: "tool-ended", toolCallId: "c1", toolName: "bash", isError: false })]);
    assert.deepEqual(lines(s.items()), ["live:[tool-call]", "tool:c1:ended"]);
    apply(s, [ev(6, started("toolResult")), ev(7, answered("c1"))]);
    assert.deepEqual(lines(s.items()), ["live:[tool-call]", "live:[tool-result]ok"]);
    // A late progress event for a finished call does not bring it back.
    apply(s, [ev(8, { kind: "tool-progress", toolCallId: "c1", toolName: "bash" })]);
    assert.deepEqual(lines(s.items()), ["live:[tool-call]", "live:[tool-result]ok"]);
  });

  it("E5: hides a running tool call once the page carries its result", () => {
    const s = new TranscriptState();
    // Read mid-run: the page's last reply calls c2 and c3, not yet answered.
    s.applyPage({ parts: [user("u1", "go"), assistant("a1", "", ["c2", "c3"])] }, seam(4, false));
    assert.deepEqual(lines(s.items()), [
      "page:go",
      "page:[tool-call][tool-call]",
      "seam:reconcile",
      "tool:c2:running",
      "tool:c3:running",
    ]);
    apply(s, [ev(4, { kind: "tool-ended", toolCallId: "c2", toolName: "bash", isError: true })]);
    const c2 = s.items()[3];
    assert.equal(c2?.kind === "tool" && c2.state === "ended" && c2.isError, true);
    // A gap: the next page carries c2's result; c3 still runs, carried across the read.
    apply(s, [ev(6, { kind: "tool-progress", toolCallId: "c3", toolName: "bash" })]);
    s.beginRead();
    const parts = [user("u1", "go"), assistant("a1", "", ["c2", "c3"]), toolResult("r2", "c2")];
    s.applyPage({ parts }, seam(6, false));
    assert.deepEqual(lines(s.items()), [
      "page:go",
      "page:[tool-call][tool-call]",
      "page:[tool-result]ok",
      "seam:reconcile",
      "tool:c3:running",
    ]);
    // A quiet page: nothing runs, so nothing shows as running.
    s.beginRead();
    s.applyPage({ parts: [...parts, toolResult("r3", "c3")] }, seam(9, true));
    assert.deepEqual(
      lines(s.items()).filter((l) => l.startsWith("tool:")),
      [],
    );
  });

  it("E6: thinking_level_change never appears", () => {
    // The page: the reader never renders the entry.
    assert.equal(
      renderEntry({ type: "thinking_level_change", id: "t1", thinkingLevel: "high" }),
      null,
    );
    const s = new TranscriptState();
    s.applyPage({ parts: [user("u1", "hi")] }, seam(1, true));
    apply(s, [
      ev(1, { kind: "native", eventType: "thinking_level_changed" }),
      ev(2, { kind: "thinking_level_change", level: "high" }),
      ev(3, { kind: "thinking-level-changed", level: "high" }),
      ev(4, { kind: "brand-new-kind" }),
    ]);
    // An unknown kind shows generically; the setting change in no spelling does.
    assert.deepEqual(lines(s.items()), ["page:hi", "event:brand-new-kind"]);
  });

  it("hides a receipt settled completed and shows another settle reason compactly", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, true));
    const receipt = (state: string, reason?: string) => ({
      kind: "receipt",
      receipt: { id: "rc-1", request: "q-1", execution: "ex-1", generation: 1, state, reason },
    });
    apply(s, [
      ev(1, receipt("admitted")),
      ev(2, { kind: "run-started" }),
      ev(3, said("assistant", "done")),
      ev(4, receipt("settled", "completed")),
      ev(5, { kind: "run-settled" }),
      ev(6, receipt("settled", "interrupted")),
      ev(7, { kind: "run-settled" }),
      ev(8, { kind: "receipt", receipt: "not an object" }),
    ]);
    // Never the generic `[event receipt]`; only the reason that is not `completed` shows.
    assert.deepEqual(lines(s.items()), ["live:done", "receipt:interrupted"]);
    assert.equal(s.running, false);
  });

  it("E3: reads again when another epoch's event arrives while the page is read", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, true));
    apply(s, [ev(1, said("user", "old"))]);
    s.beginRead();
    // The relaunch's first event comes before the reply: the page may predate it.
    apply(s, [ev(1, said("user", "new"), "se-b")]);
    const actions = s.applyPage({ parts: [user("u1", "old")] }, seam(2, true));
    assert.deepEqual(
      actions.map((a) => a.reason),
      ["new-epoch"],
    );
    assert.deepEqual(lines(s.items()), ["page:old", "seam:new-epoch"]);
    s.beginRead();
    assert.deepEqual(s.applyPage({ parts: [user("u1", "old")] }, seam(1, true, "se-b")), []);
    assert.deepEqual(lines(s.items()), ["page:old", "live:new"]);
  });

  it("keeps a notice from the engine and says when a read failed", () => {
    const s = new TranscriptState();
    s.applyPage({ parts: [] }, seam(1, true));
    apply(s, [ev(1, { kind: "engine-notice", method: "notify", message: "\x1b]0;title\x07" })]);
    s.readFailed("not admitted: channel: not connected");
    assert.deepEqual(lines(s.items()), ["notice:\x1b]0;title\x07", "seam:read-failed"]);
    s.applyPage({ parts: [] }, seam(1, true));
    assert.deepEqual(lines(s.items()), ["notice:\x1b]0;title\x07"]);
  });
});

type Pending = { options: { cursor?: string }; resolve: (o: ObserveOutcome) => void };

/** A client whose observe requests the test answers one by one. */
class FakeClient implements TranscriptClient {
  welcome: Welcome | null = null;
  connected = false;
  readonly requests: Pending[] = [];
  readonly #events = new Set<(e: StreamEvent) => void>();
  readonly #states = new Set<(s: ControllerState) => void>();

  observe(options: { cursor?: string } = {}): Promise<ObserveOutcome> {
    return new Promise((resolve) => this.requests.push({ options, resolve }));
  }

  onEvent(fn: (e: StreamEvent) => void): () => void {
    this.#events.add(fn);
    return () => this.#events.delete(fn);
  }

  onState(fn: (s: ControllerState) => void): () => void {
    this.#states.add(fn);
    return () => this.#states.delete(fn);
  }

  connect(connection: string): void {
    const state: ControllerState = {
      incarnation: "in-1",
      execution: "ex-1",
      generation: 1,
      controllerConnection: null,
      admission: "open",
      binding: "bound",
    };
    this.welcome = {
      type: "welcome",
      protocol: 2,
      connection,
      role: "observer",
      conversation: "c-1",
      state,
    };
    this.connected = true;
    for (const fn of this.#states) fn(state);
  }

  state(generation: number): void {
    const state = { ...this.welcome!.state, generation };
    for (const fn of this.#states) fn(state);
  }

  push(e: StreamEvent): void {
    for (const fn of this.#events) fn(e);
  }

  /** The next observe request, waited for turn by turn up to a deadline. */
  async request(): Promise<Pending> {
    const deadline = Date.now() + 2000;
    while (this.requests.length === 0) {
      if (Date.now() > deadline) throw new Error("no observe request");
      await new Promise((r) => setImmediate(r));
    }
    return this.requests.shift()!;
  }
}

function admitted(parts: Part[], s: Seam, nextCursor: string | null = null): ObserveOutcome {
  return { outcome: "admitted", seam: s, result: { page: { parts, nextCursor }, seam: s } };
}

/** Waits turn by turn for `ready`, up to a deadline. */
async function until(ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setImmediate(r));
  }
}

async function changed(t: Transcript): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no change")), 2000);
    const off = t.onChange(() => {
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}

describe("Transcript", () => {
  it("E7: reads the page on every welcome, follows its cursors and re-reads when the seam asks", async () => {
    const client = new FakeClient();
    const t = new Transcript({ client });
    assert.equal(client.requests.length, 0);
    client.connect("cn-1");
    // The whole branch: the first page's seam, then every cursor page.
    const first = await client.request();
    assert.deepEqual(first.options, {});
    client.push(ev(5, said("user", "early")));
    first.resolve(admitted([user("u1", "hi")], seam(5, true), "cur-1"));
    const second = await client.request();
    assert.deepEqual(second.options, { cursor: "cur-1" });
    let shown = changed(t);
    second.resolve(admitted([assistant("a1", "hello")], seam(9, false)));
    await shown;
    assert.deepEqual(lines(t.items()), ["page:hi", "page:hello", "live:early"]);
    // A state message is not a welcome: no read.
    client.state(2);
    // A gap asks for a read at once.
    shown = changed(t);
    client.push(ev(7, said("user", "late")));
    await shown;
    assert.deepEqual(lines(t.items()), ["page:hi", "page:hello", "live:early", "seam:gap"]);
    const third = await client.request();
    shown = changed(t);
    third.resolve(
      admitted([user("u1", "hi"), assistant("a1", "hello"), user("u2", "late")], seam(8, true)),
    );
    await shown;
    assert.deepEqual(lines(t.items()), ["page:hi", "page:hello", "page:late"]);
    assert.equal(t.reading, false);
    // A reconnect is a new welcome: read again.
    client.connect("cn-2");
    const fourth = await client.request();
    shown = changed(t);
    fourth.resolve({ outcome: "unknown", request: "q-9", message: "the socket closed" });
    await shown;
    const last = t.items().at(-1);
    assert.equal(last?.kind === "seam" && last.reason, "read-failed");
    assert.equal(
      last?.kind === "seam" && last.detail.startsWith("outcome unknown, check the transcript"),
      true,
    );
    assert.equal(client.requests.length, 0);
    t.close();
    client.push(ev(8, said("user", "after close")));
    assert.equal(lines(t.items()).includes("live:after close"), false);
  });

  it("E7: reads once more when a welcome or Ctrl-O comes while a read is in flight", async () => {
    const client = new FakeClient();
    client.connect("cn-1");
    const t = new Transcript({ client });
    const first = await client.request();
    const done = t.reread();
    first.resolve(admitted([user("u1", "old")], seam(1, true)));
    const second = await client.request();
    second.resolve(admitted([user("u1", "new")], seam(1, true)));
    await done;
    assert.deepEqual(lines(t.items()), ["page:new"]);
    assert.equal(client.requests.length, 0);
  });

  it("gives up after reads in a row that leave the hole open, and on too many pages", async () => {
    const client = new FakeClient();
    const t = new Transcript({ client, maxPages: 2 });
    client.connect("cn-1");
    (await client.request()).resolve(admitted([], seam(1, true)));
    await changed(t);
    // Event 3 stays past a gap whatever the page says: the controller is broken.
    client.push(ev(3, said("user", "x")));
    for (let n = 0; n < 10; n++) (await client.request()).resolve(admitted([], seam(1, true)));
    await until(() => t.items().some((i) => i.kind === "seam" && i.reason === "read-failed"));
    let last = t.items().at(-1);
    assert.equal(
      last?.kind === "seam" && last.detail,
      "the page and the stream disagreed 10 reads in a row",
    );
    assert.equal(client.requests.length, 0);
    // Ctrl-O reads again: a branch longer than maxPages fails the read instead of growing.
    const done = t.reread();
    (await client.request()).resolve(admitted([user("u1", "a")], seam(4, true), "cur-1"));
    (await client.request()).resolve(admitted([user("u2", "b")], seam(4, true), "cur-2"));
    await done;
    last = t.items().at(-1);
    assert.equal(last?.kind === "seam" && last.detail, "the branch has more than 2 pages");
    assert.equal(client.requests.length, 0);
  });

  it("E7: re-reads after a run settles behind a cut that was not quiet", async () => {
    const client = new FakeClient();
    const t = new Transcript({ client });
    client.connect("cn-1");
    (await client.request()).resolve(admitted([user("u1", "go")], seam(3, false)));
    await changed(t);
    assert.deepEqual(lines(t.items()), ["page:go", "seam:reconcile"]);
    client.push(ev(3, said("assistant", "done")));
    client.push(ev(4, { kind: "run-settled" }));
    const reread = await client.request();
    const shown = changed(t);
    reread.resolve(admitted([user("u1", "go"), assistant("a1", "done")], seam(5, true)));
    await shown;
    assert.deepEqual(lines(t.items()), ["page:go", "page:done"]);
  });
});
