// The fuzz loop, in a worker so the test's watchdog can stop a reader call that hangs (the
// reader is synchronous: a hang on the test's own thread would also stop its timers). Each
// iteration writes one mutated session, reads it every way a client can through a checked
// reader (schema-valid records, no file changed), and reports before and after, so the
// watchdog knows which case was running. A failure saves the file for replay.
import { appendFileSync, mkdirSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import type { BoardSpec, ReadResult } from "../../src/index.ts";
import { type CheckedReader, checkedReader, rootsOf } from "../helpers/reader.ts";
import { mutateClaude } from "./fuzz-claude-mutations.ts";
import { appendix, mutate, type Rng, seededRng } from "./fuzz-mutations.ts";

export type FuzzJob = {
  base: string;
  projectRoot: string;
  seat: string;
  sessionsDir: string;
  seeds: Uint8Array[];
  seed: number;
  from: number;
  count: number;
  /** Claude Code's files: the store read (else the seat's repository root) and its mutations. */
  claude?: { spec: BoardSpec };
};

export type FuzzMessage =
  | { type: "start"; i: number; applied: string[]; bytes: number }
  | { type: "failure"; i: number; applied: string[]; error: string; saved: string }
  | { type: "finished"; stats: Record<string, number> };

/** The generator of iteration `i` of run `seed`: each iteration replays on its own. */
export function iterationRng(seed: number, i: number): Rng {
  return seededRng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(i + 1, 0xc2b2ae35));
}

const MAX_PAGES = 40;
const MAX_BRANCHES = 4;

function run(job: FuzzJob): void {
  const post = (m: FuzzMessage) => parentPort?.postMessage(m);
  const stats: Record<string, number> = {};
  const count = (k: string) => {
    stats[k] = (stats[k] ?? 0) + 1;
  };
  const spec: BoardSpec = job.claude?.spec ?? {
    kind: "repository",
    projectRoot: job.projectRoot,
    seat: job.seat,
  };
  let reader: CheckedReader | null = null;
  for (let i = job.from; i < job.from + job.count; i++) {
    const rng = iterationRng(job.seed, i);
    const seed = Buffer.from(rng.pick(job.seeds));
    const { file, applied } = job.claude ? mutateClaude(seed, rng) : mutate(seed, rng);
    post({ type: "start", i, applied, bytes: file.length });
    for (const a of applied) count(`mutation: ${a}`);
    const name = `f${i}.jsonl`;
    const path = join(job.sessionsDir, name);
    writeFileSync(path, file);
    try {
      // A fresh reader now and then, so caches are exercised both warm and cold.
      if (reader === null || i % 25 === 0) {
        reader = checkedReader(job.base, { roots: rootsOf([spec]) });
      }
      exercise(reader, { path, name, file }, rng, count);
    } catch (e) {
      const dir = join(tmpdir(), "mosaic-fuzz-failures");
      mkdirSync(dir, { recursive: true });
      const saved = join(dir, `seed-${job.seed}-iteration-${i}.jsonl`);
      writeFileSync(saved, file);
      post({
        type: "failure",
        i,
        applied,
        error: e instanceof Error ? (e.stack ?? e.message) : String(e),
        saved,
      });
      return;
    } finally {
      unlinkSync(path);
    }
  }
  post({ type: "finished", stats });
}

function exercise(
  reader: CheckedReader,
  { path, name, file }: { path: string; name: string; file: Buffer },
  rng: Rng,
  count: (k: string) => void,
): void {
  const row = reader.catalogue().conversations.find((r) => r.fileName === name);
  if (!row) throw new Error(`no catalogue row for ${name}`);
  count(`row: ${row.unsupportedReason ?? "readable"}`);
  const conversation = row.conversation;
  const first = reader.open({ conversation });
  if (!first.ok) {
    count(`open refused: ${first.refusal.code}`);
    return;
  }
  const last = readPages(reader, conversation, first, count);
  const others = first.view.branches.filter((b) => b.name !== first.page.branch);
  for (const b of others.slice(0, MAX_BRANCHES)) {
    const r = reader.open({ conversation, branch: b.name });
    if (!r.ok) throw new Error(`branch ${b.name} listed but refused: ${r.refusal.code}`);
    readPages(reader, conversation, r, count);
  }
  // A cursor from nowhere is refused, never thrown.
  const bogus = reader.next({ cursor: "c-0", conversation, branch: first.page.branch });
  if (bogus.ok) throw new Error("an unknown cursor was honoured");
  if (last?.follow) {
    // Grow the file between calls (the reader itself must change nothing), then follow.
    if (rng.next() < 0.7) appendFileSync(path, appendix(rng, file));
    const f = reader.next({
      cursor: last.follow.id,
      conversation,
      branch: last.page.branch,
    });
    count(f.ok ? "follow: page" : `follow refused: ${f.refusal.code}`);
    if (f.ok) readPages(reader, conversation, f, count);
  }
}

/** Reads the pages after `r` (at most MAX_PAGES); returns the last result read. */
function readPages(
  reader: CheckedReader,
  conversation: string,
  r: Extract<ReadResult, { ok: true }>,
  count: (k: string) => void,
): Extract<ReadResult, { ok: true }> | null {
  let cur = r;
  count("page");
  for (let pages = 1; cur.cursor && pages < MAX_PAGES; pages++) {
    const n = reader.next({ cursor: cur.cursor.id, conversation, branch: cur.page.branch });
    if (!n.ok) {
      count(`next refused: ${n.refusal.code}`);
      return null;
    }
    count("page");
    cur = n;
  }
  return cur.cursor ? null : cur;
}

if (parentPort && workerData) run(workerData as FuzzJob);
