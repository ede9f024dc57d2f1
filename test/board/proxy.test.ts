// The board behind the real Caddy (docs/caddy/Caddyfile) over HTTPS: people come from the
// proxy's X-Remote-User only; a forged header through the proxy is replaced by Caddy, one sent
// straight to the board from another address is refused; every control operation is tried by
// every role; each act lands in the ledger under the person's name and the chain verifies.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { AuditLedger } from "../../src/audit/ledger.ts";
import { readLedger } from "../../src/audit/verify.ts";
import { CONTROL_OPS } from "../../src/board/control-route.ts";
import { checkProxyFlags, type ProxyConfig } from "../../src/board/identity.ts";
import { parseRoles, type Role, roleAllows } from "../../src/board/roles.ts";
import { ConversationClient } from "../../src/control/client/client.ts";
import type { Dialog } from "../../src/control/protocol.ts";
import { type Grant, OPERATIONS } from "../../src/control/protocol.ts";
import { startController } from "../control/controller-fixture.ts";
import { type Caddy, freePort, hasCaddy, startCaddy, viaCaddy } from "../helpers/caddy.ts";
import { DEADLINE_MS, SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { bashCall, DONE, startClaudeBoard } from "./claude-board.ts";
import { boardOverController } from "./controlled-board.ts";

const skip = hasCaddy() ? false : "caddy is not installed (apt-get install caddy)";
const T = { timeout: SLOW_TEST_MS };

/** One person per role, and one the proxy knows but the roles file does not. */
const PEOPLE: Record<string, Role | null> = {
  vera: "viewer",
  olga: "observer",
  otto: "operator",
  ada: "admin",
  mallory: null,
};
const password = (name: string) => `pw-of-${name}`;
const GRANTS: Grant[] = [
  { id: "g-op", actor: "the-board", capabilities: [...OPERATIONS], delegate: true },
  { id: "g-ro", actor: "the-board-watching", capabilities: ["observe"] },
];

/** The board's proxy flags for Caddy on `port`, with PEOPLE's roles. */
function proxyOn(port: number): ProxyConfig {
  const roles = parseRoles({
    identities: Object.fromEntries(Object.entries(PEOPLE).filter(([, r]) => r !== null)),
  });
  assert.ok(roles.ok);
  const checked = checkProxyFlags({
    publicOrigin: `https://localhost:${port}`,
    trustedProxy: "127.0.0.1",
    identityHeader: "X-Remote-User",
    roles: roles.roles,
    rolesFile: "roles.json",
  });
  if (!checked.ok) assert.fail(checked.error);
  return checked.proxy;
}

async function proxiedBoard(t: TestContext) {
  const auditDir = { dir: "" };
  let ledger: AuditLedger | null = null;
  const { ctl, f } = await startController(t, {
    grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    actions: (a) => ledger?.append(a),
  });
  auditDir.dir = join(f.root, "audit");
  const opened = AuditLedger.open(auditDir.dir, ctl.conversation);
  if (!opened.ok) assert.fail(opened.message);
  ledger = opened.ledger;
  const port = await freePort();
  const proxy = proxyOn(port);
  const { board, conversation, unregister } = await boardOverController(f, ctl.socketPath, {
    proxy,
  });
  t.after(unregister);
  t.after(() => board.close());
  const users = Object.fromEntries(Object.keys(PEOPLE).map((n) => [n, password(n)]));
  const caddy = await startCaddy(t, board.port, users, port);
  return { caddy, board, conversation, ctl, files: opened.ledger.files };
}

/** Logs `name` in through the proxy as the login page does (no token: the proxy vouches). */
async function logIn(caddy: Caddy, name: string) {
  const answer = await viaCaddy(caddy, "/login", {
    user: [name, password(name)],
    method: "POST",
    headers: { origin: caddy.origin, "content-type": "application/json" },
    body: "{}",
  });
  return answer;
}

function steer(caddy: Caddy, name: string, key: string, conversation: string, body: object) {
  return viaCaddy(caddy, `/api/conversations/${conversation}/control`, {
    user: [name, password(name)],
    method: "POST",
    headers: {
      origin: caddy.origin,
      "content-type": "application/json",
      "x-board-login": key,
    },
    body: JSON.stringify(body),
  });
}

/** A request straight to the board (not through Caddy) from `localAddress`. */
function direct(
  port: number,
  path: string,
  headers: Record<string, string>,
  localAddress: string,
): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        headers: { host: `127.0.0.1:${port}`, ...headers },
        localAddress,
        timeout: DEADLINE_MS,
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const code = (a: { json: unknown }) => (a.json as { refusal?: { code?: string } }).refusal?.code;

describe("board behind caddy", { skip }, () => {
  it(
    "takes people from the proxy only, and refuses a forged identity from anyone else",
    T,
    async (t) => {
      const { caddy, board } = await proxiedBoard(t);
      // Caddy asks for credentials; the board is never reached without them.
      assert.equal((await viaCaddy(caddy, "/api/conversations", {})).status, 401);
      // Nor with a wrong password: Caddy checks each against its user's hash.
      const wrong = await viaCaddy(caddy, "/api/conversations", { user: ["vera", "pw-of-ada"] });
      assert.equal(wrong.status, 401);
      const read = await viaCaddy(caddy, "/api/conversations", {
        user: ["vera", password("vera")],
      });
      assert.equal(read.status, 200);
      assert.equal(read.headers["strict-transport-security"], "max-age=31536000");
      // The Console's files come compressed and are revalidated by the board's tag through the
      // proxy; the API's answers and the login page never compressed (the Caddyfile says why).
      const asked = { user: ["vera", password("vera")] as [string, string] };
      const gzip = { "accept-encoding": "gzip" };
      const script = await viaCaddy(caddy, "/console.js", { ...asked, headers: gzip });
      assert.equal(script.status, 200);
      assert.equal(script.headers["content-encoding"], "gzip");
      const tag = String(script.headers.etag);
      const kept = await viaCaddy(caddy, "/console.js", {
        ...asked,
        headers: { ...gzip, "if-none-match": tag },
      });
      assert.equal(kept.status, 304);
      for (const path of ["/api/conversations", "/login"]) {
        const plain = await viaCaddy(caddy, path, { ...asked, headers: gzip });
        assert.equal(plain.status, 200, path);
        assert.equal(plain.headers["content-encoding"], undefined, path);
      }
      // Authenticated by the proxy, but no role here.
      const stranger = await viaCaddy(caddy, "/api/conversations", {
        user: ["mallory", password("mallory")],
      });
      assert.equal(stranger.status, 403);
      assert.equal(code(stranger), "unknown-identity");
      // A client's own X-Remote-User is replaced by Caddy with who it authenticated.
      const forged = await viaCaddy(caddy, "/login", {
        user: ["vera", password("vera")],
        method: "POST",
        headers: {
          origin: caddy.origin,
          "content-type": "application/json",
          "x-remote-user": "ada",
        },
        body: "{}",
      });
      assert.equal(forged.status, 200);
      assert.deepEqual(
        [(forged.json as { identity: string }).identity, (forged.json as { role: string }).role],
        ["vera", "viewer"],
      );
      // Straight to the board from another loopback address: the header is refused.
      const fake = await direct(
        board.port,
        "/api/conversations",
        { "x-remote-user": "ada" },
        "127.0.0.2",
      );
      assert.equal(fake.status, 403);
      assert.equal(code(fake), "identity-refused");
      // The local operator without the header still reads on loopback, as before.
      const local = await direct(board.port, "/api/conversations", {}, "127.0.0.2");
      assert.equal(local.status, 200);
    },
  );

  it(
    "lets each role do exactly its operations, and refuses the rest role-refused",
    T,
    async (t) => {
      const { caddy, conversation } = await proxiedBoard(t);
      for (const [name, role] of Object.entries(PEOPLE)) {
        if (role === null) continue;
        const login = await logIn(caddy, name);
        assert.equal(login.status, 200, `${name} logs in: ${login.text}`);
        const key = (login.json as { key: string }).key;
        for (const op of CONTROL_OPS) {
          const body =
            op === "prompt"
              ? { op, text: "hi" }
              : op === "confirm"
                ? { op, operation: "force-stop" }
                : op === "force-stop" || op === "recover"
                  ? { op, confirmation: "cf-none" }
                  : op === "launch"
                    ? { op, eligibility: "el-none" }
                    : { op };
          const answer = await steer(caddy, name, key, conversation, body);
          const got = code(answer) ?? "admitted";
          if (roleAllows(role, op)) {
            assert.notEqual(got, "role-refused", `${name} (${role}) may ${op}`);
            assert.notEqual(got, "capability", `${name} (${role}) may ${op} at the controller too`);
          } else {
            assert.equal(answer.status, 403, `${name} (${role}) may not ${op}: ${answer.text}`);
            assert.equal(got, "role-refused", `${name} (${role}) may not ${op}`);
          }
        }
        // Leave nobody in control for the next person.
        await steer(caddy, name, key, conversation, { op: "release" });
      }
    },
  );

  it("keeps a login key its person's: another person's key is refused", T, async (t) => {
    const { caddy, conversation } = await proxiedBoard(t);
    const ada = await logIn(caddy, "ada");
    const key = (ada.json as { key: string }).key;
    const stolen = await steer(caddy, "otto", key, conversation, { op: "takeover" });
    assert.equal(stolen.status, 403);
    assert.equal(code(stolen), "not-logged-in");
    assert.match(
      (stolen.json as { refusal: { message: string } }).refusal.message,
      /another person's/,
    );
  });

  it("ledgers each act under the person's name, and the chain verifies", T, async (t) => {
    const { caddy, conversation, ctl, files } = await proxiedBoard(t);
    const otto = (await logIn(caddy, "otto")).json as { key: string };
    assert.equal(
      (await steer(caddy, "otto", otto.key, conversation, { op: "takeover" })).status,
      200,
    );
    const sent = await steer(caddy, "otto", otto.key, conversation, {
      op: "prompt",
      text: "tidy up",
    });
    assert.equal(sent.status, 200, sent.text);
    const ada = (await logIn(caddy, "ada")).json as { key: string };
    const taken = await steer(caddy, "ada", ada.key, conversation, { op: "takeover" });
    assert.equal(taken.status, 200, taken.text);
    const reading = readLedger(files, ctl.conversation);
    assert.ok(reading.found);
    assert.deepEqual(reading.problems, []);
    assert.deepEqual(
      reading.lines.map((l) => [l.actor, l.delegatedBy, l.op, l.outcome]),
      [
        ["otto", "the-board", "takeover", "admitted"],
        ["otto", "the-board", "prompt", "admitted"],
        ["ada", "the-board", "takeover", "admitted"],
      ],
    );
    assert.equal(reading.lines[1]?.input.text, "tidy up");
  });

  it("answers a real Claude Code approval over HTTPS as an operator; observer and viewer refused", {
    timeout: 240_000,
  }, async (t) => {
    let ledger: AuditLedger | null = null;
    const port = await freePort();
    const { run, board, conversation } = await startClaudeBoard(t, {
      grants: GRANTS,
      actions: (a) => ledger?.append(a),
      board: { proxy: proxyOn(port) },
    });
    const opened = AuditLedger.open(join(run.root, "audit"), conversation);
    if (!opened.ok) assert.fail(opened.message);
    ledger = opened.ledger;
    const users = Object.fromEntries(Object.keys(PEOPLE).map((n) => [n, password(n)]));
    const caddy = await startCaddy(t, board.port, users, port);
    // A watcher on the socket sees the approval and its end, as every client does.
    const watcher = new ConversationClient({ socketPath: run.ctrl.socketPath, grant: "g-ro" });
    t.after(() => watcher.close());
    const dialogs: Dialog[] = [];
    watcher.onDialog((d) => dialogs.push(d));
    await watcher.connect();

    const marker = join(run.projectRoot, "allowed.txt");
    run.fake.enqueue(bashCall("toolu_proxy", `touch ${marker}`, "create the marker file"), DONE);
    const key = async (name: string) => ((await logIn(caddy, name)).json as { key: string }).key;
    const otto = await key("otto");
    assert.equal((await steer(caddy, "otto", otto, conversation, { op: "takeover" })).status, 200);
    const sent = await steer(caddy, "otto", otto, conversation, {
      op: "prompt",
      text: "make the marker",
    });
    assert.equal(sent.status, 200, sent.text);
    await until(() => dialogs.some((d) => d.state === "open"), "the approval opened", 60_000);
    const open = dialogs.find((d) => d.state === "open") as Dialog;
    const answer = { op: "answer", dialog: open.id, decision: "allow" };
    // An observer and a viewer may watch or read, never answer: refused by the board.
    for (const name of ["olga", "vera"]) {
      const refused = await steer(caddy, name, await key(name), conversation, answer);
      assert.equal(refused.status, 403, `${name}: ${refused.text}`);
      assert.equal(code(refused), "role-refused");
    }
    assert.equal(existsSync(marker), false, "a refused answer approves nothing");
    const allowed = await steer(caddy, "otto", otto, conversation, answer);
    assert.equal(allowed.status, 200, allowed.text);
    const ended = (allowed.json as { result: { dialog: Dialog } }).result.dialog;
    assert.deepEqual([ended.state, ended.answeredBy?.actor], ["allowed", "otto"]);
    await until(() => existsSync(marker), "the allowed tool ran", 60_000);
    await until(
      () => dialogs.some((d) => d.id === open.id && d.answeredBy?.actor === "otto"),
      "every client is told otto answered",
      60_000,
    );
    const reading = readLedger(opened.ledger.files, conversation);
    assert.ok(reading.found);
    assert.deepEqual(reading.problems, []);
    assert.deepEqual(
      reading.lines.map((l) => [l.actor, l.op, l.outcome]),
      [
        ["otto", "takeover", "admitted"],
        ["otto", "prompt", "admitted"],
        ["otto", "answer", "admitted"],
      ],
    );
    assert.deepEqual(reading.lines[2]?.input, { dialog: open.id, decision: "allow" });
  });
});
