// Totals of the spends counted once (usage/index.ts), grouped by day, month, project, model or
// conversation. A day is the calendar day of the spend's timestamp in one time zone (the local
// one unless named), as ccusage counts it; --since and --until are days in that zone, both
// included.
import type { Harness, Spend } from "./lines.ts";
import { PRICES_SOURCE } from "./prices.ts";

export const GROUP_BYS = ["day", "month", "project", "model", "conversation"] as const;
export type GroupBy = (typeof GROUP_BYS)[number];

export function isGroupBy(s: string): s is GroupBy {
  return (GROUP_BYS as readonly string[]).includes(s);
}

/** A spend with the conversation it is counted in (the first file that holds it). */
export type Counted = {
  spend: Spend;
  conversation: string;
  project: string;
  harness: Harness;
  title: string | null;
};

export type Counts = {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** input + output + cacheRead + cacheWrite. */
  total: number;
  /** USD. */
  cost: number;
  /** Requests counted. */
  requests: number;
};

export type Part = Counts & { name: string };

export type UsageRow = Counts & {
  /** The day (YYYY-MM-DD), month (YYYY-MM), project, model or conversation id. */
  key: string;
  /** What the row spent on each model, costliest first. */
  models: Part[];
  /** What the row spent in each project, costliest first (rows of days and months). */
  projects?: Part[];
  /** Rows of conversations. */
  conversation?: { title: string | null; project: string; harness: Harness; lastDay: string };
};

export type UsageQuery = {
  by: GroupBy;
  /** IANA zone; default the local one. */
  timeZone?: string;
  /** YYYY-MM-DD, included. */
  since?: string;
  until?: string;
};

export type UsageReport = {
  by: GroupBy;
  timeZone: string;
  since: string | null;
  until: string | null;
  rows: UsageRow[];
  totals: Counts;
  /** Models with no price whose replies recorded no cost: their cost is counted as 0. */
  unpriced: string[];
  prices: string;
};

export function zero(): Counts {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, cost: 0, requests: 0 };
}

export function add(to: Counts, s: Spend): void {
  to.input += s.input;
  to.output += s.output;
  to.cacheRead += s.cacheRead;
  to.cacheWrite += s.cacheWrite;
  to.total += s.input + s.output + s.cacheRead + s.cacheWrite;
  to.cost += s.cost;
  to.requests++;
}

/** The local zone's name, as Intl resolves it (TZ, else the system's). */
/** A day as YYYY-MM-DD, from YYYY-MM-DD or YYYYMMDD (as ccusage takes it): the CLI's --since/--until and the board's usage route read days by this one rule; null if not a day. */
export function parseDay(s: string): string | null {
  const m = /^(\d{4})-?(\d{2})-?(\d{2})$/.exec(s);
  if (!m) return null;
  const [, y, mo, d] = m;
  const day = `${y}-${mo}-${d}`;
  const t = new Date(`${day}T00:00:00Z`);
  return Number.isFinite(t.getTime()) && t.toISOString().slice(0, 10) === day ? day : null;
}

export function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Whether `zone` is a time zone Intl knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-CA", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Day names (YYYY-MM-DD) of instants in `zone`. Zone offsets are whole quarter hours, so every
 * instant of one quarter hour has the same day: one Intl call per quarter hour seen, not per
 * spend (Intl costs microseconds, and a store has hundreds of thousands of spends).
 */
export function dayNamer(zone: string): (ms: number) => string {
  const format = new Intl.DateTimeFormat("en-CA", {
    timeZone: zone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  });
  const seen = new Map<number, string>();
  return (ms) => {
    const q = Math.floor(ms / 900_000);
    let day = seen.get(q);
    if (day === undefined) {
      day = format.format(new Date(ms));
      seen.set(q, day);
    }
    return day;
  };
}

function part(map: Map<string, Part>, name: string, s: Spend): void {
  let p = map.get(name);
  if (!p) {
    p = { name, ...zero() };
    map.set(name, p);
  }
  add(p, s);
}

function costliest(map: Map<string, Part>): Part[] {
  return [...map.values()].sort((a, b) => b.cost - a.cost || b.total - a.total);
}

type Acc = {
  counts: Counts;
  models: Map<string, Part>;
  projects: Map<string, Part>;
  first: Counted;
  lastDay: string;
};

export function report(counted: readonly Counted[], q: UsageQuery): UsageReport {
  const timeZone = q.timeZone ?? localZone();
  const dayOf = dayNamer(timeZone);
  const groups = new Map<string, Acc>();
  const totals = zero();
  const unpriced = new Set<string>();
  for (const c of counted) {
    const day = dayOf(c.spend.ms);
    if (q.since !== undefined && day < q.since) continue;
    if (q.until !== undefined && day > q.until) continue;
    const key =
      q.by === "day"
        ? day
        : q.by === "month"
          ? day.slice(0, 7)
          : q.by === "project"
            ? c.project
            : q.by === "model"
              ? c.spend.model
              : c.conversation;
    let acc = groups.get(key);
    if (!acc) {
      acc = { counts: zero(), models: new Map(), projects: new Map(), first: c, lastDay: day };
      groups.set(key, acc);
    }
    add(acc.counts, c.spend);
    part(acc.models, c.spend.model, c.spend);
    part(acc.projects, c.project, c.spend);
    if (day > acc.lastDay) acc.lastDay = day;
    add(totals, c.spend);
    if (c.spend.unpriced) unpriced.add(c.spend.model);
  }
  const rows: UsageRow[] = [];
  for (const [key, acc] of groups) {
    const row: UsageRow = { key, ...acc.counts, models: costliest(acc.models) };
    if (q.by === "day" || q.by === "month") row.projects = costliest(acc.projects);
    if (q.by === "conversation") {
      const { title, project, harness } = acc.first;
      row.conversation = { title, project, harness, lastDay: acc.lastDay };
    }
    rows.push(row);
  }
  if (q.by === "day" || q.by === "month") rows.sort((a, b) => (a.key < b.key ? -1 : 1));
  else rows.sort((a, b) => b.cost - a.cost || b.total - a.total || (a.key < b.key ? -1 : 1));
  return {
    by: q.by,
    timeZone,
    since: q.since ?? null,
    until: q.until ?? null,
    rows,
    totals,
    unpriced: [...unpriced].sort(),
    prices: PRICES_SOURCE,
  };
}
