// `conversation export <id> [--branch B] --format md|html|json [--out F]`: one branch as a
// file (src/export renders it). Without --out it goes to stdout. --out never names a place
// inside a source's sessions directory: an export must not land among (or over) session files.
import { realpathSync, writeFileSync } from "node:fs";
import { dirname, resolve, sep } from "node:path";
import { type ExportFormat, readBranchExport, renderExport } from "../export/index.ts";
import type { Reader } from "../reader/reader.ts";
import type { Root } from "../reader/sources.ts";
import { sourceDirOf } from "../search/cache-dir.ts";
import type { SourceFlags } from "./config.ts";
import type { Io } from "./io.ts";
import { makeVisible } from "./visible.ts";

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
    const { code, message } = read.refusal;
    io.err(`refused: ${makeVisible(code)}: ${makeVisible(message, { showNewlines: true })}\n`);
    return 1;
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
  writeFileSync(target, file.body);
  io.err(`wrote ${makeVisible(target, { showNewlines: true })} (${file.body.length} characters)\n`);
  return 0;
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
