// A board started from sources listens before its read workers run (they need the bound port
// for the Host check). A request in that window, as from a script or a browser opened the moment
// `serve` starts, is told to come back (503 `board-starting`, `Retry-After`), never answered
// `internal-error` (issue 24 item 16).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { type Board, startBoard } from "../../src/board/index.ts";
import { BOARD_REFUSAL_STATUS } from "../../src/board/status.ts";
import { DEADLINE_MS, within } from "../helpers/deadline.ts";
import { writeBoardFixture } from "./fixture.ts";
import { type Answer, send } from "./http-client.ts";

/** A port nothing listens on now (the kernel's pick, released at once). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen({ host: "127.0.0.1", port: 0 }, () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

describe("board start", () => {
  it("answers board-starting 503 with Retry-After until its workers run, then the catalogue", async (t) => {
    const fx = await writeBoardFixture(t);
    const port = await freePort();
    let board: Board | null = null;
    t.after(() => board?.close());
    const started = startBoard({
      sources: { specs: fx.specs, registrations: fx.registrations },
      port,
    }).then((b) => {
      board = b;
      return b;
    });
    // Ask as fast as the port answers, from before it listens until the board is up.
    const answers: Answer[] = [];
    let up = false;
    const stop = () => {
      up = true;
    };
    started.then(stop, stop);
    const asking = (async () => {
      while (!up) {
        try {
          answers.push(await send(port, "/api/conversations"));
        } catch {
          // Not listening yet (ECONNREFUSED): ask again at once.
          await new Promise((r) => setTimeout(r, 2));
        }
      }
    })();
    await within(started, "the board to start", 60_000);
    await within(asking, "the last early request", DEADLINE_MS);
    const early = answers.filter((a) => a.status !== 200);
    assert.ok(early.length > 0, "some request was answered before the workers ran");
    for (const a of early) {
      assert.equal(a.status, 503, a.text);
      assert.equal(a.headers["retry-after"], "1");
      const body = a.json as { ok: boolean; refusal: { code: string; message: string } };
      assert.equal(body.ok, false);
      assert.equal(body.refusal.code, "board-starting");
      assert.match(body.refusal.message, /starting; try again/);
    }
    assert.equal(BOARD_REFUSAL_STATUS["board-starting"], 503);
    const after = await send(port, "/api/conversations");
    assert.equal(after.status, 200);
  });
});
