// What a controller keeps beside its registry entry: its socket folder (`sockets/c-XXXXXX`)
// and, with `--agent-from`, the private copy of Pi's agent files (`agents/a-XXXXXX`, whose
// auth.json holds credentials). A normal stop removes both (cli/control.ts). A controller that
// is killed outright cannot, so (issue 22 item 8):
//   - guardUntilGone starts a watcher (a shell in a session of its own) that removes the copy
//     as soon as the controller's end of a pipe closes, however the controller ended; its
//     engine ends with it (the cgroup shim kills it; a process-group Pi reads EOF);
//   - a listing that finds the dead entry removes what the entry names (sweepLeftovers), for a
//     watcher that was killed as well.
// Only folders this module made are ever removed: `a-` and `c-` folders directly in the
// private agents and sockets folders beside the registry, owned by this user.
import { spawn } from "node:child_process";
import { lstatSync, mkdtempSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { checkPrivateFolder } from "../../fs/private-folder.ts";
import { besideRegistry } from "./places.ts";
import { controlPlace, ensurePrivateDir } from "./private-dirs.ts";

/** mkdtemp's names: the prefix and six letters or digits. */
const AGENT_COPY = /^a-[A-Za-z0-9]{6}$/;
const SOCKET_FOLDER = /^c-[A-Za-z0-9]{6}$/;

/** A fresh private folder in `agents` for one controller's copy of Pi's agent files. */
export function makeAgentCopyDir(agents: string): string {
  ensurePrivateDir(agents, controlPlace("the folder of agent copies"));
  const made = mkdtempSync(join(agents, "a-"));
  ensurePrivateDir(made, controlPlace("the agent copy"));
  return made;
}

/** A fresh private folder in `sockets` for one controller's socket. */
export function makeSocketDir(sockets: string): string {
  ensurePrivateDir(sockets, controlPlace("the sockets folder"));
  const made = mkdtempSync(join(sockets, "c-"));
  ensurePrivateDir(made, controlPlace("the socket folder"));
  return made;
}

export type Guard = {
  /** The controller removed the folder itself: the watcher ends without anything to do. */
  release(): void;
};

/**
 * Removes `dir` (and `alsoFiles`) when this process ends, however it ends (SIGKILL included): a shell in its own
 * session, ignoring INT, TERM and HUP, waits for EOF on a pipe only this process holds, then
 * removes the folder. The pipe is this process's: not inherited by Pi (Node's pipes are
 * close-on-exec), so the watcher does not wait for the engine.
 */
export function guardUntilGone(dir: string, alsoFiles: readonly string[] = []): Guard {
  // `alsoFiles`: copies of credentials placed elsewhere for the engine (Claude Code's, in the
  // seat's config folder), removed with the folder.
  const watcher = spawn(
    "/bin/sh",
    [
      "-c",
      'trap "" INT TERM HUP; cat >/dev/null; rm -rf -- "$1"; shift; rm -f -- "$@"',
      "mosaic-agent-copy",
      dir,
      ...alsoFiles,
    ],
    { detached: true, stdio: ["pipe", "ignore", "ignore"], cwd: "/" },
  );
  // A watcher that cannot start leaves the listing's sweep; the controller runs on.
  watcher.on("error", () => {});
  watcher.stdin?.on("error", () => {});
  watcher.unref();
  const pipe = watcher.stdin as unknown as { unref?: () => void } | null;
  pipe?.unref?.();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      watcher.stdin?.end();
    },
  };
}

/**
 * Removes what a dead controller's entry names: its agent copy and its socket folder, when
 * each is where this module makes them, beside `registry`. Throws the errno of a removal that
 * failed (the caller keeps the entry, so the next listing tries again).
 */
export function sweepLeftovers(
  registry: string,
  entry: { socket: string; agentCopy?: string },
): void {
  const { agents, sockets } = besideRegistry(registry);
  if (entry.agentCopy !== undefined) removeMade(entry.agentCopy, agents, AGENT_COPY);
  removeMade(dirname(entry.socket), sockets, SOCKET_FOLDER);
}

function removeMade(folder: string, parent: string, name: RegExp): void {
  if (dirname(folder) !== parent || !name.test(basename(folder))) return;
  // The parent must be private too: through a parent that is a link, `rm` would reach elsewhere.
  if (!checkPrivateFolder(parent, controlPlace("the folder")).ok) return;
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(folder);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
    throw e;
  }
  if (!st.isDirectory() || st.uid !== process.getuid?.()) return;
  rmSync(folder, { recursive: true, force: true });
}
