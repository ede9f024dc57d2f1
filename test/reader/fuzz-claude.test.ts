// The reader's fuzz suite on Claude Code's files (issue 25 §7): mutations (generic and Claude's
// own fields: fuzz-claude-mutations.ts) of sessions in the shapes Claude Code 2.1.328, 2.0.76 and
// 1.0.128 write (test/helpers/claude-sessions.ts, checked against the real binary by
// claude-oracle.test.ts), read every way a client can through a checked reader in a Claude store
// (fuzz-worker.ts): no exception, no hang, every record schema-valid, no file changed.
//   FUZZ_ITERATIONS=100000 [FUZZ_SEED=n] [FUZZ_FROM=i] node --test test/reader/fuzz-claude.test.ts
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import {
  type ClaudeVersion,
  type ClaudeWriter,
  richClaudeSession,
} from "../helpers/claude-sessions.ts";
import { tempDir } from "../helpers/reader.ts";
import { runWorker } from "./fuzz-run.ts";

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 120);
const SEED = Number(process.env.FUZZ_SEED ?? 25);
const FROM = Number(process.env.FUZZ_FROM ?? 0);

/** A session of every shape a reply takes: rewinds, /compact, an interrupt, a failed request. */
function longSession(cwd: string, version: ClaudeVersion): ClaudeWriter {
  const w = richClaudeSession(cwd, version);
  const fork = w.leaf;
  for (let turn = 0; turn < 12; turn++) {
    if (turn === 4) w.leaf = fork;
    w.prompt(`Turn ${turn}: ${"words ".repeat(turn * 3)}`);
    w.reply([
      { type: "thinking", thinking: "thinking it over" },
      {
        type: "tool_use",
        id: `toolu_${turn}`,
        name: "Edit",
        input: { file_path: `${cwd}/a`, old_string: "a", new_string: "b" },
      },
    ]);
    w.toolResults([{ toolUseId: `toolu_${turn}`, content: "ok" }]);
    w.reply([{ type: "text", text: `Answer ${turn}` }]);
    if (turn === 6) w.compact("What happened so far.", w.leaf ?? undefined);
    if (turn === 8) w.interrupt("half a reply");
    if (turn === 9) w.apiError("API Error: 500");
  }
  return w;
}

describe("reader fuzz: Claude Code", () => {
  it(`survives ${ITERATIONS} mutated Claude Code sessions (seed ${SEED}): no exception, no hang, every record valid, no file changed`, {
    timeout: Math.max(180_000, ITERATIONS * 2_000),
  }, async (t) => {
    const base = tempDir(t, "fuzz-claude-");
    const projectsDir = join(base, "claude", "projects");
    const cwd = join(base, "work", "app");
    const dir = join(projectsDir, encodeClaudeCwd(cwd));
    mkdirSync(dir, { recursive: true });
    const versions: ClaudeVersion[] = ["2.1.328", "2.0.76", "1.0.128"];
    const seeds = versions.flatMap((v) =>
      [richClaudeSession(cwd, v), longSession(cwd, v)].map(
        (w) => new Uint8Array(Buffer.from(w.text())),
      ),
    );
    const stats = await runWorker({
      base,
      projectRoot: base,
      seat: "claude-code",
      sessionsDir: dir,
      seeds,
      seed: SEED,
      from: FROM,
      count: ITERATIONS,
      claude: { spec: { kind: "claude-code", projectsDir } },
    });
    const summary = Object.entries(stats).sort(([a], [b]) => a.localeCompare(b));
    for (const [k, v] of summary) t.diagnostic(`${k}: ${v}`);
    assert.ok((stats.page ?? 0) >= ITERATIONS / 2, "most cases were read");
    assert.ok((stats["mutation: claude uuid"] ?? 0) > 0, "Claude's own mutations ran");
  });
});
