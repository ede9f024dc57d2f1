// Where the search index lives: a cache directory of ours, never inside a source. Default
// `$XDG_CACHE_HOME/mosaic-conversation`, else `~/.cache/mosaic-conversation` (the XDG rule
// for caches: losing it costs a re-index, nothing else). Created 0700.
import { mkdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve, sep } from "node:path";
import type { Root } from "../reader/sources.ts";

export const CACHE_FOLDER = "mosaic-conversation";

/** The default cache directory for `env` (XDG_CACHE_HOME only when absolute, as XDG says). */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(homedir(), ".cache");
  return join(base, CACHE_FOLDER);
}

/**
 * Creates `dir` (0700) and returns its real path, or the reason it cannot hold the index: it
 * is inside (or is) a source's sessions directory or Pi's store, where nothing may be written.
 */
export function prepareCacheDir(
  dir: string,
  roots: readonly Root[],
): { ok: true; dir: string } | { ok: false; reason: string } {
  const wanted = resolve(dir);
  for (const root of roots) {
    for (const source of [sourceDirOf(root)]) {
      if (isWithin(wanted, source)) {
        return {
          ok: false,
          reason: `The search cache ${wanted} is inside the source ${source}; an index is never written there.`,
        };
      }
    }
  }
  mkdirSync(wanted, { recursive: true, mode: 0o700 });
  const real = realpathSync(wanted);
  for (const root of roots) {
    for (const source of [sourceDirOf(root)]) {
      if (isWithin(real, source)) {
        return {
          ok: false,
          reason: `The search cache ${real} resolves inside the source ${source}.`,
        };
      }
    }
  }
  return { ok: true, dir: real };
}

/** The directory a root's sessions live in: a seat's sessions directory, or Pi's whole store. */
export function sourceDirOf(root: Root): string {
  return root.kind === "pi-store" ? root.storeDir : root.sessionsDir;
}

function isWithin(path: string, dir: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      // Not there: compare as written, resolved.
      return resolve(p);
    }
  };
  const a = `${real(path)}${sep}`;
  const b = `${real(dir)}${sep}`;
  return a === b || a.startsWith(b);
}
