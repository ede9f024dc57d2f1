// The search lane's usage index (src/usage), opened on the first GET /api/usage, not when the
// board starts: a board nobody asks leaves nothing in the cache. It lives in the search cache
// directory (the board's `search.cacheDir`, else the XDG cache).
import type { createReader } from "../reader/reader.ts";
import { rootsFromSpecs } from "../reader/sources.ts";
import { defaultCacheDir } from "../search/cache-dir.ts";
import { openUsage, type Usage } from "../usage/index.ts";
import type { WorkerSetup } from "./read-messages.ts";
import type { BoardUsage } from "./usage-route.ts";

export function lazyUsage(setup: WorkerSetup, reader: ReturnType<typeof createReader>): BoardUsage {
  let opened: Usage | undefined;
  return {
    report(q) {
      if (!opened) {
        const { specs, registrations } = setup.sources;
        const o = openUsage({
          roots: () => rootsFromSpecs(specs, registrations),
          catalogue: () => reader.catalogue(),
          cacheDir: setup.sources.search?.cacheDir ?? defaultCacheDir(),
        });
        // Asked again next time: the cache directory may have been mended.
        if (!o.ok) return o;
        opened = o.usage;
      }
      return { ok: true, report: opened.report(q) };
    },
  };
}
