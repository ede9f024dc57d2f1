// The Claude Code reader's benchmark (issue 25 §8): the Pi reader's targets on Claude's files.
// Side by side in one run, on long sessions in the shape Claude Code 2.1.328 writes
// (claude-sessions.ts): the reader's full traversal (open + every page of every branch + a
// follow each, traverse.ts) against the one-pass floor (read + SHA-256 + JSON.parse of every
// line, reader/baselines.ts), as ratios, and per MiB across sizes (linear: the ratio holds as the file
// grows); a follow after a one-line append against the bare prefix check; the catalogue of a
// Claude store (200 folders × 10 files) against readdir + lstat.
//
//   node bench/claude.bench.ts [--sizes 1,20,100] [--runs 5] [--quick] [--seed 1] [--budget 120]
//
// No peer parser runs beside it: the pinned Claude Code ships its reader inside a compiled
// binary (bin/claude.exe), with no entry point that parses a file and returns, so the only
// engine-side figure would be the time of a whole resumed process, mostly start-up.
import { appendFileSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createReader, encodeClaudeCwd, type Reader, rootsFromSpecs } from "../src/index.ts";
import { writeClaudeStore } from "./claude-sessions.ts";
import { barePrefixCheck, floorPass } from "./reader/baselines.ts";
import { timeCatalogue } from "./reader/catalogue.ts";
import { claudeSession } from "./reader/claude-traversal.ts";
import { int, mib, ms, ratio, spread, table } from "./report.ts";
import { gc, type Series, summarize, timed } from "./stats.ts";
import { expectOk, traverse } from "./traverse.ts";

const { values } = parseArgs({
  options: {
    sizes: { type: "string" },
    runs: { type: "string" },
    quick: { type: "boolean", default: false },
    seed: { type: "string", default: "1" },
    budget: { type: "string", default: "120" },
  },
  strict: true,
});

const quick = values.quick === true;
const sizes = (values.sizes ?? (quick ? "1,5" : "1,20,100")).split(",").map(Number);
const runs = Number(values.runs ?? (quick ? 2 : 5));
const seed = Number(values.seed);
const budgetMs = Number(values.budget) * 1000;
if (sizes.some((v) => !(v > 0) || v > 200) || !(runs >= 1) || !Number.isInteger(seed)) {
  process.stderr.write(
    "usage: node bench/claude.bench.ts [--sizes 1,20,100] [--runs N] [--quick] [--seed S] [--budget SECONDS]\n",
  );
  process.exit(2);
}
sizes.sort((a, b) => a - b);

type SizeResult = {
  mib: number;
  bytes: number;
  lines: number;
  turns: number;
  runs: number;
  floor: Series;
  cold: Series;
  warm: Series;
  branches: number;
  pages: number;
  parts: number;
};

const session = (tmp: string, size: number) => claudeSession(tmp, size, seed);

function measureSize(
  tmp: string,
  size: number,
): { result: SizeResult; reader: Reader; s: ReturnType<typeof session> } {
  const s = session(tmp, size);
  const floor: number[] = [];
  const cold: number[] = [];
  const warm: number[] = [];
  let lines = 0;
  let shape = { branches: 0, pages: 0, parts: 0 };
  let reader: Reader | null = null;
  const started = performance.now();
  for (let run = 0; run < runs; run++) {
    if (run >= 2 && budgetMs > 0 && performance.now() - started > budgetMs) break;
    gc();
    const f = timed(() => floorPass(s.file));
    floor.push(f.ms);
    lines = f.value.lines;
    gc();
    const c = timed(() => {
      // racyWindowMs 0: the settled path, as on a file quiet for longer than the racy window.
      const r = createReader({ roots: s.roots, racyWindowMs: 0 });
      return { r, t: traverse(r, s.conversation) };
    });
    cold.push(c.ms);
    gc();
    const w = timed(() => traverse(c.value.r, s.conversation));
    warm.push(w.ms);
    for (const t of [c.value.t, w.value]) {
      if (run > 0 && (t.parts !== shape.parts || t.branches !== shape.branches)) {
        throw new Error(`run ${run + 1} read ${t.parts} parts on ${t.branches} branches`);
      }
      shape = { branches: t.branches, pages: t.pages, parts: t.parts };
    }
    reader = c.value.r;
    process.stderr.write(
      `  ${size} MiB run ${run + 1}: floor ${ms(f.ms)} ms, reader cold ${ms(c.ms)} ms, warm ${ms(w.ms)} ms\n`,
    );
  }
  if (!reader) throw new Error("no run");
  if (shape.branches !== s.forks + 1) {
    throw new Error(`${shape.branches} branches for ${s.forks} rewinds`);
  }
  const result: SizeResult = {
    mib: size,
    bytes: s.bytes,
    lines,
    turns: s.turns,
    runs: cold.length,
    floor: summarize(floor),
    cold: summarize(cold),
    warm: summarize(warm),
    ...shape,
  };
  return { result, reader, s };
}

