// Authentication for anything that acts (issue 15 item 3): the operator link's login, and the
// three checks of every POST (cookie, Origin, JSON) — over raw HTTP, and in Chromium from pages
// on other loopback origins that hold the cookie and try fetch and form POSTs. A spy stands in
// for the controller here: what these tests prove is that nothing reaches it.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, it, type TestContext } from "node:test";
import type { BrowserContext } from "playwright-core";
import { type Board, type ControlCall, startBoard } from "../../src/board/index.ts";
import { jsonReply } from "../../src/board/reply.ts";
import { type Browser, browserSkip, launchBrowser } from "./browser.ts";
import { writeBoardFixture } from "./fixture.ts";
import { type Answer, send } from "./http-client.ts";

type Spy = { calls: ControlCall[] };

async function startAuthBoard(t: TestContext): Promise<{ board: Board; spy: Spy; logs: string[] }> {
  const fx = await writeBoardFixture(t);
  const spy: Spy = { calls: [] };
  const logs: string[] = [];
  const board = await startBoard({
    sources: { specs: fx.specs, registrations: fx.registrations },
    lanes: 1,
    log: (line) => logs.push(line),
    control: (call) => {
      spy.calls.push(call);
      return Promise.resolve(jsonReply(200, { ok: true, echoed: call.body }));
    },
  });
  t.after(() => board.close());
  return { board, spy, logs };
}

const code = (a: Answer) => (a.json as { refusal?: { code?: string } }).refusal?.code;

/** Logs in over raw HTTP; the cookie pair (name=value) it set. */
async function login(board: Board): Promise<string> {
  const path = board.loginUrl.slice(board.url.length - 1);
  const r = await send(board.port, path);
  assert.equal(r.status, 303);
  assert.equal(r.headers.location, "/");
  const set = r.headers["set-cookie"]?.[0] ?? "";
  assert.match(set, /; Path=\/; HttpOnly; SameSite=Strict$/);
  return set.split(";", 1)[0] ?? "";
}

