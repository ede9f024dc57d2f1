// `conversation export <id> [--branch B] [--format md|html|json] [--out F]`: one branch as a
// file (src/export renders it), Markdown by default. Without --out it goes to stdout. --out
// never names a place inside a source's sessions directory: an export must not land among (or
// over) session files.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, resolve, sep } from "node:path";
import { type ExportEnd, type ExportFormat, openExport } from "../export/index.ts";
import { makeVisible } from "../present/visible.ts";
import type { Reader } from "../reader/reader.ts";
import type { Root } from "../reader/sources.ts";
import { sourceDirOf } from "../search/cache-dir.ts";
import type { SourceFlags } from "./config.ts";
import { shellWord } from "./invocation.ts";
import type { Io } from "./io.ts";
import { refuseOpen } from "./source-hints.ts";

export type ExportCommand = {
  name: "export";
  sources: SourceFlags;
  id: string;
  branch?: string;
  format: ExportFormat;
  out?: string;
};

/**
 * Exit status 0 written, 1 refused (a reader refusal, an --out inside a source or one that
 * cannot be written, a refusal part-way, an interrupt). The document is written as the branch
 * is read; with --out it goes to a temporary file beside FILE, renamed over FILE only once the
 * export is whole, so FILE is never a half-written export.
 */
export async function runExport(
  reader: Reader,
  roots: readonly Root[],
  cmd: ExportCommand,
  io: Io,
  signal?: AbortSignal,
): Promise<number> {
  const opened = openExport(reader, {
    conversation: cmd.id,
    branch: cmd.branch,
    format: cmd.format,
  });
  if (!opened.ok) {
    // As `read` says it: an unknown conversation names where it was looked for and the lines
    // that look further, each with this export's own options.
    const rest = ["--format", cmd.format];
    if (cmd.branch !== undefined) rest.push("--branch", cmd.branch);
    if (cmd.out !== undefined) rest.push("--out", cmd.out);
    return refuseOpen(io, opened.refusal, { ...cmd, rest }, roots);
  }
  const file = opened.value;
  if (cmd.out === undefined) {
    const end = await file.write({ write: (text) => yieldAfter(() => io.out(text)) }, signal);
    return reportEnd(io, end, "The document on stdout stops there, with a last section saying so.");
  }
  const out = visible(cmd.out);
  const target = resolve(cmd.out);
  const inside = roots.map(sourceDirOf).find((dir) => isInside(target, dir));
  if (inside !== undefined) {
    io.err(
      `refused: unsafe-path: --out ${out} is inside the sessions directory ${visible(inside)}; write the export elsewhere.\n`,
    );
    return 1;
  }
  const temp = openTemp(target, cmd);
  if (typeof temp === "string") {
    io.err(`refused: cannot-write: ${visible(temp)}\n`);
    return 1;
  }
  let end: ExportEnd;
  try {
    end = await file.write({ write: (text) => yieldAfter(() => writeAll(temp.fd, text)) }, signal);
    if (end.ok) fsyncSync(temp.fd);
    closeSync(temp.fd);
    if (end.ok) renameSync(temp.path, target);
  } catch (e) {
    closeQuietly(temp.fd);
    rmSync(temp.path, { force: true });
    const failed = cannotWrite(e, target, cmd);
    io.err(`refused: cannot-write: ${visible(failed)}\n`);
    return 1;
  }
  if (!end.ok) {
    rmSync(temp.path, { force: true });
    return reportEnd(io, end, `Nothing was written to --out ${out}.`);
  }
  io.err(`wrote ${visible(target)} (${end.characters} characters)\n`);
  return 0;
}

function reportEnd(io: Io, end: ExportEnd, what: string): number {
  if (end.ok) return 0;
  if (end.stopped === "cancelled") {
    io.err(`stopped: the export was interrupted. ${what}\n`);
    return 1;
  }
  const { code, message } = end.refusal;
  io.err(
    `refused: ${code}: ${visible(message)} The export stopped part-way: ${what} Export the branch again.\n`,
  );
  return 1;
}

/** Runs `write`, then lets the event loop turn (a signal is seen between two chunks). */
function yieldAfter(write: () => void): Promise<void> {
  write();
  return new Promise((resolve) => setImmediate(resolve));
}

function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Closed already (the error came from the close itself): nothing more to release.
  }
}

/**
 * A new file beside `target` for the export to be written into, or why there cannot be one
 * (the same words as a failed write). A folder named as --out is refused before anything.
 */
function openTemp(target: string, cmd: ExportCommand): { fd: number; path: string } | string {
  const path = join(
    dirname(target),
    `.${basename(target)}.${process.pid}-${randomBytes(4).toString("hex")}.partial`,
  );
  try {
    if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) {
      throw Object.assign(new Error("a folder"), { code: "EISDIR" });
    }
    return { fd: openSync(path, "wx", 0o666), path };
  } catch (e) {
    return cannotWrite(e, target, cmd);
  }
}

/**
 * Why the export could not be written, and what to do, in words. Every file system error is a
 * refusal: --out is typed by a person, and a stack trace helps nobody.
 */
function cannotWrite(e: unknown, target: string, cmd: ExportCommand): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== "string") throw e;
  const out = `--out ${cmd.out ?? target}`;
  const folder = dirname(target);
  switch (code) {
    case "ENOENT":
      return `${out}: the folder ${folder} does not exist; create it first (mkdir -p ${shellWord(folder)}) or name a file in a folder that exists.`;
    case "EISDIR":
      return `${out} is a folder; name a file in it, for example --out ${shellWord(join(target, `${cmd.id}.${cmd.format}`))}`;
    case "ENOTDIR":
      return `${out}: a part of the path above the file is not a folder; name a file in a folder that exists.`;
    case "EACCES":
    case "EPERM":
      return `${out}: permission denied; name a file in a folder you may write to.`;
    case "EROFS":
      return `${out}: the file system is read-only; name a file on another one.`;
    case "ENOSPC":
    case "EDQUOT":
      return `${out}: no space left on the device; free some or write elsewhere.`;
    default:
      return `${out} could not be written (${code}); name another file.`;
  }
}

function visible(s: string): string {
  return makeVisible(s, { showNewlines: true });
}

/** `path` is `dir` or below it, comparing real paths where they exist (links resolved). */
function isInside(path: string, dir: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      // Not there (yet): compare the path as written, resolved.
      return resolve(p);
    }
  };
  const parent = real(dirname(path));
  const base = real(dir);
  const full = `${parent}${sep}`;
  return full === `${base}${sep}` || full.startsWith(`${base}${sep}`);
}
