// What the race tests read while a racer writes: a session whose messages each hold a six-digit
// slot, and chains of reads (open, every page, one follow) checked to show one state of the
// file. Version k of a racer writes the digit k mod V (V versions, 10 unless told) to every slot
// byte in file order, so any state reads, byte by byte in file order, d+1 … d+1 d … d (mod V):
// a served chain whose slot bytes step otherwise, or step twice, mixed versions the file never
// held at once (racer.c).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { TestContext } from "node:test";
import { createReader, type Reader, type ReadResult, rootsFromSpecs } from "../../../src/index.ts";
import {
  header,
  type Project,
  project,
  tempDir,
  user,
  writeSession,
} from "../../helpers/reader.ts";

const SLOT = /slot (\d{6})/g;

export function slotsOf(text: string): string[] {
  return [...text.matchAll(SLOT)].map((m) => m[1] ?? "");
}

/** Bytes this process has read through read(2) so far (rchar of /proc/self/io). */
export function readBytes(): number {
  return Number(/rchar: (\d+)/.exec(readFileSync("/proc/self/io", "utf8"))?.[1]);
}

/** Why these slots (in file order) are no state of the file, or null when they are one. */
export function whyNotAState(slots: string[], versions = 10): string | null {
  const digits = slots.join("");
  let steps = 0;
  for (let i = 1; i < digits.length; i++) {
    const a = Number(digits[i - 1]);
    const b = Number(digits[i]);
    if (a === b) continue;
    if (b !== (a + versions - 1) % versions) {
      return `slot byte ${i} (${b}) is not ${a} or the version before it`;
    }
    if (++steps > 1) return `the slot bytes step down twice (at byte ${i})`;
  }
  return null;
}

export type Fixture = {
  p: Project;
  file: string;
  offsets: number[];
  reader: Reader;
  id: string;
  /** Moves the reader's clock on by `ms` (cursor expiry and racy re-verification; no sleep). */
  later(ms: number): void;
};

/**
 * A session of `messages` user messages (each a slot and `pad` bytes of padding) read by a
 * reader with `options`.
 */
export function fixture(
  t: TestContext,
  options: { racyWindowMs?: number } = {},
  shape: { messages?: number; pad?: number } = {},
): Fixture {
  const messages = shape.messages ?? 230;
  const p = project(tempDir(t, "writers-"));
  const lines: object[] = [header(p.projectRoot)];
  const pad = "x".repeat(shape.pad ?? 1200);
  for (let i = 0; i < messages; i++) {
    lines.push(user(`u${i}`, i ? `u${i - 1}` : null, `slot 000000 ${pad} ${i}`));
  }
  const file = writeSession(p.sessionsDir, "s.jsonl", lines);
  const text = readFileSync(file, "latin1");
  const offsets = [...text.matchAll(/slot (\d{6})/g)].map((m) => (m.index ?? 0) + 5);
  assert.equal(offsets.length, messages);
  let skew = 0;
  const reader = createReader({
    roots: () =>
      rootsFromSpecs([{ kind: "repository", projectRoot: p.projectRoot, seat: p.seat }], []),
    now: () => Date.now() + skew,
    ...options,
  });
  const id = reader.catalogue().conversations[0]?.conversation ?? "";
  assert.ok(id);
  const later = (ms: number) => {
    skew += ms;
  };
  return { p, file, offsets, reader, id, later };
}

export type Tally = { served: number; chains: number; refusals: Map<string, number> };

export function newTally(): Tally {
  return { served: 0, chains: 0, refusals: new Map() };
}

function refused(tally: Tally, r: ReadResult): boolean {
  if (r.ok) return false;
  tally.refusals.set(r.refusal.code, (tally.refusals.get(r.refusal.code) ?? 0) + 1);
  return true;
}

/**
 * Opens, pages to the end and follows once; every page of the chain must show one state (of
 * `versions` cycling versions).
 */
export function readChain(fx: Fixture, tally: Tally, growing: boolean, versions = 10): void {
  const { reader, id } = fx;
  let r = reader.open({ conversation: id });
  if (refused(tally, r)) return;
  const chain: string[] = [];
  for (;;) {
    if (!r.ok) return;
    tally.served++;
    chain.push(...slotsOf(JSON.stringify(r.page.parts)));
    const why = whyNotAState(chain, versions);
    assert.equal(why, null, `served a snapshot that was never the file: ${why}`);
    if (r.cursor) {
      r = reader.next({ cursor: r.cursor.id, conversation: id, branch: "main" });
    } else if (r.follow) {
      r = reader.next({ cursor: r.follow.id, conversation: id, branch: "main" });
      if (!r.ok) return void refused(tally, r);
      tally.served++;
      // A follow continues the same state: what it adds (a truncate writer's lines written
      // since a partial snapshot) reads on from the chain without a second step.
      chain.push(...slotsOf(JSON.stringify(r.page.parts)));
      const after = whyNotAState(chain, versions);
      assert.equal(after, null, `a follow continued a snapshot that was never the file: ${after}`);
      if (!growing) assert.equal(r.page.parts.length, 0, "a same-length writer appended");
      tally.chains++;
      return;
    }
    if (refused(tally, r)) return;
  }
}

/** Everything the default branch shows, from a fresh open; refused pages fail the test. */
export function readAllSlots(fx: Fixture): string[] {
  const { reader, id } = fx;
  let r = reader.open({ conversation: id });
  const out: string[] = [];
  for (;;) {
    assert.ok(r.ok, r.ok ? "" : `${r.refusal.code}: ${r.refusal.message}`);
    out.push(...slotsOf(JSON.stringify(r.page.parts)));
    if (!r.cursor) return out;
    r = reader.next({ cursor: r.cursor.id, conversation: id, branch: "main" });
  }
}
