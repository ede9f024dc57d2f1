// Watching a controlled run (issue 15 item 1): with `--state-dir`'s registry naming a running
// controller (the real Controller over fake-pi), the live route relays the controller's
// `state`, `event` and `dialog` messages beside the follow, each event's SSE id the event's own
// id; every stream of a conversation shares one connection, with the observe-only grant.
import assert from "node:assert/strict";
import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import { startController } from "../control/controller-fixture.ts";
import { boardOverController, startControlledBoard } from "./controlled-board.ts";
import { send } from "./http-client.ts";
import { openStream, type SseEvent, type Stream } from "./sse-client.ts";

/**
 * A Unix socket at `path` that forwards every connection to `target` and keeps the first line
 * each one sends (a client's hello), parsed; `open()` counts the connections open now.
 */
async function helloProxy(t: TestContext, path: string, target: string) {
  const hellos: { grant?: string }[] = [];
  const open = new Set<Socket>();
  const server = createServer((client) => {
    open.add(client);
    const upstream = connect(target);
    let head = "";
    const keep = (chunk: Buffer) => {
      head += chunk.toString("utf8");
      const nl = head.indexOf("\n");
      if (nl < 0) return;
      hellos.push(JSON.parse(head.slice(0, nl)) as { grant?: string });
      client.off("data", keep);
    };
    client.on("data", keep);
    client.pipe(upstream).pipe(client);
    const end = () => {
      open.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.after(() => {
    for (const c of open) c.destroy();
    server.close();
  });
  return { path, hellos, open: () => open.size };
}

async function until(stream: Stream, what: string, ok: (e: SseEvent) => boolean) {
  for (;;) {
    const e = await stream.next(15_000).catch(() => {
      throw new Error(`no ${what}`);
    });
    if (ok(e)) return e;
  }
}

async function openLive(port: number, conversation: string): Promise<Stream> {
  const page = await send(port, `/api/conversations/${conversation}/page`);
  const r = page.json as { follow: { id: string }; page: { branch: string } };
  const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id });
  return openStream(port, `/api/conversations/${conversation}/live?${q}`);
}

describe("board live route relays a running controller", () => {
  it("streams state, events and dialogs of a controlled run to an observing stream", async (t) => {
    const { board, conversation, ctl } = await startControlledBoard(t);

    const cat = await send(board.port, "/api/conversations");
    const rows = (cat.json as { conversations: { conversation: string; live: boolean }[] })
      .conversations;
    assert.deepEqual(
      rows.map((r) => [r.conversation, r.live]),
      [[conversation, true]],
      "the catalogue marks the row live",
    );
    const page = await send(board.port, `/api/conversations/${conversation}/page`);
    const r = page.json as { follow: { id: string }; page: { branch: string } };
    const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id });
    const stream = await openStream(board.port, `/api/conversations/${conversation}/live?${q}`);
    t.after(() => stream.close());
    const seen: SseEvent[] = [];
    const until = async (what: string, ok: (e: SseEvent) => boolean): Promise<SseEvent> => {
      for (;;) {
        const e = await stream.next(15_000).catch(() => {
          throw new Error(`no ${what}; saw ${seen.map((x) => x.event).join(",")}`);
        });
        seen.push(e);
        if (ok(e)) return e;
      }
    };
    const hello = await until("controller", (e) => e.event === "controller");
    const info = JSON.parse(hello.data) as { running: boolean; role: string; connection: string };
    assert.equal(info.running, true);
    assert.equal(info.role, "observer", "the board watches as an observer");
    await until("state", (e) => e.event === "state");

    // Someone else (a terminal client) takes over and prompts: the page sees it happen.
    const terminal = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-op" });
    t.after(() => terminal.close());
    const welcome = await terminal.connect();
    assert.equal((await terminal.takeover()).outcome, "admitted");
    const state = await until("the takeover's state", (e) => {
      if (e.event !== "state") return false;
      const s = JSON.parse(e.data) as { state: { controllerConnection: string | null } };
      return s.state.controllerConnection === welcome.connection;
    });
    assert.equal(state.id, null, "a state message carries no event id");
    const prompted = await terminal.prompt("hello from the terminal");
    assert.equal(prompted.outcome, "admitted");
    const event = await until("a stream event", (e) => e.event === "event");
    const body = JSON.parse(event.data) as { type: string; id: string; event: { kind: string } };
    assert.equal(body.type, "event");
    assert.equal(event.id, body.id, "the SSE id is the controller event's id");
    // The follow goes on beside the relay: the prompt's entries reach the file and the page.
    await until(
      "the appended prompt",
      (e) => e.event === "page" && /hello from the terminal/.test(e.data),
    );
    for (const raw of stream.raw.split("\n")) assert.ok(!raw.includes("\r"));

    // The first run settles before the next prompt (else it is refused busy on a slow machine).
    const settled = (e: SseEvent) => e.event === "event" && /"kind":"run-settled"/.test(e.data);
    if (!seen.some(settled)) await until("the run settling", settled);
    // A dialog the run opens reaches the stream too (disabled: the controller answers it).
    assert.equal((await terminal.prompt("dialog:confirm please")).outcome, "admitted");
    const dialog = await until("a dialog", (e) => e.event === "dialog");
    assert.match(dialog.data, /"disabled":true/);
    stream.close();
  });

  it("shares one observe-only connection among every stream of a conversation", async (t) => {
    const { ctl, f } = await startController(t);
    // The registry points at a proxy of the controller's socket that keeps each connection's
    // hello: what the board opened, and with which grant.
    const proxy = await helloProxy(t, join(f.root, "p.sock"), ctl.socketPath);
    const { board, conversation, unregister } = await boardOverController(f, proxy.path);
    t.after(unregister);
    t.after(() => board.close());
    const streams: Stream[] = [];
    t.after(() => {
      for (const s of streams) s.close();
    });
    for (let i = 0; i < 6; i++) streams.push(await openLive(board.port, conversation));
    const hellos = [];
    for (const s of streams) {
      hellos.push(await until(s, "controller", (e) => e.event === "controller"));
    }
    const connections = new Set(
      hellos.map((e) => (JSON.parse(e.data) as { connection: string }).connection),
    );
    assert.equal(connections.size, 1, "one connection for all six streams");
    assert.equal(board.live().observers, 1);
    // Beside the streams' one connection the board's inbox holds one of its own per controller
    // (docs/attention.md), once its registry poll has found it: never one per stream.
    const grants = proxy.hellos.map((h) => h.grant);
    assert.ok(grants.length >= 1 && grants.length <= 2, `hellos: ${JSON.stringify(grants)}`);
    assert.ok(
      grants.every((g) => g === "g-ro"),
      "only the observe-only grant (the operator grant is a login's only)",
    );
    for (const s of streams) s.close();
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 10_000;
      const check = () => {
        if (board.live().followers === 0 && proxy.open() <= 1) resolve();
        else if (Date.now() > deadline) reject(new Error("the board's connections stayed"));
        else setTimeout(check, 20);
      };
      check();
    });
    assert.equal(board.live().observers, 0, "the last stream's close closes the connection");
  });

  it("says so on the stream when the controller has no grant the board watches with", async (t) => {
    const { ctl, f } = await startController(t);
    const proxy = await helloProxy(t, join(f.root, "p.sock"), ctl.socketPath);
    const { board, conversation, unregister } = await boardOverController(f, proxy.path, {
      observeGrant: "g-none",
    });
    t.after(unregister);
    t.after(() => board.close());
    const stream = await openLive(board.port, conversation);
    t.after(() => stream.close());
    const said = await until(stream, "controller", (e) => e.event === "controller");
    const body = JSON.parse(said.data) as { running: boolean; message: string };
    assert.equal(body.running, false);
    assert.match(
      body.message,
      /no grant "g-none", which the board watches with \(its grants: g-op, g-ro\)/,
    );
    await until(stream, "the follow's first page", (e) => e.event === "page");
    assert.deepEqual(proxy.hellos, [], "no connection was opened with another grant instead");
  });
});
