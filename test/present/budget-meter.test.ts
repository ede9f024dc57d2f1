import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  budgetMeterText,
  budgetReached,
  budgetShare,
  usdUpText,
} from "../../src/present/budget-meter.ts";

describe("budget-meter", () => {
  it("shows each limit with what was spent of it, and says when it is reached", () => {
    const b = { spent: { usd: 0.045, tokens: 11_000 }, limit: { usd: 0.04, tokens: 20_000 } };
    assert.equal(budgetMeterText(b), "budget $0.05 of $0.04, 11,000 of 20,000 tokens (reached)");
    assert.equal(budgetReached(b), true);
    assert.equal(budgetShare(b), 1);
  });

  it("rounds spent dollars up to the cent, so a budget never reads as under when it is not", () => {
    assert.equal(usdUpText(0.041), "$0.05");
    assert.equal(usdUpText(0.29), "$0.29");
    assert.equal(usdUpText(0), "$0");
    assert.equal(usdUpText(12), "$12.00");
    const under = { spent: { usd: 0.022, tokens: 17 }, limit: { usd: 0.03, tokens: null } };
    assert.equal(budgetMeterText(under), "budget $0.03 of $0.03");
    assert.equal(budgetReached(under), false);
    assert.ok(Math.abs(budgetShare(under) - 0.022 / 0.03) < 1e-12);
  });
});
