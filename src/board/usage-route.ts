// GET /api/usage?by=<group>[&since=D][&until=D][&tz=ZONE]: what the agents spent (src/usage),
// as the JSON report `conversation usage --json` prints, read-only. The Console sends its own
// time zone, so the days are the viewer's. Refusals: bad-query 400 (a group, day or zone that
// is not one), usage-unavailable 503 (no cache directory the index may live in).
import {
  GROUP_BYS,
  isGroupBy,
  isTimeZone,
  parseDay,
  type UsageQuery,
  type UsageReport,
} from "../usage/index.ts";
import { boardRefusal, jsonReply, type Reply } from "./reply.ts";

/** What the board needs of usage: one report per request, or why there is none. */
export type BoardUsage = {
  report(q: UsageQuery): { ok: true; report: UsageReport } | { ok: false; reason: string };
};

export function readUsage(
  usage: BoardUsage | undefined,
  params: Partial<Record<string, string>>,
): Reply {
  if (!usage) {
    return boardRefusal(
      "usage-unavailable",
      "This board was started without a usage index; the catalogue and pages still work.",
    );
  }
  const by = params.by ?? "day";
  if (!isGroupBy(by)) return boardRefusal("bad-query", `by= is one of ${GROUP_BYS.join(", ")}.`);
  const q: UsageQuery = { by };
  for (const name of ["since", "until"] as const) {
    const given = params[name];
    if (given === undefined) continue;
    const day = parseDay(given);
    if (day === null) return boardRefusal("bad-query", `${name}= is a day, YYYY-MM-DD.`);
    q[name] = day;
  }
  if (params.tz !== undefined) {
    if (!isTimeZone(params.tz)) {
      return boardRefusal("bad-query", "tz= is an IANA time zone, such as Europe/Paris or UTC.");
    }
    q.timeZone = params.tz;
  }
  const result = usage.report(q);
  if (!result.ok)
    return boardRefusal("usage-unavailable", `Usage is off on this board: ${result.reason}`);
  return jsonReply(200, { ok: true, ...result.report });
}
