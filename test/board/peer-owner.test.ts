// Which user opened a loopback TCP connection (peer-owner.ts): found in /proc/net/tcp and tcp6
// for IPv4 clients, IPv6 clients and IPv6 sockets holding a mapped IPv4 address; the other
// uid's case is test/board/auth.test.ts (a real process of uid 65534).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { endianness } from "node:os";
import { describe, it, type TestContext } from "node:test";
import { isTrustedPeer, peerOwner, procForms } from "../../src/board/peer-owner.ts";

/** The server's end of a connection from a client that connects to `host` as `via`. */
async function accepted(t: TestContext, host: string, via: string): Promise<Socket> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  const got = new Promise<Socket>((resolve) => server.once("connection", resolve));
  const client = connect({ host: via, port: address.port });
  const socket = await got;
  t.after(() => {
    client.destroy();
    socket.destroy();
    server.close();
  });
  return socket;
}

describe("peer-owner", () => {
  const bigEndian = endianness() === "BE" ? "the expected forms are a little-endian host's" : false;
  it("writes addresses as the kernel's tables do", { skip: bigEndian }, () => {
    assert.deepEqual(procForms("127.0.0.1"), ["0100007F", "0000000000000000FFFF00000100007F"]);
    assert.deepEqual(procForms("::1"), ["00000000000000000000000001000000"]);
    assert.deepEqual(procForms("::ffff:127.0.0.1"), ["0000000000000000FFFF00000100007F"]);
    assert.deepEqual(procForms("fe80::1:2%lo"), ["000080FE000000000000000002000100"]);
    assert.deepEqual(procForms("not an address"), []);
  });

  const noProc = existsSync("/proc/net/tcp") ? false : "no /proc/net/tcp here (not Linux)";
  it("finds this user as the owner of IPv4, IPv6 and mapped-IPv4 clients", {
    skip: noProc,
  }, async (t) => {
    const cases: [string, string][] = [
      ["127.0.0.1", "127.0.0.1"],
      ["::1", "::1"],
      // An IPv6 socket connecting to a mapped IPv4 address: listed in tcp6, not tcp.
      ["127.0.0.1", "::ffff:127.0.0.1"],
    ];
    for (const [host, via] of cases) {
      const owner = await peerOwner(await accepted(t, host, via));
      assert.deepEqual(owner, { found: true, uid: process.getuid?.() }, `${host} via ${via}`);
      assert.equal(isTrustedPeer(owner), true);
    }
  });

  it("trusts no peer it cannot find where the tables exist, and any where none can be read", () => {
    assert.equal(isTrustedPeer({ found: false, reason: "not-listed" }), false);
    assert.equal(isTrustedPeer({ found: false, reason: "no-proc" }), true);
    assert.equal(isTrustedPeer({ found: true, uid: 0 }), true, "root reads the profile anyway");
    const me = process.getuid?.() ?? 0;
    assert.equal(isTrustedPeer({ found: true, uid: me }), true);
    assert.equal(isTrustedPeer({ found: true, uid: me + 1 }), false);
  });
});
