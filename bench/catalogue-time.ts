// The catalogue timed against its floor, readdir + lstat of every file in the folders it lists:
// a cold reader's first catalogue and the same reader's second, each run checked to hold every
// file as a readable, titled row. Shared by the Pi and the Claude Code reader benches.
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createReader, type Root } from "../src/index.ts";
import { gc, type Series, summarize, timed } from "./stats.ts";

export type CatalogueTimes = { cold: Series; warm: Series; lstat: Series };

export function timeCatalogue(
  roots: Root[],
  fx: { dirs: string[]; files: number },
  runs: number,
): CatalogueTimes {
  const cold: number[] = [];
  const warm: number[] = [];
  const lstat: number[] = [];
  for (let run = 0; run < Math.max(runs, 3); run++) {
    gc();
    const l = timed(() => {
      let n = 0;
      for (const dir of fx.dirs) {
        for (const name of readdirSync(dir)) {
          lstatSync(join(dir, name));
          n++;
        }
      }
      return n;
    });
    if (l.value !== fx.files) throw new Error(`lstat saw ${l.value} files`);
    lstat.push(l.ms);

    gc();
    const c = timed(() => {
      const reader = createReader({ roots });
      return { reader, catalogue: reader.catalogue() };
    });
    cold.push(c.ms);
    gc();
    const w = timed(() => c.value.reader.catalogue());
    warm.push(w.ms);
    for (const cat of [c.value.catalogue, w.value]) {
      const good = cat.conversations.filter((r) => r.unsupportedReason === null && r.title);
      if (good.length !== fx.files || cat.refusedRoots.length > 0) {
        throw new Error(`catalogue: ${good.length} good rows of ${cat.conversations.length}`);
      }
    }
  }
  return { cold: summarize(cold), warm: summarize(warm), lstat: summarize(lstat) };
}
