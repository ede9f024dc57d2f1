// Where the search index lives: a private folder of ours, never inside a source. Default
// `$XDG_CACHE_HOME/mosaic-conversation`, else `~/.cache/mosaic-conversation` (the XDG rule
// for caches: losing it costs a re-index, nothing else). Created 0700; one that is a link,
// another user's, open to others, or under a folder others can change is refused.
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve, sep } from "node:path";
import { ensurePrivateFolder, type PlaceWords } from "../fs/private-folder.ts";
import { type Root, rootDirOf } from "../reader/sources.ts";

export const CACHE_FOLDER = "mosaic-conversation";

const CACHE_WORDS: PlaceWords = {
  what: "the search cache",
  instead:
    "set XDG_CACHE_HOME to a folder of your own (the cache is $XDG_CACHE_HOME/mosaic-conversation, else ~/.cache/mosaic-conversation)",
};

/** The default cache directory for `env` (XDG_CACHE_HOME only when absolute, as XDG says). */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(homedir(), ".cache");
  return join(base, CACHE_FOLDER);
}

/**
 * Creates `dir` (0700) and returns its real path, or the reason it cannot hold the index: it
 * is inside (or is) a source's sessions directory or Pi's store, where nothing may be written,
 * or it is not a private folder of this user (src/fs/private-folder.ts).
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
  // The index holds every word of every conversation: its folder is private like the control
  // layer's (src/fs/private-folder.ts), checked up to `/`, before anything is opened in it.
  const check = ensurePrivateFolder(wanted, CACHE_WORDS);
  if (!check.ok) return { ok: false, reason: `${check.problem.message}.` };
  let real: string;
  try {
    real = realpathSync(wanted);
  } catch (e) {
    // The place comes from the environment (XDG_CACHE_HOME, HOME) or a caller: a refusal the
    // person can act on, never a stack trace.
    const code = (e as NodeJS.ErrnoException | null)?.code;
    if (typeof code !== "string") throw e;
    return { ok: false, reason: `The search cache ${wanted} cannot be made: ${whyNot(code)}.` };
  }
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

/** A file system error on the cache's path, in words, with what to do. */
export function whyNot(code: string): string {
  const fix =
    "set XDG_CACHE_HOME to a folder you may write to (the cache is $XDG_CACHE_HOME/mosaic-conversation, else ~/.cache/mosaic-conversation)";
  switch (code) {
    case "ENOTDIR":
    case "EEXIST":
      return `it, or a part of its path, is a file, not a folder (${code}); ${fix}`;
    case "EACCES":
    case "EPERM":
      return `permission denied (${code}); ${fix}`;
    case "EROFS":
      return `the file system is read-only (${code}); ${fix}`;
    case "ENOSPC":
    case "EDQUOT":
      return `no space left on the device (${code}); free some, or ${fix}`;
    default:
      return `${code}; ${fix}`;
  }
}

/** The directory a root's sessions live in: a seat's sessions directory, or Pi's whole store. */
export function sourceDirOf(root: Root): string {
  return rootDirOf(root);
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
