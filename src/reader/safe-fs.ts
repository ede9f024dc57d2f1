// Opening approved session files without following a link or being fooled by a swap. Never
// writes. Every errno becomes a reader refusal here, in one place (refusalFromErrno).
// Node has no openat, so a directory swapped between the checks and the open is detected by
// checking the chain again after the open, not prevented (seed: Opening a file).

import type { BigIntStats } from "node:fs";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  realpathSync,
} from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { LIMITS, type ReaderRefusalCode } from "../protocol/chat-01.ts";
import { Refusal } from "./refusal.ts";

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const SESSION_NAME = /^[^/\\\0]{1,249}\.jsonl$/;

export type Stamp = { path: string; dev: bigint; ino: bigint };

/** The identity of an opened file as the descriptor saw it. */
export type FileIdentity = { dev: bigint; ino: bigint; size: number; ctimeNs: bigint };

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

function lstat(path: string, what: string, missing: ReaderRefusalCode): BigIntStats {
  try {
    return lstatSync(path, { bigint: true });
  } catch (e) {
    throw refusalFromErrno(e, what, missing);
  }
}

/**
 * Checks that every component from the project root down to the sessions directory is a real
 * directory. The project root itself may be a symlink (followed once, by stat); nothing below it
 * may be. Returns the (dev, ino) of each component so the chain can be checked again later.
 */
export function checkRootChain(projectRoot: string, sessionsDir: string): Stamp[] {
  const rel = relative(projectRoot, sessionsDir);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    throw new Refusal("unsafe-path", "The sessions directory is not inside its project root.");
  }
  let top: BigIntStats;
  try {
    top = lstatSync(projectRoot, { bigint: true });
    if (top.isSymbolicLink()) top = statFollow(projectRoot);
  } catch (e) {
    throw refusalFromErrno(e, "The project root", "unavailable");
  }
  if (!top.isDirectory()) {
    throw new Refusal("unsafe-path", "The project root is not a directory.");
  }
  const stamps: Stamp[] = [{ path: projectRoot, dev: top.dev, ino: top.ino }];
  let path = projectRoot;
  for (const part of rel.split(sep)) {
    path = join(path, part);
    const st = lstat(path, "The session root", "unavailable");
    if (!st.isDirectory()) {
      const what = st.isSymbolicLink() ? "a symbolic link" : "not a directory";
      throw new Refusal("unsafe-path", `${relative(projectRoot, path)} is ${what}.`);
    }
    stamps.push({ path, dev: st.dev, ino: st.ino });
  }
  return stamps;
}

function statFollow(path: string): BigIntStats {
  // realpath + lstat rather than stat, so a chain of links still ends at a directory we lstat.
  return lstatSync(realpathSync(path), { bigint: true });
}

/** Refuses `unsafe-path` when any directory of the chain changed since `stamps` were taken. */
export function recheckRootChain(projectRoot: string, sessionsDir: string, stamps: Stamp[]): void {
  const again = checkRootChain(projectRoot, sessionsDir);
  const same =
    again.length === stamps.length &&
    again.every((s, i) => s.dev === stamps[i]?.dev && s.ino === stamps[i]?.ino);
  if (!same) {
    throw new Refusal(
      "unsafe-path",
      "A directory above the session file was swapped while it was opened.",
    );
  }
}

export function isSessionFileName(name: string): boolean {
  return SESSION_NAME.test(name) && name !== ".jsonl";
}

/** An open descriptor on a verified session file. Close it with closeFile. */
export type OpenFile = { fd: number; identity: FileIdentity };

/**
 * Opens `<sessionsDir>/<name>` read-only: a regular `*.jsonl` directly in the root, opened
 * O_RDONLY|O_NOFOLLOW|O_NONBLOCK, the descriptor's (dev, ino) equal to the lstat before the open,
 * and the directory chain unchanged after it. Refuses unsafe-path, unreadable, unavailable,
 * unknown-conversation (the file left the root) and too-large.
 */
export function openSessionFile(projectRoot: string, sessionsDir: string, name: string): OpenFile {
  if (!isSessionFileName(name)) {
    throw new Refusal("unsafe-path", "A session file must be a *.jsonl file directly in its root.");
  }
  const stamps = checkRootChain(projectRoot, sessionsDir);
  const path = join(sessionsDir, name);
  const before = lstat(path, "The session file", "unknown-conversation");
  if (!before.isFile()) {
    const what = before.isSymbolicLink() ? "a symbolic link" : "not a regular file";
    throw new Refusal("unsafe-path", `The session file is ${what}.`);
  }
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS);
  } catch (e) {
    throw refusalFromErrno(e, "The session file", "unknown-conversation");
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile() || st.dev !== before.dev || st.ino !== before.ino) {
      throw new Refusal("unsafe-path", "The session file was swapped while it was opened.");
    }
    recheckRootChain(projectRoot, sessionsDir, stamps);
    const size = Number(st.size);
    if (size > LIMITS.fileBytes) {
      throw new Refusal("too-large", `The session file is ${size} bytes; the limit is 256 MiB.`);
    }
    return { fd, identity: identityOf(st) };
  } catch (e) {
    closeSync(fd);
    throw e;
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
  let got = 0;
  while (got < n) {
    const r = readSync(fd, buf, got, n - got, position + got);
    if (r === 0) break;
    got += r;
  }
  return got === n ? buf : buf.subarray(0, got);
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
