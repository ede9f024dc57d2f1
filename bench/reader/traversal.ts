// The traversal measurement: per size, in one run, the floor, Pi's SessionManager.open and the
// reader's full traversal (open, every page of every branch, a follow each), cold and warm.
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createReader, type Reader } from "../../src/index.ts";
import { ms } from "../report.ts";
import { gc, type Series, summarize, timed } from "../stats.ts";
import { type Traversal, traverse } from "../traverse.ts";
import { floorPass } from "./baselines.ts";
import { freshen, type PiModule, SESSION_NAME, type Session } from "./session.ts";

const MIN_RUNS = 2;

export type SizeResult = {
  mib: number;
  bytes: number;
  lines: number;
  piEntries: number;
  runsWanted: number;
  runsDone: number;
  floor: Series;
  pi: Series;
  readerCold: Series;
  readerWarm: Series;
  /**
   * A cold traversal of the session just written again (freshen): inside the racy window, as
   * every session someone is watching, with the reader's default settings.
   */
  readerLive: Series;
  /** Whether this host treats the live file as racy at all (else live is the settled path). */
  liveRacy: boolean;
  pageLive: Series;
  /** A cold traversal with `prefixCheck: "bytes"`: every page re-reads and hashes the prefix. */
  readerBytes: Series;
  /** Every page `next` of every run, cold and warm. */
  pageCold: Series;
  pageWarm: Series;
  openCold: Series;
  followInTraversal: Series;
  pages: number;
  follows: number;
  parts: number;
  branches: number;
  defaultBranch: string;
  defaultLeaf: string | null;
};

export function measureSize(
  s: Session,
  Pi: PiModule,
  tmp: string,
  runs: number,
  bytesRuns: number,
  budgetMs: number,
  keepLast: boolean,
): { result: SizeResult; last: { reader: Reader; traversal: Traversal } | null } {
  const floor: number[] = [];
  const pi: number[] = [];
  const cold: number[] = [];
  const warm: number[] = [];
  const bytes: number[] = [];
  const live: number[] = [];
  const pageLive: number[] = [];
  let liveRacy = false;
  const pageCold: number[] = [];
  const pageWarm: number[] = [];
  const openCold: number[] = [];
  const followIn: number[] = [];
  let lines = 0;
  let piEntries = 0;
  let shape: Traversal | null = null;
  let last: { reader: Reader; traversal: Traversal } | null = null;
  const started = performance.now();
  let lastIteration = 0;
  for (let run = 0; run < runs; run++) {
    const elapsed = performance.now() - started;
    if (run >= MIN_RUNS && budgetMs > 0 && elapsed + lastIteration > budgetMs) break;
    const iteration = performance.now();

    gc();
    const f = timed(() => floorPass(s.file));
    floor.push(f.ms);
    lines = f.value.lines;

    const piDir = join(tmp, `pi-${s.cached.mib}mib-${run}`);
    mkdirSync(piDir);
    const copy = join(piDir, SESSION_NAME);
    copyFileSync(s.file, copy);
    gc();
    const p = timed(() => Pi.SessionManager.open(copy, piDir));
    pi.push(p.ms);
    piEntries = p.value.getEntries().length;
    const piLeaf = p.value.getLeafId();
    rmSync(piDir, { recursive: true, force: true });

    gc();
    const c = timed(() => {
      // racyWindowMs 0: as on a file quiet for longer than the racy window (change-time.ts), so
      // the settled path is timed whatever the fixture's age; bytes-check times the racy path.
      const reader = createReader({ roots: s.roots, racyWindowMs: 0 });
      return { reader, traversal: traverse(reader, s.conversation) };
    });
    cold.push(c.ms);
    pageCold.push(...c.value.traversal.pageMs);
    openCold.push(...c.value.traversal.openMs);
    followIn.push(...c.value.traversal.followMs);
    checkTraversal(c.value.traversal, shape, piLeaf);
    shape = c.value.traversal;

    gc();
    const w = timed(() => traverse(c.value.reader, s.conversation));
    warm.push(w.ms);
    pageWarm.push(...w.value.pageMs);
    checkTraversal(w.value, shape, piLeaf);
    last = keepLast ? { reader: c.value.reader, traversal: w.value } : null;

    liveRacy = freshen(s.file);
    gc();
    const l = timed(() => traverse(createReader({ roots: s.roots }), s.conversation));
    live.push(l.ms);
    pageLive.push(...l.value.pageMs);
    checkTraversal(l.value, shape, piLeaf);

    let b: number | undefined;
    if (run < bytesRuns) {
      gc();
      const t = timed(() =>
        traverse(createReader({ roots: s.roots, prefixCheck: "bytes" }), s.conversation),
      );
      b = t.ms;
      bytes.push(t.ms);
      checkTraversal(t.value, shape, piLeaf);
    }

    lastIteration = performance.now() - iteration;
    process.stderr.write(
      `  ${s.cached.mib} MiB run ${run + 1}: floor ${ms(f.ms)} ms, pi ${ms(p.ms)} ms, ` +
        `reader settled cold ${ms(c.ms)} ms, warm ${ms(w.ms)} ms, live ${ms(l.ms)} ms` +
        `${b === undefined ? "" : `, cold with byte checks ${ms(b)} ms`}\n`,
    );
  }
  if (!shape) throw new Error("no run");
  return {
    result: {
      mib: s.cached.mib,
      bytes: s.cached.bytes,
      lines,
      piEntries,
      runsWanted: runs,
      runsDone: cold.length,
      floor: summarize(floor),
      pi: summarize(pi),
      readerCold: summarize(cold),
      readerWarm: summarize(warm),
      readerLive: summarize(live),
      liveRacy,
      pageLive: summarize(pageLive),
      readerBytes: summarize(bytes),
      pageCold: summarize(pageCold),
      pageWarm: summarize(pageWarm),
      openCold: summarize(openCold),
      followInTraversal: summarize(followIn),
      pages: shape.pages,
      follows: shape.follows,
      parts: shape.parts,
      branches: shape.branches,
      defaultBranch: shape.defaultBranch,
      defaultLeaf: shape.defaultLeaf,
    },
    last,
  };
}

/** Every traversal reads the same pages, and the default leaf is Pi's. */
function checkTraversal(t: Traversal, previous: Traversal | null, piLeaf: string | null): void {
  if (t.defaultLeaf !== `n.${piLeaf}`) {
    throw new Error(`default leaf ${t.defaultLeaf} is not Pi's ${piLeaf}`);
  }
  const end = t.end.get(t.defaultBranch);
  if (end?.lastEntry !== t.defaultLeaf) {
    throw new Error(`the default branch ends at ${end?.lastEntry}, not ${t.defaultLeaf}`);
  }
  if (previous && (previous.pages !== t.pages || previous.parts !== t.parts)) {
    throw new Error(
      `traversals differ: ${previous.pages}/${previous.parts} vs ${t.pages}/${t.parts}`,
    );
  }
}
