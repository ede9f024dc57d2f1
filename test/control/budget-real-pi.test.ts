// Budgets with the real pinned Pi and the loopback model (issue 28 item 4): every reply the
// model serves reports 12 input and 5 output tokens, which Pi counts and prices from the
// agent dir's models.json; the controller's budget counts them from Pi's message_end events.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { LedgerAction } from "../../src/audit/ledger-line.ts";
import type { Dialog } from "../../src/control/protocol.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { GRANTS } from "./controller-fixture.ts";
import { startReal } from "./real-controller.ts";
import { settled } from "./settled.ts";

const T = { timeout: SLOW_TEST_MS };
const OPERATOR = {
  id: "g-operator",
  actor: "an-operator",
  capabilities: ["observe", "takeover", "release", "prompt", "interrupt", "answer"] as const,
};
const grants = () => [
  ...GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
  { ...OPERATOR, capabilities: [...OPERATOR.capabilities] },
];

function watchDialogs(client: { onDialog(fn: (d: Dialog) => void): unknown }): Dialog[] {
  const dialogs: Dialog[] = [];
  client.onDialog((d) => dialogs.push(d));
  return dialogs;
}
const openBudget = (dialogs: Dialog[]): Dialog | undefined => {
  const by = new Map<string, Dialog>();
  for (const d of dialogs) by.set(d.id, d);
  return [...by.values()].find((d) => d.method === "budget" && d.state === "open");
};
const last = (dialogs: Dialog[], id: string) => dialogs.filter((d) => d.id === id).at(-1);

