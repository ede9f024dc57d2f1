// Claude Code's pin and seal (docs/claude-control.md). One exact version, 2.1.328: its package
// and its platform binary are found under the pin root's node_modules (this package's own
// install by default, a dev dependency), their versions read and the binary's SHA-256 compared
// with the one this build was checked against; any other version is refused, naming the one
// supported. The seal is a fixed argv: headless stream-json both ways, no setting source but
// the seat's own `--settings` file, no MCP server, safe mode (no CLAUDE.md, skills, plugins,
// hooks, custom commands or agents), no slash commands, permission prompts to the controller
// over stdio; the only flag a caller may add is `--model`.
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { ControlRefusal } from "../../refusal.ts";
import type { EngineCommandBase } from "../harness.ts";
import { PACKAGE_ROOT } from "../package-files.ts";

export const CLAUDE_PACKAGE = "@anthropic-ai/claude-code";
export const CLAUDE_VERSION = "2.1.328";
/** The package npm installs the native binary from on this platform. */
export const CLAUDE_PLATFORM_PACKAGE = "@anthropic-ai/claude-code-linux-x64";
/** SHA-256 of 2.1.328's linux-x64 `bin/claude.exe`, as installed (install.cjs copies it there). */
export const CLAUDE_BINARY_SHA256 =
  "a982d38030b97e750848add2cbb2df6d9a70d5544a22ca9b216a349ba25865e8";

/** Flags a caller may add, each with one value. */
export const CLAUDE_EXTRA_FLAGS = ["--model"] as const;

/** The binary the pin root holds. */
export function claudeBinPath(pinRoot: string = PACKAGE_ROOT): string {
  return join(pinRoot, "node_modules", CLAUDE_PACKAGE, "bin", "claude.exe");
}

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
  const known = digests.get(path);
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
  if (sameStamp(stampOf(path), stamp)) digests.set(path, { stamp, digest });
  return digest;
}

function versionOf(pinRoot: string, pkg: string): string | null {
  try {
    const v: unknown = JSON.parse(
      readFileSync(join(pinRoot, "node_modules", pkg, "package.json"), "utf8"),
    );
    const version = (v as { version?: unknown } | null)?.version;
    return typeof version === "string" ? version : null;
  } catch {
    // Not installed there, or not a package.json: the caller refuses with what to do.
    return null;
  }
}

export type ClaudePin = { binary: string; version: string; integrity: string };

/**
 * The pinned binary under `pinRoot`; refuses `engine-pin-mismatch` when the version asked, the
 * installed packages or the binary's bytes are not 2.1.328's.
 */
export function readClaudePin(pinRoot: string = PACKAGE_ROOT, version = CLAUDE_VERSION): ClaudePin {
  const fix = `install ${CLAUDE_PACKAGE}@${CLAUDE_VERSION} exactly (npm install --save-exact)`;
  if (version !== CLAUDE_VERSION) {
    throw new ControlRefusal(
      "engine-pin-mismatch",
      `Claude Code ${version} is not supported; this build runs ${CLAUDE_VERSION} only`,
    );
  }
  for (const pkg of [CLAUDE_PACKAGE, CLAUDE_PLATFORM_PACKAGE]) {
    const found = versionOf(pinRoot, pkg);
    if (found !== CLAUDE_VERSION) {
      throw new ControlRefusal(
        "engine-pin-mismatch",
        `${pkg} under ${pinRoot} is ${found ?? "not installed"}, not ${CLAUDE_VERSION}: ${fix}`,
      );
    }
  }
  const binary = claudeBinPath(pinRoot);
  let digest: string;
  try {
    digest = digestOfFile(binary);
  } catch (e) {
    throw new ControlRefusal(
      "engine-pin-mismatch",
      `Claude Code's binary ${binary} can't be read (${(e as NodeJS.ErrnoException).code}): ${fix}`,
    );
  }
  if (digest !== CLAUDE_BINARY_SHA256) {
    throw new ControlRefusal(
      "engine-pin-mismatch",
      `Claude Code's binary ${binary} is not ${CLAUDE_VERSION}'s (sha256 ${digest.slice(0, 16)}…): ${fix}`,
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
