// The catalogue measurement: 2,000 files in 50 repository roots, and in Pi's own store (200
// directories), cold and warm, against lstat + readdir of the same files.
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createReader, type Root, rootsFromSpecs } from "../../src/index.ts";
import { writeCatalogueFixture } from "../fixtures.ts";
import { gc, type Series, summarize, timed } from "../stats.ts";

export const CATALOGUE_ROOTS = 50;
export const CATALOGUE_FILES_PER_ROOT = 40;
/** Pi's own store at the same 2,000 files: 200 project directories of 10 (issue 12 §5). */
export const STORE_DIRS = 200;
export const STORE_FILES_PER_DIR = 10;

export type CatalogueResult = {
  layout: "repository" | "pi-store";
  roots: number;
  files: number;
  cold: Series;
  warm: Series;
  lstat: Series;
};

export function measureCatalogue(
  tmp: string,
  runs: number,
  layout: CatalogueResult["layout"] = "repository",
): CatalogueResult {
  const [nRoots, perRoot] =
    layout === "repository"
      ? [CATALOGUE_ROOTS, CATALOGUE_FILES_PER_ROOT]
      : [STORE_DIRS, STORE_FILES_PER_DIR];
  const fx = writeCatalogueFixture(join(tmp, `catalogue-${layout}`), nRoots, perRoot, layout);
  const roots = rootsFromSpecs(fx.specs, []);
  const times = timeCatalogue(roots, fx, runs);
  return {
    layout,
    roots: nRoots,
    files: fx.files,
    ...times,
  };
}

/**
 * The catalogue of `roots` (the folders `fx.dirs`, `fx.files` files) timed against readdir +
 * lstat of the same files: a cold reader's first catalogue and its second, each run checked to
 * hold every file as a readable, titled row. Shared by the Pi and the Claude Code benches.
 */
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
