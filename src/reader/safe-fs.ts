// Opening approved session files without following a link or being fooled by a swap. Never
// writes. Every errno becomes a reader refusal here, in one place (refusalFromErrno).
//
// No path is resolved twice. Node has no openat, but Linux's /proc/self/fd/<fd> is a magic link
// to the open file itself (not to its name): opening `/proc/self/fd/<dir fd>/<name>` looks
// `name` up in the directory the descriptor holds, as openat(dirfd, name) would, however that
// directory has been renamed or exchanged since. So a walk opens the root once, then each
// component relative to the previous descriptor with O_NOFOLLOW, and the session file relative
// to the sessions directory's descriptor. A directory exchanged for a link mid-walk makes the
// walk fail (the link is not followed); it can never lead the walk outside.

import type { BigIntStats } from "node:fs";
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
} from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { LIMITS, type ReaderRefusalCode } from "../protocol/chat-01.ts";
import { Refusal } from "./refusal.ts";

/**
 * O_PATH (Linux, every architecture Node runs on): a descriptor that names an inode without
 * opening it for I/O. Directories are held this way (search permission is all a walk needs), and
 * a session file is first reached this way, so a FIFO or device swapped in is never opened.
 */
const O_PATH = 0o10000000;
const DIR_FLAGS = O_PATH | constants.O_DIRECTORY;
const STEP_FLAGS = DIR_FLAGS | constants.O_NOFOLLOW;
const FILE_PATH_FLAGS = O_PATH | constants.O_NOFOLLOW;
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;
const SESSION_NAME = /^[^/\\\0]{1,249}\.jsonl$/;

/** The identity of an opened file as the descriptor saw it. */
export type FileIdentity = { dev: bigint; ino: bigint; size: number; ctimeNs: bigint };

/** A directory held open (O_PATH) at the end of a walk. Close it with closeDirectory. */
export type DirHandle = { fd: number; dev: bigint; ino: bigint };

