// Authentication for anything that acts (issue 15 item 3, issue 22 items 1 and 6): the login
// link's token traded once for a login key, the checks of every POST (who opened the
// connection, Origin, JSON, the key) — over raw HTTP, from another uid, and in Chromium, where
// pages on other loopback origins try fetch and form POSTs, read the cookies the browser sends
// to their port, and toss and flood cookies for the board's host. A spy stands in for the
// controller: what these tests prove is that nothing reaches it.
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { describe, it, type TestContext } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { MAX_LOGINS } from "../../src/board/auth.ts";
import { type Board, type ControlCall, startBoard } from "../../src/board/index.ts";
import { jsonReply } from "../../src/board/reply.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { logIn, postLogin } from "../helpers/login.ts";
import { OTHER_UID, requestAsOtherUser, whyNoOtherUser } from "../helpers/other-user.ts";
import { browserSkip, suiteBrowser } from "./browser.ts";
import { writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";

type Spy = { calls: ControlCall[]; links: string[] };

async function startAuthBoard(t: TestContext): Promise<{ board: Board; spy: Spy; logs: string[] }> {
  const fx = await writeBoardFixture(t);
  const spy: Spy = { calls: [], links: [] };
  const logs: string[] = [];
  const board = await startBoard({
    sources: { specs: fx.specs, registrations: fx.registrations },
    lanes: 1,
    log: (line) => logs.push(line),
    control: (call) => {
      spy.calls.push(call);
      return Promise.resolve(jsonReply(200, { ok: true, echoed: call.body }));
    },
    onLoginLinkUsed: (link) => spy.links.push(link),
  });
  t.after(() => board.close());
  return { board, spy, logs };
}

const code = (a: { json: unknown }) => (a.json as { refusal?: { code?: string } }).refusal?.code;
const message = (a: { json: unknown }) =>
  (a.json as { refusal?: { message?: string } }).refusal?.message ?? "";
const CONTROL = "/api/conversations/pi-x/control";

function post(board: Board, headers: Record<string, string>, body = '{"op":"interrupt"}') {
  return send(board.port, CONTROL, { method: "POST", headers, body });
}

describe("board login (raw HTTP)", () => {
  it("trades each login link's token once for a key, and draws the next link", async (t) => {
    const { board, spy, logs } = await startAuthBoard(t);
    const first = board.loginUrl;
    assert.match(first, /^http:\/\/127\.0\.0\.1:\d+\/login\?token=[A-Za-z0-9_-]{43}$/);
    const token = new URL(first).searchParams.get("token") ?? "";
    // Opening the link serves the login page; the token is used only by its POST.
    const page = await send(board.port, `/login?token=${token}`);
    assert.equal(page.status, 200);
    assert.match(page.headers["content-type"] ?? "", /^text\/html/);
    assert.equal(page.headers["set-cookie"], undefined);
    assert.ok(!page.text.includes(token), "the page does not echo the token");
    assert.equal(board.loginUrl, first, "opening the page uses nothing");

    const wrong = await postLogin(first, {}, "nope");
    assert.equal(wrong.status, 403);
    assert.equal(code(wrong), "login-refused");
    const foreign = await postLogin(first, { origin: "http://127.0.0.1:1" });
    assert.equal(code(foreign), "origin-refused");
    const form = await postLogin(first, { "content-type": "application/x-www-form-urlencoded" });
    assert.equal(code(form), "content-type-refused");
    const forged = await send(board.port, "/login", {
      method: "POST",
      host: "evil.example:80",
      headers: { origin: "http://evil.example:80", "content-type": "application/json" },
      body: JSON.stringify({ token }),
    });
    assert.equal(forged.status, 421, "the Host check comes first");
    assert.equal(board.loginUrl, first, "no refused try used the link");

    const login = await logIn(first);
    assert.ok(!login.key.includes(token), "the key is not the token");
    const again = await postLogin(first);
    assert.equal(again.status, 403, "a link logs in once");
    assert.equal(code(again), "login-refused");
    assert.match(message(again), /used already/);
    assert.notEqual(board.loginUrl, first, "the next login has a link of its own");
    assert.deepEqual(spy.links, [board.loginUrl], "and the board says where it is");
    const second = await logIn(board.loginUrl);
    assert.notEqual(second.key, login.key);
    assert.equal(spy.links.length, 2);

    const other = await startAuthBoard(t);
    assert.notEqual(other.board.loginUrl.split("=")[1], token, "a fresh token per start");
    const elsewhere = await postLogin(other.board.loginUrl, {}, token);
    assert.equal(code(elsewhere), "login-refused", "a token is this board's only");
    for (const path of ["/", "/login", "/console.js", "/api/conversations"]) {
      const r = await send(board.port, path);
      assert.ok(!r.text.includes(token) && !r.text.includes(login.key), path);
    }
    assert.ok(
      logs.every((l) => !l.includes(token) && !l.includes(login.key)),
      "no token or key is logged",
    );
  });

  it("refuses 403 every POST without its key, own Origin and JSON; none reaches the controller", async (t) => {
    const { board, spy } = await startAuthBoard(t);
    const { key, headers } = await logIn(board.loginUrl);
    const origin = `http://127.0.0.1:${board.port}`;
    const json = "application/json";
    const k = { "x-board-login": key };
    const cases: [string, Record<string, string>, string][] = [
      ["no key", { origin, "content-type": json }, "not-logged-in"],
      [
        "a made-up key",
        { origin, "content-type": json, "x-board-login": `${key}x` },
        "not-logged-in",
      ],
      ["no Origin", { ...k, "content-type": json }, "origin-refused"],
      [
        "another port",
        { ...k, origin: "http://127.0.0.1:1", "content-type": json },
        "origin-refused",
      ],
      [
        "another host",
        { ...k, origin: "http://127.0.0.2:1", "content-type": json },
        "origin-refused",
      ],
      ["null Origin", { ...k, origin: "null", "content-type": json }, "origin-refused"],
      [
        "a form",
        { ...k, origin, "content-type": "application/x-www-form-urlencoded" },
        "content-type-refused",
      ],
      ["text/plain", { ...k, origin, "content-type": "text/plain" }, "content-type-refused"],
      [
        "multipart",
        { ...k, origin, "content-type": "multipart/form-data; boundary=x" },
        "content-type-refused",
      ],
      ["another site's page", { ...headers, "sec-fetch-site": "same-site" }, "origin-refused"],
    ];
    for (const [what, h, expected] of cases) {
      const r = await post(board, h);
      assert.equal(r.status, 403, what);
      assert.equal(code(r), expected, what);
      assert.equal(r.headers["access-control-allow-origin"], undefined, "no CORS");
    }
    const forged = await send(board.port, CONTROL, {
      method: "POST",
      headers,
      host: "evil.example:80",
      body: "{}",
    });
    assert.equal(forged.status, 421);
    const preflight = await send(board.port, CONTROL, {
      method: "OPTIONS",
      headers: { origin: "http://127.0.0.1:1", "access-control-request-method": "POST" },
    });
    assert.equal(preflight.status, 405);
    assert.equal(preflight.headers["access-control-allow-origin"], undefined);
    assert.equal((await send(board.port, CONTROL)).status, 405);
    assert.equal(spy.calls.length, 0, "nothing reached the controller");

    const big = await post(
      board,
      headers,
      JSON.stringify({ op: "prompt", text: "x".repeat(70_000) }),
    );
    assert.equal(big.status, 413);
    const ok = await post(board, { ...headers, "content-type": "application/json; charset=utf-8" });
    assert.equal(ok.status, 200, "the charset parameter is fine");
    assert.equal(spy.calls.length, 1);
    assert.deepEqual(spy.calls[0]?.body, { op: "interrupt" });
    assert.equal(spy.calls[0]?.conversation, "pi-x");
    assert.ok(!spy.calls[0]?.session.includes(key), "the controller side never sees the key");
  });

  it("acts on no cookie: every cookie a browser could hold, with a forged Origin, is refused", async (t) => {
    const { board, spy } = await startAuthBoard(t);
    await logIn(board.loginUrl);
    const origin = `http://127.0.0.1:${board.port}`;
    const cookie = `board_session_${board.port}=anything; board_session=x; session=y`;
    const r = await post(board, { cookie, origin, "content-type": "application/json" });
    assert.equal(r.status, 403);
    assert.equal(code(r), "not-logged-in");
    assert.equal(spy.calls.length, 0);
  });

  it(`signs out the least recently used login past ${MAX_LOGINS}, and says why to its page`, async (t) => {
    const { board, spy } = await startAuthBoard(t);
    const logins = [];
    for (let i = 0; i < MAX_LOGINS; i++) logins.push(await logIn(board.loginUrl));
    const [oldest, second] = logins;
    assert.ok(oldest && second);
    // The oldest acts, so it is the most recently used; the second is now the least.
    assert.equal((await post(board, oldest.headers)).status, 200);
    const newest = await logIn(board.loginUrl);
    const out = await post(board, second.headers);
    assert.equal(out.status, 403);
    assert.equal(code(out), "not-logged-in");
    assert.match(
      message(out),
      new RegExp(`signed out to make room: the board keeps ${MAX_LOGINS}`),
    );
    for (const still of [oldest, newest, logins.at(-1)]) {
      assert.equal((await post(board, still?.headers ?? {})).status, 200);
    }
    assert.equal(spy.calls.length, 4);
  });
});

describe("board login from another user of this machine", { skip: whyNoOtherUser() }, () => {
  it("refuses another uid's connection whatever it holds: a valid token, a valid key", async (t) => {
    const { board, spy } = await startAuthBoard(t);
    const link = board.loginUrl;
    const token = new URL(link).searchParams.get("token") ?? "";
    const origin = `http://127.0.0.1:${board.port}`;
    const json = { origin, "content-type": "application/json" };
    const tried = await requestAsOtherUser(t, board.port, {
      path: "/login",
      method: "POST",
      headers: json,
      body: JSON.stringify({ token }),
    });
    assert.equal(tried.uid, OTHER_UID);
    assert.equal(tried.status, 403);
    assert.equal(code({ json: JSON.parse(tried.body) }), "peer-refused");
    assert.match(tried.body, new RegExp(`another user of this machine \\(uid ${OTHER_UID}\\)`));
    assert.equal(board.loginUrl, link, "the refused try did not use the link");

    const { key, headers } = await logIn(link);
    for (const extra of [{}, { cookie: `board_session_${board.port}=x` }]) {
      const replay = await requestAsOtherUser(t, board.port, {
        path: CONTROL,
        method: "POST",
        headers: { ...headers, ...extra },
        body: JSON.stringify({ op: "prompt", text: "from another user" }),
      });
      assert.equal(replay.status, 403);
      assert.equal(code({ json: JSON.parse(replay.body) }), "peer-refused");
    }
    assert.equal(spy.calls.length, 0, "nothing reached the controller");
    // Reading stays open to loopback, as the seed's route is; only acting is the user's own.
    const read = await requestAsOtherUser(t, board.port, { path: "/api/conversations" });
    assert.equal(read.status, 200);
    assert.equal((await post(board, { ...json, "x-board-login": key })).status, 200);
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
  fetch("${target}", { method: "POST", credentials: "include", headers: { "Content-Type": "application/json", "X-Board-Login": "guess" }, body: '{"op":"interrupt"}' }),
];
Promise.allSettled(tries).then((r) => { window.results = r.map((x) => x.status); });
document.getElementById("f1").submit();
setTimeout(() => document.getElementById("f2").submit(), 200);
setTimeout(() => { window.done = true; }, 1200);
</script>`;
}

type Attacker = { url: string; seen: IncomingHttpHeaders[] };

/** A server on another loopback origin: serves `page` and keeps every request's headers. */
async function serveAttacker(t: TestContext, host: string, page: string): Promise<Attacker> {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  return { url: `http://${host}:${address.port}/`, seen };
}

async function waitUntil(page: Page, expression: string, what: string): Promise<void> {
  const until = Date.now() + 15_000;
  while ((await page.evaluate(expression)) !== true) {
    assert.ok(Date.now() < until, what);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Opens the login link in a new tab, as a person does; the tab ends on the Console. */
async function logInPage(context: BrowserContext, t: TestContext, board: Board): Promise<Page> {
  const page = await context.newPage();
  t.after(() => page.close());
  page.setDefaultTimeout(DEADLINE_MS);
  await page.goto(board.loginUrl);
  await page.waitForURL(board.url);
  return page;
}

/** A steering call through the Console's own request code, from `page`; its HTTP answer. */
function steerFrom(page: Page, op: string): Promise<{ ok: boolean; refusal?: { code: string } }> {
  return page.evaluate(
    `import("/api.js").then((m) => m.postControl("pi-x", { op: ${JSON.stringify(op)} }))`,
  );
}

describe("board login in Chromium", { skip: browserSkip }, () => {
  const browserContext = suiteBrowser();

  it("the login link logs the tab in once, leaves no token in its history, and the Console acts", async (t) => {
    const context = browserContext();
    const { board, spy } = await startAuthBoard(t);
    const link = board.loginUrl;
    const page = await logInPage(context, t, board);
    // Back from the Console goes where the tab was before the link (the login page's entry
    // was replaced), and forward again comes back to the Console, still logged in.
    await page.goBack();
    assert.equal(page.url(), "about:blank", "no history entry holds the login page or token");
    await page.goForward();
    assert.equal(page.url(), board.url);
    assert.equal(await page.evaluate("document.cookie"), "");
    assert.deepEqual(await context.cookies(board.url), [], "a login sets no cookie");
    const own = await steerFrom(page, "release");
    assert.equal(own.ok, true, JSON.stringify(own));
    assert.equal(spy.calls.length, 1);

    // The same link in another tab is used up: the page says so, and the next link works.
    const again = await context.newPage();
    t.after(() => again.close());
    await again.goto(link);
    await again.locator("#login-refusal").getByText("login-refused").waitFor();
    await again.getByText(/used already/).waitFor();
    assert.equal(new URL(again.url()).search, "", "the token left the address bar");
    await again.goto(board.loginUrl);
    await again.waitForURL(board.url);
    assert.equal((await steerFrom(again, "release")).ok, true);
    // A tab that never logged in is refused in words.
    const reader = await context.newPage();
    t.after(() => reader.close());
    await reader.goto(board.url);
    assert.equal((await steerFrom(reader, "release")).refusal?.code, "not-logged-in");
    assert.equal(spy.calls.length, 2);
  });

  it("pages on other loopback origins reach nothing, and the cookie sent to them acts nowhere", async (t) => {
    const context = browserContext();
    const { board, spy } = await startAuthBoard(t);
    const page = await logInPage(context, t, board);
    assert.equal((await steerFrom(page, "release")).ok, true);
    const target = `${board.url}api/conversations/pi-x/control`;
    for (const host of ["127.0.0.1", "127.0.0.2"]) {
      const attacker = await serveAttacker(t, host, attackerPage(target));
      const evil = await context.newPage();
      t.after(() => evil.close());
      await evil.goto(attacker.url);
      await waitUntil(evil, "window.done === true", "the attacker page finished its tries");
      assert.equal(spy.calls.length, 1, `nothing from ${attacker.url} reached the controller`);
      // Whatever the browser sent to that port, replayed from outside with a forged Origin.
      for (const headers of attacker.seen) {
        const replay = await send(board.port, CONTROL, {
          method: "POST",
          headers: {
            ...(headers.cookie === undefined ? {} : { cookie: headers.cookie }),
            origin: `http://127.0.0.1:${board.port}`,
            "content-type": "application/json",
          },
          body: '{"op":"takeover"}',
        });
        assert.equal(replay.status, 403);
        assert.equal(code(replay), "not-logged-in");
      }
    }
    assert.equal(spy.calls.length, 1);
    assert.equal((await steerFrom(page, "release")).ok, true, "the logged-in tab still acts");
  });

  it("cookies tossed and flooded by another port neither sign the Console out nor stop it", async (t) => {
    const context = browserContext();
    const { board, spy } = await startAuthBoard(t);
    t.after(() => context.clearCookies());
    const page = await logInPage(context, t, board);
    // Another port of this host writes cookies for it: one named as the old session cookie
    // was, then as many as the browser keeps (180 of about 4 KiB for one host).
    const flood = `<!doctype html><script>
document.cookie = "board_session_${board.port}=tossed; path=/";
for (let i = 0; i < 200; i++) document.cookie = "f" + i + "=" + "x".repeat(4000) + "; path=/";
window.held = document.cookie.length;
window.done = true;
</script>`;
    const attacker = await serveAttacker(t, "127.0.0.1", flood);
    const evil = await context.newPage();
    t.after(() => evil.close());
    await evil.goto(attacker.url);
    await waitUntil(evil, "window.done === true", "the flood was written");
    // Chromium stores a page's cookie writes asynchronously: the renderer posts each one to the
    // network service and goes on, so a jar read right after the loop (CI: f0 to f49 of 200)
    // sees only those stored so far. Reading document.cookie is answered on the same channel,
    // after the writes before it, so once the page has read it back the jar holds the flood.
    assert.ok(await evil.evaluate("window.held > 0"), "the page read its cookies back");
    const jar = await context.cookies(board.url);
    // How many the browser keeps varies (it purges in batches past its limit); what matters is
    // that it sends the board far more than node's default 16 KiB head.
    const bytes = jar.reduce((n, c) => n + c.name.length + c.value.length, 0);
    assert.ok(bytes > 256 * 1024, `the browser holds ${jar.length} cookies, ${bytes} bytes`);

    // The reload fetches some 30 files, each request carrying the whole flood (about 650 KiB of
    // cookies): on a loaded 2-core machine that takes Chromium well over the page's 15 s, so
    // its load event gets a deadline of its own.
    const reload = await page.reload({ timeout: 90_000 });
    assert.equal(reload?.status(), 200, "the Console loads through the flood");
    await page.locator("#rows tr").first().waitFor();
    const acted = await steerFrom(page, "release");
    assert.equal(acted.ok, true, JSON.stringify(acted));
    assert.equal(spy.calls.length, 1);
  });
});
