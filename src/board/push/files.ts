// The push state's two files (vapid.json, subscriptions.json) in the board's private folder
// (`<state-dir>/board/push`, the private-folder rule up to `/`): read without following a
// link and checked on the open file itself (a regular file of this user, one name, 0600,
// bounded), written whole to a fresh 0600 temp file (O_EXCL|O_NOFOLLOW), synced, then renamed
// over, so a reader sees the old file or the new one, never half of one.

import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";

/** Largest push state file read (64 subscriptions of ~1 KiB are 64 KiB). */
export const MAX_STATE_BYTES = 256 * 1024;

export type FileRead =
  | { ok: true; text: string }
  | { ok: false; missing: true }
  | { ok: false; missing: false; message: string };

/** The file's text, `missing`, or why it may not be used. */
export function readPrivate(path: string): FileRead {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { ok: false, missing: true };
    const why = code === "ELOOP" ? "is a symbolic link" : `cannot be opened (${code})`;
    return { ok: false, missing: false, message: `${path} ${why}: remove it.` };
  }
  try {
    const st = fstatSync(fd);
    const uid = process.getuid?.() ?? -1;
    const problem = !st.isFile()
      ? "is not a regular file"
      : st.uid !== uid
        ? `belongs to uid ${st.uid}, not to you`
        : st.nlink !== 1
          ? `has ${st.nlink} names (hard links)`
          : (st.mode & 0o077) !== 0
            ? `has mode ${(st.mode & 0o777).toString(8)}, open to others (chmod 600 ${path})`
            : st.size > MAX_STATE_BYTES
              ? `is larger than ${MAX_STATE_BYTES} bytes`
              : null;
    if (problem !== null) return { ok: false, missing: false, message: `${path} ${problem}.` };
    return { ok: true, text: readFileSync(fd, "utf8") };
  } finally {
    closeSync(fd);
  }
}

/** Replaces `path` with `text`, 0600, atomically. Throws on a failed write (disk full). */
export function writePrivate(path: string, text: string): void {
  const temp = tempBeside(path);
  writeNew(temp, text);
  renameSync(temp, path);
}

/** A name beside `path` no other writer picks. */
export function tempBeside(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
}

/**
 * Writes `text` to a file that must not exist yet (O_EXCL|O_NOFOLLOW: never a link or another
 * file), 0600, synced. A failed write removes it and throws.
 */
export function writeNew(path: string, text: string): void {
  const fd = openSync(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    const bytes = Buffer.from(text, "utf8");
    let at = 0;
    while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw e;
  }
  closeSync(fd);
}
