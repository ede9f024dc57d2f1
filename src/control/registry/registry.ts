// The registry of running controllers: one JSON file per controller process in a 0700
// directory, named `<conversation>.<pid>.<start>.json`, written whole (temp file + rename) and
// removed at a normal stop. An entry speaks for a live controller only while its pid runs with
// the same start time (/proc/<pid>/stat) on the same boot; any other entry is dead, ignored and
// removed. Entries are parsed with checks: the registry directory is ours, but its files are
// data, never trusted shapes. Nothing here opens a socket or touches a session file.
import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, renameSync, unlinkSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ID_PATTERN } from "../../protocol/chat-01.ts";
import { ControlRefusal } from "../refusal.ts";
import { sweepLeftovers } from "./leftovers.ts";
import { checkEntrySocket, socketIdOf } from "./peer.ts";
import { checkPrivateDir, controlPlace, ensurePrivateDir } from "./private-dirs.ts";

export { ensurePrivateDir } from "./private-dirs.ts";

export const REGISTRY_VERSION = 1;
const MAX_ENTRY_BYTES = 64 * 1024;
/** A version as `controllers` prints it: digits and dots (a newer build may pin other ones). */
const VERSION_TEXT = /^\d+(\.\d+){0,3}$/;
/** A socket file's `<device>:<inode>` (peer.ts socketIdOf). */
const SOCKET_ID = /^\d{1,20}:\d{1,20}$/;

/** What a running controller says about itself. */
export type RegistryEntry = {
  version: typeof REGISTRY_VERSION;
  conversation: string;
  project: string;
  seat: string;
  sessionFile: string;
  socket: string;
  execution: string;
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22). */
  pidStart: string;
  /** /proc/sys/kernel/random/boot_id: a start time is meaningful within one boot only. */
  boot: string;
  grants: string[];
  startedAt: string;
  /** The pinned Pi version the controller runs (`--pi-version`); absent in older entries. */
  piVersion?: string;
  /**
   * The socket file's `<device>:<inode>` as the controller bound it (peer.ts): a client finding
   * another file there sends it nothing. Absent in older entries, which can't be connected to.
   */
  socketId?: string;
  /**
   * The private copy of Pi's agent files `--agent-from` made for this controller
   * (`<agents>/a-XXXXXX`); removed with the entry when the controller is found dead.
   */
  agentCopy?: string;
};

export type Registration = {
  readonly file: string;
  /** Rewrites the entry (a recovery minted a new execution). */
  update(change: Partial<Pick<RegistryEntry, "execution">>): Promise<void>;
  /** Removes the entry; a second call does nothing. */
  remove(): void;
};

/** The boot id, or "unknown" where /proc does not have it. */
export function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    // No /proc: liveness then rests on pid and start time, which still tell most deaths.
    return "unknown";
  }
}

/** A process's start time (field 22 of /proc/<pid>/stat), or null when it does not run. */
export function processStart(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    // ENOENT or ESRCH: no such process, which is exactly what the caller asks.
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces and ')': split after the
  // last ')'. Fields 3.. follow; the start time is field 22, so index 19 of the rest.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = rest[0];
  if (state === "Z" || state === "X") return null;
  return rest[19] ?? null;
}

/** True while the entry's process runs: same pid, same start time, same boot. */
export function isLive(entry: RegistryEntry, boot: string = bootId()): boolean {
  if (entry.boot !== boot) return false;
  return processStart(entry.pid) === entry.pidStart;
}

const REGISTRY_WORDS = controlPlace("the registry of running controllers");

/**
 * Registers this process's controller; the directory is made private first. The socket must
 * be there (the controller listens): its identity goes in the entry, for clients to check.
 */
