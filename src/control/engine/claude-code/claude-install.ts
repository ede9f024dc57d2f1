// Where the Claude Code a controller runs is installed (docs/claude-control.md, The user's own
// install). This package never carries Claude Code (its licence is Anthropic's own): for the
// tests it is a dev dependency, and where this package is installed the user installs it too.
// Found, in order: (1) `@anthropic-ai/claude-code` as Node would resolve it from this package's
// folder (its own node_modules, then each parent's: the dev dependency, a project that installs
// both, a global prefix holding both); (2) `claude` on PATH, resolved through its links to the
// npm package it belongs to, or to a lone binary (a native install). The platform package whose
// binary npm copies into `bin/claude.exe` is looked up the same way from the package found.
// Reads only; claude-pin.ts checks the versions and the binary's bytes.
import { accessSync, constants, existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";

export const CLAUDE_PACKAGE = "@anthropic-ai/claude-code";
/** The package npm installs the native binary from on this platform. */
export const CLAUDE_PLATFORM_PACKAGE = "@anthropic-ai/claude-code-linux-x64";

export type ClaudeInstall = {
  /** How it was found, for people: "beside this package" or "on PATH (<path>)". */
  how: string;
  /** The npm package's folder, or null for a lone binary. */
  packageDir: string | null;
  /** The platform package's folder, or null when none was found. */
  platformDir: string | null;
  /** The native binary that would run. */
  binary: string;
};

/** The folder of `pkg` as Node's node_modules lookup finds it from `from` upwards, or null. */
function resolveUp(from: string, pkg: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", pkg);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

/** The name a package.json gives, or null. */
function packageName(dir: string): string | null {
  try {
    const v: unknown = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const name = (v as { name?: unknown } | null)?.name;
    return typeof name === "string" ? name : null;
  } catch {
    // No package.json there, or not JSON: not a package folder.
    return null;
  }
}

/** `claude` on `searchPath`, resolved through its links; null when there is none. */
function claudeOnPath(searchPath: string): { link: string; real: string } | null {
  for (const dir of searchPath.split(delimiter)) {
    if (dir === "") continue;
    const link = join(dir, "claude");
    try {
      accessSync(link, constants.X_OK);
      const real = realpathSync(link);
      if (statSync(real).isFile()) return { link, real };
    } catch {
      // Not there, not executable, or a dangling link: the next PATH entry.
    }
  }
  return null;
}

function withPlatform(packageDir: string, how: string): ClaudeInstall {
  return {
    how,
    packageDir,
    platformDir: resolveUp(packageDir, CLAUDE_PLATFORM_PACKAGE),
    binary: join(packageDir, "bin", "claude.exe"),
  };
}

/**
 * The Claude Code install this package would run, from `pinRoot` (this package's folder) or
 * `searchPath` (PATH); null when there is none.
 */
export function findClaudeInstall(pinRoot: string, searchPath: string): ClaudeInstall | null {
  const beside = resolveUp(pinRoot, CLAUDE_PACKAGE);
  if (beside !== null) return withPlatform(beside, "beside this package");
  const found = claudeOnPath(searchPath);
  if (found === null) return null;
  const how = `on PATH (${found.link})`;
  // An npm install links `claude` to <package>/bin/claude.exe: the package is a few folders up.
  let dir = dirname(found.real);
  for (let i = 0; i < 3; i++, dir = dirname(dir)) {
    if (packageName(dir) === CLAUDE_PACKAGE) return withPlatform(dir, how);
  }
  return { how, packageDir: null, platformDir: null, binary: found.real };
}
