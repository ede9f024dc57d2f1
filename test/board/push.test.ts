// Web Push on the board (issue 27 items 3 and 5): the sender against a local push endpoint that
// verifies the VAPID JWT (RFC 8292) and decrypts the aes128gcm payload (RFC 8291) with the
// subscription's keys; the endpoint rule (SSRF); the VAPID pair kept once in a private folder;
// the subscribe routes' refusals; and a stall and a run's end from a real controller reaching
// the endpoint as pushes.
import assert from "node:assert/strict";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { DeviceLinks } from "../../src/board/device-links.ts";
import type { Board } from "../../src/board/index.ts";
import { checkEndpoint, isInwardAddress, publicOnlyLookup } from "../../src/board/push/endpoint.ts";
import { deliver } from "../../src/board/push/send.ts";
import { MAX_PER_IDENTITY } from "../../src/board/push/store.ts";
import { loadOrMakeVapid } from "../../src/board/push/vapid.ts";
import { runLogins } from "../../src/cli/logins.ts";
import { startController } from "../control/controller-fixture.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { logIn, postLogin } from "../helpers/login.ts";
import {
  type PushEndpoint,
  startPushEndpoint,
  type TestSubscription,
} from "../helpers/push-endpoint.ts";
import { boardOverController } from "./controlled-board.ts";
import { type Answer, send } from "./http-client.ts";

function privateDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "push-state-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function endpoint(t: TestContext, tls = false): Promise<PushEndpoint> {
  const e = await startPushEndpoint({ tls });
  t.after(() => e.close());
  return e;
}

function vapidIn(dir: string) {
  const made = loadOrMakeVapid(join(dir, "push-keys"));
  assert.ok(made.ok, made.ok ? "" : made.message);
  return made.vapid;
}

describe("push/send", () => {
  for (const tls of [true, false]) {
    it(`delivers a push the endpoint verifies and decrypts when it is ${tls ? "https" : "http"}`, async (t) => {
      const dir = privateDir(t);
      mkdirSync(join(dir, "push-keys"), { mode: 0o700 });
      const vapid = vapidIn(dir);
      const e = await endpoint(t, tls);
      const sub = e.subscribe();
      const payload = JSON.stringify({ v: 1, state: "failed", text: "é ✓".repeat(100) });
      const out = await deliver(sub, payload, "pi-x", {
        vapid,
        service: false,
        ...(e.agent ? { agent: e.agent } : {}),
      });
      assert.deepEqual(out, { kind: "sent", status: 201 });
      const got = await e.next();
      assert.equal(got.problem, null);
      assert.equal(got.k, vapid.publicKey, "k is the board's public key");
      assert.equal(got.jwt?.claims.aud, e.origin);
      assert.equal(got.jwt?.claims.sub, vapid.subject);
      assert.equal(got.payload, payload, "the payload decrypts with the subscription's keys");
      assert.match(String(got.headers.ttl), /^\d+$/);
      assert.match(String(got.headers.topic), /^[A-Za-z0-9_-]{32}$/);
      assert.doesNotMatch(String(got.headers.topic), /pi-x/, "the topic names no conversation");
    });
  }

  it("fails to decrypt with another subscription's keys (the receiver's check can fail)", async (t) => {
    const dir = privateDir(t);
    mkdirSync(join(dir, "push-keys"), { mode: 0o700 });
    const e = await endpoint(t);
    const a = e.subscribe();
    const b = e.subscribe();
    const out = await deliver({ endpoint: a.endpoint, keys: b.keys }, "x", "c", {
      vapid: vapidIn(dir),
      service: false,
    });
    assert.equal(out.kind, "sent");
    assert.match((await e.next()).problem ?? "", /does not decrypt/);
  });

  it("says gone when the push service answers 410 or 404", async (t) => {
    const dir = privateDir(t);
    mkdirSync(join(dir, "push-keys"), { mode: 0o700 });
    const e = await endpoint(t);
    for (const status of [410, 404]) {
      const out = await deliver(e.subscribe(status), "x", "c", {
        vapid: vapidIn(dir),
        service: false,
      });
      assert.deepEqual(out, { kind: "gone", status });
    }
  });

  it("gives up on an endpoint that does not answer within the deadline", async (t) => {
    const dir = privateDir(t);
    mkdirSync(join(dir, "push-keys"), { mode: 0o700 });
    const silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    t.after(() => {
      silent.closeAllConnections();
      silent.close();
    });
    const { port } = silent.address() as AddressInfo;
    const e = await endpoint(t);
    const { keys } = e.subscribe();
    const out = await deliver({ endpoint: `http://127.0.0.1:${port}/p`, keys }, "x", "c", {
      vapid: vapidIn(dir),
      service: false,
      timeoutMs: 300,
    });
    assert.equal(out.kind, "failed");
    assert.match(out.kind === "failed" ? out.why : "", /no answer within 300 ms/);
  });

  it("refuses to connect when a push service's name resolves to an inward address", async (t) => {
    const dir = privateDir(t);
    mkdirSync(join(dir, "push-keys"), { mode: 0o700 });
    const e = await endpoint(t);
    // `localhost` stands for a push service's name that a hostile resolver points inward.
    const { keys } = e.subscribe();
    const port = new URL(e.origin).port;
    const out = await deliver({ endpoint: `http://localhost:${port}/push/x`, keys }, "x", "c", {
      vapid: vapidIn(dir),
      service: true,
    });
    assert.equal(out.kind, "failed");
    assert.match(out.kind === "failed" ? out.why : "", /not a public address/);
    assert.equal(e.received.length, 0, "nothing reached the endpoint");
  });
});

