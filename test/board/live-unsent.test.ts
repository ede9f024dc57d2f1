// The live route keeps a page read for a stream that closed while the read was on its way: the
// read used the follow cursor up, so the reconnect that resumes from the last id the client saw
// gets that page, not `cursor-unknown` and a lost append (src/board/live.ts, #unsent).
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { describe, it, type TestContext } from "node:test";
import { loadAssets } from "../../src/board/assets.ts";
import { LiveHub } from "../../src/board/live.ts";
import type { Reply } from "../../src/board/reply.ts";
import { createHandler } from "../../src/board/routes.ts";
import { rootsFromSpecs } from "../../src/reader/sources.ts";
import { until } from "../helpers/deadline.ts";
import { idOf, user } from "../helpers/reader.ts";
import { writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";
import { openStream } from "./sse-client.ts";

/** A board whose follow reads can be held at a gate, with one stream caught up on grow.jsonl. */
async function gatedBoard(t: TestContext) {
  const fx = await writeBoardFixture(t);
  const reader = fx.reader();
  const hosts = new Set<string>();
  const handle = createHandler({ reader, assets: loadAssets(), hosts, log: () => {} });
  // A gate the test holds shut: a follow read that starts waits at it until released.
  let held: Promise<void> | null = null;
  let release = () => {};
  let waiting = 0;
  const hub = new LiveHub({
    roots: () => rootsFromSpecs(fx.specs, fx.registrations),
    read: async (request): Promise<Reply> => {
      if (held !== null) {
        waiting++;
        await held;
      }
      return handle(request);
    },
    hosts,
    log: () => {},
  });
  const server = createServer((req, res) => {
    const request = { method: req.method ?? "", target: req.url ?? "", host: req.headers.host };
    if (/\/live\?/.test(request.target)) {
      req.resume();
      void hub.serve(req, res, request);
    } else {
      const out = handle(request);
      res.writeHead(out.status, out.headers).end(out.body);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(async () => {
    release();
    await hub.close();
    server.closeAllConnections();
    server.close();
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  const port = address.port;
  hosts.add(`127.0.0.1:${port}`);

  const id = idOf(reader, "grow.jsonl");
  const page = await send(port, `/api/conversations/${id}/page`);
  const r = page.json as { follow: { id: string }; page: { branch: string } };
  const path = `/api/conversations/${id}/live?${new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id })}`;
  const first = await openStream(port, path);
  t.after(() => first.close());
  const caughtUp = await first.next(60_000);
  assert.equal(caughtUp.event, "page");
  const lastSeen = caughtUp.id;
  assert.ok(lastSeen);
  return {
    port,
    path,
    lastSeen,
    /** Appends a line and holds the read it starts at the gate; the first stream then closes. */
    async appendAndCloseMidRead(): Promise<void> {
      held = new Promise((resolve) => {
        release = resolve;
      });
      appendFileSync(
        fx.files.grow,
        `${JSON.stringify(user("g3", "g2", "written while away", 3))}\n`,
      );
      await until(() => waiting === 1, "the append's read started");
      first.close();
      await until(() => hub.stats().followers === 0, "the board saw the stream close");
    },
    /** Opens the gate: the held read (and any later one) goes on. */
    open(): void {
      held = null;
      release();
    },
    waiting: () => waiting,
  };
}

describe("board live route, a stream closed mid-read", () => {
  it("hands the page it read to the reconnect that resumes there, once", async (t) => {
    const b = await gatedBoard(t);
    await b.appendAndCloseMidRead();
    b.open();

    const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => back.close());
    const resumed = await back.next(60_000);
    assert.equal(resumed.event, "page", resumed.data);
    assert.match(resumed.data, /written while away/);

    // Once: a second reconnect from the same id finds the cursor used, as the reader rules.
    const again = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => again.close());
    const refused = await again.next(60_000);
    assert.equal(refused.event, "refusal");
    assert.match(refused.data, /cursor-unknown/);
  });

  it("makes a stream that resumes while that read is still on its way wait for its page", async (t) => {
    // The Console pausing and resuming quickly: the new stream starts from the cursor the
    // closed one is still reading from, and must not read that cursor a second time.
    const b = await gatedBoard(t);
    await b.appendAndCloseMidRead();
    const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => back.close());
    // Give the new stream time to start its read if it were going to (none may start).
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(b.waiting(), 1, "the resumed stream waits for the read on its way");
    b.open();
    const resumed = await back.next(60_000);
    assert.equal(resumed.event, "page", resumed.data);
    assert.match(resumed.data, /written while away/);
  });
});
