// Claude Code's pin and seal (docs/claude-control.md). One exact version, 2.1.328: the user's
// own install (claude-install.ts: beside this package as Node resolves it, else `claude` on
// PATH; a dev dependency for the tests), its package and platform package versions read and
// the binary's SHA-256 compared with the one this build was checked against; any other version,
// or none, is refused, naming the one supported and what to install. The seal is a fixed argv:
// headless stream-json both ways, no setting source but the seat's own `--settings` file, no
// MCP server, safe mode (no CLAUDE.md, skills, plugins, hooks, custom commands or agents), no
// slash commands, permission prompts to the controller over stdio; the only flag a caller may
// add is `--model`.
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { ControlRefusal } from "../../refusal.ts";
import type { EngineCommandBase } from "../harness.ts";
import { PACKAGE_ROOT } from "../package-files.ts";
import { CLAUDE_PACKAGE, CLAUDE_PLATFORM_PACKAGE, findClaudeInstall } from "./claude-install.ts";

export { CLAUDE_PACKAGE, CLAUDE_PLATFORM_PACKAGE } from "./claude-install.ts";
export const CLAUDE_VERSION = "2.1.328";
/** SHA-256 of 2.1.328's linux-x64 `bin/claude.exe`, as installed (install.cjs copies it there). */
export const CLAUDE_BINARY_SHA256 =
  "a982d38030b97e750848add2cbb2df6d9a70d5544a22ca9b216a349ba25865e8";

/** Flags a caller may add, each with one value. */
export const CLAUDE_EXTRA_FLAGS = ["--model"] as const;

type Stamp = { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint };
/** Digests already taken, by the binary's identity: hashing 370 MB once per process is enough. */
const digests = new Map<string, { stamp: Stamp; digest: string }>();

function stampOf(path: string): Stamp {
  const s = statSync(path, { bigint: true });
  return { dev: s.dev, ino: s.ino, size: s.size, mtimeNs: s.mtimeNs };
}

const sameStamp = (a: Stamp, b: Stamp) =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs;

function digestOfFile(path: string): string {
  const stamp = stampOf(path);
  // By the file's identity, not its path: the same bytes reached by another link hash once.
  const key = `${stamp.dev}:${stamp.ino}`;
  const known = digests.get(key);
  if (known && sameStamp(known.stamp, stamp)) return known.digest;
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  const digest = hash.digest("hex");
  // The file may have changed while it was read: only a digest of one identity is kept.
  if (sameStamp(stampOf(path), stamp)) digests.set(key, { stamp, digest });
  return digest;
}

function versionOf(dir: string): string | null {
  try {
    const v: unknown = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const version = (v as { version?: unknown } | null)?.version;
    return typeof version === "string" ? version : null;
  } catch {
    // Not a package.json: the caller refuses with what to do.
    return null;
  }
}

export type ClaudePin = { binary: string; version: string; integrity: string };

/** What to install, said with every refusal of the pin. */
export const CLAUDE_INSTALL_FIX =
  `install Claude Code ${CLAUDE_VERSION} exactly: \`npm install --save-exact ` +
  `${CLAUDE_PACKAGE}@${CLAUDE_VERSION}\` in the project that installs this package (with a ` +
  "global install of this package, add -g), or put that version's claude on PATH";

/**
 * The pinned Claude Code this package runs: the user's own install, found from `pinRoot` (this
 * package's folder) or on `searchPath` (claude-install.ts); refuses `engine-pin-mismatch`, naming
 * 2.1.328 and what to install, when the version asked, the installed packages or the binary's
 * bytes are not 2.1.328's, or there is no install at all.
 */
