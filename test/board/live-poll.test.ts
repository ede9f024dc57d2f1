// The live route's fallback (issue 15): where fs.watch cannot be set, the followed file is
// stat-polled every FALLBACK_POLL_MS and an append is still pushed; nothing is read between.
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { describe, it } from "node:test";
import { loadAssets } from "../../src/board/assets.ts";
import { FALLBACK_POLL_MS, LiveHub } from "../../src/board/live.ts";
import { createHandler } from "../../src/board/routes.ts";
import { rootsFromSpecs } from "../../src/reader/sources.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { idOf, user } from "../helpers/reader.ts";
import { writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";
import { serveHub } from "./hub-server.ts";
import { openStream } from "./sse-client.ts";

describe("board live route, polling fallback", () => {
  it("pushes an append found by the stat poll", async (t) => {
    const fx = await writeBoardFixture(t);
    const reader = fx.reader();
    const hosts = new Set<string>();
    const handle = createHandler({ reader, assets: loadAssets(), hosts, log: () => {} });
    const hub = new LiveHub({
      roots: () => rootsFromSpecs(fx.specs, fx.registrations),
      read: (request) => Promise.resolve(handle(request)),
      hosts,
      log: () => {},
      pollOnly: true,
    });
    const port = await serveHub(t, hub, handle, hosts);

    const id = idOf(reader, "grow.jsonl");
    const page = await send(port, `/api/conversations/${id}/page`);
    const r = page.json as { follow: { id: string }; page: { branch: string } };
    const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id });
    const stream = await openStream(port, `/api/conversations/${id}/live?${q}`);
    t.after(() => stream.close());
    assert.equal((await stream.next()).event, "page", "the catch-up read is a page");
    const reads = hub.stats().reads;
    await new Promise((resolve) => setTimeout(resolve, FALLBACK_POLL_MS + 500));
    assert.equal(hub.stats().reads, reads, "a poll that finds no change reads nothing");
    appendFileSync(fx.files.grow, `${JSON.stringify(user("g3", "g2", "found by polling", 3))}\n`);
    const pushed = await stream.next(DEADLINE_MS);
    assert.equal(pushed.event, "page");
    assert.match(pushed.data, /found by polling/);
  });
});
