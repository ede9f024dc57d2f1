// The Pi pin and the seal (seed: Choices, Seal and Engine command). In a checkout the pin is
// read from the lock files under the pin root; where this package is installed (no lock of
// ours), from the Pi that Node resolves and a digest of its files (package-files.ts). The seal is
// an allow-list over Pi's own argument parser
// (pi-coding-agent 0.85.1 dist/cli/args.js, cited as `args.js <line>`). Nothing here spawns.
// Refuses `engine-pin-mismatch` and `unsealed-engine` by throwing ControlRefusal.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { ControlRefusal } from "../../refusal.ts";
import { digestPackageFiles, PACKAGE_ROOT, resolvePackageDir } from "../package-files.ts";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
export const PI_VERSION = "0.85.1";
/** From this package's package-lock.json; a test checks the two agree. */
export const PI_INTEGRITY =
  "sha512-FGRN+OHbWaefBPGaTggAdLjrIHW+s2PzLyglz/5dfLzb9of7uuXMXYC0fJIeZTw+shS32o2cuQ9jF7YSDuL/oQ==";
/**
 * digestPackageFiles of the Pi that package-lock.json installs (its tarball checked by npm
 * against PI_INTEGRITY); a test recomputes it from the checkout's node_modules.
 */
export const PI_FILES_DIGEST = "80e18c9001ac3142ac61d4e23404a1d51fa3a816304c90e88bef8ce473614f54";
/** What to do about a pin mismatch, said once in every refusal. */
const REINSTALL =
  "reinstall it: npm ci in a checkout, or npm install @mosaic/conversation where it is installed";

const LOCK_KEY = `node_modules/${PI_PACKAGE}`;

/**
 * The Pi versions the controller runs (issue 16), each pinned like 0.85.1: its directory under
 * node_modules (1.6.0 is installed under an npm alias, so both can be present), the integrity
 * package-lock.json records, the digest of its files (the installed layout), and the flags its
 * seal adds. `PI_VERSION` stays the default. A test checks every row against the lock and the
 * files.
 */
export const PI_VERSIONS = ["0.85.1", "1.6.0"] as const;
export type PiVersion = (typeof PI_VERSIONS)[number];

export type PiVersionPin = {
  version: PiVersion;
  /** Where npm installs it: `node_modules/<dir>` (an alias for any but the default). */
  dir: string;
  integrity: string;
  filesDigest: string;
  /**
   * Flags this version's seal requires besides the common ones. 1.6.0's parser adds
   * `--no-mcp` (1.6.0 args.js 163): without it the built-in MCP extension is enabled
   * (main.js 697 `disabledBuiltinExtensions`), and --no-extensions names only the others.
   */
  sealFlags: readonly string[];
};

export const PI_PINS: Readonly<Record<PiVersion, PiVersionPin>> = {
  "0.85.1": {
    version: "0.85.1",
    dir: PI_PACKAGE,
    integrity: PI_INTEGRITY,
    filesDigest: PI_FILES_DIGEST,
    sealFlags: [],
  },
  "1.6.0": {
    version: "1.6.0",
    dir: "pi-coding-agent-1.6.0",
    integrity:
      "sha512-zX1BVEsshx7A2MRuQ6jfr3RJGWw4Wn+vLq5ZfmlvS1RskhRmByaSZVXH/zcwRrWHO7qPgs98pNCbPOEti/t0fQ==",
    filesDigest: "f851b7d5c91e28201b5d3cfbbf0e84dc3dd59fe55b38edc4dca0f08a12c16365",
    sealFlags: ["--no-mcp"],
  },
};

export function isPiVersion(v: unknown): v is PiVersion {
  return (PI_VERSIONS as readonly unknown[]).includes(v);
}

/** The pin row of `version`; refuses `configuration` for a version not in PI_VERSIONS. */
export function piVersionPin(version: string = PI_VERSION): PiVersionPin {
  if (!isPiVersion(version)) {
    throw new ControlRefusal(
      "configuration",
      `Pi ${JSON.stringify(version)} is not pinned; the controller runs ${PI_VERSIONS.join(" or ")}`,
    );
  }
  return PI_PINS[version];
}
const CLI_IN_PACKAGE = ["dist", "bundle", "cli.js"];

export type Pin = {
  name: string;
  version: string;
  integrity: string;
  resolved?: string;
  /** "checkout": a package-lock.json at the pin root vouches; "installed": the files' digest. */
  layout: "checkout" | "installed";
  /** Pi's package directory: the engine runs its dist/bundle/cli.js. */
  location: string;
};

