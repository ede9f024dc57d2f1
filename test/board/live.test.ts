// The live route (issue 15, follow pushed): Server-Sent Events over raw HTTP — an append is
// pushed, each `id:` is the cursor to resume from (Last-Event-ID), no field holds a raw line
// break, a hundred idle followers cost no reads, refusals come before any stream — and in
// Chromium an append shows in an open Console page within 300 ms.
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { describe, it, type TestContext } from "node:test";
import { type Board, startBoard } from "../../src/board/index.ts";
import { MAX_STREAMS } from "../../src/board/live.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { idOf, user } from "../helpers/reader.ts";
import { browserSkip, suiteBrowser } from "./browser.ts";
import { type BoardFixture, writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";
import { openStream, type Stream } from "./sse-client.ts";

async function startLiveBoard(t: TestContext): Promise<{ fx: BoardFixture; board: Board }> {
  const fx = await writeBoardFixture(t);
  const board = await startBoard({
    sources: { specs: fx.specs, registrations: fx.registrations },
    lanes: 1,
  });
  t.after(() => board.close());
  return { fx, board };
}

type PageResult = { ok: true; follow: { id: string } | null; page: { branch: string } };

async function openPage(board: Board, id: string): Promise<PageResult> {
  const answer = await send(board.port, `/api/conversations/${id}/page`);
  assert.equal(answer.status, 200);
  return answer.json as PageResult;
}

function livePath(id: string, r: PageResult): string {
  const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow?.id ?? "" });
  return `/api/conversations/${id}/live?${q}`;
}

