// The live route's fallback (issue 15): where fs.watch cannot be set, the followed file is
// stat-polled every FALLBACK_POLL_MS and an append is still pushed; nothing is read between.
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { describe, it } from "node:test";
import { loadAssets } from "../../src/board/assets.ts";
import { FALLBACK_POLL_MS, LiveHub } from "../../src/board/live.ts";
import { createHandler } from "../../src/board/routes.ts";
import { rootsFromSpecs } from "../../src/reader/sources.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { idOf, user } from "../helpers/reader.ts";
import { writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";
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
      await hub.close();
      server.closeAllConnections();
      server.close();
    });
    const address = server.address();
    assert.ok(address !== null && typeof address === "object");
    hosts.add(`127.0.0.1:${address.port}`);

    const id = idOf(reader, "grow.jsonl");
    const page = await send(address.port, `/api/conversations/${id}/page`);
    const r = page.json as { follow: { id: string }; page: { branch: string } };
    const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id });
    const stream = await openStream(address.port, `/api/conversations/${id}/live?${q}`);
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