describe("push/endpoint", () => {
  const policy = { origins: new Set(["http://127.0.0.1:9999"]) };
  it("accepts the browsers' push services over https", () => {
    for (const url of [
      "https://fcm.googleapis.com/fcm/send/abc:def",
      "https://updates.push.services.mozilla.com/wpush/v2/gAAA",
      "https://web.push.apple.com/QGx",
      "https://wns2-par02p.notify.windows.com/w/?token=AwYAAAB",
    ]) {
      const c = checkEndpoint(url, policy);
      assert.ok(c.ok && c.service, url);
    }
  });

  it("accepts an origin the board was started with, and only exactly it", () => {
    const c = checkEndpoint("http://127.0.0.1:9999/push/1", policy);
    assert.ok(c.ok && !c.service);
    assert.equal(checkEndpoint("http://127.0.0.1:9998/push/1", policy).ok, false);
  });

  it("refuses anything else, saying why", () => {
    const cases: [string, RegExp][] = [
      ["http://fcm.googleapis.com/fcm/send/x", /https only/],
      ["https://evil.example/push", /not one of the browsers' push services/],
      ["https://169.254.169.254/latest/meta-data", /not one of the browsers' push services/],
      ["https://[::1]/x", /not one of the browsers' push services/],
      ["https://fcm.googleapis.com:8443/x", /port/],
      ["https://user:pw@fcm.googleapis.com/x", /user name/],
      ["https://fcm.googleapis.com.evil.example/x", /not one of/],
      ["https://notify.windows.com.evil.example/x", /not one of/],
      [`https://fcm.googleapis.com/${"a".repeat(1100)}`, /at most 1024 bytes/],
      ["not a url", /not a URL/],
      ["file:///etc/passwd", /https only/],
    ];
    for (const [url, why] of cases) {
      const c = checkEndpoint(url, policy);
      assert.equal(c.ok, false, url);
      assert.match(c.ok ? "" : c.message, why, url);
    }
  });

  it("knows the inward addresses", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "0.0.0.0",
      "100.64.0.1",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "224.0.0.1",
    ]) {
      assert.equal(isInwardAddress(a), true, a);
    }
    for (const a of ["142.250.74.106", "2a00:1450:4007:80e::200a", "8.8.8.8"]) {
      assert.equal(isInwardAddress(a), false, a);
    }
  });

  it("fails the lookup of a name that resolves inward", async () => {
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      publicOnlyLookup("localhost", {}, (e) => resolve(e)),
    );
    assert.equal(err?.code, "EPUSHINWARD");
  });
});