function pinRefusal(message: string): ControlRefusal {
  return new ControlRefusal("engine-pin-mismatch", message);
}

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw pinRefusal(`${what} is unreadable: ${errnoOf(e)}`);
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
function lockEntry(
  file: string,
  what: string,
  key: string = LOCK_KEY,
  want: PiVersionPin = PI_PINS[PI_VERSION],
): LockPin {
  const lock = readJson(file, what);
  const packages = isRecord(lock) ? lock.packages : undefined;
  if (!isRecord(packages)) throw pinRefusal(`${what} has no "packages" map (lockfile v2 or later)`);
  const entry = packages[key];
  if (!isRecord(entry)) throw pinRefusal(`${what} has no entry for ${key}`);
  if (entry.link === true) throw pinRefusal(`${what} links ${PI_PACKAGE} instead of installing it`);
  // A `name` field means an npm alias: another package installed under Pi's directory.
  if (entry.name !== undefined && entry.name !== PI_PACKAGE) {
    throw pinRefusal(`${what} installs ${JSON.stringify(entry.name)} as ${PI_PACKAGE}`);
  }
  if (entry.version !== want.version) {
    throw pinRefusal(
      `${what} pins ${PI_PACKAGE} ${JSON.stringify(entry.version)}, not ${want.version}`,
    );
  }
  if (typeof entry.integrity !== "string") throw pinRefusal(`${what} has no integrity for Pi`);
  if (entry.integrity !== want.integrity) {
    throw pinRefusal(`${what} has integrity ${entry.integrity}, not the pinned ${want.integrity}`);
  }
  const pin: LockPin = { name: PI_PACKAGE, version: want.version, integrity: want.integrity };
  if (typeof entry.resolved === "string") pin.resolved = entry.resolved;
  return pin;
}

type LockPin = Omit<Pin, "layout" | "location">;

/**
 * The Pi pin for the package at `pinRoot`. Two layouts:
 *
 * - **checkout** (`<pinRoot>/package-lock.json` exists): that lock is authoritative (it is what
 *   `npm ci` installs); npm's hidden lockfile `node_modules/.package-lock.json`, when present,
 *   must agree on version and integrity; the installed package.json must name the pinned
 *   package and version. Pi is `<pinRoot>/node_modules/@earendil-works/pi-coding-agent`.
 * - **installed** (no lock: the package as npm installs it, in a project or a global prefix):
 *   Pi is where Node resolves it from `pinRoot`; its package.json must name the pinned
 *   package and version, its files must digest to PI_FILES_DIGEST, and every npm hidden
 *   lockfile above it that lists it must agree on version and integrity.
 *
 * Refuses `engine-pin-mismatch` otherwise, saying what differs and how to reinstall.
 */
export function readPin(pinRoot: string = PACKAGE_ROOT, version: string = PI_VERSION): Pin {
  const want = piVersionPin(version);
  try {
    return existsSync(join(pinRoot, "package-lock.json"))
      ? readCheckoutPin(pinRoot, want)
      : readInstalledPin(pinRoot, want);
  } catch (e) {
    if (e instanceof ControlRefusal && e.code === "engine-pin-mismatch") {
      throw pinRefusal(`${e.message}; ${REINSTALL}`);
    }
    throw e;
  }
}

function readCheckoutPin(pinRoot: string, want: PiVersionPin): Pin {
  const key = `node_modules/${want.dir}`;
  const pin = lockEntry(join(pinRoot, "package-lock.json"), "package-lock.json", key, want);
  const hidden = join(pinRoot, "node_modules", ".package-lock.json");
  if (existsSync(hidden)) {
    const installed = lockEntry(hidden, "node_modules/.package-lock.json", key, want);
    if (installed.resolved !== undefined && installed.resolved !== pin.resolved) {
      throw pinRefusal(
        "node_modules/.package-lock.json resolves Pi elsewhere than package-lock.json",
      );
    }
  }
  const location = join(pinRoot, key);
  checkManifest(location, `${key}/package.json`, want);
  return { ...pin, layout: "checkout", location };
}

function readInstalledPin(pinRoot: string, want: PiVersionPin): Pin {
  const location = resolvePackageDir(pinRoot, want.dir);
  if (location === null) {
    throw pinRefusal(
      `no package-lock.json at ${pinRoot}, and ${want.dir} is not installed where Node looks from there`,
    );
  }
  checkManifest(location, `${location}/package.json`, want);
  let listing: ReturnType<typeof digestPackageFiles>;
  try {
    listing = digestPackageFiles(location);
  } catch (e) {
    throw pinRefusal(`the files of ${location} are unreadable: ${errnoOf(e)}`);
  }
  if (listing.digest !== want.filesDigest) {
    throw pinRefusal(
      `the files of ${PI_PACKAGE} at ${location} differ from the pinned ${want.version} ` +
        `(a file was changed, added or removed: digest ${listing.digest}, pinned ${want.filesDigest})`,
    );
  }
  let integrity: string | undefined;
  for (const { file, key } of hiddenLockfilesAbove(location)) {
    if (!existsSync(file)) continue;
    const lock = readJson(file, file);
    const packages = isRecord(lock) ? lock.packages : undefined;
    // A hidden lockfile that doesn't list this directory describes another tree.
    if (!isRecord(packages) || !isRecord(packages[key])) continue;
    integrity = lockEntry(file, file, key, want).integrity;
  }
  return {
    name: PI_PACKAGE,
    version: want.version,
    integrity: integrity ?? want.integrity,
    layout: "installed",
    location,
  };
}

