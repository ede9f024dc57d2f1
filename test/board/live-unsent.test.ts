// The live route keeps the pages it read lately: a read uses its follow cursor up, and the board
// cannot tell a page the browser got from one written to a stream that had closed without its
// knowing, or read for one that closed while the read was on its way. So the reconnect that
// resumes from the last id the client saw gets those pages, not `cursor-unknown` and a lost
// append (src/board/live.ts, #written; docs/board.md).
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
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
import { serveHub } from "./hub-server.ts";
import { openStream } from "./sse-client.ts";

/** A board whose follow reads can be held at a gate, with one stream caught up on grow.jsonl. */
async function gatedBoard(t: TestContext, kept?: { pages: number; chars: number }) {
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
    ...(kept === undefined ? {} : { kept }),
  });
  const port = await serveHub(t, hub, handle, hosts, () => release());

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
    /** The stream caught up on grow.jsonl, still open. */
    first,
    /** Appends a user line to grow.jsonl (the fixture ends at g2). */
    append(id: string, parent: string, text: string): void {
      appendFileSync(fx.files.grow, `${JSON.stringify(user(id, parent, text, 3))}\n`);
    },
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
    followers: () => hub.stats().followers,
  };
}

describe("board live route, a reconnect from before the pages it missed", () => {
  it("hands the page it read for a stream that closed mid-read to every reconnect from there", async (t) => {
    const b = await gatedBoard(t);
    await b.appendAndCloseMidRead();
    b.open();

    for (const n of [1, 2]) {
      const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
      t.after(() => back.close());
      const resumed = await back.next(60_000);
      assert.equal(resumed.event, "page", `reconnect ${n}: ${resumed.data}`);
      assert.match(resumed.data, /written while away/);
      back.close();
    }
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

  it("hands a page written to a stream on to a reconnect that never got it", async (t) => {
    // The board wrote the page to a socket the browser had closed a moment before (pause, then
    // resume): the write succeeds, so the board cannot know. The reconnect resumes from the id
    // before that page; reading that used cursor again was refused `cursor-unknown` (steer-follow
    // red with load: "Reading stopped (cursor-unknown)").
    const b = await gatedBoard(t);
    b.append("g3", "g2", "written to a closed socket");
    const written = await b.first.next(60_000);
    assert.equal(written.event, "page");
    assert.match(written.data, /written to a closed socket/);
    b.first.close();

    const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => back.close());
    const resumed = await back.next(60_000);
    assert.equal(resumed.event, "page", resumed.data);
    assert.equal(resumed.data, written.data, "the same page");
    assert.equal(resumed.id, written.id, "and the same cursor after it");
  });

  it("hands on every page kept after the first, with no new append to wake it", async (t) => {
    const b = await gatedBoard(t);
    b.append("g3", "g2", "the first one missed");
    assert.match((await b.first.next(60_000)).data, /the first one missed/);
    b.append("g4", "g3", "the second one missed");
    assert.match((await b.first.next(60_000)).data, /the second one missed/);
    b.first.close();

    const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => back.close());
    assert.match((await back.next(60_000)).data, /the first one missed/);
    assert.match((await back.next(60_000)).data, /the second one missed/);
  });

  it("reads on after the pages it hands again: an append made while no stream was open shows", async (t) => {
    const b = await gatedBoard(t);
    b.append("g3", "g2", "missed while paused");
    assert.match((await b.first.next(60_000)).data, /missed while paused/);
    b.first.close();
    await until(() => b.followers() === 0, "the board saw the stream close");
    // Nothing follows the file now, so nothing reads this append until a stream opens.
    b.append("g4", "g3", "written with no stream open");

    const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => back.close());
    assert.match((await back.next(60_000)).data, /missed while paused/);
    assert.match((await back.next(60_000)).data, /written with no stream open/);
  });

  it("refuses a reconnect from before a page no longer kept: cursor-unknown", async (t) => {
    // Kept are the newest pages only (256, 16 MiB in all, 10 minutes): past that the cursor is
    // used and gone, as the reader rules, and the Console reopens the conversation's page.
    const b = await gatedBoard(t, { pages: 1, chars: 1024 * 1024 });
    b.append("g3", "g2", "pushed out");
    await b.first.next(60_000);
    b.append("g4", "g3", "by this one");
    await b.first.next(60_000);
    b.first.close();

    const back = await openStream(b.port, b.path, { "Last-Event-ID": b.lastSeen });
    t.after(() => back.close());
    const refused = await back.next(60_000);
    assert.equal(refused.event, "refusal", refused.data);
    assert.match(refused.data, /cursor-unknown/);
  });
});
