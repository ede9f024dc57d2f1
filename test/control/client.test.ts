import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  type ClientIssue,
  ConnectError,
  ConversationClient,
  type ConversationClientOptions,
  parseControllerMessage,
} from "../../src/control/client/client.ts";
import { encodeLine, LineSplitter } from "../../src/control/engine/framing.ts";
import {
  type ControllerState,
  type Hello,
  parseClientMessage,
  type Request,
} from "../../src/control/protocol.ts";
import { within } from "../helpers/deadline.ts";

const STATE: ControllerState = {
  incarnation: "inc-1",
  execution: "exe-1",
  generation: 1,
  controllerConnection: null,
  admission: "open",
  binding: "bound",
};

type StubConn = {
  socket: Socket;
  hello: Hello | null;
  send(message: unknown): void;
  sendRaw(text: string): void;
};

type Script = {
  /** Answers a hello; the default welcomes `c-<n>` as an observer. */
  onHello?: (hello: Hello, conn: StubConn, n: number) => void;
  /** Answers (or holds) a request. */
  onRequest?: (request: Request, conn: StubConn) => void;
};

/** A scripted controller on a real Unix socket: records every client message it parses. */
async function startStub(t: TestContext, script: Script = {}) {
  const dir = mkdtempSync("/tmp/cc-");
  const path = join(dir, "s.sock");
  const received: Request[] = [];
  const hellos: Hello[] = [];
  const invalid: string[] = [];
  const conns: StubConn[] = [];
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const w of [...waiters]) w();
  };
  const server = createServer((socket) => {
    const splitter = new LineSplitter();
    const conn: StubConn = {
      socket,
      hello: null,
      send: (m) => socket.write(encodeLine(m)),
      sendRaw: (text) => socket.write(text),
    };
    conns.push(conn);
    socket.on("error", () => {
      // The client may reset the connection; the test asserts on what was received instead.
    });
    socket.on("data", (chunk) => {
      for (const line of splitter.push(chunk)) {
        const parsed = parseClientMessage(line);
        if (!parsed.ok) {
          invalid.push(`${parsed.reason}: ${line}`);
        } else if (parsed.message.type === "hello") {
          conn.hello = parsed.message;
          hellos.push(parsed.message);
          const n = conns.indexOf(conn) + 1;
          if (script.onHello) script.onHello(parsed.message, conn, n);
          else welcome(conn, `c-${n}`);
        } else {
          received.push(parsed.message);
          script.onRequest?.(parsed.message, conn);
        }
        changed();
      }
    });
    changed();
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.after(async () => {
    for (const c of conns) c.socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    path,
    received,
    hellos,
    invalid,
    conns,
    /** Resolves once `cond` holds, checked after each message; rejects at the deadline. */
    until(cond: () => boolean, label: string): Promise<void> {
      return within(
        new Promise<void>((resolve) => {
          const check = () => {
            if (cond()) {
              waiters.delete(check);
              resolve();
            }
          };
          waiters.add(check);
          check();
        }),
        label,
      );
    },
  };
}

function welcome(conn: StubConn, connection: string, state: ControllerState = STATE): void {
  conn.send({
    type: "welcome",
    protocol: 2,
    connection,
    role: "observer",
    conversation: "conv-1",
    state,
  });
}

function admit(conn: StubConn, request: Request, extra: Record<string, unknown> = {}): void {
  conn.send({ type: "reply", id: request.id, outcome: "admitted", ...extra });
}

function receipt(request: Request, generation = 1) {
  return {
    id: `r-${request.id}`,
    request: request.id,
    execution: "exe-1",
    generation,
    state: "admitted",
  };
}

function seam(quiet = true) {
  return { replay: "unavailable", streamEpoch: "ep-1", fromSequence: 4, reconcile: true, quiet };
}

function newClient(
  t: TestContext,
  path: string,
  options: Partial<ConversationClientOptions> = {},
): ConversationClient {
  const client = new ConversationClient({ socketPath: path, grant: "g-1", ...options });
  t.after(() => client.close());
  return client;
}

function issuesOf(client: ConversationClient): ClientIssue[] {
  const issues: ClientIssue[] = [];
  client.onError((i) => issues.push(i));
  return issues;
}

/** Each request id the stub saw, asserting none arrived twice. */
function assertEachOnce(received: readonly Request[]): void {
  const ids = received.map((r) => r.id);
  assert.deepEqual(ids, [...new Set(ids)], "no request was resent");
}

describe("control client", () => {
  it("sends a hello and resolves with the welcome, as an observer", async (t) => {
    const stub = await startStub(t);
    const client = newClient(t, stub.path, { clientName: "test-term" });
    const states: ControllerState[] = [];
    client.onState((s) => states.push(s));
    const w = await within(client.connect(), "connect");
    assert.deepEqual(stub.hellos, [
      { type: "hello", protocol: 2, grant: "g-1", client: "test-term" },
    ]);
    assert.equal(w.connection, "c-1");
    assert.equal(w.role, "observer");
    assert.equal(client.role, "observer");
    assert.equal(client.connected, true);
    assert.deepEqual(client.state, STATE);
    assert.deepEqual(states, [STATE]);
    await assert.rejects(client.connect(), { code: "already-connected" });
  });

  it("reassembles lines written a byte at a time, CRLF, U+2028 and split UTF-8 included", async (t) => {
    const text = "é\u2028€";
    const stub = await startStub(t, {
      onHello: (_h, conn) => {
        const welcomeLine = encodeLine({
          type: "welcome",
          protocol: 2,
          connection: "c-1",
          role: "observer",
          conversation: "conv-1",
          state: STATE,
        });
        const event = {
          type: "event",
          streamEpoch: "ep-1",
          sequence: 0,
          id: "e-0",
          event: { kind: "k", text },
        };
        const bytes = Buffer.from(`${welcomeLine.slice(0, -1)}\r\n${JSON.stringify(event)}\n`);
        for (const b of bytes) conn.socket.write(Buffer.of(b));
      },
    });
    const client = newClient(t, stub.path);
    const got = new Promise<unknown>((resolve) => client.onEvent((e) => resolve(e.event.text)));
    await within(client.connect(), "connect");
    assert.equal(await within(got, "event"), text);
  });

  it("rejects connect clearly when the hello is refused, and stays unconnected", async (t) => {
    const stub = await startStub(t, {
      onHello: (_h, conn) =>
        conn.send({
          type: "reply",
          id: null,
          outcome: "refused:grant",
          refusal: "grant",
          message: "no active grant g-1",
        }),
    });
    const client = newClient(t, stub.path);
    const err = await within(
      client.connect().then(
        () => null,
        (e: unknown) => e,
      ),
      "connect",
    );
    assert.ok(err instanceof ConnectError);
    assert.equal(err.code, "refused");
    assert.equal(err.refusal, "grant");
    assert.match(err.message, /hello refused \(grant\): no active grant g-1/);
    assert.equal(client.connected, false);
    const r = await within(client.prompt("hi"), "prompt");
    assert.equal(r.outcome, "refused:channel");
  });

  it("rejects connect when the first line is not a valid welcome", async (t) => {
    const cases: { send: (c: StubConn) => void; code: string; message: RegExp }[] = [
      { send: (c) => c.sendRaw("{nope\n"), code: "invalid", message: /not JSON/ },
      {
        send: (c) => c.send({ type: "reply", id: null, outcome: "admitted" }),
        code: "invalid",
        message: /expected a welcome, got a reply/,
      },
      {
        send: (c) => c.send({ type: "state", state: STATE }),
        code: "invalid",
        message: /expected a welcome, got a state/,
      },
      {
        send: (c) =>
          c.send({
            type: "welcome",
            protocol: 3,
            connection: "c",
            role: "observer",
            conversation: "v",
            state: STATE,
          }),
        code: "protocol",
        message: /protocol 3/,
      },
      {
        send: (c) =>
          c.send({ type: "welcome", protocol: 2, connection: "c", role: "observer", state: STATE }),
        code: "invalid",
        message: /welcome\.conversation is not an id/,
      },
    ];
    for (const { send, code, message } of cases) {
      const stub = await startStub(t, { onHello: (_h, c) => send(c) });
      const client = newClient(t, stub.path);
      await within(assert.rejects(client.connect(), { name: "ConnectError", code, message }), code);
      assert.equal(client.connected, false);
    }
  });

  it("rejects connect with channel when nothing listens, and with timeout on silence", async (t) => {
    const dir = mkdtempSync("/tmp/cc-");
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const absent = newClient(t, join(dir, "none.sock"));
    await within(
      assert.rejects(absent.connect(), { code: "channel", message: /ENOENT/ }),
      "absent",
    );

    const stub = await startStub(t, { onHello: () => {} });
    const silent = newClient(t, stub.path, { requestTimeoutMs: 100 });
    await within(assert.rejects(silent.connect(), { code: "timeout" }), "silent");
    assert.equal(silent.connected, false);
  });

  it("correlates replies that arrive out of order", async (t) => {
    const held: Request[] = [];
    const stub = await startStub(t, { onRequest: (r) => held.push(r) });
    const client = newClient(t, stub.path);
    await within(client.connect(), "connect");
    const observed = client.observe({ limit: 5 });
    const first = client.prompt("one");
    const second = client.prompt("two");
    await stub.until(() => held.length === 3, "three requests");
    const conn = stub.conns[0]!;
    const [o, p1, p2] = held as [Request, Request, Request];
    admit(conn, p2, { receipt: receipt(p2) });
    conn.send({
      type: "reply",
      id: p1.id,
      outcome: "refused:busy",
      refusal: "busy",
      message: "slot held",
    });
    admit(conn, o, { result: { page: { parts: [] }, limitAdvisory: true, seam: seam(false) } });

    const [ro, r1, r2] = await within(Promise.all([observed, first, second]), "replies");
    assert.deepEqual(ro, {
      outcome: "admitted",
      seam: seam(false),
      result: { page: { parts: [] }, limitAdvisory: true, seam: seam(false) },
    });
    assert.deepEqual(r1, { outcome: "refused:busy", refusal: "busy", message: "slot held" });
    assert.deepEqual(r2, { outcome: "admitted", receipt: receipt(p2) });
    assert.deepEqual(
      held.map((r) => r.id),
      ["q-1", "q-2", "q-3"],
    );
    assert.ok(p1.op === "prompt" && p2.op === "prompt");
    assert.equal(p1.text, "one");
    assert.equal(p1.draft.revision, 1);
    assert.equal(p2.draft.revision, 1);
    assert.notEqual(p1.draft.id, p2.draft.id, "each prompt names a fresh draft");
    assert.deepEqual(stub.invalid, []);
  });

  it("sends the believed generation and incarnation on control requests and follows state", async (t) => {
    const stub = await startStub(t, {
      onRequest: (r, conn) => {
        if (r.op === "takeover") {
          // The state change goes out before the reply, so the next request carries it.
          const state = { ...STATE, generation: 2, controllerConnection: "c-1" };
          conn.send({ type: "state", state });
          admit(conn, r);
        } else if (r.op === "prompt") admit(conn, r, { receipt: receipt(r, 2) });
        else admit(conn, r, { result: { seam: seam() } });
      },
    });
    const client = newClient(t, stub.path);
    const generations: number[] = [];
    client.onState((s) => generations.push(s.generation));
    await within(client.connect(), "connect");
    assert.equal((await within(client.observe(), "observe")).outcome, "admitted");
    assert.deepEqual(await within(client.takeover(), "takeover"), { outcome: "admitted" });
    assert.equal(client.role, "controller");
    assert.equal((await within(client.prompt("go"), "prompt")).outcome, "admitted");

    const [observe, takeover, prompt] = stub.received as [Request, Request, Request];
    assert.equal(observe.generation, undefined, "observe is not a control request");
    assert.equal(observe.incarnation, undefined);
    assert.equal(takeover.generation, 1);
    assert.equal(takeover.incarnation, "inc-1");
    assert.equal(prompt.generation, 2);
    assert.equal(prompt.incarnation, "inc-1");
    assert.deepEqual(generations, [1, 2]);

    // A new incarnation (a recovery) is followed too.
    const seen = stub.received.length;
    const followed = new Promise<void>((resolve) => {
      const off = client.onState(() => {
        off();
        resolve();
      });
    });
    stub.conns[0]!.send({
      type: "state",
      state: { ...STATE, incarnation: "inc-2", generation: 3 },
    });
    await within(followed, "state");
    await within(client.interrupt(), "interrupt");
    const interrupt = stub.received[seen]!;
    assert.equal(interrupt.generation, 3);
    assert.equal(interrupt.incarnation, "inc-2");
    assert.equal(client.role, "observer");
  });

  it("confirmed issues a confirmation and then uses it", async (t) => {
    let refuseConfirm = false;
    const stub = await startStub(t, {
      onRequest: (r, conn) => {
        if (r.op === "confirm" && refuseConfirm) {
          conn.send({
            type: "reply",
            id: r.id,
            outcome: "refused:controller",
            refusal: "controller",
          });
        } else if (r.op === "confirm") {
          admit(conn, r, {
            result: { confirmation: { id: `cf-${r.operation}`, operation: r.operation } },
          });
        } else if (r.op === "force-stop") {
          admit(conn, r, { result: { stop: "stopped" } });
        } else if (r.op === "recover") {
          admit(conn, r, { result: { version: 2, kind: "eligibility", id: "el-1" } });
        } else admit(conn, r);
      },
    });
    const client = newClient(t, stub.path);
    await within(client.connect(), "connect");

    const stopped = await within(client.confirmed("force-stop"), "force stop");
    assert.deepEqual(stopped, { outcome: "admitted", result: { stop: "stopped" }, step: "use" });
    const recovered = await within(client.confirmed("recover"), "recover");
    assert.equal(recovered.outcome, "admitted");
    assert.ok(recovered.outcome === "admitted");
    assert.equal(recovered.eligibility, "el-1");
    assert.equal(
      (await within(client.launch(recovered.eligibility), "launch")).outcome,
      "admitted",
    );

    refuseConfirm = true;
    const refused = await within(client.confirmed("force-stop"), "refused confirm");
    assert.deepEqual(refused, {
      outcome: "refused:controller",
      refusal: "controller",
      message: "controller",
      step: "confirm",
    });

    const wire = stub.received.map((r) => {
      const { id: _id, type: _type, generation: _g, incarnation: _i, ...rest } = r;
      return rest;
    });
    assert.deepEqual(wire, [
      { op: "confirm", operation: "force-stop" },
      { op: "force-stop", confirmation: "cf-force-stop" },
      { op: "confirm", operation: "recover" },
      { op: "recover", confirmation: "cf-recover" },
      { op: "launch", eligibility: "el-1" },
      { op: "confirm", operation: "force-stop" },
    ]);
    for (const r of stub.received) assert.equal(r.generation, 1);
  });

  it("settles requests in flight as unknown when the socket closes and resends nothing", async (t) => {
    const stub = await startStub(t);
    const client = newClient(t, stub.path);
    let closes = 0;
    client.onClose(() => closes++);
    await within(client.connect(), "connect");
    const prompt = client.prompt("lost");
    const interrupt = client.interrupt();
    await stub.until(() => stub.received.length === 2, "two requests");
    stub.conns[0]!.socket.destroy();

    const [p, i] = await within(Promise.all([prompt, interrupt]), "settled");
    assert.equal(p.outcome, "unknown");
    assert.ok(p.outcome === "unknown" && i.outcome === "unknown");
    assert.equal(p.request, "q-1");
    assert.equal(i.request, "q-2");
    assert.match(p.message, /closed before the reply/);
    assert.equal(client.connected, false);
    assert.equal(closes, 1);

    const later = await within(client.prompt("again"), "later");
    assert.deepEqual(later, {
      outcome: "refused:channel",
      refusal: "channel",
      message: "not connected",
    });
    assert.equal((await within(client.takeover(), "later takeover")).outcome, "refused:channel");
    assert.equal((await within(client.observe(), "later observe")).outcome, "refused:channel");

    // Reconnecting sends only new requests, with new ids.
    await within(client.connect(), "reconnect");
    const during = client.observe();
    await stub.until(() => stub.received.length === 3, "third request");
    await within(client.close(), "close");
    assert.equal((await within(during, "closed by close()")).outcome, "unknown");
    assert.deepEqual(
      stub.received.map((r) => `${r.id} ${r.op}`),
      ["q-1 prompt", "q-2 interrupt", "q-3 observe"],
    );
    assertEachOnce(stub.received);
  });

  it("surfaces malformed controller lines and keeps working", async (t) => {
    const stub = await startStub(t, {
      onRequest: (r, conn) => {
        conn.sendRaw("not json\n");
        conn.send({
          type: "event",
          streamEpoch: "ep-1",
          sequence: -1,
          id: "e-1",
          event: { kind: "x" },
        });
        conn.send({ type: "gossip" });
        conn.send({ type: "reply", id: "q-99", outcome: "admitted" });
        conn.send({ type: "reply", id: null, outcome: "refused:malformed", refusal: "malformed" });
        conn.send({ type: "reply", id: r.id, outcome: "refused:busy", refusal: "fenced" });
        conn.sendRaw(`${JSON.stringify({ type: "welcome" })}\r\n`);
        conn.send({ type: "reply", id: r.id, outcome: "admitted", receipt: receipt(r) });
      },
    });
    const client = newClient(t, stub.path);
    const issues = issuesOf(client);
    await within(client.connect(), "connect");
    const r = await within(client.prompt("x"), "prompt");
    assert.equal(r.outcome, "admitted");
    assert.deepEqual(
      issues.map((i) => `${i.code}: ${i.message}`),
      [
        "invalid-line: the line is not JSON",
        "invalid-line: event.sequence is not a count",
        "invalid-line: type is not welcome, reply, event, dialog or state",
        "unmatched-reply: a reply to no request of ours: q-99",
        "line-refused: the controller refused a line: refused:malformed",
        "invalid-line: reply.refusal differs from outcome",
        "invalid-line: welcome.protocol is not a count",
      ],
    );
    assert.equal(issues[0]!.line, "not json");
    assert.equal(client.connected, true);
  });

  it("settles a request as unknown at its timeout and names the late reply", async (t) => {
    const held: Request[] = [];
    const stub = await startStub(t, { onRequest: (r) => held.push(r) });
    const client = newClient(t, stub.path, { requestTimeoutMs: 150 });
    const issues = issuesOf(client);
    await within(client.connect(), "connect");
    const r = await within(client.prompt("slow"), "prompt");
    assert.deepEqual(r, {
      outcome: "unknown",
      request: "q-1",
      message: "no reply within 150 ms; not resent",
    });
    const late = new Promise<void>((resolve) => client.onError(() => resolve()));
    admit(stub.conns[0]!, held[0]!, { receipt: receipt(held[0]!) });
    await within(late, "late reply");
    assert.equal(issues[0]!.code, "late-reply");
    assert.equal(issues[0]!.reply?.id, "q-1");
    assertEachOnce(stub.received);
    assert.equal(stub.received.length, 1);
  });

  it("closes the connection on a line over the size limit, settling requests unknown", async (t) => {
    const stub = await startStub(t, {
      onRequest: (r, conn) => {
        conn.send({
          type: "event",
          streamEpoch: "ep-1",
          sequence: 0,
          id: "e-0",
          event: { kind: "k" },
        });
        conn.sendRaw(`${"x".repeat(5000)}\n`);
        admit(conn, r);
      },
    });
    const client = newClient(t, stub.path, { maxLineBytes: 1024 });
    const issues = issuesOf(client);
    const events: string[] = [];
    client.onEvent((e) => events.push(e.id));
    await within(client.connect(), "connect");
    const r = await within(client.interrupt(), "interrupt");
    assert.equal(r.outcome, "unknown");
    assert.deepEqual(events, ["e-0"], "the line before the oversize one is still handled");
    assert.equal(issues[0]!.code, "record-too-large");
    assert.equal(client.connected, false);
  });

  it("delivers events, dialogs and state to subscribers until they detach", async (t) => {
    const stub = await startStub(t, {
      onRequest: (r, conn) => {
        conn.send({
          type: "event",
          streamEpoch: "ep-1",
          sequence: 4,
          id: "e-4",
          event: { kind: "run-started", run: "u1" },
        });
        conn.send({
          type: "dialog",
          id: "dlg-1",
          method: "confirm",
          title: "Delete?",
          disabled: true,
          reason: "dialogs are not answered under mediated control",
        });
        conn.send({ type: "state", state: { ...STATE, admission: "fenced" } });
        admit(conn, r);
      },
    });
    const client = newClient(t, stub.path);
    const seen: string[] = [];
    const offEvent = client.onEvent((e) => seen.push(`event ${e.sequence} ${e.event.kind}`));
    const offDialog = client.onDialog((d) => seen.push(`dialog ${d.method} ${d.title}`));
    const offState = client.onState((s) => seen.push(`state ${s.admission}`));
    await within(client.connect(), "connect");
    await within(client.release(), "release");
    assert.deepEqual(seen, [
      "state open",
      "event 4 run-started",
      "dialog confirm Delete?",
      "state fenced",
    ]);
    offEvent();
    offDialog();
    offState();
    await within(client.release(), "second release");
    assert.equal(seen.length, 4);
    assert.equal(client.state?.admission, "fenced");
  });

  it("reports an admitted reply that lacks what its operation promises as unknown", async (t) => {
    const stub = await startStub(t, {
      onRequest: (r, conn) =>
        admit(
          conn,
          r,
          r.op === "observe" ? { result: { seam: { ...seam(), reconcile: false } } } : {},
        ),
    });
    const client = newClient(t, stub.path);
    const issues = issuesOf(client);
    await within(client.connect(), "connect");
    const p = await within(client.prompt("x"), "prompt");
    assert.deepEqual(p, {
      outcome: "unknown",
      request: "q-1",
      message: "an admitted prompt's reply has no receipt",
    });
    const c = await within(client.confirmed("force-stop"), "confirmed");
    assert.equal(c.outcome, "unknown");
    assert.equal(c.step, "confirm");
    const o = await within(client.observe(), "observe");
    assert.equal(o.outcome, "unknown");
    assert.deepEqual(
      issues.map((i) => i.code),
      ["unexpected-reply", "unexpected-reply", "unexpected-reply"],
    );
    assert.equal(stub.received.length, 3, "confirmed stopped after the confirm");
  });

  it("refuses bad arguments as malformed without writing anything", async (t) => {
    const stub = await startStub(t);
    const client = newClient(t, stub.path);
    await within(client.connect(), "connect");
    const results = await within(
      Promise.all([
        client.observe({ limit: 0 }),
        client.observe({ limit: 101 }),
        client.observe({ cursor: "" }),
        client.launch("not an id"),
        client.forceStop(""),
        client.confirm("stop" as "force-stop"),
        client.prompt(42 as unknown as string),
      ]),
      "local refusals",
    );
    for (const r of results) assert.equal(r.outcome, "refused:malformed");
    assert.equal(stub.received.length, 0);
  });

  it("passes a refusal's detail through", async (t) => {
    const stub = await startStub(t, {
      onRequest: (r, conn) =>
        conn.send({
          type: "reply",
          id: r.id,
          outcome: "refused:cursor",
          refusal: "cursor",
          message: "cursor from another conversation",
          detail: "cursor-foreign",
        }),
    });
    const client = newClient(t, stub.path);
    await within(client.connect(), "connect");
    assert.deepEqual(await within(client.observe({ cursor: "c1" }), "observe"), {
      outcome: "refused:cursor",
      refusal: "cursor",
      message: "cursor from another conversation",
      detail: "cursor-foreign",
    });
  });
});

describe("parseControllerMessage", () => {
  it("accepts each message type and ignores unknown fields", () => {
    const lines: unknown[] = [
      {
        type: "welcome",
        protocol: 2,
        connection: "c-1",
        role: "observer",
        conversation: "v",
        state: STATE,
      },
      {
        type: "reply",
        id: "q-1",
        outcome: "admitted",
        receipt: { ...receipt({ id: "q-1" } as Request), state: "settled", reason: "interrupted" },
      },
      { type: "reply", id: "q-2", outcome: "unknown", message: "transport lost" },
      { type: "reply", id: null, outcome: "refused:malformed" },
      {
        type: "event",
        streamEpoch: "ep",
        sequence: 0,
        id: "e",
        event: { kind: "k", text: "\u2028" },
      },
      { type: "dialog", id: "d", method: "editor", title: "t", disabled: true, reason: "r" },
      { type: "state", state: { ...STATE, controllerConnection: "c-2", binding: "uncertain" } },
    ];
    for (const value of lines) {
      const parsed = parseControllerMessage(JSON.stringify({ ...(value as object), extra: 1 }));
      assert.ok(parsed.ok, parsed.ok ? "" : parsed.reason);
      assert.equal("extra" in parsed.message, false);
    }
    const refused = parseControllerMessage(JSON.stringify(lines[3]));
    assert.ok(refused.ok && refused.message.type === "reply");
    assert.equal(refused.message.refusal, "malformed", "refusal is filled from the outcome");
  });

  it("refuses wrong fields with a reason", () => {
    const cases: [unknown, RegExp][] = [
      [[1], /not an object/],
      [{ type: "reply", id: "q-1", outcome: "refused:nope" }, /refused:<code>/],
      [{ type: "reply", id: "q-1", outcome: "admitted", refusal: "busy" }, /no refusal/],
      [{ type: "reply", id: "bad id", outcome: "admitted" }, /reply\.id/],
      [{ type: "reply", id: "q", outcome: "admitted", receipt: { id: "r" } }, /receipt\.request/],
      [{ type: "state", state: { ...STATE, admission: "ajar" } }, /state\.admission/],
      [{ type: "state", state: { ...STATE, controllerConnection: 7 } }, /controllerConnection/],
      [
        { type: "dialog", id: "d", method: "select", title: "t", disabled: false, reason: "r" },
        /disabled/,
      ],
      [{ type: "event", streamEpoch: "ep", sequence: 1, id: "e", event: {} }, /kind/],
    ];
    for (const [value, reason] of cases) {
      const parsed = parseControllerMessage(JSON.stringify(value));
      assert.equal(parsed.ok, false, JSON.stringify(value));
      assert.match(parsed.ok ? "" : parsed.reason, reason);
    }
  });
});
