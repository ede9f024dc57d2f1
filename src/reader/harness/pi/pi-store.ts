// Pi's own session store as a source (issue 12): `<store>/--<encoded cwd>--/<time>_<id>.jsonl`,
// where `<store>` is `$PI_CODING_AGENT_DIR/sessions` or `~/.pi/agent/sessions`. The store is the
// one approved directory; each `--…--` entry directly in it is a root, checked like any other
// (safe-fs). Only the store itself and those entries are ever listed. Never writes.
import type { BigIntStats } from "node:fs";
import { lstatSync, readdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Refusal } from "../../refusal.ts";
import { refusalFromErrno } from "../../safe-fs.ts";
import type { PiRoot, PiStoreRoot } from "../../sources.ts";
import { STORE_SEAT } from "../../sources.ts";

/** Pi's environment variable for its agent directory (config.js ENV_AGENT_DIR, both versions). */
export const AGENT_DIR_ENV = "PI_CODING_AGENT_DIR";

/**
 * Where Pi keeps its sessions: `<agent dir>/sessions`, the agent dir being
 * `$PI_CODING_AGENT_DIR` when set and non-empty (with `~` expanded and a `file://` URL taken as
 * its path, as Pi's normalizePath does), else `~/.pi/agent`. Mirrors config.js getAgentDir and
 * getSessionsDir of Pi 0.85.1 (config.js:421-427, 457-459) and 1.6.0 (config.js:510-516,
 * 546-548).
 */
export function defaultPiSessionsDir(
  env: Record<string, string | undefined> = process.env,
  home: string = homedir(),
): string {
  const given = env[AGENT_DIR_ENV];
  let agentDir = join(home, ".pi", "agent");
  if (given) {
    if (given === "~") agentDir = home;
    else if (given.startsWith("~/")) agentDir = join(home, given.slice(2));
    else if (given.startsWith("file://")) agentDir = fileURLToPath(given);
    else agentDir = given;
  }
  // getDefaultSessionDirPath resolves the agent dir against the process's cwd (SM:244).
  return join(resolve(agentDir), "sessions");
}

/**
 * The directory name Pi gives a cwd's sessions: `--` + the resolved path without its leading
 * separator, every `/`, `\` and `:` as `-`, + `--`. Mirrors getDefaultSessionDirPath of Pi 0.85.1
 * (session-manager.js:242-247) and 1.6.0 (session-manager.js:291-296), which are identical.
 * The encoding loses information (`/a-b` and `/a/b` share a directory); only the header says
 * which cwd a session had.
 */
export function encodeCwd(cwd: string): string {
  return `--${resolve(cwd)
    .replace(/^[/\\]/, "")
    .replace(/[/\\:]/g, "-")}--`;
}

/** A name Pi could have given a cwd's directory: `--`, at least one character, `--`. */
export function isStoreDirName(name: string): boolean {
  return name.length >= 4 && name.startsWith("--") && name.endsWith("--") && !name.includes("/");
}

/**
 * Refuses `foreign-project` unless `cwd` is absolute and encodes to `dirName`: a session filed
 * under another project's directory is not that project's. A relative cwd is refused rather
 * than resolved, since Pi would resolve it against its own working directory, unknown here.
 */
export function checkStoreCwd(cwd: string, dirName: string): void {
  if (!isAbsolute(cwd)) {
    throw new Refusal("foreign-project", "The session's working directory is not absolute.");
  }
  if (encodeCwd(cwd) !== dirName) {
    throw new Refusal(
      "foreign-project",
      "The session's working directory does not match the store directory it is filed in.",
    );
  }
}

/** The root of one `--…--` directory of the store (pure: nothing is read). */
export function storeDirRoot(storeDir: string, dirName: string): PiRoot {
  return {
    kind: "pi",
    // The store is the approved directory: safe-fs checks every component below it.
    projectRoot: storeDir,
    // Until a header is read, a directory is known only by its name.
    project: dirName,
    seat: STORE_SEAT,
    sessionsDir: join(storeDir, dirName),
    engineStarts: [],
    store: { storeDir, dirName },
  };
}

/**
 * The store's `--…--` entries as roots, sorted by name. The store directory may be reached
 * through a link (the approved directory, as a project root may be); its (dev, ino) must be the
 * same after the listing, or `unsafe-path`. Entries that are links or files are roots too: their
 * own chain check refuses them, so they show in `refusedRoots` instead of vanishing. Refuses
 * `unavailable` (no store), `unreadable`, `unsafe-path`.
 */
export function listStore(root: PiStoreRoot): PiRoot[] {
  const before = statStore(root.storeDir);
  let names: string[];
  try {
    names = readdirSync(root.storeDir).filter(isStoreDirName).sort();
  } catch (e) {
    throw refusalFromErrno(e, "Pi's session store", "unavailable");
  }
  const after = statStore(root.storeDir);
  if (after.dev !== before.dev || after.ino !== before.ino) {
    throw new Refusal("unsafe-path", "Pi's session store was swapped while it was listed.");
  }
  return names.map((name) => storeDirRoot(root.storeDir, name));
}

function statStore(storeDir: string): BigIntStats {
  let st: BigIntStats;
  try {
    st = lstatSync(storeDir, { bigint: true });
    // realpath + lstat, as safe-fs does for a project root: a chain of links ends at what we lstat.
    if (st.isSymbolicLink()) st = lstatSync(realpathSync(storeDir), { bigint: true });
  } catch (e) {
    throw refusalFromErrno(e, "Pi's session store", "unavailable");
  }
  if (!st.isDirectory()) throw new Refusal("unsafe-path", "Pi's session store is not a directory.");
  return st;
}
