// `conversation export <id> [--branch B] --format md|html|json [--out F]`: one branch as a
// file (src/export renders it). Without --out it goes to stdout. --out never names a place
// inside a source's sessions directory: an export must not land among (or over) session files.
import { realpathSync, writeFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { type ExportFormat, readBranchExport, renderExport } from "../export/index.ts";
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

/** Exit status 0 written, 1 refused (a reader refusal or an --out inside a source). */
export function runExport(
  reader: Reader,
  roots: readonly Root[],
  cmd: ExportCommand,
  io: Io,
): number {
  const read = readBranchExport(reader, cmd.id, cmd.branch);
  if (!read.ok) {
    // As `read` says it: an unknown conversation names where it was looked for and the lines
    // that look further, each with this export's own options.
    const rest = ["--format", cmd.format];
    if (cmd.branch !== undefined) rest.push("--branch", cmd.branch);
    if (cmd.out !== undefined) rest.push("--out", cmd.out);
    return refuseOpen(io, read.refusal, { ...cmd, rest }, roots);
  }
  const file = renderExport(read.value, cmd.format);
  if (cmd.out === undefined) {
    io.out(file.body);
    return 0;
  }
  const target = resolve(cmd.out);
  const inside = roots.map(sourceDirOf).find((dir) => isInside(target, dir));
  if (inside !== undefined) {
    io.err(
      `refused: unsafe-path: --out ${makeVisible(cmd.out, { showNewlines: true })} is inside the sessions directory ${makeVisible(inside, { showNewlines: true })}; write the export elsewhere.\n`,
    );
    return 1;
  }
  const failed = writeOut(target, file.body, cmd);
  if (failed !== null) {
    io.err(`refused: cannot-write: ${makeVisible(failed, { showNewlines: true })}\n`);
    return 1;
  }
  io.err(`wrote ${makeVisible(target, { showNewlines: true })} (${file.body.length} characters)\n`);
  return 0;
}

/**
 * Writes the export; null when written, else why not and what to do, in words. Every file
 * system error is a refusal: --out is typed by a person, and a stack trace helps nobody.
 */
function writeOut(target: string, body: string, cmd: ExportCommand): string | null {
  try {
    writeFileSync(target, body);
    return null;
  } catch (e) {
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
