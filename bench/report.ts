// Plain-text tables for the benchmark's console report.
import type { Series } from "./stats.ts";

/** A table with a header row and a rule; columns after the first are right-aligned. */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(head), rule, ...rows.map(line)].join("\n");
}

export function ms(v: number): string {
  if (!Number.isFinite(v)) return "-";
  if (v < 1) return v.toFixed(3);
  if (v < 10) return v.toFixed(2);
  if (v < 100) return v.toFixed(1);
  return Math.round(v).toLocaleString("en-US");
}

export function spread(s: Series): string {
  return s.n === 0 ? "-" : `${ms(s.min)}–${ms(s.max)}`;
}

export function ratio(a: number, b: number): string {
  if (!(b > 0) || !Number.isFinite(a)) return "-";
  const r = a / b;
  return `${r < 10 ? r.toFixed(2) : r < 100 ? r.toFixed(1) : Math.round(r).toLocaleString("en-US")}×`;
}

export function int(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function mib(bytes: number, digits = 1): string {
  return (bytes / (1024 * 1024)).toFixed(digits);
}
