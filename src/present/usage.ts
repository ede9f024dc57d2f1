// Usage and cost as people read them, and the model that answered: per reply and summed for a
// branch. The Console and the exports show the same words.
import type { Usage } from "../protocol/chat-01.ts";

/** A branch's usage so far: the sum of `messages` replies' usage records. */
export type UsageTotal = Usage & { messages: number };

/** `1234` → "1.2k", `1234567` → "1.2M". */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** USD with enough digits to tell small costs apart: "$0.0042", "$1.23". */
export function formatCost(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return "";
  if (usd === 0) return "$0";
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** "in 1.2k · out 340 · cache 5.1k read / 200 write · $0.0042" for one usage record. */
export function usageText(usage: Usage | undefined): string {
  if (!usage) return "";
  const parts = [`in ${formatTokens(usage.input)}`, `out ${formatTokens(usage.output)}`];
  if (usage.cacheRead > 0 || usage.cacheWrite > 0) {
    parts.push(
      `cache ${formatTokens(usage.cacheRead)} read / ${formatTokens(usage.cacheWrite)} write`,
    );
  }
  const cost = formatCost(usage.cost);
  if (cost) parts.push(cost);
  return parts.join(" · ");
}

/** Sums usage records; cost is null only when no record had one. */
export function addUsage(total: UsageTotal | null, usage: Usage | undefined): UsageTotal {
  const sum = total ?? {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    cost: null,
    messages: 0,
  };
  if (!usage) return sum;
  return {
    input: sum.input + usage.input,
    output: sum.output + usage.output,
    cacheRead: sum.cacheRead + usage.cacheRead,
    cacheWrite: sum.cacheWrite + usage.cacheWrite,
    cost: usage.cost === null ? sum.cost : (sum.cost ?? 0) + usage.cost,
    messages: sum.messages + 1,
  };
}

/** "claude-sonnet-4 · anthropic" or whichever of the two is known. */
export function modelText(meta: { model?: string; provider?: string } | undefined): string {
  if (!meta) return "";
  return [meta.model, meta.provider].filter((s) => typeof s === "string" && s !== "").join(" · ");
}
