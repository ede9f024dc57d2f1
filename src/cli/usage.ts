// `conversation usage [sources] [--since D] [--until D] [--by G] [--json]`: what the agents spent
// (src/usage), as a table per group with a total, or one JSON document. Rows of conversations
// end with the line that reads each one, with the command's own sources.

import { formatCount, formatUsd, GROUP_HEADS, USAGE_COLUMNS } from "../present/usage-report.ts";
import { makeVisible } from "../present/visible.ts";
import type { Catalogue } from "../protocol/chat-01.ts";
import type { Root } from "../reader/sources.ts";
import { defaultCacheDir } from "../search/cache-dir.ts";
import { openUsage, type Usage, type UsageReport, type UsageRow } from "../usage/index.ts";
import { type OpenedIndex, runOverIndex } from "./index-run.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";
import { reportRefusedRoots, sourceArgs } from "./source-hints.ts";
import type { UsageCommand } from "./usage-args.ts";

/**
 * Exit status 0, or 1 when refused (an unusable cache directory) or when a source root was
 * refused (its usage is missing from the totals, which would mislead unsaid).
 */
export function runUsage(
  roots: () => Root[],
  catalogue: () => Catalogue,
  cmd: UsageCommand,
  io: Io,
  implicit = false,
): number {
  const open = (once: () => Catalogue): OpenedIndex<Usage> => {
    const opened = openUsage({ roots, catalogue: once, cacheDir: defaultCacheDir() });
    return opened.ok ? { ok: true, index: opened.usage } : opened;
  };
  return runOverIndex(catalogue, open, "usage-unavailable", io, (usage, once) => {
    const q = {
      by: cmd.by,
      ...(cmd.since === undefined ? {} : { since: cmd.since }),
      ...(cmd.until === undefined ? {} : { until: cmd.until }),
      ...(cmd.timeZone === undefined ? {} : { timeZone: cmd.timeZone }),
    };
    const report = usage.report(q);
    if (cmd.json) io.out(`${JSON.stringify(report)}\n`);
    else io.out(usageText(report, sourceArgs(cmd.sources)));
    return reportRefusedRoots(io, once().refusedRoots, implicit);
  });
}

/** The report as a table: one line per group, then the total, then what was not priced. */
export function usageText(report: UsageReport, sources: readonly string[]): string {
  const span =
    report.since || report.until
      ? ` from ${report.since ?? "the start"} to ${report.until ?? "today"}`
      : "";
  const head = `Usage by ${report.by}${span} (days in ${report.timeZone})\n`;
  if (report.rows.length === 0) return `${head}No usage recorded.\n`;
  const cells = (r: {
    input: number;
    output: number;
    cacheWrite: number;
    cacheRead: number;
    total: number;
    cost: number;
  }) => [
    formatCount(r.input),
    formatCount(r.output),
    formatCount(r.cacheWrite),
    formatCount(r.cacheRead),
    formatCount(r.total),
    formatUsd(r.cost),
  ];
  const lines: string[][] = [[GROUP_HEADS[report.by] ?? report.by, ...USAGE_COLUMNS]];
  for (const row of report.rows) lines.push([rowName(row), ...cells(row)]);
  lines.push(["Total", ...cells(report.totals)]);
  const widths = lines[0]!.map((_, c) => Math.max(...lines.map((l) => (l[c] ?? "").length)));
  const fmt = (l: string[]) =>
    l.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ");
  const out = [head, `${fmt(lines[0]!)}\n`];
  for (const [i, l] of lines.slice(1).entries()) {
    if (i === lines.length - 2) out.push(`${"-".repeat(widths.reduce((a, b) => a + b + 2, -2))}\n`);
    out.push(`${fmt(l)}\n`);
    const row = report.rows[i];
    if (report.by === "conversation" && row) {
      // Never wrapped, as every command line printed: it must run when pasted.
      out.push(`  ${commandLine(["read", row.key, ...sources])}\n`);
    }
  }
  for (const model of report.unpriced) {
    out.push(
      `No price for the model ${makeVisible(model)} in the pinned table: its replies are counted as $0 (docs/usage.md).\n`,
    );
  }
  return out.join("");
}

function rowName(row: UsageRow): string {
  if (row.conversation) {
    const title = row.conversation.title ?? "(untitled)";
    const short = title.length > 48 ? `${title.slice(0, 47)}…` : title;
    return makeVisible(`${short} · ${row.conversation.project}`);
  }
  return makeVisible(row.key);
}
