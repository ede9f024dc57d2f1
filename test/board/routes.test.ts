import assert from "node:assert/strict";
import { symlinkSync, truncateSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { REFUSAL_STATUS, startBoard } from "../../src/board/index.ts";
import { MAX_TARGET_LENGTH } from "../../src/board/routes.ts";
import { createReader, type Reader } from "../../src/index.ts";
import { checkedReader, header, idOf, rootsOf, user, writeSession } from "../helpers/reader.ts";
import { assertReadResult, assertValid } from "../helpers/schema.ts";
import { swapFile, writeBoardFixture } from "./fixture.ts";
import { send, sendRaw } from "./http-client.ts";

/**
 * A board over the fixture. By default its reader is the checked one (every call schema-valid
 * and leaving the tree unchanged); `unchecked` skips the fingerprint, which hashes every file.
 */
async function setup(
  t: TestContext,
  opts: { unchecked?: boolean; override?: (reader: Reader) => Reader } = {},
) {
  const fx = await writeBoardFixture(t);
  const roots = rootsOf(fx.specs, fx.registrations);
  const base = opts.unchecked ? createReader({ roots }) : checkedReader(fx.base, { roots });
  const logs: string[] = [];
  const reader = opts.override ? opts.override(base) : base;
  const board = await startBoard({ reader, log: (line) => logs.push(line) });
  t.after(() => board.close());
  const id = (file: string) => idOf(base, file);
  const page = (conversation: string, query = "") =>
    `/api/conversations/${encodeURIComponent(conversation)}/page${query}`;
  return { fx, board, port: board.port, logs, id, page };
}

/** `cache`: what the response may be kept as; only the Console's scripts and sheets are kept. */
function assertSecurityHeaders(h: IncomingHttpHeaders, cache = "no-store"): void {
  assert.equal(h["cache-control"], cache);
  assert.equal(h["x-content-type-options"], "nosniff");
  assert.equal(h["referrer-policy"], "no-referrer");
  assert.ok(h["content-security-policy"], "every response carries a CSP");
  const cors = Object.keys(h).filter((k) => k.startsWith("access-control-"));
  assert.deepEqual(cors, [], "no CORS header, ever");
}

/** A refusal body of the board's own: `{ ok: false, refusal }` with a schema-valid refusal. */
function assertBoardRefusal(json: unknown, code: string): void {
  assert.ok(typeof json === "object" && json !== null && "refusal" in json && "ok" in json);
  assert.equal(json.ok, false);
  const refusal = json.refusal;
  assertValid("refusal", refusal);
  assert.equal(refusal.code, code);
}

function assertReaderRefusal(json: unknown, code: string): void {
  assertReadResult(json);
  assert.equal(json.ok, false);
  if (!json.ok) assert.equal(json.refusal.code, code);
}

describe("board routes", () => {
  it("serves a schema-valid catalogue and pages when asked with GET", async (t) => {
    const { port, id, page } = await setup(t);
    const cat = await send(port, "/api/conversations");
    assert.equal(cat.status, 200);
    assert.match(String(cat.headers["content-type"]), /^application\/json/);
    assertSecurityHeaders(cat.headers);
    assertValid("catalogue", cat.json);
    assert.ok(cat.json.conversations.some((r) => r.unsupportedReason === "unsupported-harness"));

    const first = await send(port, page(id("long.jsonl")));
    assert.equal(first.status, 200);
    assertReadResult(first.json);
    assert.ok(first.json.ok && first.json.page.parts.length === 100);
    const cursor = first.json.ok ? first.json.page.nextCursor : null;
    assert.ok(cursor);
    const second = await send(port, page(id("long.jsonl"), `?branch=main&cursor=${cursor}`));
    assert.equal(second.status, 200);
    assertReadResult(second.json);
    assert.ok(second.json.ok && second.json.follow && second.json.page.parts.length > 0);

    const rich = await send(port, page(id("rich.jsonl")));
    assertReadResult(rich.json);
    assert.ok(rich.json.ok);
    const fork = rich.json.view.branches.find((b) => b.forksFrom !== null);
    assert.ok(fork);
    const onFork = await send(port, page(id("rich.jsonl"), `?branch=${fork.name}`));
    assertReadResult(onFork.json);
    assert.ok(onFork.json.ok && onFork.json.page.branch === fork.name);
  });

  it("answers reader refusals with the status from REFUSAL_STATUS when a read is refused", async (t) => {
    // Unchecked: the fingerprint would hash the 257 MiB sparse file on every call.
    const { fx, port, id, page } = await setup(t, { unchecked: true });
    const dir = fx.alpha.sessionsDir;
    writeSession(dir, "empty.jsonl", []);
    writeSession(dir, "other.jsonl", [{ type: "not-a-session", id: "x" }]);
    writeSession(dir, "big.jsonl", [header(fx.alpha.projectRoot), user("u", null, "q")]);
    truncateSync(join(dir, "big.jsonl"), 257 * 1024 * 1024);
    symlinkSync(fx.files.grow, join(dir, "link.jsonl"));
    writeSession(dir, "foreign.jsonl", [header("/somewhere/else"), user("u", null, "q")]);
    const cat = await send(port, "/api/conversations");
    assertValid("catalogue", cat.json);
    const rocko = cat.json.conversations.find((r) => r.seat === "rocko")?.conversation;
    assert.ok(rocko);

    const cases: [string, string][] = [
      [page("pi-0000000000000000000000000000000000000000"), "unknown-conversation"],
      [page(id("rich.jsonl"), "?branch=b.nope"), "unknown-branch"],
      [page(rocko), "unsupported-harness"],
      [page(id("empty.jsonl")), "incomplete-header"],
      [page(id("other.jsonl")), "not-a-pi-session"],
      [page(id("big.jsonl")), "too-large"],
      [page(id("link.jsonl")), "unsafe-path"],
      [page(id("foreign.jsonl")), "foreign-project"],
      [page(id("grow.jsonl"), "?branch=main&cursor=c-never-issued"), "cursor-unknown"],
    ];
    for (const [path, code] of cases) {
      const r = await send(port, path);
      assertReaderRefusal(r.json, code);
      assert.equal(r.status, REFUSAL_STATUS[code as keyof typeof REFUSAL_STATUS], code);
      assertSecurityHeaders(r.headers);
    }

    const opened = await send(port, page(id("swap.jsonl")));
    assertReadResult(opened.json);
    assert.ok(opened.json.ok && opened.json.follow);
    const follow = opened.json.follow.id;
    const foreign = await send(port, page(id("grow.jsonl"), `?branch=main&cursor=${follow}`));
    assertReaderRefusal(foreign.json, "cursor-foreign");
    assert.equal(foreign.status, 409);
    swapFile(fx.files.swap, [header(fx.alpha.projectRoot), user("n1", null, "replaced")]);
    const replaced = await send(port, page(id("swap.jsonl"), `?branch=main&cursor=${follow}`));
    assertReaderRefusal(replaced.json, "source-replaced");
    assert.equal(replaced.status, 409);
  });

  it("refuses 421 when the Host header names another host or port", async (t) => {
    const { port } = await setup(t);
    for (const host of [
      `evil.com:${port}`,
      `127.0.0.1:${port + 1}`,
      "127.0.0.1",
      `[::1]:${port}`,
    ]) {
      const r = await send(port, "/api/conversations", { host });
      assert.equal(r.status, 421, host);
      assertBoardRefusal(r.json, "misdirected-request");
      assertSecurityHeaders(r.headers);
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      assert.equal((await send(port, "/api/conversations", { host })).status, 200, host);
    }
  });

  it("refuses 400 when a request has no Host header", async (t) => {
    const { port } = await setup(t);
    const r = await send(port, "/api/conversations", { host: null });
    assert.equal(r.status, 400);
    assertBoardRefusal(r.json, "bad-request");
    assertSecurityHeaders(r.headers);
    const raw = await sendRaw(port, "GET /api/conversations HTTP/1.0\r\n\r\n");
    assert.match(raw, /^HTTP\/1\.1 400 /);
  });

  it("refuses 405 with Allow and no CORS headers when the method is not GET or HEAD", async (t) => {
    const { port } = await setup(t);
    for (const method of ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"]) {
      const r = await send(port, "/api/conversations", {
        method,
        headers: {
          origin: "http://evil.com",
          "access-control-request-method": "GET",
          "content-type": "application/json",
        },
      });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.allow, "GET, HEAD");
      assertBoardRefusal(r.json, "method-not-allowed");
      assertSecurityHeaders(r.headers);
    }
  });

  it("answers HEAD with GET's headers and no body when asked with HEAD", async (t) => {
    const { port } = await setup(t);
    for (const path of ["/", "/console.js", "/api/conversations"]) {
      const get = await send(port, path);
      const head = await send(port, path, { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(head.text, "");
      assert.equal(head.headers["content-length"], get.headers["content-length"]);
      assert.equal(head.headers["content-type"], get.headers["content-type"]);
    }
  });

  it("serves the Console with a strict CSP and 404s unknown routes when asked for other paths", async (t) => {
    const { port } = await setup(t);
    const html = await send(port, "/");
    assert.equal(html.status, 200);
    assert.match(String(html.headers["content-type"]), /^text\/html/);
    assertSecurityHeaders(html.headers);
    const csp = String(html.headers["content-security-policy"]);
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src data:",
      "connect-src 'self'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ]) {
      assert.ok(csp.split("; ").includes(directive), `CSP lacks ${directive}`);
    }
    assert.doesNotMatch(html.text, /<script>|<style>|\sstyle=|\son[a-z]+=/i, "no inline code");
    for (const asset of ["/console.js", "/console.css", "/api.js", "/render.js", "/text.js"]) {
      const r = await send(port, asset);
      assert.equal(r.status, 200, asset);
      assertSecurityHeaders(r.headers, "no-cache");
    }
    for (const path of [
      "/api",
      "/api/conversations/",
      "/api/conversations/x",
      "/api/conversations/x/page/more",
      "/index.html",
      "/console/console.js",
      "/../package.json",
      "/%2e%2e/package.json",
      "/favicon.ico",
    ]) {
      const r = await send(port, path);
      assert.equal(r.status, 404, path);
      assertBoardRefusal(r.json, "not-found");
      assertSecurityHeaders(r.headers);
    }
  });

  it("answers a browser's revalidation of a script or sheet 304, and never keeps a page or a read", async (t) => {
    const { port, id, page } = await setup(t, { unchecked: true });
    const first = await send(port, "/console.js");
    const tag = first.headers.etag;
    assert.ok(typeof tag === "string" && /^"[A-Za-z0-9_-]{22}"$/.test(tag), `a tag: ${tag}`);
    for (const ifNoneMatch of [tag, `W/${tag}`, `"other", ${tag}`, "*"]) {
      const again = await send(port, "/console.js", { headers: { "if-none-match": ifNoneMatch } });
      assert.equal(again.status, 304, ifNoneMatch);
      assert.equal(again.text, "", "no body");
      assert.equal(again.headers.etag, tag);
      assert.equal(again.headers["content-length"], undefined);
      assertSecurityHeaders(again.headers, "no-cache");
    }
    const changed = await send(port, "/console.js", { headers: { "if-none-match": '"other"' } });
    assert.equal(changed.status, 200);
    assert.equal(changed.text, first.text);
    const sheet = await send(port, "/console.css");
    assert.notEqual(sheet.headers.etag, tag, "each file its own tag");
    // The pages (a login link's token is in /login's URL) and every read stay unkept.
    for (const path of [
      "/",
      "/login",
      "/login?token=x",
      "/api/conversations",
      page(id("long.jsonl")),
    ]) {
      const r = await send(port, path, { headers: { "if-none-match": "*" } });
      assert.equal(r.status, 200, path);
      assert.equal(r.headers.etag, undefined, path);
      assertSecurityHeaders(r.headers);
    }
  });

  it("refuses to start when the host is not a loopback address", async () => {
    const reader = {
      catalogue: () => assert.fail(),
      open: () => assert.fail(),
      next: () => assert.fail(),
    };
    for (const host of ["0.0.0.0", "192.168.1.1", "::", "127.0.0.2", "example.com", ""]) {
      await assert.rejects(startBoard({ reader, host }), /loopback only/, host);
    }
    await assert.rejects(startBoard({ reader, port: 70000 }), /port/);
  });

  it("finds no conversation when the id is a path traversal", async (t) => {
    const { port } = await setup(t);
    for (const id of [
      "..%2F..%2Fetc",
      "..%2F..%2F..%2Fetc%2Fpasswd",
      "%2e%2e",
      "rich.jsonl",
      "%00",
    ]) {
      const r = await send(port, `/api/conversations/${id}/page`);
      assert.equal(r.status, 404, id);
      assertReaderRefusal(r.json, "unknown-conversation");
    }
    const raw = await send(port, "/api/conversations/../../etc/page");
    assert.equal(raw.status, 404);
    assertBoardRefusal(raw.json, "not-found");
  });

  it("refuses odd query parameters when they are repeated, unknown, empty or too long", async (t) => {
    const { port, id, page } = await setup(t);
    const grow = id("grow.jsonl");
    const bad = [
      "?branch=main&branch=b.x",
      "?cursor=c-1",
      "?branch=",
      "?cursor=",
      "?path=/etc/passwd",
      "?branch=main&cursor=a&cursor=b",
    ];
    for (const q of bad) {
      const r = await send(port, page(grow, q));
      assert.equal(r.status, 400, q);
      assertBoardRefusal(r.json, "bad-request");
    }
    assert.equal((await send(port, "/api/conversations?glob=*")).status, 400);
    const badEscape = await send(port, "/api/conversations/%E0%A4%A/page");
    assert.equal(badEscape.status, 400);

    const huge = await send(port, page(grow, `?branch=main&cursor=${"c".repeat(6000)}`));
    assertReaderRefusal(huge.json, "cursor-unknown");
    const tooLong = await send(port, page(grow, `?branch=${"b".repeat(MAX_TARGET_LENGTH)}`));
    assert.equal(tooLong.status, 414);
    assertBoardRefusal(tooLong.json, "uri-too-long");
    const overNode = await sendRaw(
      port,
      `GET /${"x".repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
    );
    assert.match(overNode, /^HTTP\/1\.1 (431|414|400) /);
    assert.match(overNode, /X-Content-Type-Options: nosniff/i);
    assert.equal((await send(port, page(grow))).status, 200, "the board still serves");
  });

  it("answers 500 and keeps serving when the reader throws", async (t) => {
    const { port, logs, page } = await setup(t, {
      override: (reader) => ({
        ...reader,
        open: () => {
          throw new Error("reader bug: /secret/path");
        },
      }),
    });
    const r = await send(port, page("pi-anything"));
    assert.equal(r.status, 500);
    assertBoardRefusal(r.json, "internal-error");
    assert.doesNotMatch(r.text, /secret|reader bug/, "the body is generic");
    assert.ok(
      logs.some((l) => l.includes("reader bug")),
      "the error is logged",
    );
    assert.equal((await send(port, "/api/conversations")).status, 200);
  });

  it("serves on ::1 and checks Host against [::1] when bound there", async (t) => {
    const fx = await writeBoardFixture(t);
    let board: Awaited<ReturnType<typeof startBoard>>;
    try {
      board = await startBoard({ reader: fx.reader(), host: "::1" });
    } catch (e) {
      t.skip(`no IPv6 loopback here: ${(e as Error).message}`);
      return;
    }
    t.after(() => board.close());
    assert.match(board.url, /^http:\/\/\[::1\]:\d+\/$/);
    const ok = await fetch(`${board.url}api/conversations`, { signal: AbortSignal.timeout(5000) });
    assert.equal(ok.status, 200);
  });
});