describe("push/vapid", () => {
  it("makes the pair once, 0600, and gives the same one to every later board", (t) => {
    const dir = privateDir(t);
    const keys = join(dir, "k");
    mkdirSync(keys, { mode: 0o700 });
    const first = loadOrMakeVapid(keys);
    const second = loadOrMakeVapid(keys);
    assert.ok(first.ok && second.ok);
    assert.deepEqual(second.vapid, first.vapid);
    assert.equal(statSync(join(keys, "vapid.json")).mode & 0o777, 0o600);
    assert.equal(Buffer.from(first.vapid.publicKey, "base64url").length, 65);
  });

  it("refuses a key file that is a link, or open to others", (t) => {
    const dir = privateDir(t);
    const keys = join(dir, "k");
    mkdirSync(keys, { mode: 0o700 });
    writeFileSync(join(dir, "elsewhere.json"), "{}", { mode: 0o600 });
    symlinkSync(join(dir, "elsewhere.json"), join(keys, "vapid.json"));
    const linked = loadOrMakeVapid(keys);
    assert.equal(linked.ok, false);
    assert.match(linked.ok ? "" : linked.message, /symbolic link/);
    rmSync(join(keys, "vapid.json"));
    assert.ok(loadOrMakeVapid(keys).ok);
    chmodSync(join(keys, "vapid.json"), 0o644);
    const open = loadOrMakeVapid(keys);
    assert.match(open.ok ? "" : open.message, /mode 644/);
  });
});

/** A board over a fake-pi controller with Web Push, its state in the fixture's state dir. */
async function pushBoard(
  t: TestContext,
  extra: { stallMs?: number; script?: object; devices?: boolean } = {},
) {
  // The board closes first (hooks run in the order they were added), so the controller's stop
  // that follows is not a change it pushes to an endpoint already gone.
  let board: Board | undefined;
  t.after(() => board?.close());
  const e = await endpoint(t);
  const { ctl, f } = await startController(t, extra.script ? { script: extra.script } : {});
  const boardDir = join(f.root, "state", "board");
  const made = await boardOverController(f, ctl.socketPath, {
    push: { dir: boardDir, origins: [e.origin] },
    ...(extra.stallMs === undefined ? {} : { stallMs: extra.stallMs }),
    ...(extra.devices ? { devices: new DeviceLinks(boardDir) } : {}),
  });
  board = made.board;
  t.after(made.unregister);
  return { board: made.board, conversation: made.conversation, e, boardDir, f };
}

function post(
  board: Board,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<Answer> {
  return send(board.port, path, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
    timeoutMs: 20_000,
  });
}

const subscribeBody = (sub: TestSubscription, more: object = {}) => ({
  subscription: { endpoint: sub.endpoint, expirationTime: null, keys: sub.keys },
  ...more,
});

function refusal(a: Answer): { status: number; code: string | undefined; message: string } {
  const r = (a.json as { refusal?: { code: string; message: string } }).refusal;
  return { status: a.status, code: r?.code, message: r?.message ?? "" };
}

