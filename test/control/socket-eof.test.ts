// The last line before EOF (issue 18 item 3; docs/control-protocol.md, Framing): a line with no
// LF counts when the client half-closes, whether it arrives whole or byte by byte; a truncated
// one is answered `malformed`. The controller answers everything the connection is owed, then
// ends its side. First against a ControlServer with stub hooks, then against a real Controller
// over fake-pi.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ControlServer } from "../../src/control/controller/socket.ts";
import { LineSplitter } from "../../src/control/engine/framing.ts";
import type { ControllerState } from "../../src/control/protocol.ts";
import { DEADLINE_MS, within } from "../helpers/deadline.ts";
import { type Msg, startController } from "./controller-fixture.ts";

const STATE: ControllerState = {
  incarnation: "in-1",
  execution: "ex-1",
  generation: 1,
  controllerConnection: null,
  admission: "open",
  binding: "bound",
};

/** A server whose requests are answered after `replyDelayMs`, as the operations do. */
async function stubServer(t: TestContext, replyDelayMs = 30): Promise<ControlServer> {
  const dir = mkdtempSync(join(tmpdir(), "eof-"));
  const server = await ControlServer.listen(join(dir, "s"), {
    hello: (conn, hello) => {
      if (hello.grant !== "g-ok") {
        return { type: "reply", id: null, outcome: "refused:grant", refusal: "grant" };
      }
      conn.grant = hello.grant;
      return {
        type: "welcome",
        protocol: 2,
        connection: conn.id,
        role: "observer",
        conversation: "pi-1",
        state: STATE,
      };
    },
    request: (conn, request) => {
      setTimeout(
        () =>
          conn.send({
            type: "reply",
            id: request.id,
            outcome: "admitted",
            result: { op: request.op },
          }),
        replyDelayMs,
      );
    },
    closed: () => {},
  });
  t.after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return server;
}

/**
 * Writes `bytes` (one at a time when `byByte`), then half-closes, and collects every line the
 * controller sends until it ends its side. Rejects if it never does.
 */
async function exchange(path: string, bytes: Buffer, byByte: boolean): Promise<Msg[]> {
  const socket: Socket = createConnection({ path, allowHalfOpen: true });
  await new Promise<void>((ok, fail) => {
    socket.once("connect", ok);
    socket.once("error", fail);
  });
  const lines: Msg[] = [];
  const splitter = new LineSplitter();
  socket.on("data", (chunk: Buffer) => {
    for (const l of splitter.push(chunk)) lines.push(JSON.parse(l) as Msg);
  });
  const ended = new Promise<void>((ok) => socket.once("end", () => ok()));
  try {
    if (byByte) {
      for (const b of bytes) {
        socket.write(Buffer.from([b]));
        // Let each byte arrive in its own read where the kernel allows.
        await sleep(0);
      }
    } else {
      socket.write(bytes);
    }
    socket.end();
    await within(ended, "the controller ending its side after the client's EOF", DEADLINE_MS);
    assert.equal(splitter.end(), null, "every controller line ends with LF");
    return lines;
  } finally {
    socket.destroy();
  }
}

const hello = (grant = "g-ok", client?: string) =>
  JSON.stringify({ type: "hello", protocol: 2, grant, ...(client ? { client } : {}) });

describe("the last line before EOF", () => {
  for (const byByte of [false, true]) {
    const how = byByte ? "byte by byte" : "in one write";
    it(`answers a hello with no LF, then ends (${how})`, async (t) => {
      const server = await stubServer(t);
      // A client name with multi-byte characters: a split character must not break the line.
      const lines = await exchange(
        server.socketPath,
        Buffer.from(hello("g-ok", "tërm 𝄞"), "utf8"),
        byByte,
      );
      assert.deepEqual(
        lines.map((m) => m.type),
        ["welcome"],
      );
    });

    it(`answers a request with no LF after a hello, and ends only after its reply (${how})`, async (t) => {
      const server = await stubServer(t, 150);
      const request = JSON.stringify({ type: "request", id: "q-1", op: "observe" });
      const lines = await exchange(
        server.socketPath,
        Buffer.from(`${hello()}\n${request}`, "utf8"),
        byByte,
      );
      assert.deepEqual(
        lines.map((m) => [m.type, m.id ?? null, m.outcome ?? null]),
        [
          ["welcome", null, null],
          ["reply", "q-1", "admitted"],
        ],
      );
    });

    it(`answers a truncated last line malformed, then ends (${how})`, async (t) => {
      const server = await stubServer(t);
      const lines = await exchange(
        server.socketPath,
        Buffer.from(`${hello()}\n{"type":"request","id":"q-1","op":"obs`, "utf8"),
        byByte,
      );
      assert.deepEqual(
        lines.map((m) => [m.type, m.outcome ?? null]),
        [
          ["welcome", null],
          ["reply", "refused:malformed"],
        ],
      );
      assert.equal(lines[1]?.refusal, "malformed");
      assert.equal(lines[1]?.id, null, "no id could be read from the truncated line");
    });
  }

  it("answers a last line ending in CR (CRLF with the LF missing)", async (t) => {
    const server = await stubServer(t);
    const lines = await exchange(server.socketPath, Buffer.from(`${hello()}\r`), false);
    assert.deepEqual(
      lines.map((m) => m.type),
      ["welcome"],
    );
  });

  it("ends at once after an EOF with nothing pending, and ignores an empty last line", async (t) => {
    const server = await stubServer(t);
    const lines = await exchange(server.socketPath, Buffer.from(`${hello()}\n`), false);
    assert.deepEqual(
      lines.map((m) => m.type),
      ["welcome"],
    );
    assert.deepEqual(await exchange(server.socketPath, Buffer.alloc(0), false), []);
  });

  it("answers a refused hello with no LF (grant), then ends", async (t) => {
    const server = await stubServer(t);
    const lines = await exchange(server.socketPath, Buffer.from(hello("g-nope")), true);
    assert.deepEqual(
      lines.map((m) => [m.type, m.outcome]),
      [["reply", "refused:grant"]],
    );
  });

  it("with a real controller: an observe with no LF is answered admitted before the close", async (t) => {
    const { ctl } = await startController(t);
    const observe = JSON.stringify({ type: "request", id: "q-last", op: "observe", limit: 5 });
    const lines = await exchange(
      ctl.socketPath,
      Buffer.from(`${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op" })}\n${observe}`),
      true,
    );
    const reply = lines.find((m) => m.type === "reply");
    assert.equal(lines[0]?.type, "welcome");
    assert.equal(reply?.id, "q-last");
    assert.equal(reply?.outcome, "admitted", JSON.stringify(reply));
    assert.ok((reply?.result as { seam?: unknown } | undefined)?.seam, "an observe page");
    // A malformed last line to the real controller: answered, then the connection ends.
    const bad = await exchange(
      ctl.socketPath,
      Buffer.from(`${JSON.stringify({ type: "hello", protocol: 2, grant: "g-op" })}\n{"type":`),
      true,
    );
    assert.deepEqual(
      bad.map((m) => [m.type, m.outcome ?? null]),
      [
        ["welcome", null],
        ["reply", "refused:malformed"],
      ],
    );
  });
});
