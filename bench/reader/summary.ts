// The reader bench's printed report: the machine, then one table per measurement, as ratios
// against the baselines of the same run.
import { cpus, loadavg, arch as osArch, platform, release, totalmem } from "node:os";
import { int, mib, ms, ratio, spread, table } from "../report.ts";
import type { CatalogueResult } from "./catalogue.ts";
import type { ClaudeSizeResult } from "./claude-traversal.ts";
import type { FollowResult } from "./follow.ts";
import type { MemoryResult } from "./memory.ts";
import type { SizeResult } from "./traversal.ts";

export function machine(): Record<string, string | number> {
  const cpu = cpus();
  return {
    loadAvg1m: Number(loadavg()[0]?.toFixed(2)),
    cpu: cpu[0]?.model ?? "unknown",
    cores: cpu.length,
    totalMemGiB: Number((totalmem() / 1024 ** 3).toFixed(1)),
    node: process.version,
    os: `${platform()} ${release()} ${osArch()}`,
  };
}

function sizeLabel(m: number): string {
  return `${m} MiB`;
}

export function report(r: {
  startedAt: string;
  command: string;
  machine: Record<string, string | number>;
  sizes: SizeResult[];
  claude: ClaudeSizeResult[];
  follow: FollowResult | null;
  memory: MemoryResult[];
  memoryMib: number | null;
  catalogue: CatalogueResult;
  catalogueStore: CatalogueResult;
  budgetS: number;
  totalMs: number;
  loadAtEnd: number;
}): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(`@mosaic/conversation reader benchmark, ${r.startedAt}`);
  out.push(`command: ${r.command}`);
  out.push(`machine: ${m.cpu}, ${m.cores} cores, ${m.totalMemGiB} GiB, node ${m.node}, ${m.os}`);
  out.push(
    `load average (1 min): ${m.loadAvg1m} at start, ${r.loadAtEnd.toFixed(2)} at the end` +
      (Math.max(Number(m.loadAvg1m), r.loadAtEnd) > Number(m.cores)
        ? " (other work was running: expect noise)"
        : ""),
  );
  out.push("");
  out.push("Traversal: medians in ms (reader = open + every page of every branch + a follow each)");
  out.push(
    "live = a cold traversal of the session just written again (inside the racy window, as every " +
      "session someone is watching), default settings; settled = cold, racyWindowMs 0 (a file quiet " +
      "for longer than the racy window); warm = settled again on the same reader; bytes-check = " +
      'cold with createReader({ prefixCheck: "bytes" }), the seed\'s method: every call verifies ' +
      "the whole pinned prefix",
  );
  if (r.sizes.some((s) => !s.liveRacy)) {
    out.push("(this host does not treat the live file as racy: live is the settled path here)");
  }
  out.push(
    table(
      [
        "size",
        "bytes",
        "runs",
        "floor",
        "pi",
        "live",
        "settled",
        "warm",
        "bytes-check",
        "live/floor",
        "live/pi",
        "settled/floor",
        "settled/pi",
        "warm/floor",
        "bytes/floor",
        "pages",
        "page p50",
      ],
      r.sizes.map((s) => [
        sizeLabel(s.mib),
        int(s.bytes),
        s.runsDone === s.runsWanted ? String(s.runsDone) : `${s.runsDone}/${s.runsWanted}`,
        ms(s.floor.median),
        ms(s.pi.median),
        ms(s.readerLive.median),
        ms(s.readerCold.median),
        ms(s.readerWarm.median),
        ms(s.readerBytes.median),
        ratio(s.readerLive.median, s.floor.median),
        ratio(s.readerLive.median, s.pi.median),
        ratio(s.readerCold.median, s.floor.median),
        ratio(s.readerCold.median, s.pi.median),
        ratio(s.readerWarm.median, s.floor.median),
        ratio(s.readerBytes.median, s.floor.median),
        int(s.pages),
        ms(s.pageLive.median),
      ]),
    ),
  );
  out.push("(page p50 = the median live `next` page)");
  out.push("");
  out.push(
    "Side by side, the same traversal of Pi's session and of Claude Code's (a session of the same size in Claude Code 2.1.328's shape, bench/claude-sessions.ts), each against the one-pass floor over its own file:",
  );
  out.push(
    table(
      [
        "size",
        "Pi live/floor",
        "Pi settled/floor",
        "Pi open (Pi's own)/floor",
        "Claude runs",
        "Claude floor",
        "Claude live",
        "Claude settled",
        "Claude live/floor",
        "Claude settled/floor",
      ],
      r.sizes.map((s) => {
        const c = r.claude.find((x) => x.mib === s.mib);
        return [
          sizeLabel(s.mib),
          ratio(s.readerLive.median, s.floor.median),
          ratio(s.readerCold.median, s.floor.median),
          ratio(s.pi.median, s.floor.median),
          c ? String(c.floor.n) : "-",
          c ? ms(c.floor.median) : "-",
          c ? ms(c.live.median) : "-",
          c ? ms(c.settled.median) : "-",
          c ? ratio(c.live.median, c.floor.median) : "-",
          c ? ratio(c.settled.median, c.floor.median) : "-",
        ];
      }),
    ),
  );
  out.push("");
  out.push(
    "Spread: min–max ms; open = each open on a cold settled reader; page = each `next` page",
  );
  out.push(
    table(
      [
        "size",
        "floor",
        "pi",
        "live",
        "settled",
        "warm",
        "bytes-check (runs)",
        "open (settled)",
        "page (live)",
        "page (warm)",
        "branches",
        "parts",
        "lines",
        "pi entries",
      ],
      r.sizes.map((s) => [
        sizeLabel(s.mib),
        spread(s.floor),
        spread(s.pi),
        spread(s.readerLive),
        spread(s.readerCold),
        spread(s.readerWarm),
        s.readerBytes.n === 0 ? "-" : `${spread(s.readerBytes)} (${s.readerBytes.n})`,
        spread(s.openCold),
        spread(s.pageLive),
        spread(s.pageWarm),
        String(s.branches),
        int(s.parts),
        int(s.lines),
        int(s.piEntries),
      ]),
    ),
  );
  if (r.sizes.some((s) => s.runsDone < s.runsWanted)) {
    out.push(
      `(runs a/b: the size's time budget of ${r.budgetS} s stopped it after a runs; --budget 0 lifts it)`,
    );
  }
  if (r.follow) {
    const f = r.follow;
    out.push("");
    out.push("Follow after a one-line append (reader paged to the end of the default branch), ms");
    out.push(
      table(
        [
          "size",
          "bytes",
          "samples",
          "follow",
          "follow min–max",
          "bare check",
          "bare min–max",
          "follow/bare",
        ],
        [
          [
            sizeLabel(f.mib),
            int(f.bytesBefore),
            String(f.samples),
            ms(f.follow.median),
            spread(f.follow),
            ms(f.bare.median),
            spread(f.bare),
            ratio(f.follow.median, f.bare.median),
          ],
        ],
      ),
    );
    out.push("(bare check = read the pinned prefix and SHA-256 it)");
  }
  if (r.memory.length > 0) {
    out.push("");
    out.push(`Peak memory, ${r.memoryMib} MiB file, each in a child process (RSS, MiB)`);
    out.push(
      table(
        [
          "work",
          "file",
          "baseline",
          "peak",
          "above baseline",
          "above/file",
          "all children",
          "heap*",
          "buffers*",
          "young gen",
          "less young",
          "less young/file",
          "held",
          "held/file",
          "ms",
        ],
        r.memory.map((x) => [
          x.mode === "live" || x.mode === "settled"
            ? `${x.mode} traversal`
            : x.mode === "pi"
              ? "pi open"
              : "floor",
          mib(x.fileBytes),
          mib(x.baselineRss),
          `${mib(x.peakRss)}${x.peakDuringWork ? "" : " (start-up)"}`,
          mib(x.aboveBaseline),
          ratio(x.aboveBaseline, x.fileBytes),
          (x.aboveAll ?? [x.aboveBaseline]).map((v) => mib(v)).join(" "),
          mib(x.sampledPeakHeap),
          mib(x.sampledPeakBuffers),
          mib(x.youngGrowth),
          mib(x.aboveBaseline - x.youngGrowth),
          ratio(x.aboveBaseline - x.youngGrowth, x.fileBytes),
          x.heldPeak === null ? "-" : mib(x.heldPeak),
          x.heldPeak === null ? "-" : ratio(x.heldPeak, x.fileBytes),
          ms(x.ms),
        ]),
      ),
    );
    out.push(
      "(peak = the child's RSS high-water mark (VmHWM) during the work, start-up's reset first; heap*, buffers* = largest heapUsed and arrayBuffers sampled " +
        "after each reader call and after the work; young gen = how far V8's young generation (new space, physical) grew above the baseline's, " +
        "memory the runtime keeps for short-lived garbage (two semi-spaces, grown while scavenges see survivors, up to V8's limit); less young = above baseline " +
        "less that; held = the largest live memory (heapUsed + arrayBuffers after a full collection) above the baseline's after any reader call, " +
        "in one more child: what the traversal holds between calls)",
    );
  }
  out.push("");
  out.push(`Catalogue: ${int(r.catalogue.files)} files, medians in ms`);
  const where = (c: CatalogueResult) =>
    c.layout === "repository"
      ? `${c.roots} repository roots (${c.cold.n} runs)`
      : `Pi's store, ${c.roots} dirs (${c.cold.n} runs)`;
  out.push(
    table(
      [
        "",
        "cold",
        "warm",
        "lstat+readdir",
        "cold/lstat",
        "warm/lstat",
        "cold min–max",
        "warm min–max",
        "lstat min–max",
      ],
      [r.catalogue, r.catalogueStore].map((c) => [
        where(c),
        ms(c.cold.median),
        ms(c.warm.median),
        ms(c.lstat.median),
        ratio(c.cold.median, c.lstat.median),
        ratio(c.warm.median, c.lstat.median),
        spread(c.cold),
        spread(c.warm),
        spread(c.lstat),
      ]),
    ),
  );
  out.push("");
  out.push(`total ${(r.totalMs / 1000).toFixed(1)} s`);
  return out.join("\n");
}
