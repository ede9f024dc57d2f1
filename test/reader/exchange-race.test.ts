// Issue 17, item 1: a writer exchanging a directory (or the session file) with a symbolic link
// to an outside place, flat out with renameat2(RENAME_EXCHANGE), while the reader lists, opens,
// pages and follows. The outside holds a session with the same name and a header claiming this
// project, so only the walk through directory descriptors stands between it and a page.
import assert from "node:assert/strict";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createReader, encodeCwd, type ReadResult, rootsFromSpecs } from "../../src/index.ts";
import { header, project, readerFor, tempDir, user, writeSession } from "../helpers/reader.ts";
import { racerOrSkip, startRacer } from "./racer/racer.ts";

const SECONDS = 3;
const MARK = "OUTSIDE-MARK";

/** A session of `n` user messages whose texts start with `word`; parts span several pages. */
function session(cwd: string, word: string, n = 230): object[] {
  const lines: object[] = [header(cwd)];
  for (let i = 0; i < n; i++) lines.push(user(`u${i}`, i ? `u${i - 1}` : null, `${word} ${i}`));
  return lines;
}

type Tally = { pages: number; follows: number; rows: number; refusals: Map<string, number> };

function note(t: Tally, r: ReadResult, kind: "pages" | "follows"): ReadResult {
  if (r.ok) {
    assert.ok(!JSON.stringify(r.page).includes(MARK), `a ${kind} result served the outside file`);
    t[kind]++;
  } else {
    t.refusals.set(r.refusal.code, (t.refusals.get(r.refusal.code) ?? 0) + 1);
  }
  return r;
}

describe("a directory exchanged with a link to the outside, flat out", () => {
  for (const target of ["sessions", "state", "file"] as const) {
    it(`never serves the outside file while ${target} is exchanged (${SECONDS} s)`, async (t) => {
      const racer = racerOrSkip(t);
      if (!racer) return;
      const p = project(tempDir(t, "exchange-"));
      writeSession(p.sessionsDir, "s.jsonl", session(p.projectRoot, "inside"));
      // The outside: a whole .pi/state tree and a lone file, each claiming this project.
      const outside = join(p.base, "outside");
      const outSessions = join(outside, "main", "sessions");
      mkdirSync(outSessions, { recursive: true });
      const outFile = writeSession(outSessions, "s.jsonl", session(p.projectRoot, MARK));
      const state = join(p.projectRoot, ".pi", "state");
      const pair: Record<typeof target, [string, string]> = {
        sessions: [p.sessionsDir, outSessions],
        state: [state, outside],
        file: [join(p.sessionsDir, "s.jsonl"), outFile],
      };
      const [real, out] = pair[target];
      const swap = `${real}.swap`;
      symlinkSync(out, swap);

      const reader = readerFor(p).raw;
      const id = reader.catalogue().conversations[0]?.conversation ?? "";
      assert.ok(id);
      const tally: Tally = { pages: 0, follows: 0, rows: 0, refusals: new Map() };
      const running = startRacer(t, racer, ["exchange", String(SECONDS), real, swap]);
      const until = Date.now() + SECONDS * 1000;
      while (Date.now() < until) {
        for (const row of reader.catalogue().conversations) {
          assert.ok(!JSON.stringify(row).includes(MARK), "a catalogue row came from outside");
          tally.rows++;
        }
        let r = note(tally, reader.open({ conversation: id }), "pages");
        while (r.ok && r.cursor) {
          r = note(
            tally,
            reader.next({ cursor: r.cursor.id, conversation: id, branch: "main" }),
            "pages",
          );
        }
        if (r.ok && r.follow) {
          note(
            tally,
            reader.next({ cursor: r.follow.id, conversation: id, branch: "main" }),
            "follows",
          );
        }
      }
      const exchanges = await running.done;
      t.diagnostic(
        `${exchanges} exchanges; served ${tally.pages} pages, ${tally.follows} follows, ` +
          `${tally.rows} rows; refused ${JSON.stringify(Object.fromEntries(tally.refusals))}`,
      );
      // The race was real: the exchanger ran flat out and both outcomes happened.
      assert.ok(exchanges > 1000, `only ${exchanges} exchanges`);
      assert.ok(tally.pages > 0, "no page was served at all");
      assert.ok(tally.refusals.size > 0, "no read ever met the exchanged link");
      for (const code of tally.refusals.keys()) {
        assert.ok(
          ["unsafe-path", "unknown-conversation", "source-replaced", "unavailable"].includes(code),
          `unexpected refusal ${code}`,
        );
      }
    });
  }

  it(`never serves the outside file while a directory of Pi's own store is exchanged (${SECONDS} s)`, async (t) => {
    const racer = racerOrSkip(t);
    if (!racer) return;
    const base = tempDir(t, "exchange-store-");
    const store = join(base, "agent", "sessions");
    const cwd = join(base, "work");
    const dir = join(store, encodeCwd(cwd));
    mkdirSync(dir, { recursive: true });
    writeSession(dir, "s.jsonl", session(cwd, "inside"));
    const outside = join(base, "outside");
    mkdirSync(outside);
    writeSession(outside, "s.jsonl", session(cwd, MARK));
    symlinkSync(outside, `${dir}.swap`);
    const reader = createReader({
      roots: () => rootsFromSpecs([{ kind: "pi-agent", sessionsDir: store }], []),
    });
    const id = reader.catalogue().conversations[0]?.conversation ?? "";
    assert.ok(id);
    const tally: Tally = { pages: 0, follows: 0, rows: 0, refusals: new Map() };
    const running = startRacer(t, racer, ["exchange", String(SECONDS), dir, `${dir}.swap`]);
    const until = Date.now() + SECONDS * 1000;
    while (Date.now() < until) {
      const cat = reader.catalogue();
      assert.ok(!JSON.stringify(cat).includes(MARK), "a catalogue row came from outside");
      tally.rows += cat.conversations.length;
      let r = note(tally, reader.open({ conversation: id }), "pages");
      while (r.ok && r.cursor) {
        r = note(
          tally,
          reader.next({ cursor: r.cursor.id, conversation: id, branch: "main" }),
          "pages",
        );
      }
      if (r.ok && r.follow) {
        note(
          tally,
          reader.next({ cursor: r.follow.id, conversation: id, branch: "main" }),
          "follows",
        );
      }
    }
    const exchanges = await running.done;
    t.diagnostic(
      `${exchanges} exchanges; served ${tally.pages} pages, ${tally.follows} follows, ` +
        `${tally.rows} rows; refused ${JSON.stringify(Object.fromEntries(tally.refusals))}`,
    );
    assert.ok(exchanges > 1000, `only ${exchanges} exchanges`);
    assert.ok(tally.pages > 0, "no page was served at all");
    assert.ok(tally.refusals.size > 0, "no read ever met the exchanged link");
  });
});