describe("the board's push routes", () => {
  it("serves the public key, made on first use in a private folder", async (t) => {
    const { board, boardDir } = await pushBoard(t);
    assert.throws(() => statSync(join(boardDir, "push")), "nothing is made before it is asked for");
    const a = await send(board.port, "/api/push/key");
    assert.equal(a.status, 200);
    assert.match(String(a.headers["content-type"]), /^application\/json/);
    const { publicKey } = a.json as { publicKey: string };
    assert.equal(Buffer.from(publicKey, "base64url").length, 65);
    assert.equal(statSync(join(boardDir, "push")).mode & 0o777, 0o700);
    assert.equal(statSync(join(boardDir, "push", "vapid.json")).mode & 0o777, 0o600);
    assert.doesNotMatch(a.text, /privateKey/);
    const again = await send(board.port, "/api/push/key");
    assert.equal((again.json as { publicKey: string }).publicKey, publicKey);
  });

  it("refuses push when the push folder is open to others", async (t) => {
    const { board, boardDir } = await pushBoard(t);
    mkdirSync(join(boardDir, "push"), { recursive: true, mode: 0o755 });
    chmodSync(join(boardDir, "push"), 0o755);
    const a = await send(board.port, "/api/push/key");
    const r = refusal(a);
    assert.equal(r.status, 503);
    assert.equal(r.code, "push-unavailable");
    assert.match(r.message, /chmod 700/);
  });

  it("refuses a subscription without a login, with a cookie only, or from another origin", async (t) => {
    const { board, e } = await pushBoard(t);
    const sub = e.subscribe();
    const origin = board.url.replace(/\/$/, "");
    const json = { origin, "content-type": "application/json" };
    const none = refusal(await post(board, "/api/push/subscribe", json, subscribeBody(sub)));
    assert.deepEqual([none.status, none.code], [403, "not-logged-in"]);
    const { key } = await logIn(board.loginUrl);
    const cookie = refusal(
      await post(
        board,
        "/api/push/subscribe",
        { ...json, cookie: `x-board-login=${key}; board-login=${key}` },
        subscribeBody(sub),
      ),
    );
    assert.deepEqual(
      [cookie.status, cookie.code],
      [403, "not-logged-in"],
      "a cookie alone never authorises",
    );
    const foreign = refusal(
      await post(
        board,
        "/api/push/subscribe",
        { ...json, origin: "http://127.0.0.1:1", "x-board-login": key },
        subscribeBody(sub),
      ),
    );
    assert.deepEqual([foreign.status, foreign.code], [403, "origin-refused"]);
    const form = refusal(
      await post(
        board,
        "/api/push/subscribe",
        { origin, "content-type": "text/plain", "x-board-login": key },
        subscribeBody(sub),
      ),
    );
    assert.deepEqual([form.status, form.code], [403, "content-type-refused"]);
  });

  it("refuses bad subscription shapes and disallowed endpoints, each in words", async (t) => {
    const { board, e } = await pushBoard(t);
    const { headers } = await logIn(board.loginUrl);
    const sub = e.subscribe();
    const offCurve = Buffer.alloc(65, 1);
    offCurve[0] = 4;
    const cases: [unknown, number, string, RegExp][] = [
      [{}, 400, "bad-subscription", /needs `subscription`/],
      [{ subscription: "x" }, 400, "bad-subscription", /needs `subscription`/],
      [{ subscription: { keys: sub.keys } }, 400, "bad-subscription", /endpoint/],
      [{ subscription: { endpoint: sub.endpoint } }, 400, "bad-subscription", /keys/],
      [
        subscribeBody({ ...sub, keys: { ...sub.keys, p256dh: offCurve.toString("base64url") } }),
        400,
        "bad-subscription",
        /P-256/,
      ],
      [
        subscribeBody({ ...sub, keys: { ...sub.keys, p256dh: "abc" } }),
        400,
        "bad-subscription",
        /P-256/,
      ],
      [
        subscribeBody({
          ...sub,
          keys: { ...sub.keys, auth: Buffer.alloc(8).toString("base64url") },
        }),
        400,
        "bad-subscription",
        /16-byte/,
      ],
      [subscribeBody(sub, { details: "yes" }), 400, "bad-subscription", /true or false/],
      [
        subscribeBody({ ...sub, endpoint: "http://127.0.0.1:1/push/x" }),
        403,
        "endpoint-refused",
        /https only/,
      ],
      [
        subscribeBody({ ...sub, endpoint: "https://169.254.169.254/x" }),
        403,
        "endpoint-refused",
        /push services/,
      ],
      [
        subscribeBody({ ...sub, endpoint: "https://internal.example/x" }),
        403,
        "endpoint-refused",
        /push services/,
      ],
      ["[1]", 400, "bad-request", /JSON object/],
    ];
    for (const [body, status, code, why] of cases) {
      const r = refusal(await post(board, "/api/push/subscribe", headers, body));
      assert.deepEqual([r.status, r.code], [status, code], JSON.stringify(body).slice(0, 200));
      assert.match(r.message, why);
    }
    const unsub = refusal(await post(board, "/api/push/unsubscribe", headers, {}));
    assert.deepEqual([unsub.status, unsub.code], [400, "bad-subscription"]);
  });

  it("keeps a person's subscriptions, bounded, and unsubscribes only the person's own", async (t) => {
    const { board, e, boardDir } = await pushBoard(t);
    const { headers } = await logIn(board.loginUrl);
    const subs = Array.from({ length: MAX_PER_IDENTITY }, () => e.subscribe());
    for (const s of subs) {
      const a = await post(
        board,
        "/api/push/subscribe",
        headers,
        subscribeBody(s, { details: true }),
      );
      assert.equal(a.status, 200, a.text);
    }
    // The same endpoint again renews it rather than adding one.
    const renewed = await post(
      board,
      "/api/push/subscribe",
      headers,
      subscribeBody(subs[0] as TestSubscription),
    );
    assert.equal(renewed.status, 200, renewed.text);
    const over = refusal(
      await post(board, "/api/push/subscribe", headers, subscribeBody(e.subscribe())),
    );
    assert.deepEqual([over.status, over.code], [409, "too-many-subscriptions"]);
    const file = join(boardDir, "push", "subscriptions.json");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const kept = JSON.parse(readFileSync(file, "utf8")) as {
      subscriptions: { endpoint: string; identity: string }[];
    };
    assert.equal(kept.subscriptions.length, MAX_PER_IDENTITY);
    assert.ok(kept.subscriptions.every((s) => s.identity === "local-operator"));
    const gone = await post(board, "/api/push/unsubscribe", headers, {
      endpoint: subs[1]?.endpoint,
    });
    assert.deepEqual(gone.json, { ok: true, removed: 1 });
    const after = JSON.parse(readFileSync(file, "utf8")) as { subscriptions: unknown[] };
    assert.equal(after.subscriptions.length, MAX_PER_IDENTITY - 1);
  });
});

