// The demo stays small (issue 11 §6): the live writer stops after maxAppends, and each start
// puts the live file back as first written.
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { MAX_APPENDS, restoreLive, saveLive, startGrowing } from "../../src/cli/demo-grow.ts";
import { writeDemoProject } from "../../src/cli/demo-sessions.ts";
import { DEADLINE_MS, until } from "../helpers/deadline.ts";
import { tempDir } from "../helpers/reader.ts";

const lines = (file: string) => readFileSync(file, "utf8").split("\n").filter(Boolean).length;

describe("demo-grow: a bounded live conversation", () => {
  it("stops appending after maxAppends and says so once", async (t) => {
    const demo = await writeDemoProject(join(tempDir(t, "cli-grow-"), "demo-project"));
    const start = lines(demo.liveFile);
    const capped: number[] = [];
    const stop = startGrowing(demo.liveFile, {
      intervalMs: 5,
      maxAppends: 3,
      onCapped: (n) => capped.push(n),
    });
    t.after(stop);
    await until(() => capped.length > 0, "the writer reached its cap", DEADLINE_MS);
    // Twenty more intervals: a writer that kept going would have appended by now.
    await sleep(100);
    assert.deepEqual(capped, [3]);
    assert.equal(lines(demo.liveFile), start + 3);
  });

  it("grows the live file by less than 64 KiB in a full run", async (t) => {
    const demo = await writeDemoProject(join(tempDir(t, "cli-grow-"), "demo-project"));
    const before = statSync(demo.liveFile).size;
    let done = false;
    const stop = startGrowing(demo.liveFile, { intervalMs: 1, onCapped: () => (done = true) });
    t.after(stop);
    await until(() => done, `${MAX_APPENDS} appends`, DEADLINE_MS);
    const grown = statSync(demo.liveFile).size - before;
    assert.ok(grown < 64 * 1024, `grew ${grown} bytes`);
    for (const l of readFileSync(demo.liveFile, "utf8").trimEnd().split("\n")) JSON.parse(l);
  });

  it("restores the live file as first written, whatever was appended since", async (t) => {
    const base = tempDir(t, "cli-grow-");
    const demo = await writeDemoProject(join(base, "demo-project"));
    const copy = join(base, "live.start.jsonl");
    saveLive(demo.liveFile, copy);
    const first = readFileSync(demo.liveFile);
    writeFileSync(demo.liveFile, `${first}${"x".repeat(200_000)}\n`);
    restoreLive(copy, demo.liveFile);
    assert.deepEqual(readFileSync(demo.liveFile), first);
  });
});