function errnoOf(e: unknown): string | undefined {
  return e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

/**
 * Maps an fs error to a refusal. `missing` is the code for ENOENT: `unavailable` for a root,
 * `unknown-conversation` for a file that left the root. Anything unexpected is rethrown: a bug
 * or an I/O fault is not a "no".
 */
export function refusalFromErrno(e: unknown, what: string, missing: ReaderRefusalCode): Refusal {
  switch (errnoOf(e)) {
    case "ENOENT":
    case "ENOTDIR":
      return new Refusal(missing, `${what} does not exist.`);
    case "EACCES":
    case "EPERM":
      return new Refusal("unreadable", `Permission denied reading ${what}.`);
    case "ELOOP":
      return new Refusal("unsafe-path", `${what} is a symbolic link; links are not followed.`);
    case "ENXIO":
    case "EISDIR":
    case "EWOULDBLOCK":
      return new Refusal("unsafe-path", `${what} is not a regular file.`);
    case "EFBIG":
    case "EOVERFLOW":
      return new Refusal("too-large", `${what} is larger than 256 MiB.`);
    default:
      throw e;
  }
}

let procChecked = false;

/** Refuses `unavailable` where /proc/self/fd cannot stand in for openat (not Linux, no /proc). */
function requireProcFd(): void {
  if (procChecked) return;
  if (process.platform !== "linux" || !existsSync("/proc/self/fd")) {
    throw new Refusal(
      "unavailable",
      "Session files are opened through /proc/self/fd, which this system does not have; the reader needs Linux with /proc mounted.",
    );
  }
  procChecked = true;
}

/** The path that names `name` inside the directory open as `fd` (or the file `fd` itself). */
export function pathIn(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

function isComponent(part: string): boolean {
  return (
    part !== "" && part !== "." && part !== ".." && !part.includes("/") && !part.includes("\0")
  );
}

/** The components of `dir` below `root`; refuses unsafe-path when `dir` is not strictly inside. */
export function componentsBelow(root: string, dir: string): string[] {
  const rel = relative(root, dir);
  const parts = rel.split(sep);
  if (rel === "" || isAbsolute(rel) || !parts.every(isComponent)) {
    throw new Refusal("unsafe-path", "The sessions directory is not inside its project root.");
  }
  return parts;
}

/**
 * Opens `root` (which may itself be a symbolic link: it is the configured place, followed once)
 * and walks `components` below it one at a time, each opened relative to the directory before
 * it with O_NOFOLLOW|O_DIRECTORY. Refuses unsafe-path when a component is a link or not a
 * directory, `unavailable` when one is missing, `unreadable` when one cannot be searched.
 */
export function openDirectory(root: string, components: readonly string[]): DirHandle {
  requireProcFd();
  let fd: number;
  try {
    fd = openSync(root, DIR_FLAGS);
  } catch (e) {
    if (errnoOf(e) === "ENOTDIR") {
      throw new Refusal("unsafe-path", "The project root is not a directory.");
    }
    throw refusalFromErrno(e, "The project root", "unavailable");
  }
  try {
    for (let i = 0; i < components.length; i++) {
      const part = components[i] ?? "";
      if (!isComponent(part)) {
        throw new Refusal("unsafe-path", "A directory name in the session root is not valid.");
      }
      let next: number;
      try {
        next = openSync(pathIn(fd, part), STEP_FLAGS);
      } catch (e) {
        throw stepRefusal(e, fd, part, components.slice(0, i + 1).join("/"));
      }
      closeSync(fd);
      fd = next;
    }
    const st = fstatSync(fd, { bigint: true });
    return { fd, dev: st.dev, ino: st.ino };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Why a step of the walk failed, naming the component by its path below the root. */
function stepRefusal(e: unknown, parent: number, part: string, shown: string): Refusal {
  const code = errnoOf(e);
  if (code === "ENOTDIR" || code === "ELOOP") {
    // Only to word the message: whatever this lstat finds, the walk has stopped.
    let link = code === "ELOOP";
    try {
      link ||= lstatSync(pathIn(parent, part)).isSymbolicLink();
    } catch {
      // Gone again: the message says "not a directory", the code is the same.
    }
    return new Refusal(
      "unsafe-path",
      `${shown} is ${link ? "a symbolic link" : "not a directory"}.`,
    );
  }
  return refusalFromErrno(e, "The session root", "unavailable");
}

/** The sessions directory of a project, walked from the project root. */
export function openSessionsDirectory(projectRoot: string, sessionsDir: string): DirHandle {
  return openDirectory(projectRoot, componentsBelow(projectRoot, sessionsDir));
}

export function closeDirectory(dir: DirHandle): void {
  closeSync(dir.fd);
}

/** The names in an open directory (readdir through its descriptor, never by path). */
export function listDirectory(dir: DirHandle): string[] {
  try {
    return readdirSync(pathIn(dir.fd));
  } catch (e) {
    throw refusalFromErrno(e, "The session root", "unavailable");
  }
}

/** lstat of `name` inside an open directory: a link there is described, never followed. */
export function lstatIn(dir: DirHandle, name: string, what: string): BigIntStats {
  try {
    return lstatSync(pathIn(dir.fd, name), { bigint: true });
  } catch (e) {
    throw refusalFromErrno(e, what, "unknown-conversation");
  }
}

export function isSessionFileName(name: string): boolean {
  return SESSION_NAME.test(name) && name !== ".jsonl";
}

/** An open descriptor on a verified session file. Close it with closeFile. */
export type OpenFile = { fd: number; identity: FileIdentity };

/**
 * Opens the regular file `name` directly in `dir` for reading: reached with O_PATH|O_NOFOLLOW
 * relative to the directory's descriptor (a link is refused, not followed), checked to be a
 * regular file, then reopened for reading through its own descriptor (the same inode, no name
 * looked up again). Refuses unsafe-path, unreadable, unknown-conversation (no such file) and,
 * with `limit`, too-large.
 */
export function openFileIn(dir: DirHandle, name: string, limit = true): OpenFile {
  if (!isSessionFileName(name)) {
    throw new Refusal("unsafe-path", "A session file must be a *.jsonl file directly in its root.");
  }
  let handle: number;
  try {
    handle = openSync(pathIn(dir.fd, name), FILE_PATH_FLAGS);
  } catch (e) {
    throw refusalFromErrno(e, "The session file", "unknown-conversation");
  }
  let fd: number;
  try {
    const seen = fstatSync(handle, { bigint: true });
    if (!seen.isFile()) {
      const what = seen.isSymbolicLink() ? "a symbolic link" : "not a regular file";
      throw new Refusal("unsafe-path", `The session file is ${what}.`);
    }
    try {
      fd = openSync(pathIn(handle), READ_FLAGS);
    } catch (e) {
      throw refusalFromErrno(e, "The session file", "unknown-conversation");
    }
    try {
      const st = fstatSync(fd, { bigint: true });
      if (!st.isFile() || st.dev !== seen.dev || st.ino !== seen.ino) {
        throw new Refusal("unsafe-path", "The session file was swapped while it was opened.");
      }
      const size = Number(st.size);
      if (limit && size > LIMITS.fileBytes) {
        throw new Refusal("too-large", `The session file is ${size} bytes; the limit is 256 MiB.`);
      }
      return { fd, identity: identityOf(st) };
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  } finally {
    closeSync(handle);
  }
}

/**
 * Opens `<sessionsDir>/<name>` read-only by a walk from the project root (openDirectory), then
 * the file relative to the sessions directory's descriptor (openFileIn).
 */
export function openSessionFile(projectRoot: string, sessionsDir: string, name: string): OpenFile {
  if (!isSessionFileName(name)) {
    throw new Refusal("unsafe-path", "A session file must be a *.jsonl file directly in its root.");
  }
  const dir = openSessionsDirectory(projectRoot, sessionsDir);
  try {
    return openFileIn(dir, name);
  } finally {
    closeDirectory(dir);
  }
}

export function closeFile(file: OpenFile): void {
  closeSync(file.fd);
}

/** Re-reads the descriptor's identity (size may have grown since the open). */
export function statOpenFile(file: OpenFile): FileIdentity {
  const st = fstatSync(file.fd, { bigint: true });
  return identityOf(st);
}

function identityOf(st: BigIntStats): FileIdentity {
  return { dev: st.dev, ino: st.ino, size: Number(st.size), ctimeNs: st.ctimeNs };
}

/**
 * Reads up to `length` bytes from `position` into a new buffer; shorter when the file ends
 * first (a concurrent truncation). Never reads past 256 MiB in total.
 */
export function readRange(fd: number, position: number, length: number): Buffer {
  const n = Math.max(0, Math.min(length, LIMITS.fileBytes - position));
  const buf = Buffer.allocUnsafe(n);
  const got = readInto(fd, buf, position);
  return got === n ? buf : buf.subarray(0, got);
}

/** Fills `buf` from `position`; returns how many bytes were read (fewer at the end of file). */
export function readInto(fd: number, buf: Buffer, position: number): number {
  let got = 0;
  while (got < buf.length) {
    const r = readSync(fd, buf, got, buf.length - got, position + got);
    if (r === 0) break;
    got += r;
  }
  return got;
}

/**
 * Whether the recorded `cwd` is the project root or inside it, comparing real paths. A cwd that no
 * longer exists is compared as written (realpath resolves the path but opens nothing).
 */
export function isCwdInsideProject(cwd: string, projectRoot: string): boolean {
  if (!isAbsolute(cwd)) return false;
  const roots = new Set([resolve(projectRoot)]);
  const realRoot = realOrNull(projectRoot);
  if (realRoot) roots.add(realRoot);
  const candidates = new Set([resolve(cwd)]);
  const realCwd = realOrNull(cwd);
  if (realCwd) {
    // When the cwd exists, only its real path counts: a link inside the project may point out.
    candidates.clear();
    candidates.add(realCwd);
  }
  for (const c of candidates) {
    for (const r of roots) {
      if (c === r || c.startsWith(r.endsWith(sep) ? r : r + sep)) return true;
    }
  }
  return false;
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync.native(path);
  } catch {
    // A missing or unreadable path has no real path; the caller compares it as written.
    return null;
  }
}
