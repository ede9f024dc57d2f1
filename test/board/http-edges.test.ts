// HTTP edges over raw TCP (issue 18 item 1): a repeated Host, request versions other than
// HTTP/1.0 and 1.1, and CONNECT, on a board that reads in-process and on one that reads in
// worker threads. Every answer is checked for the board's refusal body and headers, and for
// any path of the machine leaking into it.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { describe, it, type TestContext } from "node:test";
import { type Board, startBoard } from "../../src/board/index.ts";
import { DEADLINE_MS, within } from "../helpers/deadline.ts";
import { assertValid } from "../helpers/schema.ts";
import { type BoardFixture, writeBoardFixture } from "./fixture.ts";
import { send } from "./http-client.ts";

type Mode = "in-process" | "workers";

async function setup(t: TestContext, mode: Mode): Promise<{ fx: BoardFixture; board: Board }> {
  const fx = await writeBoardFixture(t);
  const board =
    mode === "in-process"
      ? await startBoard({ reader: fx.reader(), log: () => {} })
      : await startBoard({
          sources: { specs: fx.specs, registrations: fx.registrations },
          lanes: 1,
          log: () => {},
        });
  t.after(() => board.close());
  return { fx, board };
}

/** Writes `raw`, half-closes nothing, and returns every byte the board sends until it closes. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close before the deadline; got ${Buffer.concat(chunks).length} bytes`));
    }, DEADLINE_MS);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    socket.write(raw);
  });
}

type RawAnswer = { status: number; headers: Map<string, string>; body: string };

/** Exactly one HTTP/1.1 response, whole: a status line, headers, a body of Content-Length. */
function parseOne(text: string): RawAnswer {
  const end = text.indexOf("\r\n\r\n");
  assert.ok(end > 0, `a response head: ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? "")?.[1];
  assert.ok(status, `a status line: ${statusLine}`);
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  const body = text.slice(end + 4);
  assert.equal(Buffer.byteLength(body), Number(headers.get("content-length")), "one whole body");
  return { status: Number(status), headers, body };
}

function assertRefusal(answer: RawAnswer, status: number, code: string): void {
  assert.equal(answer.status, status);
  assert.equal(answer.headers.get("x-content-type-options"), "nosniff");
  assert.equal(answer.headers.get("cache-control"), "no-store");
  assert.ok(answer.headers.get("content-security-policy"));
  assert.equal(
    [...answer.headers.keys()].filter((k) => k.startsWith("access-control-")).length,
    0,
    "no CORS header",
  );
  const json: unknown = JSON.parse(answer.body);
  assert.ok(typeof json === "object" && json !== null && "ok" in json && "refusal" in json);
  assert.equal(json.ok, false);
  assertValid("refusal", json.refusal);
  assert.equal(json.refusal.code, code);
}

/** No absolute path of this machine in what the board sent: the fixture's, the repo's, /tmp. */
function assertNoPath(text: string, fx: BoardFixture): void {
  for (const path of [fx.base, fx.alpha.projectRoot, process.cwd(), "/tmp/", "/root", "/home/"]) {
    assert.ok(!text.includes(path), `the answer names ${path}: ${text.slice(0, 300)}`);
  }
  assert.doesNotMatch(text, /\bat .*\.ts:\d+/, "no stack trace");
}

for (const mode of ["in-process", "workers"] as const) {
  describe(`board HTTP edges (${mode})`, () => {
    it("refuses a repeated Host with 400, whichever comes first", async (t) => {
      const { fx, board } = await setup(t, mode);
      const good = `127.0.0.1:${board.port}`;
      const cases = [
        [good, good],
        [good, "evil.example"],
        ["evil.example", good],
        [good, `localhost:${board.port}`],
      ];
      for (const [first, second] of cases) {
        const raw = await exchange(
          board.port,
          `GET /api/conversations HTTP/1.1\r\nHost: ${first}\r\nhost: ${second}\r\nConnection: close\r\n\r\n`,
        );
        const answer = parseOne(raw);
        assertRefusal(answer, 400, "bad-request");
        assert.match(answer.body, /more than one Host/);
        assertNoPath(raw, fx);
      }
      // One Host is still served.
      const one = parseOne(
        await exchange(
          board.port,
          `GET /api/conversations HTTP/1.1\r\nHost: ${good}\r\nConnection: close\r\n\r\n`,
        ),
      );
      assert.equal(one.status, 200);
    });

    it("answers 505 to request versions other than HTTP/1.0 and 1.1", async (t) => {
      const { fx, board } = await setup(t, mode);
      const host = `127.0.0.1:${board.port}`;
      // 2.0 and 0.9 are parsed by llhttp, 1.2 and 3.0 are not: both paths must say 505.
      for (const version of ["HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "HTTP/3.0", "HTTP/9.9"]) {
        const raw = await exchange(
          board.port,
          `GET /api/conversations ${version}\r\nHost: ${host}\r\n\r\n`,
        );
        const answer = parseOne(raw);
        assertRefusal(answer, 505, "http-version-not-supported");
        assert.match(answer.body, /HTTP\/1\.0 and HTTP\/1\.1 only/);
        assertNoPath(raw, fx);
      }
      // A page route under HTTP/2.0 is refused before the reader is asked.
      const page = parseOne(
        await exchange(
          board.port,
          `GET /api/conversations/x/page HTTP/2.0\r\nHost: ${host}\r\n\r\n`,
        ),
      );
      assert.equal(page.status, 505);
      for (const version of ["HTTP/1.0", "HTTP/1.1"]) {
        const ok = parseOne(
          await exchange(
            board.port,
            `GET /api/conversations ${version}\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
          ),
        );
        assert.equal(ok.status, 200, version);
      }
    });

    it("answers CONNECT like any other unsupported method, and keeps serving", async (t) => {
      const { fx, board } = await setup(t, mode);
      const host = `127.0.0.1:${board.port}`;
      for (const target of ["example.com:443", host, `${fx.base}:1`]) {
        const raw = await exchange(
          board.port,
          `CONNECT ${target} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
        );
        const answer = parseOne(raw);
        assertRefusal(answer, 405, "method-not-allowed");
        assert.equal(answer.headers.get("allow"), "GET, HEAD");
        assert.equal(answer.headers.get("connection"), "close");
        if (!target.startsWith(fx.base)) assertNoPath(raw, fx);
        else assert.ok(!answer.body.includes(fx.base), "the target is not echoed");
      }
      // The Host check comes first, as for every method.
      const misdirected = parseOne(
        await exchange(board.port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
      );
      assertRefusal(misdirected, 421, "misdirected-request");
      const twoHosts = parseOne(
        await exchange(
          board.port,
          `CONNECT example.com:443 HTTP/1.1\r\nHost: ${host}\r\nHost: ${host}\r\n\r\n`,
        ),
      );
      assertRefusal(twoHosts, 400, "bad-request");
      const tunnel = await exchange(
        board.port,
        `CONNECT example.com:443 HTTP/1.1\r\nHost: ${host}\r\n\r\nbytes for the tunnel`,
      );
      assertRefusal(parseOne(tunnel), 405, "method-not-allowed");
      assert.equal((await send(board.port, "/api/conversations")).status, 200);
    });

    it("does not wait on a half-sent CONNECT when the board closes", async (t) => {
      const { board } = await setup(t, mode);
      // A CONNECT whose request head never ends stays with node:http until close().
      const socket = connect({ host: "127.0.0.1", port: board.port });
      t.after(() => socket.destroy());
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
      socket.on("error", () => {});
      socket.write(`CONNECT a:1 HTTP/1.1\r\nHost: 127.0.0.1:${board.port}\r\n`);
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      await board.close();
      // within clears its timer: one left behind kept this file's process up 5 s.
      await within(closed, "the socket to close (it was left open)", 5000);
      assert.ok(Date.now() - started < 5000);
    });
  });
}
