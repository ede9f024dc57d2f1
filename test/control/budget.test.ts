import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  BudgetMeter,
  centsOf,
  parseTokensText,
  parseUsdText,
  spentText,
} from "../../src/control/controller/budget.ts";
import { parseBudgetLimits } from "../../src/control/protocol.ts";
import { ClaudeLiveSpends, piLiveSpend, type Spend } from "../../src/usage/lines.ts";

function spend(over: Partial<Spend> = {}): Spend {
  return {
    key: null,
    ms: 0,
    model: "m",
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    cost: 0,
    unpriced: false,
    ...over,
  };
}

describe("budget", () => {
  it("reaches a $0.90 budget with replies of $0.30 and $0.60, where a float sum falls short", () => {
    // 0.3 + 0.6 is 0.8999999999999999 in floating point: nano-dollars are exact.
    assert.ok(0.3 + 0.6 < 0.9);
    const meter = new BudgetMeter({ cents: 90, tokens: null });
    meter.add(spend({ cost: 0.3 }));
    assert.equal(meter.reached(), null);
    meter.add(spend({ cost: 0.6 }));
    assert.equal(meter.reached(), "usd");
    assert.equal(meter.spentNano, 900_000_000);
    assert.equal(meter.describe(), "$0.90 of $0.90");
  });

  it("stays unreached one nano-dollar under the limit, and shows the spending rounded up", () => {
    const meter = new BudgetMeter({ cents: 1, tokens: null });
    meter.add(spend({ cost: 0.009999999 }));
    assert.equal(meter.reached(), null);
    assert.equal(spentText(meter.spentNano), "$0.01");
    meter.add(spend({ cost: 0.000000001 }));
    assert.equal(meter.reached(), "usd");
  });

  it("counts tokens of every kind and reaches the token limit at it, not past it", () => {
    const meter = new BudgetMeter({ cents: null, tokens: 100 });
    meter.add(spend({ input: 40, output: 10, cacheRead: 30, cacheWrite: 19 }));
    assert.equal(meter.spentTokens, 99);
    assert.equal(meter.reached(), null);
    meter.add(spend({ output: 1 }));
    assert.equal(meter.reached(), "tokens");
    assert.equal(meter.describe(), "100 of 100 tokens");
  });

  it("counts the repeated lines of one Claude reply once, at their largest counts", () => {
    const meter = new BudgetMeter({ cents: null, tokens: 1000 });
    const line = (output: number) => ({
      type: "assistant",
      message: {
        id: "msg_1",
        model: "claude-sonnet-4-5-20250929",
        usage: { input_tokens: 10, output_tokens: output, cache_read_input_tokens: 100 },
      },
    });
    const live = new ClaudeLiveSpends();
    for (const l of [line(1), line(50), line(50)]) {
      const s = live.read(l);
      assert.ok(s);
      meter.add(s);
    }
    assert.equal(meter.spentTokens, 160);
    // Priced from the pinned table (sonnet 4.5: $3/M in, $15/M out, $0.30/M cache read).
    assert.equal(meter.spentNano, 10 * 3000 + 50 * 15000 + 100 * 300);
  });

  it("takes a Claude reply's final output from its stream's message_delta, counted once", () => {
    const meter = new BudgetMeter();
    const live = new ClaudeLiveSpends();
    const usage = { input_tokens: 10, output_tokens: 1 };
    const events = [
      {
        type: "stream_event",
        event: {
          type: "message_start",
          message: { id: "msg_2", model: "claude-sonnet-4-5", usage },
        },
      },
      { type: "assistant", message: { id: "msg_2", model: "claude-sonnet-4-5", usage } },
      { type: "assistant", message: { id: "msg_2", model: "claude-sonnet-4-5", usage } },
      { type: "stream_event", event: { type: "message_delta", usage: { output_tokens: 400 } } },
      { type: "result", usage: { input_tokens: 10, output_tokens: 400 }, total_cost_usd: 1 },
    ];
    for (const e of events) {
      const s = live.read(e);
      if (s) meter.add(s);
    }
    assert.equal(meter.spentTokens, 410);
    assert.equal(meter.spentNano, 10 * 3000 + 400 * 15000);
  });

  it("counts every Pi reply and compaction the engine reports, with Pi's own cost", () => {
    const meter = new BudgetMeter();
    const end = {
      type: "message_end",
      message: {
        role: "assistant",
        model: "fake-1",
        usage: { input: 12, output: 5, cacheRead: 0, cacheWrite: 0, cost: { total: 0.25 } },
        timestamp: 1,
      },
    };
    for (const e of [end, end]) {
      const s = piLiveSpend(e, "unknown");
      assert.ok(s);
      meter.add(s);
    }
    const compacted = piLiveSpend(
      { type: "compaction_end", result: { usage: { input: 100, output: 20 } } },
      "fake-1",
    );
    assert.ok(compacted);
    assert.equal(compacted.model, "fake-1");
    meter.add(compacted);
    assert.equal(meter.spentTokens, 17 * 2 + 120);
    assert.equal(meter.spentNano, 500_000_000);
    assert.equal(piLiveSpend({ type: "message_end", message: { role: "user" } }, "x"), null);
  });

  it("refuses a raise that is not above what was spent, and takes one that is", () => {
    const meter = new BudgetMeter({ cents: 50, tokens: 10 });
    meter.add(spend({ cost: 0.5, input: 10 }));
    assert.match(meter.refuseRaise({ usd: 0.5 }) ?? "", /USD limit \$0\.50 is not above .*\$0\.50/);
    assert.match(meter.refuseRaise({ usd: 1 }) ?? "", /token limit 10 is not above/);
    assert.equal(meter.refuseRaise({ usd: 1, tokens: 11 }), null);
    meter.set({ usd: 1, tokens: 11 });
    assert.equal(meter.reached(), null);
    assert.deepEqual(meter.state(), {
      spent: { usd: 0.5, tokens: 10 },
      limit: { usd: 1, tokens: 11 },
    });
  });

  it("reads dollars as whole cents and refuses what is not, with words", () => {
    assert.deepEqual(parseUsdText("2.50"), { ok: true, cents: 250 });
    assert.deepEqual(parseUsdText("$5"), { ok: true, cents: 500 });
    assert.deepEqual(parseUsdText("0.29"), { ok: true, cents: 29 });
    for (const bad of ["0", "-1", "1.005", "abc", "1e3", "", "1,50", "99999999"]) {
      const r = parseUsdText(bad);
      assert.equal(r.ok, false, bad);
      if (!r.ok) assert.match(r.message, /whole cents, e\.g\. 5 or 2\.50/);
    }
    assert.deepEqual(parseTokensText("200000"), { ok: true, tokens: 200_000 });
    for (const bad of ["0", "2e5", "1.5", "-3", "200_000"]) {
      assert.equal(parseTokensText(bad).ok, false, bad);
    }
    assert.equal(centsOf(0.29), 29);
    assert.equal(centsOf(0.1 + 0.2), null);
  });

  it("refuses budget limits on the wire that are not whole cents or counts", () => {
    assert.deepEqual(parseBudgetLimits({ usd: 2.5 }), { usd: 2.5 });
    assert.deepEqual(parseBudgetLimits({ tokens: 5 }), { tokens: 5 });
    assert.match(String(parseBudgetLimits({ usd: 0.1 + 0.2 })), /whole cents/);
    assert.match(String(parseBudgetLimits({ usd: 0 })), /above 0/);
    assert.match(String(parseBudgetLimits({ usd: "5" })), /number of dollars/);
    assert.match(String(parseBudgetLimits({ tokens: 1.5 })), /whole number/);
    assert.match(String(parseBudgetLimits({})), /name usd, tokens or both/);
  });
});
