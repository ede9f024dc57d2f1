// Requests another site's page makes (issue 22 item 3): the API, the live streams and the
// exports answer only the board's own pages (`Sec-Fetch-Site: same-origin`) and what a person
// opens directly (`none`); the Console and the login page open from any link. Over raw HTTP for
// every route, and in Chromium, where a page on another port of this host times `no-cors`
// searches as the probe did, and not one reaches the index.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, it, type TestContext } from "node:test";
import { type Board, startBoard } from "../../src/board/index.ts";
import type { BoardSearch } from "../../src/board/search-route.ts";
import { rootsFromSpecs } from "../../src/reader/sources.ts";
import { idOf } from "../helpers/reader.ts";
import { browserSkip, suiteBrowser } from "./browser.ts";
import { type BoardFixture, writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";

/** A search that finds nothing and counts what reached it. */
function countingSearch(): BoardSearch & { queries: string[] } {
  const queries: string[] = [];
  return {
    queries,
    search: (query) => {
      queries.push(query);
      return { ok: true, query, hits: [] };
    },
  };
}

async function startSiteBoard(t: TestContext) {
  const fx: BoardFixture = await writeBoardFixture(t);
  const search = countingSearch();
  const reader = fx.reader();
  const roots = () => rootsFromSpecs(fx.specs, fx.registrations);
  const board: Board = await startBoard({ reader, roots, search });
  t.after(() => board.close());
  return { fx, board, search, id: idOf(reader, "grow.jsonl") };
}

const code = (json: unknown) => (json as { refusal?: { code?: string } }).refusal?.code;

describe("board Sec-Fetch-Site rule (raw HTTP)", () => {
  it("answers the API, streams and exports to the board's own pages and direct opens only", async (t) => {
    const { board, search, id } = await startSiteBoard(t);
    const page = await send(board.port, `/api/conversations/${id}/page`);
    const r = page.json as { follow: { id: string }; page: { branch: string } };
    const live = `/api/conversations/${id}/live?${new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id })}`;
    const guarded = [
      "/api/conversations",
      `/api/conversations/${id}/page`,
      "/api/search?q=secret",
      `/api/conversations/${id}/export?format=md`,
      live,
      "/api/nothing-here",
    ];
    for (const path of guarded) {
      for (const site of ["cross-site", "same-site", "same-origin, cross-site"]) {
        const a = await send(board.port, path, { headers: { "sec-fetch-site": site } });
        assert.equal(a.status, 403, `${site} ${path}`);
        assert.equal(code(a.json), "origin-refused", `${site} ${path}`);
        assert.match(a.text, /another origin/);
        assert.equal(a.headers["access-control-allow-origin"], undefined);
      }
      const forged = await send(board.port, path, {
        host: "evil.example:80",
        headers: { "sec-fetch-site": "cross-site" },
      });
      assert.equal(forged.status, 421, `the Host check comes first: ${path}`);
    }
    assert.deepEqual(search.queries, [], "no refused search reached the index");
    // The board's own pages, and a person typing or pasting the address.
    for (const site of ["same-origin", "none"]) {
      for (const path of [
        "/api/conversations",
        "/api/search?q=secret",
        `/api/conversations/${id}/export?format=md`,
      ]) {
        const a = await send(board.port, path, { headers: { "sec-fetch-site": site } });
        assert.equal(a.status, 200, `${site} ${path}`);
      }
    }
    assert.deepEqual(search.queries, ["secret", "secret"]);
    // Clients that send no Sec-Fetch-Site (curl, the terminal) are not judged by it.
    assert.equal((await send(board.port, "/api/conversations")).status, 200);
    // Opened from any link: the Console, its files and the login page hold no data.
    for (const path of ["/", "/console.js", "/login", "/login?token=x"]) {
      const a = await send(board.port, path, { headers: { "sec-fetch-site": "cross-site" } });
      assert.equal(a.status, 200, path);
    }
    // A POST another site's page makes is refused whatever its route.
    const posted = await send(board.port, "/login", {
      method: "POST",
      headers: { "sec-fetch-site": "same-site", "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(code(posted.json), "origin-refused");
  });
});

describe("board Sec-Fetch-Site rule in Chromium", { skip: browserSkip }, () => {
  const browserContext = suiteBrowser();

  it("a page on another port times no-cors searches, exports and a stream; none reaches the board's data", async (t) => {
    const context = browserContext();
    const { board, search, id } = await startSiteBoard(t);
    // The probe: `no-cors` fetches of /api/search, timed, prefix by prefix; and the
    // other reads a page could make the browser send (an image, a stream, a navigation).
    const probe = `<!doctype html><meta charset="utf-8"><body><script>
const base = ${JSON.stringify(board.url)};
window.times = [];
(async () => {
  for (const q of ["s", "se", "sec", "secr"]) {
    const t0 = performance.now();
    await fetch(base + "api/search?q=" + q, { mode: "no-cors", credentials: "include" }).catch(() => {});
    window.times.push(performance.now() - t0);
  }
  await fetch(base + "api/conversations/${id}/export?format=md", { mode: "no-cors" }).catch(() => {});
  const img = new Image(); img.src = base + "api/search?q=image"; await new Promise((r) => { img.onerror = img.onload = r; });
  const es = new EventSource(base + "api/conversations/${id}/live?branch=main&cursor=x");
  await new Promise((r) => { es.onerror = r; }); es.close();
  window.done = true;
})();
</script>`;
    const server = createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end(probe);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    const address = server.address();
    assert.ok(address !== null && typeof address === "object");
    const sent: string[] = [];
    const evil = await context.newPage();
    t.after(() => evil.close());
    // The page never sees an answer (CORP blocks it): the board's side is what is checked.
    evil.on("request", (r) => {
      if (r.url().startsWith(board.url)) sent.push(r.url());
    });
    await evil.goto(`http://127.0.0.1:${address.port}/`);
    const until = Date.now() + 15_000;
    while ((await evil.evaluate("window.done === true")) !== true) {
      assert.ok(Date.now() < until, "the probe finished");
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(search.queries, [], "no search from the other port reached the index");
    assert.ok(sent.length >= 7, `the probe sent ${sent.length} requests to the board`);
    assert.equal(board.live().followers, 0, "no stream was opened for it");

    // The board's own Console still searches, and a typed address still answers.
    const own = await context.newPage();
    t.after(() => own.close());
    await own.goto(board.url);
    await own.locator("#search").fill("zanzibar");
    await own.locator("#search").press("Enter");
    await own.locator("#search-note").getByText("No match.").waitFor();
    assert.deepEqual(search.queries, ["zanzibar"]);
    const typed = await own.goto(`${board.url}api/conversations`);
    assert.equal(typed?.status(), 200, "a typed API address is a direct open (none)");
  });
});
