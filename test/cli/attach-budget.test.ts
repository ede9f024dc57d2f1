// The budget dialog in `conversation attach`'s panel (src/cli/attach-budget.ts, through
// attach-approvals.ts): its title and figures, the keys for the controller, ^Y raising to the
// amount typed in the draft, an unreadable or too small amount refused before anything is sent,
// ^N stopping, and who answered once it ends.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ApprovalBoard,
  type ApprovalView,
  answerRefusalWords,
  approvalLines,
} from "../../src/cli/attach-approvals.ts";
import { budgetKey, parseRaise } from "../../src/cli/attach-budget.ts";
import type { Dialog } from "../../src/control/protocol.ts";
import { firstForbidden } from "./hostile.ts";

const budget = (limit: { usd: number | null; tokens: number | null }, id = "dl-b"): Dialog => ({
  type: "dialog",
  id,
  method: "budget",
  title: "Budget reached: $0.05 of $0.04 spent. Raise it, or stop here.",
  disabled: false,
  state: "open",
  budget: { spent: { usd: 0.045, tokens: 11_000 }, limit },
});
const usd = budget({ usd: 0.04, tokens: null });
const me: ApprovalView = { role: "controller", connection: "c-me", controllerConnection: "c-me" };
const watcher: ApprovalView = { role: "observer", connection: "c-w", controllerConnection: "c-me" };

describe("attach-budget", () => {
  it("shows the title, what was spent of the limit and the keys when this connection controls", () => {
    const b = new ApprovalBoard();
    assert.deepEqual(b.take(usd), { opened: usd });
    const lines = approvalLines(b, me, 200, 10);
    assert.equal(
      lines[0],
      "── budget: Budget reached: $0.05 of $0.04 spent. Raise it, or stop here.",
    );
    assert.equal(lines[1], "  budget $0.05 of $0.04 (reached)");
    assert.match(lines.at(-1) ?? "", /\^Y raises to the amount in the draft · \^N stops here/);
    const watched = approvalLines(b, watcher, 200, 10).join("\n");
    assert.match(watched, /only the controller answers: connection c-me controls/);
    assert.doesNotMatch(watched, /\^Y raises/);
  });

  it("raises to the amount typed in the draft: dollars, tokens or both", () => {
    assert.deepEqual(budgetKey("allow", "5", usd), {
      send: "raise",
      limits: { usd: 5 },
      saying: "raising the budget to $5.00…",
    });
    assert.deepEqual(parseRaise("$2.50", usd), { ok: true, limits: { usd: 2.5 }, words: "$2.50" });
    const tokens = budget({ usd: null, tokens: 10_000 });
    assert.deepEqual(parseRaise("20000", tokens), {
      ok: true,
      limits: { tokens: 20_000 },
      words: "20,000 tokens",
    });
    assert.deepEqual(parseRaise("20000 tokens", usd), {
      ok: true,
      limits: { tokens: 20_000 },
      words: "20,000 tokens",
    });
    const both = budget({ usd: 0.04, tokens: 10_000 });
    assert.deepEqual(parseRaise("$1 and 50000 tokens", both), {
      ok: true,
      limits: { usd: 1, tokens: 50_000 },
      words: "$1.00, 50,000 tokens",
    });
  });

  it("sends nothing and says what to type when the draft is empty, unreadable or not above spent", () => {
    for (const [draft, d, words] of [
      [
        "",
        usd,
        /nothing raised: type a new limit in the draft \(e\.g\. "5" or "\$2\.50"\), then \^Y/,
      ],
      ["lots", usd, /"lots" is not an amount of dollars/],
      // A dialog that limits only tokens reads what is not dollars as tokens, and says so.
      ["lots", budget({ usd: null, tokens: 10_000 }), /"lots" is not a whole number of tokens/],
      ["$0.04", usd, /\$0\.04 is not above the \$0\.05 spent; type a larger amount/],
      ["5000 tokens", usd, /5,000 tokens is not above the 11,000 spent/],
      ["2e5 tokens", usd, /not a whole number of tokens/],
      [
        "7",
        budget({ usd: 0.04, tokens: 10_000 }),
        /"7" is dollars or tokens\? write "\$7" or "7 tokens"/,
      ],
    ] as const) {
      const key = budgetKey("allow", draft, d);
      assert.equal(key.send, null, draft);
      assert.match(key.saying, words);
      assert.equal(firstForbidden(key.saying), null);
    }
  });

  it("stops on ^N whatever the draft holds", () => {
    assert.deepEqual(budgetKey("deny", "5", usd), { send: "stop", saying: "stopping here…" });
  });

  it("says who raised or stopped once it ends, and words the controller's refusal", () => {
    const b = new ApprovalBoard();
    b.take(usd);
    b.take({
      ...usd,
      state: "allowed",
      reason: "raised by alice to $5.00",
      answeredBy: { connection: "c-x", actor: "alice" },
      budget: { spent: { usd: 0.045, tokens: 11_000 }, limit: { usd: 5, tokens: null } },
    });
    assert.equal(b.current, null);
    assert.deepEqual(approvalLines(b, me, 200, 5), [
      "budget: budget raised by alice (c-x): the next prompt runs — budget $0.05 of $5.00",
    ]);
    b.take({
      ...budget({ usd: 5, tokens: null }, "dl-c"),
      state: "denied",
      answeredBy: { connection: "c-me", actor: "me" },
    });
    assert.deepEqual(approvalLines(b, me, 200, 5), [
      "budget: budget not raised: stopped by you (me); the next prompt asks again",
    ]);
    assert.match(answerRefusalWords("budget", "x"), /must be above what was spent/);
    assert.match(answerRefusalWords("capability", "x"), /a raise needs the budget capability/);
  });
});
