// Claude Code's session folders as sources (issue 25; docs/claude-code-files.md): its own store
// `<projects dir>/<encoded cwd>/<session>.jsonl`, where `<projects dir>` is
// `$CLAUDE_CONFIG_DIR/projects` or `~/.claude/projects`, and a Claude seat's own projects folder
// in its state (sources.ts claudeProjectsDirOf). Each `<encoded cwd>` folder is a root, checked
// like any other (safe-fs); a session's subagents are `agent-<id>.jsonl` in its `<session>/
// subagents/` folder (2.1) or in the project folder itself (2.0). Never writes.
import type { BigIntStats } from "node:fs";
import { lstatSync, readdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { Refusal } from "../../refusal.ts";
import {
  closeDirectory,
  isSessionFileName,
  listDirectory,
  lstatIn,
  openSessionsDirectory,
  refusalFromErrno,
} from "../../safe-fs.ts";
import {
  CLAUDE_STORE_SEAT,
  type ClaudeRoot,
  type ClaudeSeatRoot,
  type ClaudeStoreRoot,
  isAgentFileName,
} from "../../sources.ts";

/** Claude Code's environment variable for its config folder (`~/.claude` otherwise). */
export const CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR";

/**
 * Where Claude Code keeps its sessions: `$CLAUDE_CONFIG_DIR/projects` when that variable is set
 * and non-empty (resolved against the current directory), else `~/.claude/projects`.
 */
export function defaultClaudeProjectsDir(
  env: Record<string, string | undefined> = process.env,
  home: string = homedir(),
): string {
  const given = env[CONFIG_DIR_ENV];
  return join(given ? resolve(given) : join(home, ".claude"), "projects");
}

/** Folder names longer than this are cut and given a hash of the whole cwd. */
const DIR_NAME_MAX = 200;

/**
 * The folder Claude Code files a cwd's sessions in: every character but an ASCII letter or digit
 * as `-`; a name over 200 characters cut to 200, then `-` and the base-36 absolute value of a
 * 32-bit hash of the cwd (`h = h * 31 + code unit`, each UTF-16 unit). Mirrors 2.1.328's
 * transcript-path function (found in the binary; docs/claude-code-files.md). The encoding loses
 * information: `/a-b` and `/a/b` share a folder, so only a record's `cwd` says which it had.
 */
export function encodeClaudeCwd(cwd: string): string {
  const name = cwd.replace(/[^a-zA-Z0-9]/g, "-");
  if (name.length <= DIR_NAME_MAX) return name;
  let h = 0;
  for (let i = 0; i < cwd.length; i++) h = (Math.imul(h, 31) + cwd.charCodeAt(i)) | 0;
  return `${name.slice(0, DIR_NAME_MAX)}-${Math.abs(h).toString(36)}`;
}

/** A name Claude Code could have given a cwd's folder (its alphabet: letters, digits, `-`). */
export function isClaudeDirName(name: string): boolean {
  return /^[A-Za-z0-9-]{1,255}$/.test(name);
}

/**
 * Refuses `foreign-project` unless `cwd` is absolute and encodes to `dirName`: a session filed
 * under another project's folder is not that project's.
 */
export function checkClaudeStoreCwd(cwd: string, dirName: string): void {
  if (!isAbsolute(cwd)) {
    throw new Refusal("foreign-project", "The session's working directory is not absolute.");
  }
  if (encodeClaudeCwd(cwd) !== dirName) {
    throw new Refusal(
      "foreign-project",
      "The session's working directory does not match the folder it is filed in.",
    );
  }
}

/** The root of one `<encoded cwd>` folder of Claude Code's own store (nothing is read). */
export function claudeStoreDirRoot(storeDir: string, dirName: string): ClaudeRoot {
  return {
    kind: "claude",
    projectRoot: storeDir,
    // Until a session's cwd is read, a folder is known only by its name.
    project: dirName,
    seat: CLAUDE_STORE_SEAT,
    sessionsDir: join(storeDir, dirName),
    engineStarts: [],
    store: { storeDir, dirName },
    identity: ["claude-code", resolve(storeDir), dirName],
  };
}

/** The root of one `<encoded cwd>` folder of a Claude seat's projects folder. */
export function claudeSeatDirRoot(seat: ClaudeSeatRoot, dirName: string): ClaudeRoot {
  return {
    kind: "claude",
    projectRoot: seat.projectRoot,
    project: seat.project,
    seat: seat.seat,
    sessionsDir: join(seat.sessionsDir, dirName),
    engineStarts: seat.engineStarts,
    identity: ["claude-code", resolve(seat.projectRoot), seat.seat, dirName],
  };
}

/**
 * The store's `<encoded cwd>` folders as roots, sorted by name. The store may be reached through
 * a link (the approved place, as a project root may be); its (dev, ino) must be the same after
 * the listing, else `unsafe-path`. Entries that are links or files are roots too: their own
 * chain check refuses them. Refuses `unavailable` (no store), `unreadable`, `unsafe-path`.
 */
export function listClaudeStore(root: ClaudeStoreRoot): ClaudeRoot[] {
  const what = "Claude Code's session store";
  const before = statStore(root.storeDir, what);
  let names: string[];
  try {
    names = readdirSync(root.storeDir).filter(isClaudeDirName).sort();
  } catch (e) {
    throw refusalFromErrno(e, what, "unavailable");
  }
  const after = statStore(root.storeDir, what);
  if (after.dev !== before.dev || after.ino !== before.ino) {
    throw new Refusal("unsafe-path", `${what} was swapped while it was listed.`);
  }
  return names.map((name) => claudeStoreDirRoot(root.storeDir, name));
}

/**
 * A Claude seat's `<encoded cwd>` folders, listed through a walk from the project root that
 * follows no link below it (safe-fs). Refuses as a sessions directory does (`unavailable` when
 * the seat has written no session yet).
 */
export function listClaudeSeat(root: ClaudeSeatRoot): ClaudeRoot[] {
  const dir = openSessionsDirectory(root.projectRoot, root.sessionsDir);
  try {
    return listDirectory(dir)
      .filter(isClaudeDirName)
      .sort()
      .map((name) => claudeSeatDirRoot(root, name));
  } finally {
    closeDirectory(dir);
  }
}

function statStore(storeDir: string, what: string): BigIntStats {
  let st: BigIntStats;
  try {
    st = lstatSync(storeDir, { bigint: true });
    // realpath + lstat, as safe-fs does for a project root: a chain of links ends at what we lstat.
    if (st.isSymbolicLink()) st = lstatSync(realpathSync(storeDir), { bigint: true });
  } catch (e) {
    throw refusalFromErrno(e, what, "unavailable");
  }
  if (!st.isDirectory()) throw new Refusal("unsafe-path", `${what} is not a directory.`);
  return st;
}

/** A session's file name (`<id>.jsonl`, not a subagent's `agent-<id>.jsonl`). */
export function isClaudeSessionName(name: string): boolean {
  return isSessionFileName(name) && !isAgentFileName(name);
}

/**
 * The subagent transcripts of a folder: `agent-<id>.jsonl` in it (2.0), and the `subagents/`
 * folder of each session in it (2.1), each as a root of its own with the folder's identity (so an
 * agent's id is the same whichever layout wrote it). Folders that cannot be listed have none.
 */
export function listAgentFiles(
  root: ClaudeRoot,
  names: readonly string[],
): { root: ClaudeRoot; name: string }[] {
  const out: { root: ClaudeRoot; name: string }[] = [];
  for (const name of names) if (isAgentFileName(name)) out.push({ root, name });
  const dir = openSessionsDirectory(root.projectRoot, root.sessionsDir);
  try {
    const listed = new Set(names);
    for (const file of names) {
      // A session `<name>.jsonl` keeps its subagents in `<name>/subagents/`.
      if (!isClaudeSessionName(file)) continue;
      const name = file.slice(0, -".jsonl".length);
      if (!listed.has(name)) continue;
      let st: BigIntStats;
      try {
        st = lstatIn(dir, name, "A session's folder");
      } catch (e) {
        // Gone since the listing, or unreadable: no agents to find there.
        if (e instanceof Refusal) continue;
        throw e;
      }
      if (!st.isDirectory()) continue;
      const agents: ClaudeRoot = {
        ...root,
        sessionsDir: join(root.sessionsDir, name, "subagents"),
        agentsOf: file,
      };
      let agentNames: string[];
      try {
        const sub = openSessionsDirectory(agents.projectRoot, agents.sessionsDir);
        try {
          agentNames = listDirectory(sub);
        } finally {
          closeDirectory(sub);
        }
      } catch (e) {
        // No subagents folder (a session that ran none), or one that is refused: nothing here.
        if (e instanceof Refusal) continue;
        throw e;
      }
      for (const n of agentNames.filter(isAgentFileName).sort()) {
        out.push({ root: agents, name: n });
      }
    }
  } finally {
    closeDirectory(dir);
  }
  return out;
}