/** npm's hidden lockfile of each node_modules tree that `location` is inside, with its key. */
function hiddenLockfilesAbove(location: string): { file: string; key: string }[] {
  const found: { file: string; key: string }[] = [];
  const parts = location.split(sep);
  for (let i = parts.length - 1; i > 0; i--) {
    if (parts[i] !== "node_modules") continue;
    const owner = parts.slice(0, i).join(sep) || sep;
    const key = relative(owner, location).split(sep).join("/");
    found.push({ file: join(owner, "node_modules", ".package-lock.json"), key });
  }
  return found;
}

function checkManifest(location: string, what: string, want: PiVersionPin): void {
  const manifest = readJson(join(location, "package.json"), what);
  if (!isRecord(manifest) || manifest.name !== PI_PACKAGE || manifest.version !== want.version) {
    const found = isRecord(manifest) ? `${String(manifest.name)}@${String(manifest.version)}` : "?";
    throw pinRefusal(`installed ${what} is ${found}, not ${PI_PACKAGE}@${want.version}`);
  }
}

function errnoOf(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? String(e);
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
export function checkSeal(argv: readonly string[], version: string = PI_VERSION): SealedArgs {
  const required = [...REQUIRED_FLAGS, ...piVersionPin(version).sealFlags];
  const seen = new Set<string>();
  let mode: string | undefined;
  let session: string | undefined;
  const extras: Partial<Record<(typeof EXTRA_FLAGS)[number], string>> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const shown = JSON.stringify(arg);
    const takesValue = arg === "--mode" || arg === "--session" || isExtraFlag(arg);
    if (!takesValue && !required.includes(arg)) {
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
  for (const flag of required) {
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
  /** The Pi version whose seal applies (its extra flags follow SEALED_ARGS). Default 0.85.1. */
  piVersion?: string | undefined;
}): string[] {
  const version = options.piVersion ?? PI_VERSION;
  const argv = [
    ...SEALED_ARGS,
    ...piVersionPin(version).sealFlags,
    "--session",
    options.sessionFile,
    ...(options.extraArgs ?? []),
  ];
  checkSeal(argv, version);
  return argv;
}

export type EngineOptions = {
  /** Pi's arguments: checked by checkSeal. */
  argv: readonly string[];
  pinRoot?: string | undefined;
  /** Test hook (the fake engine). Default: this Node, `process.execPath`. */
  command?: string | undefined;
  /** Test hook. Default: `[<Pi's directory (readPin)>/dist/bundle/cli.js]`. */
  preArgs?: readonly string[] | undefined;
  /** Which pinned Pi runs (PI_VERSIONS); default PI_VERSION, 0.85.1. */
  piVersion?: string | undefined;
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

/**
 * The pinned Pi's CLI for a pin root: under its node_modules in a checkout, else where Node
 * resolves Pi from it (readPin checks that directory).
 */
export function piCliPath(pinRoot: string = PACKAGE_ROOT, version: string = PI_VERSION): string {
  const dir = piVersionPin(version).dir;
  const checkout = existsSync(join(pinRoot, "package-lock.json"));
  const location = checkout ? null : resolvePackageDir(pinRoot, dir);
  return join(location ?? join(pinRoot, "node_modules", dir), ...CLI_IN_PACKAGE);
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
  const version = options.piVersion ?? PI_VERSION;
  const pin = readPin(pinRoot, version);
  const argv = [...options.argv];
  const sealed = checkSeal(argv, version);
  const cli = join(pin.location, ...CLI_IN_PACKAGE);
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
export function bindEngine(
  options: EngineOptions,
  atConstruction: { argvDigest: string; pin: { integrity: string } },
): EngineCommand {
  const now = engineCommand(options);
  if (now.argvDigest !== atConstruction.argvDigest) {
    throw unsealed("the engine command line changed between construction and bind");
  }
  if (now.pin.integrity !== atConstruction.pin.integrity) {
    throw pinRefusal("the Pi pin changed between construction and bind");
  }
  return now;
}
