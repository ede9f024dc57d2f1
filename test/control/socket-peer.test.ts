// Whose socket a client talks to (issue 22 item 2; src/control/registry/peer.ts). The attacks
// run as a real other user (uid 65534): with a state dir, or a folder above it, that others can
// write, they move the sockets (or the whole state dir) aside and put their own socket where
// the registry points. Nothing may be sent to it: not the hello, not a prompt. Then the
// registry's own checks: a socket replaced after the controller bound it, and a socket another
// process listens on, are refused before a byte is written.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ControllerWatches } from "../../src/board/live-control.ts";
import { ConnectError, ConversationClient } from "../../src/control/client/client.ts";
import { ControlServer } from "../../src/control/controller/socket.ts";
import type { ControllerState } from "../../src/control/protocol.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { makeSocketDir } from "../../src/control/registry/leftovers.ts";
import { checkSocketPath, listeningInodes } from "../../src/control/registry/peer.ts";
import {
  bootId,
  findController,
  processStart,
  register,
} from "../../src/control/registry/registry.ts";
import { listenOn } from "../helpers/listener.ts";
import { startAsOtherUser, whyNoOtherUser } from "../helpers/other-user.ts";

const ATTACKER = new URL("./attacker-socket.ts", import.meta.url).pathname;
const CONVERSATION = "pi-0123456789abcdef0123456789abcdef01234567";
const STATE: ControllerState = {
  incarnation: "in-1",
  execution: "ex-1",
  generation: 1,
  controllerConnection: null,
  admission: "open",
  binding: "bound",
};

