// Steering from the board (issue 15 item 2): `POST /api/conversations/:id/control` against the
// real Controller over fake-pi. Each logged-in session is its own connection: one takes
// control and prompts, another is refused `controller`; force-stop takes the confirm step;
// every controller refusal code has its status in one table; a login signed out to make room
// closes the controller connection it held.
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { MAX_LOGINS } from "../../src/board/auth.ts";
import { type Board, CONTROL_REFUSAL_STATUS, statusOf } from "../../src/board/index.ts";
import { CONTROL_REFUSAL_CODES } from "../../src/control/refusal.ts";
import { DEADLINE_MS, until } from "../helpers/deadline.ts";
import { logIn } from "../helpers/login.ts";
import { startControlledBoard } from "./controlled-board.ts";
import { type Answer, send } from "./http-client.ts";

type Body = {
  ok: boolean;
  refusal?: { code: string; message: string };
  role?: string;
  receipt?: { id: string; state: string };
  confirmation?: string;
};

/** A board over a running controller registered in --state-dir's registry. */
async function controlled(t: TestContext) {
  const { board, conversation, ctl } = await startControlledBoard(t);
  return { board, conversation, ctl };
}

/** A login's action headers, as the Console sends them. */
async function login(board: Board): Promise<Record<string, string>> {
  return (await logIn(board.loginUrl)).headers;
}

function steer(
  board: Board,
  headers: Record<string, string>,
  id: string,
  body: object,
): Promise<Answer> {
  return send(board.port, `/api/conversations/${id}/control`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    timeoutMs: DEADLINE_MS,
  });
}

const bodyOf = (a: Answer) => a.json as Body;

describe("board control route", () => {
  it("has one HTTP status for every controller refusal code", () => {
    assert.deepEqual(Object.keys(CONTROL_REFUSAL_STATUS).sort(), [...CONTROL_REFUSAL_CODES].sort());
    for (const code of CONTROL_REFUSAL_CODES) {
      const status = statusOf(code);
      assert.ok([400, 403, 409, 410, 503].includes(status), `${code} → ${status}`);
    }
    assert.equal(statusOf("no-controller"), 404);
    assert.equal(statusOf("outcome-unknown"), 502);
  });

  it("each login is its own connection: takeover, prompt, refusals, force-stop with confirm", async (t) => {
    const { board, conversation } = await controlled(t);
    const a = await login(board);
    const b = await login(board);
    assert.notEqual(a, b);

    const bad = await steer(board, a, conversation, { op: "dance" });
    assert.equal(bad.status, 400);
    assert.equal(bodyOf(bad).refusal?.code, "bad-request");
    const none = await steer(board, a, "pi-0000000000000000000000000000000000000000", {
      op: "takeover",
    });
    assert.equal(none.status, 404);
    assert.equal(bodyOf(none).refusal?.code, "no-controller");

    const early = await steer(board, a, conversation, { op: "prompt", text: "too early" });
    assert.equal(early.status, 409, JSON.stringify(early.json));
    assert.equal(bodyOf(early).refusal?.code, "controller", "an observer may not prompt");
    assert.ok((bodyOf(early).refusal?.message ?? "").length > 0, "the refusal is in words");

    const took = await steer(board, a, conversation, { op: "takeover" });
    assert.equal(took.status, 200, JSON.stringify(took.json));
    assert.equal(bodyOf(took).role, "controller");
    const again = await steer(board, a, conversation, { op: "takeover" });
    assert.equal(again.status, 409);
    assert.equal(bodyOf(again).refusal?.code, "already-controller", "the same connection");

    const fromB = await steer(board, b, conversation, { op: "prompt", text: "from b" });
    assert.equal(fromB.status, 409, JSON.stringify(fromB.json));
    assert.equal(bodyOf(fromB).refusal?.code, "controller", "another login is another connection");
    // Takeover moves control (as on the socket): A is an observer again until it takes back.
    const bTakes = await steer(board, b, conversation, { op: "takeover" });
    assert.equal(bTakes.status, 200, JSON.stringify(bTakes.json));
    const lost = await steer(board, a, conversation, { op: "prompt", text: "after the takeover" });
    assert.equal(lost.status, 409);
    assert.equal(bodyOf(lost).refusal?.code, "controller");
    assert.equal((await steer(board, a, conversation, { op: "takeover" })).status, 200);

    const noText = await steer(board, a, conversation, { op: "prompt" });
    assert.equal(noText.status, 400);
    const prompted = await steer(board, a, conversation, { op: "prompt", text: "hello" });
    assert.equal(prompted.status, 200, JSON.stringify(prompted.json));
    assert.equal(bodyOf(prompted).receipt?.state, "admitted");

    const noConfirmation = await steer(board, a, conversation, { op: "force-stop" });
    assert.equal(noConfirmation.status, 400);
    const made = await steer(board, a, conversation, { op: "confirm", operation: "force-stop" });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    const confirmation = bodyOf(made).confirmation ?? "";
    assert.ok(confirmation !== "");
    const stopped = await steer(board, a, conversation, { op: "force-stop", confirmation });
    assert.equal(stopped.status, 200, JSON.stringify(stopped.json));
    const reused = await steer(board, a, conversation, { op: "force-stop", confirmation });
    assert.notEqual(reused.status, 200, "a confirmation is used once");
    assert.equal(statusOf(bodyOf(reused).refusal?.code ?? "internal-error"), reused.status);
  });

  it("closes the controller connection of a login signed out to make room", async (t) => {
    const { board, conversation, ctl } = await controlled(t);
    const first = await login(board);
    const took = await steer(board, first, conversation, { op: "takeover" });
    assert.equal(took.status, 200, JSON.stringify(took.json));
    const mine = (took.json as { connection: string }).connection;
    assert.equal(ctl.state().controllerConnection, mine);
    for (let i = 0; i < MAX_LOGINS; i++) await login(board);
    // The first login is the least recently used: signed out, its connection closed, and the
    // controller sees its controller go.
    await until(
      () => ctl.state().controllerConnection === null,
      "the signed-out login's connection to close",
    );
    const out = await steer(board, first, conversation, { op: "prompt", text: "still here?" });
    assert.equal(out.status, 403);
    assert.equal(bodyOf(out).refusal?.code, "not-logged-in");
  });
});
