// Runs the peers this package's usage agrees with, offline, on a store: ccusage (Claude Code)
// and @ccusage/pi (Pi), both dev dependencies pinned exactly (18.0.11), and turns their daily
// JSON into the same shape as ours: per day, the four token counts and the cost per model.
// (@ccusage/pi 18.0.11 spells its folder flag `--piPath`: its README's `--pi-path` is not read.)
// Also runs ours (src/usage) on the same store, so a test compares like with like.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import type { BoardSpec } from "../../src/reader/sources.ts";
import { openUsage, type UsageReport } from "../../src/usage/index.ts";

const REPO = resolve(import.meta.dirname, "../..");
const CCUSAGE = join(REPO, "node_modules/ccusage/dist/index.js");
const CCUSAGE_PI = join(REPO, "node_modules/@ccusage/pi/dist/index.js");

export type Figures = {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
};
/** day → model → figures. */
export type ByDay = Map<string, Map<string, Figures>>;

type PeerBreakdown = {
  modelName: string;
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  cost: number;
};
type PeerDay = { date: string; modelBreakdowns: PeerBreakdown[] };

function isPeerDays(v: unknown): v is { daily: PeerDay[] } {
  return (
    typeof v === "object" &&
    v !== null &&
    Array.isArray((v as { daily?: unknown }).daily) &&
    (v as { daily: unknown[] }).daily.every(
      (d) =>
        typeof d === "object" &&
        d !== null &&
        typeof (d as PeerDay).date === "string" &&
        Array.isArray((d as PeerDay).modelBreakdowns),
    )
  );
}

function run(script: string, args: string[], env: Record<string, string>): { daily: PeerDay[] } {
  const home = mkdtempSync(join(tmpdir(), "peer-home-"));
  try {
    const out = execFileSync(process.execPath, [script, ...args], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LOG_LEVEL: "0", ...env },
      encoding: "utf8",
      timeout: 60_000,
    });
    const v: unknown = JSON.parse(out);
    if (!isPeerDays(v)) throw new Error(`not a daily report: ${out.slice(0, 500)}`);
    return v;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function peerDays(report: { daily: PeerDay[] }, strip = ""): ByDay {
  const out: ByDay = new Map();
  for (const d of report.daily) {
    const models = new Map<string, Figures>();
    for (const b of d.modelBreakdowns) {
      const name = b.modelName.startsWith(strip) ? b.modelName.slice(strip.length) : b.modelName;
      models.set(name, {
        input: b.inputTokens,
        output: b.outputTokens,
        cacheRead: b.cacheReadTokens,
        cacheWrite: b.cacheCreationTokens,
        cost: b.cost,
      });
    }
    out.set(d.date, models);
  }
  return out;
}

/** ccusage's daily report of the Claude Code config folder `configDir` (holding projects/). */
export function ccusageDaily(configDir: string, timeZone: string): ByDay {
  const r = run(CCUSAGE, ["daily", "--json", "--offline", "--timezone", timeZone], {
    CLAUDE_CONFIG_DIR: configDir,
    TZ: timeZone,
  });
  return peerDays(r);
}

/** @ccusage/pi's daily report of Pi's sessions folder; its "[pi] " model prefix dropped. */
export function ccusagePiDaily(sessionsDir: string, timeZone: string): ByDay {
  const r = run(CCUSAGE_PI, ["daily", "--json", "--piPath", sessionsDir, "--timezone", timeZone], {
    TZ: timeZone,
  });
  return peerDays(r, "[pi] ");
}

/** Our report of `specs` by day, with a fresh cache dir. */
export function oursReport(
  specs: BoardSpec[],
  timeZone: string,
  by: UsageReport["by"] = "day",
): UsageReport {
  const cache = mkdtempSync(join(tmpdir(), "usage-cache-"));
  try {
    const roots = () => rootsFromSpecs(specs, []);
    const reader = createReader({ roots });
    const opened = openUsage({ roots, catalogue: () => reader.catalogue(), cacheDir: cache });
    if (!opened.ok) throw new Error(opened.reason);
    try {
      return opened.usage.report({ by, timeZone });
    } finally {
      opened.usage.close();
    }
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

export function oursDaily(specs: BoardSpec[], timeZone: string): ByDay {
  const out: ByDay = new Map();
  for (const row of oursReport(specs, timeZone).rows) {
    const models = new Map<string, Figures>();
    for (const m of row.models) {
      models.set(m.name, {
        input: m.input,
        output: m.output,
        cacheRead: m.cacheRead,
        cacheWrite: m.cacheWrite,
        cost: m.cost,
      });
    }
    out.set(row.key, models);
  }
  return out;
}

/** Costs to the cent, tokens as they are: what "agree" means (docs/usage.md). */
export function toCents(days: ByDay): Record<string, Record<string, Figures>> {
  const out: Record<string, Record<string, Figures>> = {};
  for (const [day, models] of [...days].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const row: Record<string, Figures> = {};
    for (const [model, f] of [...models].sort(([a], [b]) => (a < b ? -1 : 1))) {
      row[model] = { ...f, cost: Math.round(f.cost * 100) / 100 };
    }
    out[day] = row;
  }
  return out;
}
