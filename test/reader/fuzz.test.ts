// The reader's fuzz suite (issue 17): mutations of sessions written by Pi's own SessionManager
// (fuzz-mutations.ts), each read every way a client can (catalogue, open, every page, other
// branches, a follow after growth, a foreign cursor) through a checked reader. It checks that
// no call throws, none hangs (a watchdog per iteration), every record is schema-valid and no
// file changes. `npm test` runs a seeded slice of a few seconds; a long run on demand:
//   FUZZ_ITERATIONS=100000 [FUZZ_SEED=n] [FUZZ_FROM=i] npm run fuzz
// A failure names its seed and iteration (replay with FUZZ_SEED, FUZZ_FROM and
// FUZZ_ITERATIONS=1) and saves the mutated file under $TMPDIR/mosaic-fuzz-failures/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { makeProject, writeLongSession, writeRichSession } from "../helpers/pi-sessions.ts";
import { tempDir } from "../helpers/reader.ts";
import { runWorker } from "./fuzz-run.ts";

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 120);
const SEED = Number(process.env.FUZZ_SEED ?? 17);
const FROM = Number(process.env.FUZZ_FROM ?? 0);
describe("reader fuzz", () => {
  it(`survives ${ITERATIONS} mutated Pi sessions (seed ${SEED}): no exception, no hang, every record valid, no file changed`, {
    timeout: Math.max(180_000, ITERATIONS * 2_000),
  }, async (t) => {
    const base = tempDir(t, "fuzz-");
    const p = makeProject(base);
    // Seeds come from Pi itself, written outside the root the reader lists.
    const seedsDir = join(base, "seeds");
    const rich = await writeRichSession(seedsDir, "rich", p.projectRoot);
    const long = await writeLongSession(seedsDir, "long", p.projectRoot, {
      targetBytes: 96 * 1024,
      branches: true,
      compactionEveryBytes: 32 * 1024,
    });
    const seeds = [readFileSync(rich.path), readFileSync(long.path)].map((b) => new Uint8Array(b));
    const stats = await runWorker({
      base: p.projectRoot,
      projectRoot: p.projectRoot,
      seat: p.seat,
      sessionsDir: p.sessionsDir,
      seeds,
      seed: SEED,
      from: FROM,
      count: ITERATIONS,
    });
    const summary = Object.entries(stats).sort(([a], [b]) => a.localeCompare(b));
    for (const [k, v] of summary) t.diagnostic(`${k}: ${v}`);
    // The slice must reach past the header: pages were read, and some mutations refused.
    assert.ok((stats.page ?? 0) >= ITERATIONS / 2, "most cases were read");
  });
});