describe("pushes from attention changes", () => {
  it("pushes a stall to every subscription and a run's end to the one that opted in, with details only where asked", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const { board, conversation, e, boardDir, f } = await pushBoard(t, {
      stallMs: 1500,
      script: { holds: ["assistant-start"] },
    });
    const { headers } = await logIn(board.loginUrl);
    const plain = e.subscribe();
    const chatty = e.subscribe();
    const gone = e.subscribe(410);
    for (const [s, more] of [
      [plain, {}],
      [chatty, { details: true, waitingInput: true }],
      [gone, {}],
    ] as const) {
      const a = await post(board, "/api/push/subscribe", headers, subscribeBody(s, more));
      assert.equal(a.status, 200, a.text);
    }
    const steer = (body: object) =>
      post(board, `/api/conversations/${conversation}/control`, headers, body);
    assert.equal((await steer({ op: "takeover" })).status, 200);
    const prompted = await steer({ op: "prompt", text: "secret words" });
    assert.equal(prompted.status, 200, prompted.text);

    // Held before the reply starts: no event comes, and the run turns stalled.
    const stalled = [await e.next(30_000), await e.next(), await e.next()];
    const byId = new Map(stalled.map((r) => [r.id, r]));
    for (const r of stalled) assert.equal(r.problem, null, r.problem ?? "");
    const p = JSON.parse(byId.get(plain.id)?.payload ?? "{}") as Record<string, unknown>;
    assert.deepEqual(Object.keys(p).sort(), ["conversation", "label", "since", "state", "v"]);
    assert.equal(p.state, "stalled");
    assert.equal(p.conversation, conversation);
    assert.equal(p.label, `Stalled: ${f.projectRoot.split("/").at(-1)}/main`);
    const c = JSON.parse(byId.get(chatty.id)?.payload ?? "{}") as { detail?: { input: string } };
    assert.match(c.detail?.input ?? "", /no event for/);
    // The push service said 410: the subscription is forgotten.
    await until(
      () => !readFileSync(join(boardDir, "push", "subscriptions.json"), "utf8").includes(gone.id),
      "the gone subscription was removed",
    );

    // Released: the run ends, and only the subscription that opted in hears of waiting-input.
    writeFileSync(join(f.holdDir, "assistant-start.1.release"), "");
    const ended = await e.next(30_000);
    assert.equal(ended.id, chatty.id);
    assert.equal((JSON.parse(ended.payload ?? "{}") as { state: string }).state, "waiting-input");
    for (const r of e.received) {
      if (r.id !== chatty.id)
        assert.doesNotMatch(r.payload ?? "", /secret words/, "no conversation text by default");
    }
  });

  it("removes a login's subscriptions when the login is signed out", async (t) => {
    const { board, e, boardDir } = await pushBoard(t);
    const first = await logIn(board.loginUrl);
    const a = await post(board, "/api/push/subscribe", first.headers, subscribeBody(e.subscribe()));
    assert.equal(a.status, 200);
    const file = join(boardDir, "push", "subscriptions.json");
    const count = () =>
      (JSON.parse(readFileSync(file, "utf8")) as { subscriptions: unknown[] }).subscriptions.length;
    assert.equal(count(), 1);
    // 64 more logins: the first is signed out to make room.
    for (let i = 0; i < 64; i += 1) await logIn(board.loginUrl);
    assert.equal(count(), 0);
  });

  it("removes a revoked device link's subscription before anything is sent to it", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const { board, conversation, e, boardDir, f } = await pushBoard(t, {
      stallMs: 1500,
      script: { holds: ["assistant-start"] },
      devices: true,
    });
    const operator = await logIn(board.loginUrl);
    const link = board.mintDeviceLink("local-operator");
    const phoneKey = ((await postLogin(link.url)).json as { key: string }).key;
    const phone = { ...operator.headers, "x-board-login": phoneKey };
    const onPhone = e.subscribe();
    const onDesk = e.subscribe();
    assert.equal(
      (await post(board, "/api/push/subscribe", phone, subscribeBody(onPhone))).status,
      200,
    );
    assert.equal(
      (await post(board, "/api/push/subscribe", operator.headers, subscribeBody(onDesk))).status,
      200,
    );
    const quiet = { out: () => {}, err: () => {}, width: 80 };
    const revoke = {
      name: "logins",
      json: false,
      revoke: link.id,
      stateDir: join(f.root, "state"),
    } as const;
    assert.equal(runLogins(revoke, quiet), 0);

    const steer = (body: object) =>
      post(board, `/api/conversations/${conversation}/control`, operator.headers, body);
    assert.equal((await steer({ op: "takeover" })).status, 200);
    assert.equal((await steer({ op: "prompt", text: "hi" })).status, 200);
    const got = await e.next(30_000);
    assert.equal(got.id, onDesk.id);
    const file = join(boardDir, "push", "subscriptions.json");
    await until(
      () => !readFileSync(file, "utf8").includes(onPhone.id),
      "the phone's subscription was removed",
    );
    assert.ok(
      e.received.every((r) => r.id !== onPhone.id),
      "nothing went to the revoked phone",
    );
    writeFileSync(join(f.holdDir, "assistant-start.1.release"), "");
  });
});
