// The `answer` operation's refusals over the socket (the fake Pi asks no approvals, so every
// dialog id is unknown: `dialog`), and the Approvals book's rules on their own: the first answer
// wins, a connection that lost control since an approval opened may not answer it, an ended
// approval says how it ended. The real Claude Code runs them in controller-claude.test.ts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Approvals } from "../../src/control/controller/dialogs.ts";
import { parseClientMessage } from "../../src/control/protocol.ts";
import { type Msg, startController, TestClient } from "./controller-fixture.ts";

function refused(reply: Msg, code: string): void {
  assert.equal(reply.outcome, `refused:${code}`, JSON.stringify(reply));
  assert.equal(reply.refusal, code);
}

describe("answer", () => {
  it("refuses malformed answers before anything else", () => {
    const line = (o: object) => JSON.stringify({ type: "request", id: "q1", op: "answer", ...o });
    assert.equal(parseClientMessage(line({ dialog: "dl-1", decision: "allow" })).ok, true);
    for (const bad of [
      { decision: "allow" },
      { dialog: "dl-1", decision: "yes" },
      { dialog: "dl-1", decision: "deny", message: 3 },
      { dialog: "dl-1", decision: "deny", message: "x".repeat(4001) },
      { dialog: "dl-1", decision: "allow", extra: true },
    ]) {
      assert.equal(parseClientMessage(line(bad)).ok, false, JSON.stringify(bad));
    }
  });

  it("refuses an observer (controller), a stale generation, a grant without answer, an unknown dialog", async (t) => {
    const { ctl } = await startController(t);
    const { c, welcome } = await TestClient.welcomed(t, ctl.socketPath);
    const g0 = (welcome.state as { generation: number }).generation;
    const ask = { op: "answer", dialog: "dl-nope", decision: "allow" };
    refused(await c.request({ ...ask, generation: g0 }), "controller");
    assert.equal((await c.request({ op: "takeover", generation: g0 })).outcome, "admitted");
    refused(await c.request({ ...ask, generation: g0 }), "generation");
    const answered = await c.request({ ...ask, generation: g0 + 1 });
    refused(answered, "dialog");
    assert.match(String(answered.message), /no approval dl-nope is open/);
    const { c: ro, welcome: w2 } = await TestClient.welcomed(t, ctl.socketPath, "g-ro");
    const g = (w2.state as { generation: number }).generation;
    refused(await ro.request({ ...ask, generation: g }), "capability");
  });
});

describe("Approvals", () => {
  const tool = { name: "Bash", input: { command: "ls" }, toolUseId: "toolu_1" };

  it("lets the first answer end an approval; a later one is refused, naming how it ended", () => {
    const book = new Approvals("ex-1");
    const { message } = book.open("req-native-1", tool);
    assert.equal(message.state, "open");
    assert.deepEqual(book.check(message.id, "c1"), { ok: true, native: "req-native-1" });
    const by = { connection: "c1", actor: "me" };
    const ended = book.end(message.id, "allowed", { reason: "allowed by me", answeredBy: by });
    assert.equal(ended?.message.state, "allowed");
    assert.deepEqual(ended?.message.answeredBy, by);
    assert.equal(book.end(message.id, "denied", { reason: "again" }), null);
    const late = book.check(message.id, "c1");
    assert.equal(late.ok, false);
    assert.match(late.ok ? "" : late.message, /no longer open \(allowed\)/);
  });

  it("refuses a connection that lost control while the approval was open, even back in control", () => {
    const book = new Approvals("ex-1");
    const { message } = book.open("n1", tool);
    book.lostControl("c1");
    const checked = book.check(message.id, "c1");
    assert.equal(checked.ok, false);
    assert.equal(checked.ok ? null : checked.code, "controller");
    assert.equal(book.check(message.id, "c2").ok, true, "the new controller may answer");
    // An approval opened after the loss is c1's to answer again.
    const later = book.open("n2", tool).message;
    assert.equal(book.check(later.id, "c1").ok, true);
  });

  it("sends the open approvals, oldest first, and nothing once they ended", () => {
    const book = new Approvals("ex-1");
    const a = book.open("n1", tool).message;
    const b = book.open("n2", tool).message;
    assert.deepEqual(
      book.openMessages().map((m) => m.id),
      [a.id, b.id],
    );
    book.end(a.id, "closed", { reason: "closed by a force stop" });
    assert.deepEqual(book.openIds(), [b.id]);
    assert.equal(book.idOf("n2"), b.id);
    assert.equal(book.idOf("n1"), null);
  });
});
