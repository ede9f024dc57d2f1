// The Pi pin and the seal (seed: Choices, Seal and Engine command). The pin is read only from the
// lock files under the pin root; the seal is an allow-list over Pi's own argument parser
// (pi-coding-agent 0.85.1 dist/cli/args.js, cited as `args.js <line>`). Nothing here spawns.
// Refuses `engine-pin-mismatch` and `unsealed-engine` by throwing ControlRefusal.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ControlRefusal } from "../refusal.ts";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
export const PI_VERSION = "0.85.1";
/** From this package's package-lock.json; a test checks the two agree. */
export const PI_INTEGRITY =
  "sha512-FGRN+OHbWaefBPGaTggAdLjrIHW+s2PzLyglz/5dfLzb9of7uuXMXYC0fJIeZTw+shS32o2cuQ9jF7YSDuL/oQ==";

const LOCK_KEY = `node_modules/${PI_PACKAGE}`;
const CLI_PATH = ["node_modules", ...PI_PACKAGE.split("/"), "dist", "bundle", "cli.js"];

/** This package's root: src/control/ (or dist/control/ once built) is two levels down. */
export const PACKAGE_ROOT = resolve(fileURLToPath(new URL("../../../", import.meta.url)));

export type Pin = { name: string; version: string; integrity: string; resolved?: string };