describe("board login and POST checks (raw HTTP)", () => {
  it("logs in only with this start's token, and the token is never logged or served", async (t) => {
    const { board, logs } = await startAuthBoard(t);
    assert.match(board.loginUrl, /^http:\/\/127\.0\.0\.1:\d+\/login\?token=[A-Za-z0-9_-]{43}$/);
    const token = new URL(board.loginUrl).searchParams.get("token") ?? "";
    const wrong = await send(board.port, "/login?token=nope");
    assert.equal(wrong.status, 403);
    assert.equal(code(wrong), "login-refused");
    assert.equal(wrong.headers["set-cookie"], undefined);
    const none = await send(board.port, "/login");
    assert.equal(none.status, 403);
    const forged = await send(board.port, `/login?token=${token}`, { host: "evil.example:80" });
    assert.equal(forged.status, 421, "the Host check comes first");
    assert.equal(forged.headers["set-cookie"], undefined);
    const cookie = await login(board);
    assert.ok(!cookie.includes(token), "the session is not the token");
    const other = await startAuthBoard(t);
    assert.notEqual(other.board.loginUrl.split("=")[1], token, "a fresh token per start");
    for (const path of ["/", "/console.js", "/api/conversations"]) {
      const r = await send(board.port, path, { headers: { cookie } });
      assert.ok(!r.text.includes(token) && !r.text.includes(cookie.split("=")[1] ?? "-"), path);
    }
    assert.ok(
      logs.every((l) => !l.includes(token)),
      "the token is never logged",
    );
  });

  it("refuses 403 every POST without cookie, own Origin and JSON; none reaches the controller", async (t) => {
    const { board, spy } = await startAuthBoard(t);
    const cookie = await login(board);
    const origin = `http://127.0.0.1:${board.port}`;
    const path = "/api/conversations/pi-x/control";
    const body = '{"op":"interrupt"}';
    const post = (headers: Record<string, string>, extra: { host?: string } = {}) =>
      send(board.port, path, { method: "POST", headers, body, ...extra });
    const json = "application/json";
    const cases: [string, Record<string, string>, string][] = [
      ["no cookie", { origin, "content-type": json }, "not-logged-in"],
      ["a made-up cookie", { origin, "content-type": json, cookie: `${cookie}x` }, "not-logged-in"],
      ["no Origin", { cookie, "content-type": json }, "origin-refused"],
      [
        "another port",
        { cookie, origin: "http://127.0.0.1:1", "content-type": json },
        "origin-refused",
      ],
      [
        "another host",
        { cookie, origin: "http://127.0.0.2:1", "content-type": json },
        "origin-refused",
      ],
      ["null Origin", { cookie, origin: "null", "content-type": json }, "origin-refused"],
      [
        "a form",
        { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
        "content-type-refused",
      ],
      ["text/plain", { cookie, origin, "content-type": "text/plain" }, "content-type-refused"],
      [
        "multipart",
        { cookie, origin, "content-type": "multipart/form-data; boundary=x" },
        "content-type-refused",
      ],
    ];
    for (const [what, headers, expected] of cases) {
      const r = await post(headers);
      assert.equal(r.status, 403, what);
      assert.equal(code(r), expected, what);
      assert.equal(r.headers["access-control-allow-origin"], undefined, "no CORS");
    }
    const forged = await post(
      { cookie, origin, "content-type": json },
      { host: "evil.example:80" },
    );
    assert.equal(forged.status, 421);
    const preflight = await send(board.port, path, {
      method: "OPTIONS",
      headers: { origin: "http://127.0.0.1:1", "access-control-request-method": "POST" },
    });
    assert.equal(preflight.status, 405);
    assert.equal(preflight.headers["access-control-allow-origin"], undefined);
    const get = await send(board.port, path);
    assert.equal(get.status, 405);
    assert.equal(spy.calls.length, 0, "nothing reached the controller");

    const big = await send(board.port, path, {
      method: "POST",
      headers: { cookie, origin, "content-type": json },
      body: JSON.stringify({ op: "prompt", text: "x".repeat(70_000) }),
    });
    assert.equal(big.status, 413);
    const notObject = await post({
      cookie,
      origin,
      "content-type": "application/json; charset=utf-8",
    });
    assert.equal(notObject.status, 200, "the charset parameter is fine");
    assert.equal(spy.calls.length, 1);
    assert.deepEqual(spy.calls[0]?.body, { op: "interrupt" });
    assert.equal(spy.calls[0]?.conversation, "pi-x");
    assert.equal(typeof spy.calls[0]?.session, "string");
  });
});

/** A page on another loopback origin that tries every way to POST to the board. */
function attackerPage(target: string): string {
  return `<!doctype html><meta charset="utf-8"><body>
<iframe name="sink"></iframe>
<form id="f1" method="POST" target="sink" action="${target}"><input name="op" value="interrupt"></form>
<form id="f2" method="POST" target="sink" enctype="text/plain" action="${target}"><input name='{"op":"interrupt","x":"' value='"}'></form>
<script>
window.results = [];
const tries = [
  fetch("${target}", { method: "POST", credentials: "include", headers: { "Content-Type": "application/json" }, body: '{"op":"interrupt"}' }),
  fetch("${target}", { method: "POST", mode: "no-cors", credentials: "include", headers: { "Content-Type": "application/json" }, body: '{"op":"interrupt"}' }),
  fetch("${target}", { method: "POST", mode: "no-cors", credentials: "include", body: '{"op":"interrupt"}' }),
];
Promise.allSettled(tries).then((r) => { window.results = r.map((x) => x.status); });
document.getElementById("f1").submit();
setTimeout(() => document.getElementById("f2").submit(), 200);
setTimeout(() => { window.done = true; }, 1200);
</script>`;
}

async function serveAttacker(t: TestContext, host: string, target: string): Promise<string> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(attackerPage(target));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  return `http://${host}:${address.port}/`;
}

describe("board POST checks in Chromium", { skip: browserSkip }, () => {
  let browser: Browser;
  let context: BrowserContext;
  before(async () => {
    browser = await launchBrowser();
    context = browser.context;
  });
  after(() => browser?.close());

  it("a logged-in page acts; pages on other loopback origins holding the cookie reach nothing", async (t) => {
    const { board, spy } = await startAuthBoard(t);
    const page = await context.newPage();
    t.after(() => page.close());
    page.setDefaultTimeout(10_000);
    await page.goto(board.loginUrl);
    assert.equal(page.url(), board.url, "the login redirects to the Console");
    assert.equal(await page.evaluate("document.cookie"), "", "the cookie is HttpOnly");
    const cookies = await context.cookies(board.url);
    assert.equal(cookies.length, 1);
    assert.equal(cookies[0]?.sameSite, "Strict");
    const target = `${board.url}api/conversations/pi-x/control`;
    const own = await page.evaluate(
      `fetch(${JSON.stringify(target)}, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"op":"release"}' }).then((r) => r.status)`,
    );
    assert.equal(own, 200, "the board's own page, logged in, reaches the controller");
    assert.equal(spy.calls.length, 1);

    for (const host of ["127.0.0.1", "127.0.0.2"]) {
      const url = await serveAttacker(t, host, target);
      const evil = await context.newPage();
      t.after(() => evil.close());
      await evil.goto(url);
      const until = Date.now() + 10_000;
      while ((await evil.evaluate("window.done === true")) !== true) {
        assert.ok(Date.now() < until, "the attacker page finished its tries");
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(spy.calls.length, 1, `nothing from ${url} reached the controller`);
    }
    // The page that is logged in still is: the refusals changed nothing.
    assert.equal(spy.calls[0]?.body.op, "release");
  });
});
