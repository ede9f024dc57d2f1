// The controller's audit hook: every act on the socket reaches the ledger once, with the person a
// delegating grant's hello named, the outcome, and a prompt's text; a hello may only narrow its
// grant, and a narrowed connection's other acts are refused `capability` (and ledgered too).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { AuditLedger } from "../../src/audit/ledger.ts";
import { readLedger } from "../../src/audit/verify.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { type Grant, OPERATIONS } from "../../src/control/protocol.ts";
import { SLOW_TEST_MS } from "../helpers/deadline.ts";
import { controllerOptions, makeFixture, TestClient } from "./controller-fixture.ts";

const T = { timeout: SLOW_TEST_MS };
const GRANTS: Grant[] = [
  { id: "board", actor: "the-board", capabilities: [...OPERATIONS], delegate: true },
  { id: "plain", actor: "local-operator", capabilities: [...OPERATIONS] },
  { id: "watch", actor: "the-board", capabilities: ["observe"], delegate: true },
];

async function started(t: TestContext) {
  const f = makeFixture(t);
  let ledger: AuditLedger | null = null;
  const ctl = new Controller({
    ...controllerOptions(f, {
      grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    }),
    actions: (a) => {
      if (ledger === null) throw new Error("not open");
      ledger.append(a);
    },
  });
  const opened = AuditLedger.open(join(f.root, "audit"), ctl.conversation);
  if (!opened.ok) assert.fail(opened.message);
  ledger = opened.ledger;
  t.after(async () => {
    await ctl.stop();
    rmSync(f.root, { recursive: true, force: true });
  });
  await ctl.start();
  return { ctl, files: opened.ledger.files };
}

async function hello(t: TestContext, path: string, fields: Record<string, unknown>) {
  const c = await TestClient.connect(t, path);
  c.raw(`${JSON.stringify({ type: "hello", protocol: 2, ...fields })}\n`);
  const m = await c.waitFor((x) => x.type === "welcome" || x.type === "reply", "hello answer");
  return { c, m };
}

describe("controller audit hook", () => {
  it(
    "ledgers each act with the person the hello named, its outcome and a prompt's text",
    T,
    async (t) => {
      const { ctl, files } = await started(t);
      const { c } = await hello(t, ctl.socketPath, { grant: "board", actor: "alice@example.org" });
      const take = await c.request({ op: "takeover", generation: 1 });
      assert.equal(take.outcome, "admitted");
      const prompt = await c.request({
        op: "prompt",
        generation: 2,
        text: "tidy the parser",
        draft: { id: "d1", revision: 1 },
      });
      assert.equal(prompt.outcome, "admitted");
      const stale = await c.request({ op: "release", generation: 1 });
      assert.equal(stale.outcome, "refused:generation");
      await c.request({ op: "observe" });
      const reading = readLedger(files, ctl.conversation);
      assert.ok(reading.found);
      assert.deepEqual(reading.problems, []);
      assert.deepEqual(
        reading.lines.map((l) => [l.actor, l.delegatedBy, l.op, l.outcome]),
        [
          ["alice@example.org", "the-board", "takeover", "admitted"],
          ["alice@example.org", "the-board", "prompt", "admitted"],
          ["alice@example.org", "the-board", "release", "refused:generation"],
        ],
      );
      assert.equal(reading.lines[1]?.input.text, "tidy the parser");
      assert.equal(
        (reading.lines[1]?.answer.receipt as { id?: string } | undefined)?.id,
        (prompt.receipt as { id: string }).id,
      );
      assert.match(String(reading.lines[2]?.answer.message), /generation is 2/);
    },
  );

  it(
    "refuses an actor on a grant that does not delegate, and a narrowing that widens",
    T,
    async (t) => {
      const { ctl } = await started(t);
      const a = await hello(t, ctl.socketPath, { grant: "plain", actor: "mallory" });
      assert.equal(a.m.outcome, "refused:grant");
      assert.match(String(a.m.message), /does not delegate/);
      const b = await hello(t, ctl.socketPath, {
        grant: "watch",
        capabilities: ["observe", "takeover"],
      });
      assert.equal(b.m.outcome, "refused:grant");
      assert.match(String(b.m.message), /does not allow takeover/);
      const c = await hello(t, ctl.socketPath, {
        grant: "board",
        capabilities: ["observe", "bogus"],
      });
      assert.equal(c.m.outcome, "refused:malformed");
    },
  );

  it(
    "refuses `capability` for an act outside the hello's narrowing, and ledgers it",
    T,
    async (t) => {
      const { ctl, files } = await started(t);
      const { c } = await hello(t, ctl.socketPath, {
        grant: "board",
        actor: "oscar",
        capabilities: ["observe"],
      });
      const take = await c.request({ op: "takeover", generation: 1 });
      assert.equal(take.outcome, "refused:capability");
      assert.equal((await c.request({ op: "observe" })).outcome, "admitted");
      const reading = readLedger(files, ctl.conversation);
      assert.ok(reading.found);
      assert.deepEqual(
        reading.lines.map((l) => [l.actor, l.op, l.outcome]),
        [["oscar", "takeover", "refused:capability"]],
      );
    },
  );

  it("names the grant's own actor when the hello names nobody", T, async (t) => {
    const { ctl, files } = await started(t);
    const { c } = await hello(t, ctl.socketPath, { grant: "plain" });
    await c.request({ op: "takeover", generation: 1 });
    const reading = readLedger(files, ctl.conversation);
    assert.ok(reading.found);
    assert.equal(reading.lines[0]?.actor, "local-operator");
    assert.equal(reading.lines[0]?.delegatedBy, undefined);
  });

  it("ledgers an identical retry once: the protocol's replay is not a new act", T, async (t) => {
    const { ctl, files } = await started(t);
    const { c } = await hello(t, ctl.socketPath, { grant: "plain" });
    const acts = [
      { id: "t-1", op: "takeover", generation: 1 },
      { id: "p-1", op: "prompt", generation: 2, text: "hi", draft: { id: "d1", revision: 1 } },
      { id: "x-1", op: "release", generation: 1 },
    ];
    for (const act of acts) {
      const first = await c.request(act);
      // The same id, the same content: the protocol's idempotent retry, answered again.
      const from = c.messages.length;
      c.raw(`${JSON.stringify({ type: "request", ...act })}\n`);
      assert.deepEqual(await c.reply(act.id, from), first);
    }
    const reading = readLedger(files, ctl.conversation);
    assert.ok(reading.found);
    assert.deepEqual(reading.problems, []);
    assert.deepEqual(
      reading.lines.map((l) => [l.request, l.op, l.outcome]),
      [
        ["t-1", "takeover", "admitted"],
        ["p-1", "prompt", "admitted"],
        ["x-1", "release", "refused:generation"],
      ],
    );
  });

  it("refuses every later act `audit` once the ledger cannot be written", T, async (t) => {
    const { ctl, files } = await started(t);
    const { c } = await hello(t, ctl.socketPath, { grant: "plain" });
    rmSync(files.lines);
    await c.request({ op: "takeover", generation: 1 });
    const next = await c.request({ op: "release", generation: 2 });
    assert.equal(next.outcome, "refused:audit");
  });
});