export async function register(
  dir: string,
  entry: Omit<RegistryEntry, "version" | "pid" | "pidStart" | "boot" | "socketId">,
): Promise<Registration> {
  ensurePrivateDir(dir, REGISTRY_WORDS);
  const pidStart = processStart(process.pid);
  if (pidStart === null) throw new Error("cannot read this process's start time in /proc");
  const socketId = socketIdOf(entry.socket);
  if (socketId === null) {
    throw new ControlRefusal("configuration", `no socket at ${entry.socket} to register`);
  }
  let current: RegistryEntry = {
    version: REGISTRY_VERSION,
    ...entry,
    socketId,
    pid: process.pid,
    pidStart,
    boot: bootId(),
  };
  const file = join(dir, `${entry.conversation}.${process.pid}.${pidStart}.json`);
  let removed = false;
  await writeWhole(file, current);
  return {
    file,
    async update(change) {
      if (removed) return;
      current = { ...current, ...change };
      await writeWhole(file, current);
    },
    remove() {
      if (removed) return;
      removed = true;
      try {
        unlinkSync(file);
      } catch (e) {
        // Already gone (someone cleaned a registry they thought stale): nothing to undo.
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
    },
  };
}

async function writeWhole(file: string, entry: RegistryEntry): Promise<void> {
  const temp = join(dirname(file), `.${randomBytes(6).toString("hex")}.tmp`);
  await writeFile(temp, `${JSON.stringify(entry)}\n`, { mode: 0o600, flag: "wx" });
  renameSync(temp, file);
}

export type Listing = {
  /** Entries of live controllers, oldest first. */
  live: RegistryEntry[];
  /** Entries of dead controllers, removed by this listing (with their agent copies). */
  removed: RegistryEntry[];
  /** Files that are not registry entries, left alone, with why. */
  unreadable: { file: string; why: string }[];
};

/**
 * Lists the registry; a missing directory is an empty registry. Dead entries are removed, and
 * what their controllers left (the agent copy with Pi's credentials, the socket folder) with
 * them (leftovers.ts). Refuses `configuration` when the directory is not private to this user,
 * or a folder above it could be changed by another: an entry in it names the socket `attach`
 * connects to, so only this user may have written it.
 */
export function listControllers(dir: string): Listing {
  const out: Listing = { live: [], removed: [], unreadable: [] };
  let names: string[];
  try {
    checkPrivateDir(dir, REGISTRY_WORDS);
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return out;
    throw e;
  }
  const boot = bootId();
  for (const name of names.sort()) {
    if (!name.endsWith(".json") || name.startsWith(".")) continue;
    const file = join(dir, name);
    const parsed = readEntry(file);
    if (!parsed.ok) {
      out.unreadable.push({ file, why: parsed.why });
      continue;
    }
    if (isLive(parsed.entry, boot)) {
      out.live.push(parsed.entry);
      continue;
    }
    try {
      sweepLeftovers(dir, parsed.entry);
    } catch (e) {
      // The entry stays, so the next listing removes what it names again.
      const code = (e as NodeJS.ErrnoException).code ?? String(e);
      out.unreadable.push({ file, why: `dead; what it left can't be removed yet (${code})` });
      continue;
    }
    try {
      unlinkSync(file);
    } catch (e) {
      // Removed meanwhile by another listing: the entry is gone either way.
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    out.removed.push(parsed.entry);
  }
  out.live.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  return out;
}

/**
 * The live controller of `conversation`, or null. Refuses `configuration` when its socket is
 * not the one it bound, or another process listens there (peer.ts): a client must send it
 * nothing.
 */
export function findController(dir: string, conversation: string): RegistryEntry | null {
  const entry = listControllers(dir).live.find((e) => e.conversation === conversation) ?? null;
  if (entry === null) return null;
  const peer = checkEntrySocket(entry);
  if (!peer.ok) throw new ControlRefusal("configuration", peer.message);
  return entry;
}

function readEntry(file: string): { ok: true; entry: RegistryEntry } | { ok: false; why: string } {
  let text: string;
  try {
    const st = lstatSync(file);
    if (!st.isFile()) return { ok: false, why: "not a regular file" };
    if (st.size > MAX_ENTRY_BYTES) return { ok: false, why: "larger than 64 KiB" };
    text = readFileSync(file, "utf8");
  } catch (e) {
    return { ok: false, why: (e as NodeJS.ErrnoException).code ?? String(e) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, why: "not JSON" };
  }
  const entry = parseEntry(value);
  return entry === null ? { ok: false, why: "not a registry entry" } : { ok: true, entry };
}

/** A registry entry from untrusted JSON, or null when any field is missing or wrong. */
export function parseEntry(value: unknown): RegistryEntry | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const o = value as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === "string" && o[k] !== "" ? (o[k] as string) : null);
  const fields = [
    "conversation",
    "project",
    "seat",
    "sessionFile",
    "socket",
    "execution",
    "pidStart",
    "boot",
    "startedAt",
  ] as const;
  const s: Partial<Record<(typeof fields)[number], string>> = {};
  for (const k of fields) {
    const v = str(k);
    if (v === null) return null;
    s[k] = v;
  }
  if (o.version !== REGISTRY_VERSION) return null;
  if (!ID_PATTERN.test(s.conversation as string)) return null;
  if (!/^\d+$/.test(s.pidStart as string)) return null;
  if (typeof o.pid !== "number" || !Number.isSafeInteger(o.pid) || o.pid <= 0) return null;
  if (!Array.isArray(o.grants) || !o.grants.every((g) => typeof g === "string")) return null;
  const piVersion = o.piVersion;
  if (piVersion !== undefined && (typeof piVersion !== "string" || !VERSION_TEXT.test(piVersion)))
    return null;
  const { socketId, agentCopy } = o;
  if (socketId !== undefined && (typeof socketId !== "string" || !SOCKET_ID.test(socketId)))
    return null;
  if (agentCopy !== undefined && (typeof agentCopy !== "string" || !agentCopy.startsWith("/")))
    return null;
  return {
    version: REGISTRY_VERSION,
    conversation: s.conversation as string,
    project: s.project as string,
    seat: s.seat as string,
    sessionFile: s.sessionFile as string,
    socket: s.socket as string,
    execution: s.execution as string,
    pid: o.pid,
    pidStart: s.pidStart as string,
    boot: s.boot as string,
    grants: [...(o.grants as string[])],
    startedAt: s.startedAt as string,
    ...(piVersion === undefined ? {} : { piVersion }),
    ...(socketId === undefined ? {} : { socketId }),
    ...(agentCopy === undefined ? {} : { agentCopy }),
  };
}
