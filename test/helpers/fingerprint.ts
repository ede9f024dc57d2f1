// Fingerprints a directory tree so a test can prove the code under test changed nothing.
// Never follows symlinks and never writes. Records kind, mode, owner, links, size, inode,
// mtime and ctime in nanoseconds, SHA-256 of regular files and every directory's listing.
// atime is left out: a plain read may update it.
import { AssertionError } from "node:assert";
import { createHash } from "node:crypto";
import {
  type BigIntStats,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
} from "node:fs";
import path from "node:path";

export type EntryKind =
  | "file"
  | "directory"
  | "symlink"
  | "fifo"
  | "socket"
  | "char-device"
  | "block-device";

export interface EntryFingerprint {
  readonly kind: EntryKind;
  /** Permission bits and setuid/setgid/sticky (`st_mode & 0o7777`). */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly nlink: string;
  readonly size: string;
  readonly dev: string;
  readonly ino: string;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
  /** Regular files only; FIFOs, sockets and devices are never read. */
  readonly sha256: string | null;
  /** Symlinks only: the link text, not followed. */
  readonly target: string | null;
  /** Directories only: entry names in byte order. */
  readonly listing: readonly string[] | null;
}

export interface TreeFingerprint {
  readonly root: string;
  /** Keyed by path relative to `root` with `/` separators; the root itself is ".". */
  readonly entries: ReadonlyMap<string, EntryFingerprint>;
}

const CHUNK = 1 << 16;
const SLASH = Buffer.from("/");

/**
 * Walks `root` with lstat (the root too: a symlink root is recorded, not entered).
 * Throws if an entry vanishes or is replaced mid-walk: the tree must be quiescent.
 */
export function fingerprintTree(root: string): TreeFingerprint {
  const absRoot = path.resolve(root);
  const entries = new Map<string, EntryFingerprint>();
  const stack: { readonly abs: Buffer; readonly key: string }[] = [
    { abs: Buffer.from(absRoot), key: "." },
  ];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { abs, key } = next;
    const st = lstatSync(abs, { bigint: true });
    const kind = kindOf(st);
    let listing: string[] | null = null;
    if (kind === "directory") {
      listing = [];
      for (const name of readdirSync(abs, { encoding: "buffer" }).sort(Buffer.compare)) {
        const shown = displayName(name);
        listing.push(shown);
        stack.push({
          abs: Buffer.concat([abs, SLASH, name]),
          key: key === "." ? shown : `${key}/${shown}`,
        });
      }
    }
    entries.set(key, {
      kind,
      mode: Number(st.mode & 0o7777n),
      uid: Number(st.uid),
      gid: Number(st.gid),
      nlink: String(st.nlink),
      size: String(st.size),
      dev: String(st.dev),
      ino: String(st.ino),
      mtimeNs: String(st.mtimeNs),
      ctimeNs: String(st.ctimeNs),
      sha256: kind === "file" ? hashFile(abs, st, key) : null,
      target: kind === "symlink" ? displayName(readlinkSync(abs, { encoding: "buffer" })) : null,
      listing,
    });
  }
  return { root: absRoot, entries: new Map([...entries].sort(([a], [b]) => (a < b ? -1 : 1))) };
}

/** Throws an AssertionError naming every added, removed and changed path. */
export function assertUnchanged(before: TreeFingerprint, after: TreeFingerprint): void {
  const lines: string[] = [];
  if (before.root !== after.root) lines.push(`root ${before.root} → ${after.root}`);
  const keys = [...new Set([...before.entries.keys(), ...after.entries.keys()])].sort();
  for (const key of keys) {
    const was = before.entries.get(key);
    const now = after.entries.get(key);
    if (was === undefined && now !== undefined) lines.push(`+ ${key} (${now.kind} added)`);
    else if (was !== undefined && now === undefined) lines.push(`- ${key} (${was.kind} removed)`);
    else if (was !== undefined && now !== undefined) {
      const changes = describeChanges(was, now);
      if (changes.length > 0) lines.push(`~ ${key}: ${changes.join("; ")}`);
    }
  }
  if (lines.length === 0) return;
  throw new AssertionError({
    message: `tree ${after.root} changed (${lines.length}):\n  ${lines.join("\n  ")}`,
    operator: "assertUnchanged",
  });
}

