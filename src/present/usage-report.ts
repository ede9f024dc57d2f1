// The usage report's figures as people read them, the same in the terminal and the Console:
// whole token counts with thousands separators (a report agrees with ccusage to the token) and
// costs in dollars and cents (to the cent), a cost under a cent shown as "<$0.01", never $0.00.

/** `1234567` → "1,234,567". */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** USD to the cent: "$12.34"; "$0" for nothing; "<$0.01" for a cost under half a cent. */
export function formatUsd(usd: number): string {
  if (usd === 0) return "$0";
  if (usd < 0.005) return "<$0.01";
  return `$${usd.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/** The column heads of a usage table, in order, after the group's own column. */
export const USAGE_COLUMNS = [
  "Input",
  "Output",
  "Cache write",
  "Cache read",
  "Total tokens",
  "Cost (USD)",
] as const;

/** What each group of a report is called, for a table's first column. */
export const GROUP_HEADS: Readonly<Record<string, string>> = {
  day: "Day",
  month: "Month",
  project: "Project",
  model: "Model",
  conversation: "Conversation",
};
