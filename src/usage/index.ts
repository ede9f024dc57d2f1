// Usage: what the agents spent, over every approved Pi and Claude Code conversation, each
// request counted once (docs/usage.md). The files the catalogue lists and can read are caught
// up in a usage index in our cache directory (catch-up.ts), then the spends of all of them are
// read back, a spend seen in an earlier file (a fork's copy, the repeated lines of one Claude
// reply) dropped, and totals made (report.ts). The oldest file holding a spend (by its first
// spend, then by path) is the conversation it is counted in: a fork's copied history stays the
// parent's.
import { join } from "node:path";
import type { Catalogue, CatalogueRow } from "../protocol/chat-01.ts";
import { listedSessions, listRoot } from "../reader/catalogue.ts";
import { listAgentFiles } from "../reader/harness/claude-code/store.ts";
import { isRefusal } from "../reader/refusal.ts";
import { type ClaudeRoot, conversationIdOf, type Root } from "../reader/sources.ts";
import { prepareCacheDir } from "../search/cache-dir.ts";
import { type CatchUp, catchUpFile, harnessOfRoot } from "./catch-up.ts";
import { type Harness, keepLargest, type Spend } from "./lines.ts";
import { type Counted, report, type UsageQuery, type UsageReport } from "./report.ts";
import { openUsageStore, type UsageStore } from "./store.ts";

export type { Counted, Counts, Part, UsageQuery, UsageReport, UsageRow } from "./report.ts";
export { GROUP_BYS, type GroupBy, isGroupBy, isTimeZone, localZone, parseDay } from "./report.ts";

export const USAGE_FILE = "usage.sqlite";

export type UsageOptions = {
  roots: () => Root[];
  /** The reader's catalogue: only its readable rows are counted, with their titles. */
  catalogue: () => Catalogue;
  /** Default: the search index's cache directory (XDG cache). */
  cacheDir: string;
};

export type RefreshStats = Record<CatchUp, number>;

export type Usage = {
  /** Catches the index up and returns every spend counted once. */
  counted(): { counted: Counted[]; stats: RefreshStats };
  report(q: UsageQuery): UsageReport;
  close(): void;
};

/** What a spend is counted under: a catalogue row (a subagent's spend: its session's row). */
type RowOf = Pick<CatalogueRow, "conversation" | "project" | "title">;

type Seen = { id: number; path: string; row: RowOf; harness: Harness };

export function openUsage(
  options: UsageOptions,
): { ok: true; usage: Usage } | { ok: false; reason: string } {
  const prepared = prepareCacheDir(options.cacheDir, options.roots());
  if (!prepared.ok) return prepared;
  let store: UsageStore;
  try {
    store = openUsageStore(join(prepared.dir, USAGE_FILE));
  } catch (e) {
    return { ok: false, reason: `The usage index cannot be opened: ${(e as Error).message}` };
  }
  const counted = () => countOnce(store, options);
  return {
    ok: true,
    usage: {
      counted,
      report: (q) => report(counted().counted, q),
      close: () => store.close(),
    },
  };
}

function countOnce(
  store: UsageStore,
  options: UsageOptions,
): { counted: Counted[]; stats: RefreshStats } {
  const rows = new Map<string, CatalogueRow>();
  for (const r of options.catalogue().conversations) rows.set(r.conversation, r);
  const stats: RefreshStats = { unchanged: 0, appended: 0, indexed: 0, refused: 0 };
  const seen: Seen[] = [];
  const paths = new Set<string>();
  const claude = new Map<string, { root: ClaudeRoot; row: RowOf }>();
  store.transaction(() => {
    // A refused root: the catalogue names it; nothing of it is counted.
    for (const { root, name, path } of listedSessions(options.roots())) {
      const row = rows.get(conversationIdOf(root, name));
      // Only what the reader would open: a refused or unlisted file spends nothing here.
      if (!row || row.unsupportedReason !== null) continue;
      // One folder approved two ways (a store and a seat) is one file: counted once.
      if (paths.has(path)) continue;
      const { did, id } = catchUpFile(store, root, name);
      stats[did]++;
      if (id === null) continue;
      paths.add(path);
      seen.push({ id, path, row, harness: harnessOfRoot(root) });
      if (root.kind === "claude") claude.set(root.sessionsDir, { root, row });
    }
    // A Claude session's subagents paid for their own requests (their transcripts, which the
    // reader opens from the Agent call, are no catalogue rows): each counted under the session it
    // ran under (2.1's `<session>/subagents/`), or (2.0's `agent-<id>.jsonl` beside the sessions,
    // which no file name ties to one) under its own conversation id in its folder's project.
    for (const { root, row: some } of claude.values()) {
      let names: string[];
      try {
        names = listRoot(root, true).names;
      } catch (e) {
        if (!isRefusal(e)) throw e;
        continue;
      }
      for (const agent of listAgentFiles(root, names)) {
        const path = join(agent.root.sessionsDir, agent.name);
        if (paths.has(path)) continue;
        const under = agent.root.agentsOf;
        const row: RowOf | undefined =
          under === undefined
            ? {
                conversation: conversationIdOf(agent.root, agent.name),
                project: some.project,
                title: null,
              }
            : rows.get(conversationIdOf(root, under));
        if (!row) continue;
        const { did, id } = catchUpFile(store, agent.root, agent.name);
        stats[did]++;
        if (id === null) continue;
        paths.add(path);
        seen.push({ id, path, row, harness: "claude-code" });
      }
    }
  });
  const byFile = new Map<number, Spend[]>();
  for (const { file, spend } of store.spendsOf()) {
    let list = byFile.get(file);
    if (!list) {
      list = [];
      byFile.set(file, list);
    }
    list.push(spend);
  }
  const firstMs = (s: Seen) => {
    let min = Number.POSITIVE_INFINITY;
    for (const sp of byFile.get(s.id) ?? []) if (sp.ms < min) min = sp.ms;
    return min;
  };
  const order = seen.map((s) => ({ s, first: firstMs(s) }));
  order.sort((a, b) => a.first - b.first || (a.s.path < b.s.path ? -1 : 1));
  const out: Counted[] = [];
  const byKey = new Map<string, Spend>();
  for (const { s } of order) {
    for (const spend of byFile.get(s.id) ?? []) {
      if (spend.key !== null) {
        const had = byKey.get(spend.key);
        if (had) {
          // A later line of the same request (an older Claude Code wrote the output count as
          // it streamed): the largest count of each kind is the request's.
          keepLargest(had, spend);
          continue;
        }
      }
      const own = { ...spend };
      if (own.key !== null) byKey.set(own.key, own);
      out.push({
        spend: own,
        conversation: s.row.conversation,
        project: s.row.project,
        harness: s.harness,
        title: s.row.title,
      });
    }
  }
  return { counted: out, stats };
}