function line(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

async function waitFor(what: string, ok: () => boolean, deadlineMs = DEADLINE_MS): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("board live route (SSE)", () => {
  it("pushes an append, ids are resume cursors, and no field holds a raw line break", async (t) => {
    const { fx, board } = await startLiveBoard(t);
    const id = idOf(fx.reader(), "grow.jsonl");
    const first = await openPage(board, id);
    assert.ok(first.follow, "the last page hands out a follow cursor");
    const stream = await openStream(board.port, livePath(id, first));
    t.after(() => stream.close());
    assert.equal(stream.status, 200);
    const caughtUp = await stream.next();
    assert.equal(caughtUp.event, "page", "the stream starts with a catch-up read");

    // A message with CR, LF and CRLF in it still arrives as one data field.
    appendFileSync(fx.files.grow, line(user("g3", "g2", "pushed\r\nover\nSSE\r", 3)));
    const pushed = await stream.next();
    assert.equal(pushed.event, "page");
    const body = JSON.parse(pushed.data) as { follow: { id: string }; page: { parts: unknown } };
    assert.match(JSON.stringify(body.page.parts), /pushed\\r\\nover\\nSSE\\r/);
    assert.equal(pushed.id, body.follow.id, "the event id is the follow cursor to go on from");
    for (const raw of stream.raw.split("\n")) {
      assert.ok(!raw.includes("\r"), "no raw CR anywhere in the stream");
    }
    stream.close();
    // Once the board has seen the drop: a read for a stream already gone would use the cursor.
    await waitFor("the stream to close", () => board.live().followers === 0);

    // Reconnecting as EventSource does: the stale URL, the last id as Last-Event-ID.
    appendFileSync(fx.files.grow, line(user("g4", "g3", "written while away", 4)));
    const again = await openStream(board.port, livePath(id, first), {
      "Last-Event-ID": pushed.id ?? "",
    });
    t.after(() => again.close());
    const resumed = await again.next();
    assert.equal(resumed.event, "page");
    assert.match(resumed.data, /written while away/);
    assert.doesNotMatch(resumed.data, /pushed/, "only what was appended after the id");

    // A used cursor is not read again: the page its read answered is handed again (it is
    // kept for a reconnect that never got it), then each kept page after it, in order. A
    // cursor whose page is no longer kept is refused (live-unsent.test.ts).
    const stale = await openStream(board.port, livePath(id, first));
    t.after(() => stale.close());
    const replayed = [await stale.next(), await stale.next(), await stale.next()];
    assert.deepEqual(
      replayed.map((e) => [e.event, e.id]),
      [caughtUp, pushed, resumed].map((e) => [e.event, e.id]),
    );
    assert.equal(replayed[1]?.data, pushed.data, "the same page, not a new read");
  });

  it("refuses before any stream: foreign Host, missing cursor, unknown conversation, POST", async (t) => {
    const { fx, board } = await startLiveBoard(t);
    const id = idOf(fx.reader(), "grow.jsonl");
    const r = await openPage(board, id);
    const path = livePath(id, r);
    const code = (a: { json: unknown }) => (a.json as { refusal: { code: string } }).refusal.code;
    const forged = await send(board.port, path, { host: "evil.example:80" });
    assert.equal(forged.status, 421);
    assert.equal(code(forged), "misdirected-request");
    const noCursor = await send(board.port, `/api/conversations/${id}/live?branch=x`);
    assert.equal(noCursor.status, 400);
    assert.equal(code(noCursor), "bad-request");
    const unknown = await send(board.port, `/api/conversations/pi-nope/live?branch=a&cursor=c-1`);
    assert.equal(unknown.status, 404);
    const post = await send(board.port, path, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers["access-control-allow-origin"], undefined, "no CORS");
    assert.equal(board.live().followers, 0);
  });

  it("a hundred idle followers cost no reads; one append reaches all of them", async (t) => {
    const { fx, board } = await startLiveBoard(t);
    const id = idOf(fx.reader(), "grow.jsonl");
    const streams: Stream[] = [];
    t.after(() => {
      for (const s of streams) s.close();
    });
    for (let i = 0; i < 100; i++) {
      const r = await openPage(board, id);
      streams.push(await openStream(board.port, livePath(id, r)));
    }
    await Promise.all(streams.map((s) => s.next(DEADLINE_MS)));
    assert.deepEqual(
      { followers: board.live().followers, watching: board.live().watching },
      { followers: 100, watching: 1 },
      "one watch for one file, however many follow it",
    );
    const before = board.live().reads;
    assert.equal(before, 100, "one catch-up read per stream when it opens");
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(board.live().reads, before, "no read while nothing is appended");

    appendFileSync(fx.files.grow, line(user("g3", "g2", "one append for all", 3)));
    const events = await Promise.all(streams.map((s) => s.next(DEADLINE_MS)));
    for (const e of events) assert.match(e.data, /one append for all/);
    assert.equal(board.live().reads, before + 100, "one read per follower per append");

    for (const s of streams) s.close();
    await waitFor("followers to go", () => board.live().followers === 0);
    assert.equal(board.live().watching, 0, "the watch stops with its last follower");
  });
});

describe("board live route bounds", () => {
  it(`refuses a stream past ${MAX_STREAMS} with too-many-streams, and opens one once one closes`, async (t) => {
    const { fx, board } = await startLiveBoard(t);
    const id = idOf(fx.reader(), "grow.jsonl");
    const streams: Stream[] = [];
    t.after(() => {
      for (const s of streams) s.close();
    });
    for (let i = 0; i < MAX_STREAMS; i++) {
      streams.push(await openStream(board.port, livePath(id, await openPage(board, id))));
    }
    assert.ok(streams.every((s) => s.status === 200));
    assert.equal(board.live().followers, MAX_STREAMS);
    const path = livePath(id, await openPage(board, id));
    const refused = await send(board.port, path);
    assert.equal(refused.status, 503);
    const body = refused.json as { refusal: { code: string; message: string } };
    assert.equal(body.refusal.code, "too-many-streams");
    assert.match(body.refusal.message, /close other Console tabs/);
    assert.equal(board.live().followers, MAX_STREAMS, "the refusal held nothing open");
    streams.pop()?.close();
    await waitFor("a stream to close", () => board.live().followers === MAX_STREAMS - 1);
    const again = await openStream(board.port, path);
    streams.push(again);
    assert.equal(again.status, 200);
  });
});

/** The bound: an append shows in an open page within this. */
const PUSH_DEADLINE_MS = 300;

describe("board live route in Chromium", { skip: browserSkip }, () => {
  const browserContext = suiteBrowser();

  it("shows an append in an open Console page within 300 ms", async (t) => {
    const context = browserContext();
    const { fx, board } = await startLiveBoard(t);
    const page = await context.newPage();
    t.after(() => page.close());
    page.setDefaultTimeout(DEADLINE_MS);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(board.url);
    await page.getByRole("button", { name: /Growing conversation/ }).click();
    await page.locator("#follow-status.live").waitFor();
    await waitFor("the page to follow over SSE", () => board.live().followers === 1);
    // The page stamps when each text appears, so the figure is the page's, not the driver's.
    await page.evaluate(`
      window.__seen = {};
      new MutationObserver(() => {
        for (const el of document.querySelectorAll("article.part")) {
          const m = /push probe (\\d+)/.exec(el.textContent || "");
          if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = Date.now();
        }
      }).observe(document.getElementById("parts"), { childList: true, subtree: true });
    `);
    // Rounds of five appends, until one round's median is within the bound (at most three): a
    // round on a machine busy with other suites can land every append behind a stall of the
    // whole machine, which no push can beat; a poll would miss the bound in every round.
    let parent = "g2";
    let appended = 0;
    const medians: number[] = [];
    for (let round = 0; round < 3; round++) {
      const delays: number[] = [];
      for (let i = 0; i < 5; i++, appended++) {
        const entry = `p${appended}`;
        const wrote = Date.now();
        appendFileSync(
          fx.files.grow,
          line(user(entry, parent, `push probe ${appended}`, 3 + appended)),
        );
        parent = entry;
        // Polled with evaluate: the page's CSP forbids the eval waitForFunction needs.
        let seen = Number.NaN;
        const until = Date.now() + 5000;
        while (Number.isNaN(seen) && Date.now() < until) {
          seen = Number(await page.evaluate(`window.__seen["${appended}"] ?? NaN`));
          if (Number.isNaN(seen)) await new Promise((r) => setTimeout(r, 25));
        }
        assert.ok(!Number.isNaN(seen), `push probe ${appended} shown within 5 s`);
        delays.push(seen - wrote);
      }
      process.stdout.write(`# append → shown in Chromium (ms): ${delays.join(", ")}\n`);
      const median = [...delays].sort((a, b) => a - b)[2] ?? Infinity;
      medians.push(median);
      if (median <= PUSH_DEADLINE_MS) break;
    }
    assert.ok(
      Math.min(...medians) <= PUSH_DEADLINE_MS,
      `median append-to-shown within ${PUSH_DEADLINE_MS} ms in one of ${medians.length} rounds (${medians})`,
    );
    assert.equal(board.live().reads, 1 + appended, "one catch-up read, then one read per append");
    assert.deepEqual(errors, []);
  });
});
