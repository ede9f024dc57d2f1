// `conversation usage`'s options and help. args.ts parses the command line with these options
// beside the source flags and hands the values here.
import { GROUP_BYS, type GroupBy, isGroupBy, isTimeZone, parseDay } from "../usage/index.ts";
import type { SourceFlags } from "./config.ts";

export type UsageCommand = {
  name: "usage";
  sources: SourceFlags;
  by: GroupBy;
  since?: string;
  until?: string;
  /** An IANA zone; absent: the local zone. */
  timeZone?: string;
  json: boolean;
};

export const USAGE_OPTIONS = {
  since: { type: "string" },
  until: { type: "string" },
  by: { type: "string" },
  timezone: { type: "string" },
  utc: { type: "boolean" },
  json: { type: "boolean" },
} as const;

export function usageHelp(sourcesHelp: string): string {
  return `Usage: conversation usage [SOURCES] [--since DAY] [--until DAY]
                          [--by day|month|project|model|conversation]
                          [--timezone ZONE | --utc] [--json]

What the agents spent, over every Pi and Claude Code conversation in the
sources: input, output, cache-read and cache-write tokens and the cost in USD,
per group and in total. Each request is counted once: a branch, a fork's
copy of its parent's history and the lines Claude Code writes for each block
of one reply are one request. Pi's replies cost what Pi recorded; Claude
Code's are priced from a table pinned in the package (docs/usage.md); a
model with no price is named, and counted as $0.
  conversation usage --by model --since 2026-11-01
A source root that is refused is named on stderr and the exit status is 1,
as for catalogue; the other roots' usage is still counted.

  --by GROUP         day (default), month, project, model or conversation
                     (the costliest first, each with the line that reads it)
  --since DAY        count from this day on (YYYY-MM-DD or YYYYMMDD)
  --until DAY        count up to this day, included
  --timezone ZONE    the days of this IANA zone (default: the local zone)
  --utc              the days of UTC (as --timezone UTC)
  --json             one JSON document: { by, timeZone, since, until, rows,
                     totals, unpriced, prices }; each row { key, input,
                     output, cacheRead, cacheWrite, total, cost, requests,
                     models: [...] }

${sourcesHelp}

The index is kept in $XDG_CACHE_HOME/mosaic-conversation (else
~/.cache/mosaic-conversation), never in a source, as search's.

  -h, --help         this help
`;
}

type Values = {
  since?: string;
  until?: string;
  by?: string;
  timezone?: string;
  utc?: boolean;
  json?: boolean;
};

export function parseUsage(
  values: Values,
  positionals: string[],
  sources: SourceFlags,
): { ok: true; command: UsageCommand } | { ok: false; error: string } {
  if (positionals.length > 0) {
    return { ok: false, error: `unexpected argument ${JSON.stringify(positionals[0])}` };
  }
  const by = values.by ?? "day";
  if (!isGroupBy(by)) return { ok: false, error: `--by must be one of ${GROUP_BYS.join(", ")}` };
  const command: UsageCommand = { name: "usage", sources, by, json: values.json ?? false };
  for (const flag of ["since", "until"] as const) {
    const given = values[flag];
    if (given === undefined) continue;
    const day = parseDay(given);
    if (day === null) {
      return {
        ok: false,
        error: `--${flag} ${JSON.stringify(given)} is not a day: write YYYY-MM-DD (or YYYYMMDD)`,
      };
    }
    command[flag] = day;
  }
  if (command.since && command.until && command.since > command.until) {
    return { ok: false, error: `--since ${command.since} is after --until ${command.until}` };
  }
  if (values.utc && values.timezone !== undefined) {
    return { ok: false, error: "give --timezone ZONE or --utc, not both" };
  }
  if (values.utc) command.timeZone = "UTC";
  if (values.timezone !== undefined) {
    if (!isTimeZone(values.timezone)) {
      return {
        ok: false,
        error: `--timezone ${JSON.stringify(values.timezone)} is not a time zone: name one such as Europe/Paris or UTC`,
      };
    }
    command.timeZone = values.timezone;
  }
  return { ok: true, command };
}
