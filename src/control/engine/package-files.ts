// Where a pinned engine package is installed, as Node resolves it from this package, and a
// digest of its files. Used by the pins (pi/pi-pin.ts) when this package is installed (a
// consumer project or a global prefix), where no lock file of ours exists. Reads only; a file it
// can't read is a mismatch, never skipped.
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** This package's root: src/control/engine/ (or dist/control/engine/ once built) is three levels down. */
export const PACKAGE_ROOT = resolve(fileURLToPath(new URL("../../../", import.meta.url)));

/**
 * The first `<dir>/node_modules/<name>` holding a package.json, for `dir` from `from` up to
 * the file system's root, skipping directories that are themselves `node_modules` (Node's
 * own lookup for a bare specifier, modules.md "Loading from node_modules folders"). Null if
 * none.
 */
export function resolvePackageDir(from: string, name: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    if (basename(dir) !== "node_modules") {
      const candidate = join(dir, "node_modules", ...name.split("/"));
      if (existsSync(join(candidate, "package.json"))) return candidate;
    }
    if (dirname(dir) === dir) return null;
  }
}

export type FileListing = {
  /** sha256 (hex) of the listing, the pin's PI_FILES_DIGEST. */
  digest: string;
  files: number;
};

/**
 * The digest of a package directory's files: one line per entry, `<sha256 hex>  <path>\n`
 * (the `sha256sum` format), sorted by path, hashed with sha256. The package's own top-level
 * `node_modules` is left out: it holds Pi's dependencies, installed by npm per layout. A
 * symlink is listed as `link:<target>` (a tarball from the registry has none), and any other
 * non-file as its kind, so either changes the digest.
 */
export function digestPackageFiles(dir: string): FileListing {
  const lines: string[] = [];
  const walk = (abs: string, rel: string) => {
    for (const name of readdirSync(abs).sort()) {
      if (rel === "" && name === "node_modules") continue;
      const path = join(abs, name);
      const shown = rel === "" ? name : `${rel}/${name}`;
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path, shown);
      else if (stat.isFile()) {
        const sum = createHash("sha256").update(readFileSync(path)).digest("hex");
        lines.push(`${sum}  ${shown}\n`);
      } else if (stat.isSymbolicLink()) lines.push(`link:${readlinkSync(path)}  ${shown}\n`);
      else lines.push(`special  ${shown}\n`);
    }
  };
  walk(dir, "");
  lines.sort((a, b) => {
    const pa = a.slice(a.indexOf("  ") + 2);
    const pb = b.slice(b.indexOf("  ") + 2);
    return pa < pb ? -1 : pa > pb ? 1 : 0;
  });
  const digest = createHash("sha256").update(lines.join("")).digest("hex");
  return { digest, files: lines.length };
}