function pinRefusal(message: string): ControlRefusal {
  return new ControlRefusal("engine-pin-mismatch", message);
}

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw pinRefusal(`${what} is unreadable: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    // The parse error's text adds nothing a reader of the refusal needs.
    throw pinRefusal(`${what} is not JSON`);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Pi's entry in one lockfile-v2/v3 `packages` map, checked against the pin. */
function lockEntry(file: string, what: string): Pin {
  const lock = readJson(file, what);
  const packages = isRecord(lock) ? lock.packages : undefined;
  if (!isRecord(packages)) throw pinRefusal(`${what} has no "packages" map (lockfile v2 or later)`);
  const entry = packages[LOCK_KEY];
  if (!isRecord(entry)) throw pinRefusal(`${what} has no entry for ${LOCK_KEY}`);
  if (entry.link === true) throw pinRefusal(`${what} links ${PI_PACKAGE} instead of installing it`);
  // A `name` field means an npm alias: another package installed under Pi's directory.
  if (entry.name !== undefined && entry.name !== PI_PACKAGE) {
    throw pinRefusal(`${what} installs ${JSON.stringify(entry.name)} as ${PI_PACKAGE}`);
  }
  if (entry.version !== PI_VERSION) {
    throw pinRefusal(
      `${what} pins ${PI_PACKAGE} ${JSON.stringify(entry.version)}, not ${PI_VERSION}`,
    );
  }
  if (typeof entry.integrity !== "string") throw pinRefusal(`${what} has no integrity for Pi`);
  if (entry.integrity !== PI_INTEGRITY) {
    throw pinRefusal(`${what} has integrity ${entry.integrity}, not the pinned ${PI_INTEGRITY}`);
  }
  const pin: Pin = { name: PI_PACKAGE, version: PI_VERSION, integrity: PI_INTEGRITY };
  if (typeof entry.resolved === "string") pin.resolved = entry.resolved;
  return pin;
}

/**
 * The Pi pin under `pinRoot`. `package-lock.json` is authoritative (it is what `npm ci` installs);
 * npm's hidden lockfile `node_modules/.package-lock.json` describes the installed tree and, when
 * present, must agree on version and integrity. The installed package.json must name the same
 * package and version. Refuses `engine-pin-mismatch` otherwise.
 */
export function readPin(pinRoot: string = PACKAGE_ROOT): Pin {
  const pin = lockEntry(join(pinRoot, "package-lock.json"), "package-lock.json");
  const hidden = join(pinRoot, "node_modules", ".package-lock.json");
  if (existsSync(hidden)) {
    const installed = lockEntry(hidden, "node_modules/.package-lock.json");
    if (installed.resolved !== undefined && installed.resolved !== pin.resolved) {
      throw pinRefusal(
        "node_modules/.package-lock.json resolves Pi elsewhere than package-lock.json",
      );
    }
  }
  const manifest = readJson(join(pinRoot, LOCK_KEY, "package.json"), `${LOCK_KEY}/package.json`);
  if (!isRecord(manifest) || manifest.name !== PI_PACKAGE || manifest.version !== PI_VERSION) {
    const found = isRecord(manifest) ? `${String(manifest.name)}@${String(manifest.version)}` : "?";
    throw pinRefusal(`installed ${LOCK_KEY} is ${found}, not ${PI_PACKAGE}@${PI_VERSION}`);
  }
  return pin;
}

export const SEALED_ARGS = [
  "--mode",
  "rpc",
  "--no-extensions",
  "--no-prompt-templates",
  "--no-themes",
  "--offline",
] as const;

/** The flags the seal requires, each exactly once (`--mode` and `--session` take a value). */
const REQUIRED_FLAGS = ["--no-extensions", "--no-prompt-templates", "--no-themes", "--offline"];
/** The only flags extraArgs may carry, each at most once with one plain value. */
export const EXTRA_FLAGS = ["--model", "--provider", "--thinking"] as const;
/** args.js 6: Pi only warns on another level (args.js 112-122); the seal refuses it. */
const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/**
 * Every other flag Pi's parser knows (args.js 14-242), and why the seal refuses it. Anything not
 * listed and not allowed is refused too: see `classifyUnknown`.
 */
export const REFUSED_PI_FLAGS: Readonly<Record<string, string>> = {
  "--": "makes every later argument a prompt or @file (args.js 23-33)",
  "--help": "prints help instead of running (args.js 34)",
  "-h": "prints help instead of running (args.js 34)",
  "--version": "prints the version and exits (args.js 37; main.js 483-486)",
  "-v": "prints the version and exits (args.js 37; main.js 483-486)",
  "--continue": "continues the most recent session instead of --session (args.js 46)",
  "-c": "continues the most recent session instead of --session (args.js 46)",
  "--resume": "opens a session picker instead of --session (args.js 49)",
  "-r": "opens a session picker instead of --session (args.js 49)",
  "--api-key": "puts a credential on the command line (args.js 58)",
  "--system-prompt": "replaces the system prompt (args.js 61)",
  "--append-system-prompt": "adds to the system prompt (args.js 64)",
  "--name": "names the session (args.js 68)",
  "-n": "names the session (args.js 68)",
  "--no-session": "runs without the session file (args.js 76)",
  "--session-id": "selects a session by id (args.js 82)",
  "--fork": "forks another session into a new file (args.js 85)",
  "--session-dir": "moves the session directory (args.js 88)",
  "--models": "changes the model scope (args.js 91)",
  "--no-tools": "changes the tool set (args.js 94)",
  "-nt": "changes the tool set (args.js 94)",
  "--no-builtin-tools": "changes the tool set (args.js 97)",
  "-nbt": "changes the tool set (args.js 97)",
  "--tools": "changes the tool set (args.js 100)",
  "-t": "changes the tool set (args.js 100)",
  "--exclude-tools": "changes the tool set (args.js 106)",
  "-xt": "changes the tool set (args.js 106)",
  "--print": "runs print mode and takes a prompt (args.js 124-131)",
  "-p": "runs print mode and takes a prompt (args.js 124-131)",
  "--export": "exports a session to HTML and exits (args.js 132; main.js 487-500)",
  "--extension": "loads an extension (args.js 135)",
  "-e": "loads an extension (args.js 135)",
  "-ne": "is the short form of --no-extensions; the seal takes only the long form (args.js 139)",
  "--skill": "loads a skill (args.js 142)",
  "--prompt-template": "loads a prompt template (args.js 146)",
  "--theme": "loads a theme (args.js 150)",
  "--use-theme": "selects a theme (args.js 154)",
  "--no-skills": "is not in the seal's allow-list (args.js 164)",
  "-ns": "is not in the seal's allow-list (args.js 164)",
  "-np":
    "is the short form of --no-prompt-templates; the seal takes only the long form (args.js 167)",
  "--no-context-files": "is not in the seal's allow-list (args.js 173)",
  "-nc": "is not in the seal's allow-list (args.js 173)",
  "--list-models": "lists models and exits (args.js 176)",
  "--tui-mode": "is an interactive-mode option (args.js 185)",
  "--verbose": "is not in the seal's allow-list (args.js 202)",
  "--approve": "overrides project trust (args.js 205)",
  "-a": "overrides project trust (args.js 205)",
  "--no-approve": "overrides project trust (args.js 208)",
  "-na": "overrides project trust (args.js 208)",
};

/** Why an argument Pi's parser has no case for is refused. */
function classifyUnknown(arg: string): string {
  if (arg.startsWith("@")) return "is an @file argument (args.js 214)";
  if (arg.startsWith("--") && arg.includes("=")) {
    return "is not Pi's flag: Pi has no --flag=value form and hands it to extensions (args.js 217-221)";
  }
  if (arg.startsWith("--"))
    return "is an extension flag, which may take the next word (args.js 222-231)";
  if (arg.startsWith("-")) return "is an unknown option, and Pi exits (args.js 234-235)";
  return "is a bare word, which Pi reads as a prompt (args.js 237-238)";
}

function unsealed(message: string): ControlRefusal {
  return new ControlRefusal("unsealed-engine", message);
}

/** A value Pi's parser takes as a value and not as a flag, @file or extension flag value. */
function isPlainValue(v: string | undefined): v is string {
  return v !== undefined && v.length > 0 && !v.startsWith("-") && !v.startsWith("@");
}

export type SealedArgs = {
  sessionFile: string;
  model?: string;
  provider?: string;
  thinking?: string;
};

/**
 * Checks an argv against the seal's allow-list and returns what it carries: `--mode rpc` and
 * `--session <absolute normalized path>` exactly once, each of `--no-extensions`,
 * `--no-prompt-templates`, `--no-themes`, `--offline` exactly once, and `--model`, `--provider`,
 * `--thinking` at most once with one plain value. Order is free. Anything else refuses
 * `unsealed-engine`, naming the argument.
 */
export function checkSeal(argv: readonly string[]): SealedArgs {
  const seen = new Set<string>();
  let mode: string | undefined;
  let session: string | undefined;
  const extras: Partial<Record<(typeof EXTRA_FLAGS)[number], string>> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const shown = JSON.stringify(arg);
    const takesValue = arg === "--mode" || arg === "--session" || isExtraFlag(arg);
    if (!takesValue && !REQUIRED_FLAGS.includes(arg)) {
      const known = Object.hasOwn(REFUSED_PI_FLAGS, arg) ? REFUSED_PI_FLAGS[arg] : undefined;
      throw unsealed(`${shown} ${known ?? classifyUnknown(arg)}`);
    }
    // Pi keeps the last of a repeated flag (args.js 40-81), so a second one could undo the first.
    if (seen.has(arg)) throw unsealed(`a second ${shown}: Pi would keep the last one`);
    seen.add(arg);
    if (!takesValue) continue;
    const value = argv[++i];
    if (arg === "--mode") {
      if (value !== "rpc") throw unsealed(`"--mode" must be "rpc", not ${JSON.stringify(value)}`);
      mode = value;
    } else if (arg === "--session") {
      // args.js 79 takes the next word whatever it is; a path with "/" is a file (main.js 191-210).
      if (value === undefined || !isAbsolute(value) || resolve(value) !== value) {
        throw unsealed(
          `"--session" needs an absolute normalized path, not ${JSON.stringify(value)}`,
        );
      }
      session = value;
    } else if (isExtraFlag(arg)) {
      if (!isPlainValue(value)) {
        throw unsealed(`${shown} needs one plain value, not ${JSON.stringify(value)}`);
      }
      if (arg === "--thinking" && !THINKING_LEVELS.includes(value)) {
        throw unsealed(`"--thinking" must be one of ${THINKING_LEVELS.join(", ")}, not ${value}`);
      }
      extras[arg] = value;
    }
  }
  for (const flag of REQUIRED_FLAGS) {
    if (!seen.has(flag)) throw unsealed(`${JSON.stringify(flag)} is missing`);
  }
  if (mode === undefined) throw unsealed(`"--mode rpc" is missing`);
  if (session === undefined) throw unsealed(`"--session <absolute file>" is missing`);
  const sealed: SealedArgs = { sessionFile: session };
  if (extras["--model"] !== undefined) sealed.model = extras["--model"];
  if (extras["--provider"] !== undefined) sealed.provider = extras["--provider"];
  if (extras["--thinking"] !== undefined) sealed.thinking = extras["--thinking"];
  return sealed;
}

function isExtraFlag(arg: string): arg is (typeof EXTRA_FLAGS)[number] {
  return (EXTRA_FLAGS as readonly string[]).includes(arg);
}

/** The sealed argv: SEALED_ARGS, `--session <file>`, then extraArgs. Refuses as checkSeal does. */
export function sealedArgv(options: {
  sessionFile: string;
  extraArgs?: readonly string[] | undefined;
}): string[] {
  const argv = [...SEALED_ARGS, "--session", options.sessionFile, ...(options.extraArgs ?? [])];
  checkSeal(argv);
  return argv;
}

export type EngineOptions = {
  /** Pi's arguments: checked by checkSeal. */
  argv: readonly string[];
  pinRoot?: string | undefined;
  /** Test hook (the fake engine). Default: this Node, `process.execPath`. */
  command?: string | undefined;
  /** Test hook. Default: `[<pinRoot>/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js]`. */
  preArgs?: readonly string[] | undefined;
};

export type EngineCommand = {
  command: string;
  preArgs: readonly string[];
  argv: readonly string[];
  /** sha256 (hex) of JSON `[command, ...preArgs, ...argv]`: the full command line. */
  argvDigest: string;
  pin: Pin;
  sealed: SealedArgs;
  /** A command or preArgs other than the defaults: neither pin nor seal vouches for what runs. */
  testHook: boolean;
};

/** The pinned Pi's CLI under a pin root. */
export function piCliPath(pinRoot: string = PACKAGE_ROOT): string {
  return join(pinRoot, ...CLI_PATH);
}

function checkPreArgs(preArgs: readonly string[], cli: string): void {
  for (const [i, arg] of preArgs.entries()) {
    if (arg === "-e" || arg === "--extension" || arg.startsWith("--extension=")) {
      throw unsealed(`preArgs carry ${JSON.stringify(arg)}, which loads a Pi extension`);
    }
    // Pi's own arguments come only through argv, where checkSeal sees them.
    if (resolve(arg) === cli && i < preArgs.length - 1) {
      throw unsealed(`preArgs pass ${JSON.stringify(preArgs[i + 1])} to Pi outside the seal`);
    }
  }
}

/**
 * The engine's command line, checked: the pin (readPin), the seal (checkSeal), and preArgs. The
 * controller calls it at construction and calls bindEngine right before spawn. Refuses
 * `engine-pin-mismatch` or `unsealed-engine`.
 */
export function engineCommand(options: EngineOptions): EngineCommand {
  const pinRoot = resolve(options.pinRoot ?? PACKAGE_ROOT);
  const pin = readPin(pinRoot);
  const argv = [...options.argv];
  const sealed = checkSeal(argv);
  const cli = piCliPath(pinRoot);
  const command = options.command ?? process.execPath;
  const preArgs = [...(options.preArgs ?? [cli])];
  checkPreArgs(preArgs, cli);
  const testHook =
    command !== process.execPath || preArgs.length !== 1 || resolve(preArgs[0] ?? "") !== cli;
  if (!testHook && !existsSync(cli)) throw pinRefusal(`the pinned Pi has no ${cli}`);
  const argvDigest = createHash("sha256")
    .update(JSON.stringify([command, ...preArgs, ...argv]))
    .digest("hex");
  return { command, preArgs, argv, argvDigest, pin, sealed, testHook };
}

/**
 * The check at bind, right before spawn: engineCommand again, which must give the command line
 * and pin recorded at construction. Refuses `unsealed-engine` if the command line changed,
 * `engine-pin-mismatch` if the pin did, and whatever engineCommand refuses.
 */
export function bindEngine(options: EngineOptions, atConstruction: EngineCommand): EngineCommand {
  const now = engineCommand(options);
  if (now.argvDigest !== atConstruction.argvDigest) {
    throw unsealed("the engine command line changed between construction and bind");
  }
  if (now.pin.integrity !== atConstruction.pin.integrity) {
    throw pinRefusal("the Pi pin changed between construction and bind");
  }
  return now;
}