/** Fingerprints `root`, runs `fn`, and asserts the tree is unchanged; returns `fn`'s value. */
export async function withFingerprint<T>(root: string, fn: () => T | Promise<T>): Promise<T> {
  const before = fingerprintTree(root);
  const result = await fn();
  assertUnchanged(before, fingerprintTree(root));
  return result;
}

function kindOf(st: BigIntStats): EntryKind {
  if (st.isFile()) return "file";
  if (st.isDirectory()) return "directory";
  if (st.isSymbolicLink()) return "symlink";
  if (st.isFIFO()) return "fifo";
  if (st.isSocket()) return "socket";
  if (st.isCharacterDevice()) return "char-device";
  if (st.isBlockDevice()) return "block-device";
  throw new Error(`fingerprintTree: unknown file type, mode ${st.mode.toString(8)}`);
}

// O_NOFOLLOW and O_NONBLOCK guard the lstat→open race: a file swapped for a symlink fails
// with ELOOP, one swapped for a FIFO cannot block; the inode check catches any other swap.
function hashFile(abs: Buffer, st: BigIntStats, key: string): string {
  const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const opened = fstatSync(fd, { bigint: true });
    if (opened.dev !== st.dev || opened.ino !== st.ino) {
      throw new Error(`fingerprintTree: ${key} was replaced while being fingerprinted`);
    }
    const hash = createHash("sha256");
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null)) {
      hash.update(buf.subarray(0, n));
    }
    return hash.digest("hex");
  } finally {
    closeSync(fd);
  }
}

// Names are bytes on Linux; show them as UTF-8 when that round-trips, else escape the bytes.
function displayName(name: Buffer): string {
  const text = name.toString("utf8");
  if (Buffer.from(text, "utf8").equals(name)) return text;
  return [...name]
    .map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16)}`))
    .join("");
}

function describeChanges(was: EntryFingerprint, now: EntryFingerprint): string[] {
  const changes: string[] = [];
  const scalar = (field: string, a: string | number | null, b: string | number | null) => {
    if (a !== b) changes.push(`${field} ${String(a)} → ${String(b)}`);
  };
  scalar("kind", was.kind, now.kind);
  scalar("mode", octal(was.mode), octal(now.mode));
  scalar("uid", was.uid, now.uid);
  scalar("gid", was.gid, now.gid);
  scalar("nlink", was.nlink, now.nlink);
  scalar("size", was.size, now.size);
  scalar("dev", was.dev, now.dev);
  scalar("ino", was.ino, now.ino);
  scalar("sha256", short(was.sha256), short(now.sha256));
  scalar("target", was.target, now.target);
  scalar("mtimeNs", was.mtimeNs, now.mtimeNs);
  scalar("ctimeNs", was.ctimeNs, now.ctimeNs);
  const wasNames = new Set(was.listing ?? []);
  const nowNames = new Set(now.listing ?? []);
  const added = [...nowNames].filter((n) => !wasNames.has(n));
  const removed = [...wasNames].filter((n) => !nowNames.has(n));
  if (added.length > 0 || removed.length > 0) {
    const parts = [
      ...added.map((n) => `+${JSON.stringify(n)}`),
      ...removed.map((n) => `-${JSON.stringify(n)}`),
    ];
    changes.push(`listing ${parts.join(" ")}`);
  }
  return changes;
}

function octal(mode: number): string {
  return `0o${mode.toString(8).padStart(3, "0")}`;
}

function short(hash: string | null): string | null {
  return hash === null ? null : `${hash.slice(0, 12)}…`;
}