/** A follow after one appended reply line, on a reader paged to the default branch's end. */
function measureFollow(s: ReturnType<typeof session>, samples: number) {
  const reader = createReader({ roots: s.roots });
  const t = traverse(reader, s.conversation);
  let cursor = t.end.get(t.defaultBranch)?.follow;
  if (!cursor) throw new Error("no follow cursor");
  let parent = (t.defaultLeaf ?? "").replace(/^n\./, "");
  const follow: number[] = [];
  const bare: number[] = [];
  for (let k = 0; k < samples; k++) {
    const uuid = `f0110000-0000-4000-8000-${k.toString(16).padStart(12, "0")}`;
    const line = {
      parentUuid: parent,
      isSidechain: false,
      type: "user",
      message: { role: "user", content: `Follow sample ${k}: one more question.` },
      uuid,
      timestamp: new Date().toISOString(),
      cwd: s.cwd,
      sessionId: "5e55e55e-0000-4000-8000-000000000001",
      version: "2.1.328",
    };
    appendFileSync(s.file, `${JSON.stringify(line)}\n`);
    const pinned = cursor.snapshot;
    gc();
    const b = timed(() => barePrefixCheck(s.file, pinned));
    if (!b.value) throw new Error("the bare check found a different prefix");
    bare.push(b.ms);
    const id = cursor.id;
    gc();
    const f = timed(() =>
      reader.next({ cursor: id, conversation: s.conversation, branch: t.defaultBranch }),
    );
    follow.push(f.ms);
    const r = expectOk(f.value, "follow after append");
    if (r.page.parts.length !== 1 || r.page.parts[0]?.entry !== `n.${uuid}` || !r.follow) {
      throw new Error(`follow returned ${r.page.parts.length} parts, not n.${uuid}`);
    }
    cursor = r.follow;
    parent = uuid;
  }
  return { bytes: lstatSync(s.file).size, follow: summarize(follow), bare: summarize(bare) };
}

function measureCatalogue(tmp: string) {
  const projectsDir = join(tmp, "store", "projects");
  mkdirSync(projectsDir, { recursive: true });
  const fx = writeClaudeStore(projectsDir, 200, 10, encodeClaudeCwd);
  const roots = rootsFromSpecs([{ kind: "claude-code", projectsDir }], []);
  return { files: fx.files, ...timeCatalogue(roots, fx, runs) };
}

const began = performance.now();
const load0 = loadavg()[0] ?? 0;
const tmp = mkdtempSync(join(tmpdir(), "claude-bench-"));
try {
  const results: SizeResult[] = [];
  let last: ReturnType<typeof session> | null = null;
  for (const size of sizes) {
    process.stderr.write(`Claude Code session of ${size} MiB (seed ${seed})\n`);
    const m = measureSize(tmp, size);
    results.push(m.result);
    if (last) rmSync(last.projectsDir, { recursive: true, force: true });
    last = m.s;
  }
  if (!last) throw new Error("no size");
  process.stderr.write(`  ${sizes[sizes.length - 1]} MiB follow after append\n`);
  const follow = measureFollow(last, Math.max(runs, 5));
  process.stderr.write("  catalogue: a Claude store, 200 folders × 10\n");
  const catalogue = measureCatalogue(tmp);
  const out: string[] = [];
  out.push("Claude Code reader benchmark");
  out.push(`command: node bench/claude.bench.ts ${process.argv.slice(2).join(" ")}`.trimEnd());
  out.push(
    `machine: ${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, node ${process.version}; ` +
      `load average (1 min) ${load0.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at the end`,
  );
  out.push("");
  out.push(
    "Traversal of a Claude file: medians in ms (open + every page of every branch + a follow each)",
  );
  const first = results[0];
  out.push(
    table(
      [
        "size",
        "bytes",
        "lines",
        "runs",
        "floor",
        "reader cold",
        "reader warm",
        "cold/floor",
        "warm/floor",
        "cold ms/MiB",
        "per MiB vs smallest",
        "branches",
        "pages",
        "parts",
      ],
      results.map((r) => [
        `${r.mib} MiB`,
        int(r.bytes),
        int(r.lines),
        String(r.runs),
        ms(r.floor.median),
        ms(r.cold.median),
        ms(r.warm.median),
        ratio(r.cold.median, r.floor.median),
        ratio(r.warm.median, r.floor.median),
        ms(r.cold.median / (r.bytes / 2 ** 20)),
        first ? ratio(r.cold.median / r.bytes, first.cold.median / first.bytes) : "-",
        String(r.branches),
        int(r.pages),
        int(r.parts),
      ]),
    ),
  );
  out.push("");
  out.push("Spread: min–max ms");
  out.push(
    table(
      ["size", "floor", "reader cold", "reader warm"],
      results.map((r) => [`${r.mib} MiB`, spread(r.floor), spread(r.cold), spread(r.warm)]),
    ),
  );
  out.push("");
  out.push(
    `Follow after a one-line append, ${mib(follow.bytes)} MiB file, ms (${follow.follow.n} samples)`,
  );
  out.push(
    table(
      ["", "follow", "follow min–max", "bare check", "bare min–max", "follow/bare"],
      [
        [
          "",
          ms(follow.follow.median),
          spread(follow.follow),
          ms(follow.bare.median),
          spread(follow.bare),
          ratio(follow.follow.median, follow.bare.median),
        ],
      ],
    ),
  );
  out.push("(bare check = read the pinned prefix and SHA-256 it)");
  out.push("");
  out.push(
    `Catalogue: a Claude store of ${int(catalogue.files)} files in 200 folders, medians in ms`,
  );
  out.push(
    table(
      ["", "cold", "warm", "readdir+lstat", "cold/lstat", "warm/lstat"],
      [
        [
          "",
          ms(catalogue.cold.median),
          ms(catalogue.warm.median),
          ms(catalogue.lstat.median),
          ratio(catalogue.cold.median, catalogue.lstat.median),
          ratio(catalogue.warm.median, catalogue.lstat.median),
        ],
      ],
    ),
  );
  out.push("");
  out.push(`total ${((performance.now() - began) / 1000).toFixed(1)} s`);
  process.stdout.write(`\n${out.join("\n")}\n`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
