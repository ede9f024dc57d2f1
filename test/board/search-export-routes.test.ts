// The board's search and export routes: GET /api/search (hits, bad-query 400, a board with no
// index 503) and GET /api/conversations/:id/export (a download in each format with
// Content-Disposition and the sandboxing CSP; reader refusals with their statuses; bad-request).
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { startBoard } from "../../src/board/index.ts";
import { rootsFromSpecs } from "../../src/index.ts";
import { createSearch } from "../../src/search/index.ts";
import { tempDir } from "../helpers/reader.ts";
import { findProblems } from "../helpers/schema.ts";
import { send } from "./http-client.ts";
import { HOSTILE_MARKDOWN, writeReadingFixture } from "./reading-fixture.ts";

async function boardOn(t: TestContext, withSearch = true) {
  const fx = writeReadingFixture(t);
  const reader = fx.reader();
  const specs = [
    { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
  ];
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, []),
    catalogue: () => reader.catalogue(),
    cacheDir: tempDir(t, "route-cache-"),
  });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  const board = await startBoard({ reader, ...(withSearch ? { search: opened.search } : {}) });
  t.after(() => board.close());
  return { fx, port: board.port };
}

describe("board search and export routes", () => {
  it("answers a search with hits that name conversation, branch and entry", async (t) => {
    const { fx, port } = await boardOn(t);
    const a = await send(port, "/api/search?q=zanzibarite");
    assert.equal(a.status, 200);
    assert.equal(a.headers["access-control-allow-origin"], undefined);
    const body = a.json as {
      ok: boolean;
      hits: { conversation: string; branch: string; entry: string }[];
    };
    assert.equal(body.ok, true);
    assert.deepEqual(
      body.hits.map((h) => [h.conversation, h.branch, h.entry]),
      [[fx.conversation, "main", "n.u1"]],
    );
    const limited = await send(port, "/api/search?q=line&limit=1");
    assert.equal((limited.json as { hits: unknown[] }).hits.length, 1);
  });

  it("refuses a search without words or with a bad limit, and 503 without an index", async (t) => {
    const { port } = await boardOn(t);
    for (const [path, code, status] of [
      ["/api/search", "bad-query", 400],
      ["/api/search?q=%20%20", "bad-query", 400],
      ["/api/search?q=x&limit=0", "bad-query", 400],
      // What one query may cost is bounded (src/search/query.ts): nine prefixes are one too many.
      [`/api/search?q=${encodeURIComponent("aa bb cc dd ee ff gg hh ii")}`, "bad-query", 400],
      ["/api/search?q=x&limit=abc", "bad-query", 400],
      ["/api/search?q=x&q=y", "bad-request", 400],
      ["/api/search?query=x", "bad-request", 400],
    ] as const) {
      const a = await send(port, path);
      assert.equal(a.status, status, path);
      assert.equal((a.json as { refusal: { code: string } }).refusal.code, code, path);
    }
    const bare = await boardOn(t, false);
    const a = await send(bare.port, "/api/search?q=zanzibarite");
    assert.equal(a.status, 503);
    assert.equal((a.json as { refusal: { code: string } }).refusal.code, "search-unavailable");
  });

  it("serves each export format as a download when asked for a branch", async (t) => {
    const { fx, port } = await boardOn(t);
    const base = `/api/conversations/${fx.conversation}/export`;
    const md = await send(port, `${base}?format=md&branch=main`);
    assert.equal(md.status, 200);
    assert.equal(md.headers["content-type"], "text/markdown; charset=utf-8");
    assert.equal(
      md.headers["content-disposition"],
      `attachment; filename="conversation-${fx.conversation}-main.md"`,
    );
    assert.match(md.text, /^# Reading fixture\n/);
    const html = await send(port, `${base}?format=html&branch=main`);
    assert.equal(html.status, 200);
    assert.equal(html.headers["content-type"], "text/html; charset=utf-8");
    assert.match(String(html.headers["content-disposition"]), /^attachment; filename=".*\.html"$/);
    assert.equal(
      html.headers["content-security-policy"],
      "default-src 'none'; frame-ancestors 'none'; sandbox",
      "the board's origin never renders an export",
    );
    assert.ok(html.text.startsWith("<!doctype html>"));
    const json = await send(port, `${base}?format=json&branch=main`);
    const doc = json.json as { conversation: string; branch: string; pages: unknown[] };
    assert.equal(doc.branch, "main");
    for (const page of doc.pages) assert.deepEqual(findProblems("page", page), []);
    assert.ok(!html.text.includes("<script>window"), "hostile text is escaped");
    assert.ok(html.text.includes("&lt;script&gt;window.__pwned=1&lt;/script&gt;"));
    assert.ok(HOSTILE_MARKDOWN.length > 0);
  });

  it("refuses an export with the reader's status or bad-request", async (t) => {
    const { fx, port } = await boardOn(t);
    for (const [path, code, status] of [
      [`/api/conversations/${fx.conversation}/export`, "bad-request", 400],
      [`/api/conversations/${fx.conversation}/export?format=pdf`, "bad-request", 400],
      [`/api/conversations/${fx.conversation}/export?format=md&branch=nope`, "unknown-branch", 404],
      ["/api/conversations/pi-0000/export?format=md", "unknown-conversation", 404],
      ["/api/conversations/%E0%A4%A/export?format=md", "bad-request", 400],
    ] as const) {
      const a = await send(port, path);
      assert.equal(a.status, status, path);
      assert.equal((a.json as { refusal: { code: string } }).refusal.code, code, path);
    }
    const head = await send(port, `/api/conversations/${fx.conversation}/export?format=md`, {
      method: "HEAD",
    });
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
  });
});

describe("board search lane", () => {
  it("answers search from its own worker lane when the board reads from sources", async (t) => {
    const fx = writeReadingFixture(t);
    const specs = [
      { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
    ];
    const cacheDir = tempDir(t, "lane-cache-");
    const board = await startBoard({
      sources: { specs, registrations: [], search: { cacheDir } },
      lanes: 1,
    });
    t.after(() => board.close());
    const a = await send(board.port, "/api/search?q=zanzibarite");
    assert.equal(a.status, 200, a.text);
    const hits = (a.json as { hits: { entry: string }[] }).hits;
    assert.deepEqual(
      hits.map((h) => h.entry),
      ["n.u1"],
    );
    assert.equal(board.readers().running, 3, "catalogue, one conversation lane, search");
    const exported = await send(
      board.port,
      `/api/conversations/${fx.conversation}/export?format=json`,
    );
    assert.equal(exported.status, 200);
    const bare = await startBoard({ sources: { specs, registrations: [] }, lanes: 1 });
    t.after(() => bare.close());
    const refused = await send(bare.port, "/api/search?q=zanzibarite");
    assert.equal(refused.status, 503);
  });
});
