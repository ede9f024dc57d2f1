// Budgets with the real pinned Claude Code 2.1.328 and the loopback Anthropic stand-in (issue 28
// item 4): the controller counts the usage of Claude's stream-json assistant lines, priced from
// the pinned table as `conversation usage` prices the file's lines (claude-sonnet-4-5: $3 per
// million input tokens, $15 per million output).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { LedgerAction } from "../../src/audit/ledger-line.ts";
import type { Dialog } from "../../src/control/protocol.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { startClaude } from "./real-claude-controller.ts";
import { settled } from "./settled.ts";

const T = { timeout: SLOW_TEST_MS };
const WAIT = 60_000;

const latest = (dialogs: Dialog[]) => {
  const by = new Map<string, Dialog>();
  for (const d of dialogs) by.set(d.id, d);
  return [...by.values()];
};
const openBudget = (dialogs: Dialog[]) =>
  latest(dialogs).find((d) => d.method === "budget" && d.state === "open");

describe("budgets with the real pinned Claude Code", () => {
  it(
    "interrupts a turn whose reply reaches the USD budget, before its tool runs; raise, then go on",
    T,
    async (t) => {
      const actions: LedgerAction[] = [];
      const run = await startClaude(t, {
        replies: [],
        controller: { budget: { usd: 0.04 }, actions: (a) => actions.push(a) },
      });
      const marker = join(run.projectRoot, "budget.txt");
      // 10,000 in and 1,000 out on sonnet 4.5: $0.03 + $0.015 = $0.045, past $0.04.
      run.fake.enqueue({
        kind: "message",
        usage: { input_tokens: 10_000, output_tokens: 1000 },
        content: [
          {
            type: "tool_use",
            id: "toolu_budget",
            name: "Bash",
            input: { command: `touch ${marker}`, description: "create the marker file" },
          },
        ],
      });
      const a = await run.client();
      await a.client.takeover();
      const r = await a.client.prompt("make the marker");
      assert.ok(r.outcome === "admitted", JSON.stringify(r));
      await until(() => openBudget(a.dialogs) !== undefined, "the budget dialog opened", WAIT);
      await until(() => settled(a.events, r.receipt.id) !== null, "receipt settled", WAIT);
      assert.equal(settled(a.events, r.receipt.id), "interrupted");
      const d = openBudget(a.dialogs) as Dialog;
      assert.deepEqual(d.budget, {
        spent: { usd: 0.045, tokens: 11_000 },
        limit: { usd: 0.04, tokens: null },
      });
      assert.equal(existsSync(marker), false, "the tool never ran");
      // Its approval, if Claude asked it around the stop, ended unallowed: denied by the
      // interrupt, or withdrawn by Claude as its turn ended.
      for (const approval of latest(a.dialogs).filter((x) => x.method === "approval")) {
        assert.ok(approval.state === "denied" || approval.state === "closed", approval.state);
      }

      await until(() => a.client.state?.admission === "open", "the stop lifted its fence", WAIT);
      const refused = await a.client.prompt("try again");
      assert.equal(refused.outcome, "refused:budget");
      assert.match((refused as { message?: string }).message ?? "", /\$0\.05 of \$0\.04 spent/);

      const raised = await a.client.raiseBudget(d.id, { usd: 1 });
      assert.equal(raised.outcome, "admitted", JSON.stringify(raised));
      await until(() => a.client.state?.budget?.limit.usd === 1, "the state says $1", WAIT);
      run.fake.enqueue({ kind: "message", content: [{ type: "text", text: "done" }] });
      const next = await a.client.prompt("just say done");
      assert.ok(next.outcome === "admitted", JSON.stringify(next));
      await until(() => settled(a.events, next.receipt.id) !== null, "next settled", WAIT);
      assert.equal(settled(a.events, next.receipt.id), "completed");
      // 120 in and 30 out by default: 11,150 tokens, $0.04581 now.
      await until(() => a.client.state?.budget?.spent.tokens === 11_150, "counted once", WAIT);
      assert.equal(a.client.state?.budget?.spent.usd, 0.04581);
      const line = actions.find((x) => x.op === "answer" && x.outcome === "admitted");
      assert.deepEqual(line?.input, { dialog: d.id, decision: "allow", budget: { usd: 1 } });
      // Every client is told a budget was raised, not that an approval was allowed.
      const act = a.events.find((e) => e.event.kind === "act" && e.event.op === "answer");
      assert.equal(act?.event.about, "budget");
      assert.equal(act?.event.dialog, d.id);
    },
  );
});
