// Claude Code's files in the reader's benchmark (issue 25 item 8 beside issue 23): per size, in
// the same run as Pi's rows, a long session in Claude Code 2.1.328's shape (claude-sessions.ts)
// traversed settled and live, against the one-pass floor over the same file. claude.bench.ts
// measures the same session more closely (warm, per MiB, follow, catalogue).
import { join } from "node:path";
import { createReader, encodeClaudeCwd, rootsFromSpecs } from "../../src/index.ts";
import { writeClaudeSession } from "../claude-sessions.ts";
import { gc, type Series, summarize, timed } from "../stats.ts";
import { traverse } from "../traverse.ts";
import { floorPass } from "./baselines.ts";
import { freshen } from "./session.ts";

/** One store with one long session of `size` MiB; its conversation id from the catalogue. */
export function claudeSession(tmp: string, size: number, seed: number) {
  const projectsDir = join(tmp, `claude-${size}mib`, "projects");
  const cwd = `/work/bench project ${size}`;
  const file = join(
    projectsDir,
    encodeClaudeCwd(cwd),
    "5e55e55e-0000-4000-8000-000000000001.jsonl",
  );
  const written = writeClaudeSession(file, cwd, size, seed);
  const roots = rootsFromSpecs([{ kind: "claude-code", projectsDir }], []);
  const row = createReader({ roots }).catalogue().conversations[0];
  if (!row || row.unsupportedReason !== null) throw new Error(`no row: ${JSON.stringify(row)}`);
  return { ...written, cwd, projectsDir, roots, conversation: row.conversation };
}

export type ClaudeSizeResult = {
  mib: number;
  bytes: number;
  floor: Series;
  settled: Series;
  live: Series;
};

export function measureClaudeSize(
  tmp: string,
  size: number,
  seed: number,
  runs: number,
): ClaudeSizeResult {
  const s = claudeSession(tmp, size, seed);
  const floor: number[] = [];
  const settled: number[] = [];
  const live: number[] = [];
  for (let run = 0; run < runs; run++) {
    gc();
    floor.push(timed(() => floorPass(s.file)).ms);
    gc();
    settled.push(
      timed(() => traverse(createReader({ roots: s.roots, racyWindowMs: 0 }), s.conversation)).ms,
    );
    freshen(s.file);
    gc();
    live.push(timed(() => traverse(createReader({ roots: s.roots }), s.conversation)).ms);
    process.stderr.write(
      `  ${size} MiB Claude run ${run + 1}: floor ${floor.at(-1)?.toFixed(0)} ms, settled ${settled.at(-1)?.toFixed(0)} ms, live ${live.at(-1)?.toFixed(0)} ms\n`,
    );
  }
  return {
    mib: size,
    bytes: s.bytes,
    floor: summarize(floor),
    settled: summarize(settled),
    live: summarize(live),
  };
}
