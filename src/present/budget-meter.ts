// A controller's budget meter as people read it, the same in `conversation attach`'s status line
// and the Console's live panel: what was spent of each limit, and whether it is reached. Spent
// dollars are shown to the cent rounded up, so a reached budget never reads as under its limit.
import { formatCount } from "./usage-report.ts";

/** The figures a controller's state carries (protocol.ts BudgetState). */
export type BudgetFigures = {
  spent: { usd: number; tokens: number };
  limit: { usd: number | null; tokens: number | null };
};

/** Dollars to the cent, rounded up: "$0.05" for $0.041; "$0" for nothing. */
export function usdUpText(usd: number): string {
  if (!(usd > 0)) return "$0";
  // Through whole nano-dollars first: 0.29 * 100 is 28.999999999999996, and must stay 29.
  const cents = Math.ceil(Math.round(usd * 1e9) / 1e7);
  return `$${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
}

/** Whether a limit is reached: spent at or past it. */
export function budgetReached(b: BudgetFigures): boolean {
  const usd =
    b.limit.usd !== null && Math.round(b.spent.usd * 1e9) >= Math.round(b.limit.usd * 1e9);
  const tokens = b.limit.tokens !== null && b.spent.tokens >= b.limit.tokens;
  return usd || tokens;
}

/** The largest share of a limit spent, 0 to 1 (for a bar); 0 when no limit is set. */
export function budgetShare(b: BudgetFigures): number {
  const shares = [
    b.limit.usd === null ? 0 : b.spent.usd / b.limit.usd,
    b.limit.tokens === null ? 0 : b.spent.tokens / b.limit.tokens,
  ];
  return Math.min(1, Math.max(0, ...shares));
}

/** "budget $0.05 of $0.04, 11,150 of 20,000 tokens (reached)". */
export function budgetMeterText(b: BudgetFigures): string {
  const parts: string[] = [];
  if (b.limit.usd !== null) parts.push(`${usdUpText(b.spent.usd)} of ${usdUpText(b.limit.usd)}`);
  if (b.limit.tokens !== null) {
    parts.push(`${formatCount(b.spent.tokens)} of ${formatCount(b.limit.tokens)} tokens`);
  }
  if (parts.length === 0)
    parts.push(`${usdUpText(b.spent.usd)}, ${formatCount(b.spent.tokens)} tokens`);
  return `budget ${parts.join(", ")}${budgetReached(b) ? " (reached)" : ""}`;
}