describe("budgets with the real pinned Pi", () => {
  it(
    "stops a run that reaches the token budget, refuses prompts, lets only an admin raise it",
    T,
    async (t) => {
      const actions: LedgerAction[] = [];
      const run = await startReal(t, {
        replies: [
          {
            kind: "tool-calls",
            calls: [{ id: "call_read_1", name: "read", arguments: { path: "hello.txt" } }],
          },
          { kind: "slow", tickMs: 50 },
        ],
        controller: { budget: { tokens: 10 }, grants: grants(), actions: (a) => actions.push(a) },
      });
      writeFileSync(join(run.f.projectRoot, "hello.txt"), "hello\n");
      const { client: a, events } = await run.client();
      const dialogs = watchDialogs(a);
      assert.deepEqual(a.state?.budget, {
        spent: { usd: 0, tokens: 0 },
        limit: { usd: null, tokens: 10 },
      });
      await a.takeover();
      const r = await a.prompt("read hello.txt");
      assert.ok(r.outcome === "admitted", JSON.stringify(r));
      // The first reply (17 tokens) reaches the budget while the run goes on: it is stopped.
      await until(() => settled(events, r.receipt.id) !== null, "receipt settled");
      assert.equal(settled(events, r.receipt.id), "interrupted");
      // Whether Pi asked for the slow reply before the stop reached it is timing: on a busy
      // machine the stop can land while Pi runs the read tool. Left queued, the slow reply
      // (it ticks until the client goes) would be the next prompt's, which then never settles.
      const unserved = run.model.dropQueued();
      t.diagnostic(`replies the stopped run never asked for: ${unserved.length}`);
      await until(() => openBudget(dialogs) !== undefined, "the budget dialog opened");
      const d = openBudget(dialogs) as Dialog;
      assert.equal(d.disabled, false);
      assert.deepEqual(d.budget, {
        spent: { usd: 0, tokens: 17 },
        limit: { usd: null, tokens: 10 },
      });
      assert.match(d.title, /17 of 10 tokens/);
      await until(() => a.state?.budget?.spent.tokens === 17, "the state carries what was spent");
      const stops = run.ctrl.records.filter((x) => x.kind === "stop");
      assert.ok(stops.length > 0, "the stop is on record");

      await until(() => a.state?.admission === "open", "the stop lifted its fence");
      const refused = await a.prompt("go on");
      assert.equal(refused.outcome, "refused:budget", JSON.stringify(refused));
      assert.match(
        (refused as { message?: string }).message ?? "",
        /17 of 10 tokens spent; nothing was sent.*Raise the budget/,
      );

      // An observer may not raise it, nor may an operator without the budget capability.
      const { client: watcher } = await run.client("g-ro");
      assert.equal((await watcher.budget({ tokens: 1000 })).outcome, "refused:capability");
      const { client: op } = await run.client("g-operator");
      assert.equal((await op.takeover()).outcome, "admitted");
      const byOperator = await op.raiseBudget(d.id, { tokens: 1000 });
      assert.equal(byOperator.outcome, "refused:capability", JSON.stringify(byOperator));
      assert.match((byOperator as { message?: string }).message ?? "", /budget capability/);
      assert.equal((await op.budget({ tokens: 1000 })).outcome, "refused:capability");
      assert.equal(openBudget(dialogs)?.id, d.id, "nothing raised it");

      // The admin takes control back and raises it: the next prompt runs.
      assert.equal((await a.takeover()).outcome, "admitted");
      const low = await a.raiseBudget(d.id, { tokens: 17 });
      assert.equal(low.outcome, "refused:budget", "a raise must be above what was spent");
      const raised = await a.raiseBudget(d.id, { tokens: 100 });
      assert.equal(raised.outcome, "admitted", JSON.stringify(raised));
      await until(() => last(dialogs, d.id)?.state === "allowed", "the dialog ended raised");
      assert.match(
        last(dialogs, d.id)?.reason ?? "",
        /raised by local-operator to 17 of 100 tokens/,
      );
      assert.equal((await a.raiseBudget(d.id, { tokens: 200 })).outcome, "refused:dialog");
      const again = await a.prompt("say ok");
      assert.ok(again.outcome === "admitted", JSON.stringify(again));
      await until(() => settled(events, again.receipt.id) !== null, "second receipt settled");
      assert.equal(settled(events, again.receipt.id), "completed");
      await until(() => a.state?.budget?.spent.tokens === 34, "the second reply counted");

      // The ledger names who raised it and who was refused.
      const answers = actions.filter((x) => x.op === "answer");
      const admitted = answers.find((x) => x.outcome === "admitted");
      assert.equal(admitted?.actor, "local-operator");
      assert.deepEqual(admitted?.input.budget, { tokens: 100 });
      assert.ok(
        answers.some((x) => x.actor === "an-operator" && x.outcome === "refused:capability"),
      );
    },
  );

  it(
    "refuses a prompt past a USD budget priced by Pi, and a stop answered keeps refusing",
    T,
    async (t) => {
      const run = await startReal(t, {
        replies: [
          { kind: "text", text: "one" },
          { kind: "text", text: "two" },
        ],
        controller: { budget: { usd: 0.03 } },
        beforeStart: (f) => {
          // $1,000 per million input tokens, $2,000 per million output: $0.022 a reply.
          const file = join(f.root, "agent", "models.json");
          const models = JSON.parse(readFileSync(file, "utf8"));
          models.providers.loopback.models[0].cost = {
            input: 1000,
            output: 2000,
            cacheRead: 0,
            cacheWrite: 0,
          };
          writeFileSync(file, JSON.stringify(models));
        },
      });
      const { client: a, events } = await run.client();
      const dialogs = watchDialogs(a);
      await a.takeover();
      const first = await a.prompt("one");
      assert.ok(first.outcome === "admitted");
      await until(() => settled(events, first.receipt.id) !== null, "first settled");
      assert.equal(a.state?.budget?.spent.usd, 0.022);
      assert.equal(openBudget(dialogs), undefined, "$0.022 of $0.03: not reached");
      const second = await a.prompt("two");
      assert.ok(second.outcome === "admitted");
      await until(() => settled(events, second.receipt.id) !== null, "second settled");
      await until(() => openBudget(dialogs) !== undefined, "the budget dialog opened");
      const d = openBudget(dialogs) as Dialog;
      assert.match(d.title, /\$0\.05 of \$0\.03/);

      // The reply that reached it may have started a stop as its run ended: wait until it ends.
      await until(() => a.state?.admission === "open", "admission open again");
      const third = await a.prompt("three");
      assert.equal(third.outcome, "refused:budget");
      assert.match((third as { message?: string }).message ?? "", /\$0\.05 of \$0\.03 spent/);
      assert.equal(run.model.requests.length, 2, "nothing reached the model");

      assert.equal((await a.answer(d.id, "deny")).outcome, "admitted");
      await until(() => last(dialogs, d.id)?.state === "denied", "the dialog ended stopped");
      assert.match(last(dialogs, d.id)?.reason ?? "", /stopped by local-operator/);
      const fourth = await a.prompt("four");
      assert.equal(fourth.outcome, "refused:budget", "stopped stays stopped: nothing by default");
      await until(() => openBudget(dialogs) !== undefined, "a refused prompt opens a new dialog");
      assert.notEqual(openBudget(dialogs)?.id, d.id);
      assert.equal(run.model.requests.length, 2);
    },
  );
});
