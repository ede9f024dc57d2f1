// Whose socket a client is about to talk to (issue 22 item 2). Node has no SO_PEERCRED, so the
// peer is vouched for by what the file system and /proc prove, before a byte is sent:
//   - checkSocketPath (every connect): the socket is a socket of this user, in a private folder
//     (0700, this user's), and no folder above it can be changed by anyone but this user or
//     root (src/fs/private-folder.ts). So only this user or root can have bound it there, and
//     nobody else can swap it between this check and the connect.
//   - checkEntrySocket (a socket found in the registry): the file is still the one the
//     controller bound (device and inode recorded in its entry right after it listened), and the
//     entry's pid holds the listening socket bound at that path (/proc/net/unix and
//     /proc/<pid>/fd): the pid and uid SO_PEERCRED would give, checked against the entry.
// docs/control-cli.md ("Whose socket it is") says what this proves and where it stops.
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";
import { checkPrivateFolder } from "../../fs/private-folder.ts";

/** `absent`: no socket can be there (a folder on the way does not exist); nothing to trust. */
export type PeerCheck = { ok: true } | { ok: false; message: string; absent?: true };

/** What the registry says about a controller's socket (registry.ts RegistryEntry). */
export type SocketClaim = { socket: string; socketId?: string; pid: number; conversation: string };

const WORDS = {
  what: "the controller's socket folder",
  instead:
    "start the controller again with a state dir of your own (--state-dir), then attach to it",
};

/** A socket file's identity as the registry records it: `<device>:<inode>`. */
export function socketIdOf(path: string): string | null {
  try {
    const st = lstatSync(path, { bigint: true });
    return st.isSocket() ? `${st.dev}:${st.ino}` : null;
  } catch {
    // Not there (or not reachable): there is no socket to name.
    return null;
  }
}

/**
 * The socket at `path` may be connected to: a socket of this user in a private folder, and no
 * folder above it that others could change. Checked by every client before it connects. No
 * socket there is no refusal: the connect then fails as it would with no controller.
 */
export function checkSocketPath(path: string): PeerCheck {
  if (typeof path !== "string" || !path.startsWith("/")) {
    return { ok: false, message: `the socket path ${String(path)} is not absolute` };
  }
  const folder = checkPrivateFolder(dirname(path), WORDS);
  if (!folder.ok && folder.problem.code === "missing") {
    // Not connected to at all: a folder created meanwhile could be anyone's.
    return { ok: false, absent: true, message: `no socket at ${path}: ${folder.problem.message}` };
  }
  if (!folder.ok) {
    return {
      ok: false,
      message: `${folder.problem.message}. Nothing was sent to ${path}: whoever can change that folder could have put their own socket there`,
    };
  }
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    // Absent: the connect fails (ENOENT) as with no controller; only this user or root could
    // put one there before it, the folder being private.
    if (code === "ENOENT") return { ok: true };
    return { ok: false, message: `the socket ${path} cannot be looked at (${code})` };
  }
  if (!st.isSocket()) return { ok: false, message: `${path} is not a socket` };
  const me = process.getuid?.() ?? -1;
  if (st.uid !== me) {
    return {
      ok: false,
      message: `the socket ${path} was made by uid ${st.uid}, not by you (uid ${me}): it is not your controller's, and nothing was sent to it`,
    };
  }
  return { ok: true };
}

/**
 * The registry entry's socket is the one its controller bound and still listens on: the file's
 * device and inode are the entry's `socketId`, and the entry's pid holds a listening socket
 * bound at that path. Also checks the path as checkSocketPath does.
 */
export function checkEntrySocket(entry: SocketClaim): PeerCheck {
  const path = checkSocketPath(entry.socket);
  if (!path.ok) return path;
  const who = `the controller of ${entry.conversation} (pid ${entry.pid})`;
  if (entry.socketId === undefined) {
    return {
      ok: false,
      message: `${who} was registered without its socket's identity (an older version): stop it and start it again`,
    };
  }
  const now = socketIdOf(entry.socket);
  if (now !== entry.socketId) {
    return {
      ok: false,
      message: `the socket ${entry.socket} is not the one ${who} bound (device:inode ${now ?? "none"}, registered ${entry.socketId}): it was replaced after the controller started; nothing was sent to it. Stop that controller and start it again`,
    };
  }
  const held = holdsListener(entry.pid, entry.socket);
  if (held !== true) {
    return { ok: false, message: `${who} is not the one listening on ${entry.socket}: ${held}` };
  }
  return { ok: true };
}

/** True when `pid` holds a listening Unix socket bound at `path`; else why not, in words. */
function holdsListener(pid: number, path: string): true | string {
  let table: string;
  try {
    table = readFileSync("/proc/net/unix", "utf8");
  } catch (e) {
    return `/proc/net/unix cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)}), so the listener can't be checked`;
  }
  const inodes = listeningInodes(table, path);
  if (inodes.size === 0) return "no process listens on it in this network namespace";
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (e) {
    return `its open files cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      // Closed since the listing: not the listener, which lives as long as the controller.
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && inodes.has(m[1] as string)) return true;
  }
  return "another process holds the listening socket";
}

/** Listening sockets' inodes bound at `path`, from /proc/net/unix. */
export function listeningInodes(table: string, path: string): Set<string> {
  // `Num RefCount Protocol Flags Type St Inode Path`; Flags 0x10000 is __SO_ACCEPTCON (listen).
  const row = /^\s*[0-9a-f]+: [0-9A-F]+ [0-9A-F]+ ([0-9A-F]+) [0-9A-F]+ [0-9A-F]+\s+(\d+) (.*)$/;
  const out = new Set<string>();
  for (const line of table.split("\n")) {
    const m = row.exec(line);
    if (!m || m[3] !== path) continue;
    if ((Number.parseInt(m[1] as string, 16) & 0x10000) !== 0) out.add(m[2] as string);
  }
  return out;
}