/** A root that uid 65534 may enter (0755), removed after the test. */
function root(t: TestContext): string {
  const dir = mkdtempSync("/tmp/peer-");
  chmodSync(dir, 0o755);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A controller's socket as `conversation control` makes it, registered in `state`. */
async function registeredController(t: TestContext, state: string) {
  mkdirSync(state, { mode: 0o700 });
  const server = await ControlServer.listen(makeSocketDir(join(state, "sockets")), {
    hello: (conn, hello) => {
      conn.grant = hello.grant;
      return {
        type: "welcome",
        protocol: 2,
        connection: conn.id,
        role: "observer",
        conversation: CONVERSATION,
        state: STATE,
      };
    },
    request: () => {},
    closed: () => {},
  });
  t.after(() => server.close());
  const registry = join(state, "controllers");
  const reg = await register(registry, {
    conversation: CONVERSATION,
    project: "/p",
    seat: "main",
    sessionFile: "/p/.pi/state/main/sessions/s.jsonl",
    socket: server.socketPath,
    execution: "ex-1",
    grants: ["operator"],
    startedAt: new Date().toISOString(),
  });
  t.after(() => reg.remove());
  return { socket: server.socketPath, registry };
}

/** What a client of the library does with a socket path: connect and say hello. */
async function connectTo(socket: string): Promise<unknown> {
  const client = new ConversationClient({
    socketPath: socket,
    grant: "operator",
    requestTimeoutMs: 5000,
  });
  try {
    await client.connect();
    return "connected";
  } catch (e) {
    return e;
  } finally {
    await client.close();
  }
}

const otherUser = { skip: whyNoOtherUser() || false };

describe("registry/peer: an attacker's socket where the registry points", () => {
  it("sends it nothing when the state dir is writable by others", otherUser, async (t) => {
    const state = join(root(t), "state");
    const { socket, registry } = await registeredController(t, state);
    chmodSync(state, 0o777);
    const attacker = startAsOtherUser(t, ATTACKER, [join(state, "sockets"), socket]);
    await attacker.waitFor("ready");

    // The board's live streams: the registry read refuses, so no connection is made.
    const sent: string[] = [];
    const watches = new ControllerWatches({
      registryDir: registry,
      grant: "observer",
      log: (line) => sent.push(`log ${line}`),
    });
    const detach = watches.watch(
      CONVERSATION,
      { send: (event, _id, data) => sent.push(`${event} ${data}`) },
      null,
    );
    assert.equal(watches.connections, 0);
    detach();
    assert.match(sent.join("\n"), /writable by others \(mode 777\)/);
    assert.throws(
      () => findController(registry, CONVERSATION),
      (e) =>
        isControlRefusal(e) &&
        e.code === "configuration" &&
        e.message.includes(`chmod go-w ${state}`) &&
        e.message.includes("--state-dir"),
    );
    // A client given the path itself checks it too, before it writes a byte.
    const e = await connectTo(socket);
    assert.ok(e instanceof ConnectError && e.code === "untrusted-socket", String(e));
    assert.match(e.message, /writable by others/);
    assert.doesNotMatch(attacker.output(), /connection|got/);
  });

  it(
    "sends it nothing when a folder above lets others swap the whole state dir after the registry was read",
    otherUser,
    async (t) => {
      const top = root(t);
      const state = join(top, "state");
      const { socket, registry } = await registeredController(t, state);
      const entry = findController(registry, CONVERSATION);
      assert.equal(entry?.socket, socket);
      // Between the listing and the connect, the folder above the state dir becomes writable.
      chmodSync(top, 0o777);
      const attacker = startAsOtherUser(t, ATTACKER, [state, socket]);
      await attacker.waitFor("ready");
      const e = await connectTo(socket);
      assert.ok(e instanceof ConnectError && e.code === "untrusted-socket", String(e));
      assert.match(e.message, new RegExp(`${top}, above the controller's socket folder`));
      assert.match(e.message, /Nothing was sent/);
      assert.doesNotMatch(attacker.output(), /connection|got/);
      assert.throws(() => findController(registry, CONVERSATION), /writable by others/);
    },
  );

  it(
    "sends it nothing in a shared sticky folder where the state dir is the attacker's",
    otherUser,
    async (t) => {
      // /tmp-like: sticky and world-writable; the attacker made `shared/state` first.
      const shared = join(root(t), "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      const state = join(shared, "state");
      const { socket } = await registeredController(t, state);
      chownSync(state, 65534, 65534);
      chmodSync(state, 0o777);
      const attacker = startAsOtherUser(t, ATTACKER, [join(state, "sockets"), socket]);
      await attacker.waitFor("ready");
      const e = await connectTo(socket);
      assert.ok(e instanceof ConnectError && e.code === "untrusted-socket", String(e));
      assert.match(e.message, /is in the shared folder .* and belongs to uid 65534/);
      assert.doesNotMatch(attacker.output(), /connection|got/);
    },
  );
});

describe("registry/peer: the registry entry's socket", () => {
  it("finds and connects to the socket the controller bound", async (t) => {
    const { socket, registry } = await registeredController(t, join(root(t), "state"));
    assert.equal(findController(registry, CONVERSATION)?.socket, socket);
    assert.equal(await connectTo(socket), "connected");
  });

  it("refuses a socket replaced after the controller bound it", async (t) => {
    const { socket, registry } = await registeredController(t, join(root(t), "state"));
    // Another listener of this same user, on the same path: not the registered controller's.
    rmSync(socket);
    const other = await listenOn(t, socket);
    assert.ok(other.listening);
    assert.throws(
      () => findController(registry, CONVERSATION),
      (e) => isControlRefusal(e) && /is not the one the controller of .* bound/.test(e.message),
    );
  });

  it("refuses an entry whose pid does not hold the listening socket", async (t) => {
    const { socket, registry } = await registeredController(t, join(root(t), "state"));
    // The same entry, for a live process that is not the one listening.
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    t.after(() => child.kill("SIGKILL"));
    const pid = child.pid as number;
    const pidStart = processStart(pid);
    assert.ok(pidStart);
    const live = findController(registry, CONVERSATION);
    assert.ok(live);
    rmSync(registry, { recursive: true });
    mkdirSync(registry, { mode: 0o700 });
    writeFileSync(
      join(registry, `${CONVERSATION}.${pid}.${pidStart}.json`),
      JSON.stringify({ ...live, pid, pidStart, boot: bootId() }),
      { mode: 0o600 },
    );
    assert.throws(
      () => findController(registry, CONVERSATION),
      (e) =>
        isControlRefusal(e) &&
        e.message.includes(`(pid ${pid}) is not the one listening on ${socket}`),
    );
  });

  it("refuses a socket another uid made, and a socket folder others can enter", async (t) => {
    const { socket } = await registeredController(t, join(root(t), "state"));
    chownSync(socket, 65534, 65534);
    assert.match(failure(socket), /made by uid 65534, not by you/);
    chownSync(socket, 0, 0);
    chmodSync(dirname(socket), 0o755);
    assert.match(failure(socket), /can be entered by others \(mode 755\).*chmod 700/);
  });

  it("reads the listening sockets bound at a path from /proc/net/unix", () => {
    const table = [
      "Num       RefCount Protocol Flags    Type St Inode Path",
      "0000000000000000: 00000002 00000000 00010000 0001 01 53993 /run/a b/control.sock",
      "0000000000000000: 00000003 00000000 00000000 0001 03 54004 /run/a b/control.sock",
      "0000000000000000: 00000002 00000000 00010000 0001 01 53995 /run/other.sock",
      "0000000000000000: 00000003 00000000 00000000 0001 03 54024",
    ].join("\n");
    assert.deepEqual([...listeningInodes(table, "/run/a b/control.sock")], ["53993"]);
    assert.deepEqual([...listeningInodes(table, "/run/none.sock")], []);
  });
});

function failure(socket: string): string {
  const check = checkSocketPath(socket);
  assert.equal(check.ok, false);
  return check.ok ? "" : check.message;
}
