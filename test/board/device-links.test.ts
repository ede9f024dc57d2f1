// Device login links (the phone): a link logs in once, for its person, within its minutes; it can
// be revoked with `conversation logins --revoke`, which also signs out the login it made; the
// list `conversation logins` prints holds no token; the QR code is of the link itself.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import qrcode from "qrcode-generator";
import { DEVICE_LINK_TTL_MS, DeviceLinks } from "../../src/board/device-links.ts";
import { startBoard } from "../../src/board/index.ts";
import { jsonReply } from "../../src/board/reply.ts";
import { runLogins } from "../../src/cli/logins.ts";
import { qrLines } from "../../src/cli/qr.ts";
import { startCli } from "../cli/run-cli.ts";
import { postLogin } from "../helpers/login.ts";
import { writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";

function stateDir(t: TestContext): string {
  const dir = mkdtempSync("/tmp/mc-devices-");
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function io() {
  const out: string[] = [];
  const err: string[] = [];
  const push = (to: string[]) => (s: string) => {
    to.push(s);
  };
  return { out, err, io: { out: push(out), err: push(err), width: 80 } };
}

async function deviceBoard(t: TestContext) {
  const state = stateDir(t);
  const fx = await writeBoardFixture(t);
  const devices = new DeviceLinks(join(state, "board"));
  const board = await startBoard({
    sources: { specs: fx.specs, registrations: fx.registrations },
    lanes: 1,
    devices,
    control: () => Promise.resolve(jsonReply(200, { ok: true })),
  });
  t.after(() => board.close());
  return { board, state, devices };
}

describe("device links", () => {
  it("logs in once with a link, and refuses it the second time", async (t) => {
    const { board, state } = await deviceBoard(t);
    const link = board.mintDeviceLink("local-operator");
    assert.match(link.url, /^http:\/\/127\.0\.0\.1:\d+\/login\?token=[A-Za-z0-9_-]{43}$/);
    const first = await postLogin(link.url);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    const again = await postLogin(link.url);
    assert.equal(again.status, 403);
    assert.match(JSON.stringify(again.json), /used already: each logs in once/);
    const listing = readFileSync(join(state, "board", "logins.json"), "utf8");
    assert.equal(listing.includes(new URL(link.url).searchParams.get("token") ?? "?"), false);
    const { out, io: o } = io();
    assert.equal(runLogins({ name: "logins", json: false, stateDir: state }, o), 0);
    assert.match(out.join(""), new RegExp(`${link.id}  local-operator  used`));
  });

  it("refuses a link past its minutes", (t) => {
    const devices = new DeviceLinks(join(stateDir(t), "board"));
    const now = Date.now();
    const { token } = devices.mint("local-operator", now);
    const late = devices.use(token, now + DEVICE_LINK_TTL_MS + 1);
    assert.equal(late.ok, false);
    assert.match("message" in late ? late.message : "", /was expired/);
  });

  it("revokes a link: it logs in no more, and the login it made is signed out", async (t) => {
    const { board, state } = await deviceBoard(t);
    const used = board.mintDeviceLink("local-operator");
    const login = await postLogin(used.url);
    const key = (login.json as { key: string }).key;
    const origin = new URL(used.url).origin;
    const act = () =>
      send(board.port, "/api/conversations/x/control", {
        method: "POST",
        headers: { origin, "content-type": "application/json", "x-board-login": key },
        body: JSON.stringify({ op: "takeover" }),
        timeoutMs: 10_000,
      });
    assert.equal((await act()).status, 200);
    const unused = board.mintDeviceLink("local-operator");
    const { io: o } = io();
    assert.equal(
      runLogins({ name: "logins", json: false, revoke: used.id, stateDir: state }, o),
      0,
    );
    assert.equal(
      runLogins({ name: "logins", json: false, revoke: unused.id, stateDir: state }, o),
      0,
    );
    const after = await act();
    assert.equal(after.status, 403);
    assert.match(after.text, /was revoked/);
    const { out, io: listed } = io();
    runLogins({ name: "logins", json: false, stateDir: state }, listed);
    assert.match(out.join(""), new RegExp(`${unused.id}  local-operator  revoked`));
    const refused = await postLogin(unused.url);
    assert.equal(refused.status, 403);
    assert.match(JSON.stringify(refused.json), /was revoked/);
  });

  it("says, when no link was minted, the command that mints one in the same state dir", (t) => {
    const state = stateDir(t);
    const { err, io: o } = io();
    assert.equal(runLogins({ name: "logins", json: false, stateDir: state }, o), 1);
    assert.match(
      err.join(""),
      new RegExp(
        `start \`npm run conversation -- serve --phone --state-dir ${state}\` to mint one`,
      ),
    );
  });

  it("prints serve --phone's link with the revoke line for its state dir, and says a loopback link stays on this machine", async (t) => {
    const state = stateDir(t);
    const fx = await writeBoardFixture(t);
    const project = fx.specs.find((s) => s.kind === "repository")?.projectRoot ?? "";
    const serve = startCli(t, [
      ...["serve", "--phone", "--project", project, "--state-dir", state, "--port", "0"],
    ]);
    await serve.waitFor(
      "the phone lines",
      (c) => /This link is on loopback/.test(c.stdout()),
      60_000,
    );
    const out = serve.stdout();
    const id = /A device login link for local-operator \((dl-[0-9a-f]+):/.exec(out)?.[1];
    assert.ok(id, out);
    assert.ok(
      out.includes(
        `\`npm run conversation -- logins --revoke ${id} --state-dir ${state}\` revokes it`,
      ),
      out,
    );
    assert.match(out, /For a phone, serve the board behind a proxy with --public-origin/);
  });

  it("draws the QR code of the link, module for module", () => {
    const text = "https://localhost:8443/login?token=abc";
    const lines = qrLines(text);
    const q = qrcode(0, "M");
    q.addData(text, "Byte");
    q.make();
    const n = q.getModuleCount();
    assert.equal(lines[0]?.length, n + 4);
    assert.equal(lines.length, Math.ceil((n + 4) / 2));
    // Row 0 of the symbol is line 1's top half: dark modules are the spaces or lower halves.
    const row0 = [...(lines[1] ?? "")].slice(2, 2 + n).map((ch) => ch === " " || ch === "▄");
    assert.deepEqual(
      row0,
      Array.from({ length: n }, (_, c) => q.isDark(0, c)),
    );
  });
});