export function readClaudePin(
  pinRoot: string = PACKAGE_ROOT,
  version = CLAUDE_VERSION,
  searchPath: string = process.env.PATH ?? "",
): ClaudePin {
  const refuse = (why: string) =>
    new ControlRefusal("engine-pin-mismatch", `${why}: ${CLAUDE_INSTALL_FIX}`);
  if (version !== CLAUDE_VERSION) {
    throw new ControlRefusal(
      "engine-pin-mismatch",
      `Claude Code ${version} is not supported; this build runs ${CLAUDE_VERSION} only`,
    );
  }
  const install = findClaudeInstall(pinRoot, searchPath);
  if (install === null) {
    throw refuse(
      `Claude Code is not installed: no ${CLAUDE_PACKAGE} beside this package (${pinRoot}) and no claude on PATH`,
    );
  }
  if (install.packageDir !== null) {
    const dirs: [string, string | null][] = [
      [CLAUDE_PACKAGE, install.packageDir],
      [CLAUDE_PLATFORM_PACKAGE, install.platformDir],
    ];
    for (const [pkg, dir] of dirs) {
      const found = dir === null ? null : versionOf(dir);
      if (found !== CLAUDE_VERSION) {
        const at = dir === null ? "" : ` at ${dir}`;
        throw refuse(
          `the Claude Code found ${install.how}: ${pkg}${at} is ${found ?? "not installed"}, not ${CLAUDE_VERSION}`,
        );
      }
    }
  }
  const binary = install.binary;
  let digest: string;
  try {
    digest = digestOfFile(binary);
  } catch (e) {
    throw refuse(
      `Claude Code's binary ${binary} (found ${install.how}) can't be read (${(e as NodeJS.ErrnoException).code})`,
    );
  }
  if (digest !== CLAUDE_BINARY_SHA256) {
    throw refuse(
      `Claude Code's binary ${binary} (found ${install.how}) is not ${CLAUDE_VERSION}'s (sha256 ${digest.slice(0, 16)}…)`,
    );
  }
  return { binary, version: CLAUDE_VERSION, integrity: `sha256-${CLAUDE_BINARY_SHA256}` };
}

/** How the engine opens its session: a new one under a chosen id, or the file that exists. */
export type SessionMode =
  | { kind: "new"; sessionId: string }
  | { kind: "resume"; sessionId: string };

/** The checked extra flags: `--model NAME` at most once. Refuses `unsealed-engine`. */
export function checkClaudeExtraArgs(extra: readonly string[] | undefined): string[] {
  const args = [...(extra ?? [])];
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i] as string;
    const value = args[i + 1];
    if (!(CLAUDE_EXTRA_FLAGS as readonly string[]).includes(flag)) {
      throw new ControlRefusal(
        "unsealed-engine",
        `${flag} is not a flag the seal allows (only ${CLAUDE_EXTRA_FLAGS.join(", ")})`,
      );
    }
    if (value === undefined || value === "" || value.startsWith("-") || out.includes(flag)) {
      throw new ControlRefusal("unsealed-engine", `${flag} takes one value, once`);
    }
    out.push(flag, value);
  }
  return out;
}

/** The sealed argv (after the binary). */
export function claudeSealedArgv(o: {
  mode: SessionMode;
  settingsFile: string | null;
  extraArgs?: readonly string[] | undefined;
}): string[] {
  return [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    // Each prompt is echoed back at its place in the stream: the prompt's acknowledgement.
    "--replay-user-messages",
    // No user, project or local settings: only the seat's own file, if any.
    "--setting-sources",
    "",
    ...(o.settingsFile === null ? [] : ["--settings", o.settingsFile]),
    "--strict-mcp-config",
    "--safe-mode",
    "--disable-slash-commands",
    "--permission-prompt-tool",
    "stdio",
    "--permission-mode",
    "manual",
    ...(o.mode.kind === "new"
      ? ["--session-id", o.mode.sessionId]
      : ["--resume", o.mode.sessionId]),
    ...checkClaudeExtraArgs(o.extraArgs),
  ];
}

/** The command line: the pinned binary (or a test hook's command), checked. */
export function claudeCommand(o: {
  argv: readonly string[];
  pinRoot?: string | undefined;
  version?: string | undefined;
  command?: string | undefined;
  preArgs?: readonly string[] | undefined;
}): EngineCommandBase {
  const pin = readClaudePin(o.pinRoot, o.version ?? CLAUDE_VERSION);
  const command = o.command ?? pin.binary;
  const preArgs = [...(o.preArgs ?? [])];
  const argv = [...o.argv];
  const argvDigest = createHash("sha256")
    .update(JSON.stringify([command, ...preArgs, ...argv]))
    .digest("hex");
  return {
    command,
    preArgs,
    argv,
    argvDigest,
    pin: { name: CLAUDE_PACKAGE, version: pin.version, integrity: pin.integrity },
    testHook: o.command !== undefined || preArgs.length > 0,
  };
}
