import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { digestPackageFiles, PACKAGE_ROOT } from "../../src/control/engine/package-files.ts";
import {
  bindEngine,
  checkSeal,
  EXTRA_FLAGS,
  engineCommand,
  PI_FILES_DIGEST,
  PI_INTEGRITY,
  PI_PACKAGE,
  PI_VERSION,
  piCliPath,
  REFUSED_PI_FLAGS,
  readPin,
  SEALED_ARGS,
  sealedArgv,
} from "../../src/control/engine/pi/pi-pin.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { tempDir } from "../helpers/reader.ts";

const SESSION = "/fixtures/demo/.pi/state/main/sessions/s.jsonl";
const LOCK_KEY = `node_modules/${PI_PACKAGE}`;

/** Asserts fn throws ControlRefusal `code` whose message contains each of `mentions`. */
function refuses(fn: () => unknown, code: string, ...mentions: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isControlRefusal(e), `expected a ControlRefusal, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const m of mentions) assert.ok(e.message.includes(m), `${e.message} lacks ${m}`);
    return true;
  });
}

const sealed = (...extra: string[]): string[] => [...SEALED_ARGS, "--session", SESSION, ...extra];
const without = (flag: string): string[] => sealed().filter((a) => a !== flag);

type Doctor = {
  entry?: Record<string, unknown> | null;
  hidden?: Record<string, unknown> | null;
  manifest?: Record<string, unknown> | null;
  lock?: string;
};

/** A pin root with a lock file, npm's hidden lockfile, Pi's package.json and its cli.js. */
function pinRoot(t: TestContext, doctor: Doctor = {}): string {
  const root = tempDir(t, "conv-pin-");
  const entry = { version: PI_VERSION, integrity: PI_INTEGRITY, dev: true, license: "MIT" };
  writeLock(root, "package-lock.json", doctor.entry === undefined ? entry : doctor.entry);
  if (doctor.lock !== undefined) writeFileSync(join(root, "package-lock.json"), doctor.lock);
  if (doctor.hidden !== null) {
    writeLock(root, "node_modules/.package-lock.json", doctor.hidden ?? entry);
  }
  const manifest = join(root, LOCK_KEY, "package.json");
  mkdirSync(dirname(manifest), { recursive: true });
  if (doctor.manifest !== null) {
    const m = doctor.manifest ?? { name: PI_PACKAGE, version: PI_VERSION };
    writeFileSync(manifest, JSON.stringify(m));
  }
  const cli = piCliPath(root);
  mkdirSync(dirname(cli), { recursive: true });
  writeFileSync(cli, "");
  return root;
}

function writeLock(root: string, rel: string, entry: Record<string, unknown> | null): void {
  const packages: Record<string, unknown> = { "": { name: "x", devDependencies: {} } };
  if (entry !== null) packages[LOCK_KEY] = entry;
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), JSON.stringify({ lockfileVersion: 3, packages }));
}

describe("pi-pin: the pin", () => {
  it("hard-codes the integrity that package-lock.json holds", () => {
    const lock = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package-lock.json"), "utf8"));
    assert.equal(lock.packages[LOCK_KEY].integrity, PI_INTEGRITY);
    assert.equal(lock.packages[LOCK_KEY].version, PI_VERSION);
    // A dependency, exactly: the package brings its engine wherever it is installed.
    assert.equal(lock.packages[""].dependencies[PI_PACKAGE], PI_VERSION);
  });

  it("hard-codes the file digest of the Pi that package-lock.json installed", () => {
    assert.equal(readPin().layout, "checkout");
    assert.equal(digestPackageFiles(join(PACKAGE_ROOT, LOCK_KEY)).digest, PI_FILES_DIGEST);
  });

  it("reads the pin from this package's root by default", () => {
    const pin = readPin();
    assert.equal(pin.name, PI_PACKAGE);
    assert.equal(pin.version, "0.85.1");
    assert.equal(pin.integrity, PI_INTEGRITY);
  });

  it("reads the pin under another pin root, with resolved when the lock has it", (t) => {
    const resolved = "https://registry.npmjs.org/x.tgz";
    const entry = { version: PI_VERSION, integrity: PI_INTEGRITY, resolved };
    const root = pinRoot(t, { entry, hidden: entry });
    assert.deepEqual(readPin(root), {
      name: PI_PACKAGE,
      version: PI_VERSION,
      integrity: PI_INTEGRITY,
      resolved,
      layout: "checkout",
      location: join(root, LOCK_KEY),
    });
  });

  it("reads the pin when there is no hidden lockfile", (t) => {
    assert.equal(readPin(pinRoot(t, { hidden: null })).version, PI_VERSION);
  });

  it("checks the files instead when package-lock.json is missing, and refuses a stand-in", (t) => {
    const root = pinRoot(t);
    rmSync(join(root, "package-lock.json"));
    refuses(() => readPin(root), "engine-pin-mismatch", "differ from the pinned", "reinstall");
  });

  it("refuses engine-pin-mismatch when package-lock.json is unreadable", (t) => {
    const root = pinRoot(t);
    rmSync(join(root, "package-lock.json"));
    mkdirSync(join(root, "package-lock.json"));
    refuses(() => readPin(root), "engine-pin-mismatch", "package-lock.json", "EISDIR");
  });

  it("refuses engine-pin-mismatch when package-lock.json is not JSON", (t) => {
    refuses(() => readPin(pinRoot(t, { lock: "{" })), "engine-pin-mismatch", "not JSON");
  });

  it("refuses engine-pin-mismatch when the lock has no packages map (lockfile v1)", (t) => {
    const root = pinRoot(t, { lock: JSON.stringify({ lockfileVersion: 1, dependencies: {} }) });
    refuses(() => readPin(root), "engine-pin-mismatch", "packages");
  });

  it("refuses engine-pin-mismatch when the lock has no entry for Pi", (t) => {
    refuses(() => readPin(pinRoot(t, { entry: null })), "engine-pin-mismatch", "no entry");
  });

  it("refuses engine-pin-mismatch when the lock pins another version", (t) => {
    const entry = { version: "0.85.2", integrity: PI_INTEGRITY };
    refuses(() => readPin(pinRoot(t, { entry })), "engine-pin-mismatch", '"0.85.2"');
  });

  it("refuses engine-pin-mismatch when the lock's integrity differs", (t) => {
    const entry = { version: PI_VERSION, integrity: "sha512-AAAA" };
    refuses(() => readPin(pinRoot(t, { entry })), "engine-pin-mismatch", "sha512-AAAA");
  });

  it("refuses engine-pin-mismatch when the lock has no integrity", (t) => {
    const entry = { version: PI_VERSION };
    refuses(() => readPin(pinRoot(t, { entry })), "engine-pin-mismatch", "no integrity");
  });

  it("refuses engine-pin-mismatch when the lock installs another package under Pi's name", (t) => {
    const entry = { name: "evil", version: PI_VERSION, integrity: PI_INTEGRITY };
    refuses(() => readPin(pinRoot(t, { entry })), "engine-pin-mismatch", '"evil"');
  });

  it("refuses engine-pin-mismatch when the lock links Pi instead of installing it", (t) => {
    const entry = { link: true, resolved: "../pi" };
    refuses(() => readPin(pinRoot(t, { entry })), "engine-pin-mismatch", "links");
  });

  it("refuses engine-pin-mismatch when the hidden lockfile disagrees on the version", (t) => {
    const hidden = { version: "0.86.0", integrity: PI_INTEGRITY };
    refuses(
      () => readPin(pinRoot(t, { hidden })),
      "engine-pin-mismatch",
      "node_modules/.package-lock.json",
    );
  });

  it("refuses engine-pin-mismatch when the hidden lockfile disagrees on the integrity", (t) => {
    const hidden = { version: PI_VERSION, integrity: "sha512-BBBB" };
    refuses(() => readPin(pinRoot(t, { hidden })), "engine-pin-mismatch", "sha512-BBBB");
  });

  it("refuses engine-pin-mismatch when the installed package.json has another version", (t) => {
    const manifest = { name: PI_PACKAGE, version: "0.85.0" };
    refuses(() => readPin(pinRoot(t, { manifest })), "engine-pin-mismatch", "0.85.0");
  });

  it("refuses engine-pin-mismatch when the installed package.json names another package", (t) => {
    const manifest = { name: "pi-fork", version: PI_VERSION };
    refuses(() => readPin(pinRoot(t, { manifest })), "engine-pin-mismatch", "pi-fork");
  });

  it("refuses engine-pin-mismatch when Pi is not installed", (t) => {
    refuses(() => readPin(pinRoot(t, { manifest: null })), "engine-pin-mismatch", "ENOENT");
  });
});

describe("pi-pin: the seal", () => {
  it("builds the sealed argv: the sealed flags, --session, then extraArgs", () => {
    assert.deepEqual(sealedArgv({ sessionFile: SESSION }), [
      "--mode",
      "rpc",
      "--no-extensions",
      "--no-prompt-templates",
      "--no-themes",
      "--offline",
      "--session",
      SESSION,
    ]);
    const extra = ["--model", "loopback/fake-1", "--provider", "loopback", "--thinking", "off"];
    assert.deepEqual(sealedArgv({ sessionFile: SESSION, extraArgs: extra }), sealed(...extra));
  });

  it("returns what a sealed argv carries, in any order", () => {
    const argv = ["--thinking", "high", "--offline", "--session", SESSION, "--no-themes"];
    argv.push("--model", "m", "--no-prompt-templates", "--mode", "rpc", "--no-extensions");
    assert.deepEqual(checkSeal(argv), { sessionFile: SESSION, model: "m", thinking: "high" });
    assert.deepEqual(checkSeal(sealed()), { sessionFile: SESSION });
  });

  it("refuses unsealed-engine when sealedArgv is given a relative session file", () => {
    refuses(() => sealedArgv({ sessionFile: "s.jsonl" }), "unsealed-engine", '"s.jsonl"');
  });

  it("refuses unsealed-engine for -e", () => {
    refuses(() => checkSeal(sealed("-e", "x.ts")), "unsealed-engine", '"-e"', "extension");
  });

  it("refuses unsealed-engine for --extension", () => {
    refuses(() => checkSeal(sealed("--extension", "x.ts")), "unsealed-engine", '"--extension"');
  });

  it("refuses unsealed-engine for --extension=x", () => {
    refuses(() => checkSeal(sealed("--extension=x.ts")), "unsealed-engine", '"--extension=x.ts"');
  });

  for (const flag of ["--no-extensions", "--no-prompt-templates", "--no-themes", "--offline"]) {
    it(`refuses unsealed-engine when ${flag} is missing`, () => {
      refuses(() => checkSeal(without(flag)), "unsealed-engine", `"${flag}" is missing`);
    });

    it(`refuses unsealed-engine when ${flag} is repeated`, () => {
      refuses(() => checkSeal(sealed(flag)), "unsealed-engine", `a second "${flag}"`);
    });
  }

  it("refuses unsealed-engine when --mode is missing", () => {
    const argv = sealed().filter((a) => a !== "--mode" && a !== "rpc");
    refuses(() => checkSeal(argv), "unsealed-engine", "--mode rpc");
  });

  it("refuses unsealed-engine for --mode other than rpc", () => {
    const argv = ["--mode", "json", ...sealed().slice(2)];
    refuses(() => checkSeal(argv), "unsealed-engine", '"json"');
  });

  it("refuses unsealed-engine for a second --mode, even a second --mode rpc", () => {
    refuses(() => checkSeal(sealed("--mode", "rpc")), "unsealed-engine", 'a second "--mode"');
    refuses(() => checkSeal(sealed("--mode", "json")), "unsealed-engine", 'a second "--mode"');
  });

  it("refuses unsealed-engine for a second --session", () => {
    const other = "/fixtures/demo/.pi/state/main/sessions/t.jsonl";
    refuses(() => checkSeal(sealed("--session", other)), "unsealed-engine", 'a second "--session"');
  });

  it("refuses unsealed-engine when --session is missing", () => {
    const argv = sealed().slice(0, -2);
    refuses(() => checkSeal(argv), "unsealed-engine", "--session <absolute file>");
  });

  it("refuses unsealed-engine for --session with no value", () => {
    refuses(() => checkSeal([...SEALED_ARGS, "--session"]), "unsealed-engine", "undefined");
  });

  it("refuses unsealed-engine for a relative --session path or a session id", () => {
    const argv = [...SEALED_ARGS, "--session", "0190abcd"];
    refuses(() => checkSeal(argv), "unsealed-engine", '"0190abcd"');
  });

  it("refuses unsealed-engine for an unnormalized --session path", () => {
    const argv = [...SEALED_ARGS, "--session", "/fixtures/x/../s.jsonl"];
    refuses(() => checkSeal(argv), "unsealed-engine", "normalized");
  });

  it("refuses unsealed-engine when --session swallows a flag as its value", () => {
    const argv = ["--mode", "rpc", "--session", "--no-extensions", "--no-prompt-templates"];
    refuses(() => checkSeal(argv), "unsealed-engine", '"--no-extensions"');
  });

  for (const flag of [
    "--no-session",
    "--fork",
    "--export",
    "--print",
    "-p",
    "--continue",
    "-c",
    "--resume",
    "-r",
    "--session-id",
    "--session-dir",
    "--name",
    "-n",
  ]) {
    it(`refuses unsealed-engine for the session or output flag ${flag}`, () => {
      refuses(() => checkSeal(sealed(flag, "v")), "unsealed-engine", `"${flag}"`);
    });
  }

  it("refuses unsealed-engine for a bare word, which Pi reads as a prompt", () => {
    refuses(() => checkSeal(sealed("hello")), "unsealed-engine", '"hello"', "prompt");
  });

  it("refuses unsealed-engine for a subcommand word in first place", () => {
    refuses(() => checkSeal(["install", ...sealed()]), "unsealed-engine", '"install"');
  });

  it("refuses unsealed-engine for a bare word named like an Object method", () => {
    refuses(() => checkSeal(sealed("toString")), "unsealed-engine", '"toString"', "prompt");
  });

  it("refuses unsealed-engine for --, after which every word is a prompt", () => {
    refuses(() => checkSeal(sealed("--", "hi")), "unsealed-engine", '"--"');
  });

  it("refuses unsealed-engine for an @file argument", () => {
    refuses(() => checkSeal(sealed("@notes.md")), "unsealed-engine", '"@notes.md"', "@file");
  });

  it("refuses unsealed-engine for an unknown --flag, which Pi hands to extensions", () => {
    refuses(() => checkSeal(sealed("--plan", "x")), "unsealed-engine", '"--plan"', "extension");
  });

  it("refuses unsealed-engine for --model=x, which Pi does not read as --model", () => {
    refuses(() => checkSeal(sealed("--model=x")), "unsealed-engine", '"--model=x"', "=value");
  });

  it("refuses unsealed-engine for an unknown short option", () => {
    refuses(() => checkSeal(sealed("-z")), "unsealed-engine", '"-z"');
  });

  it("refuses unsealed-engine for the short forms of the sealed flags", () => {
    refuses(() => checkSeal([...without("--no-extensions"), "-ne"]), "unsealed-engine", '"-ne"');
    const argv = [...without("--no-prompt-templates"), "-np"];
    refuses(() => checkSeal(argv), "unsealed-engine", '"-np"');
  });

  for (const flag of EXTRA_FLAGS) {
    const value = flag === "--thinking" ? "low" : "v";
    it(`refuses unsealed-engine for a second ${flag}`, () => {
      const argv = sealed(flag, value, flag, value);
      refuses(() => checkSeal(argv), "unsealed-engine", `a second "${flag}"`);
    });

    it(`refuses unsealed-engine for ${flag} with a value starting with -`, () => {
      refuses(() => checkSeal(sealed(flag, "-x")), "unsealed-engine", `"${flag}"`, '"-x"');
    });

    it(`refuses unsealed-engine for ${flag} with a value starting with @`, () => {
      refuses(() => checkSeal(sealed(flag, "@f")), "unsealed-engine", `"${flag}"`, '"@f"');
    });

    it(`refuses unsealed-engine for ${flag} with no value`, () => {
      refuses(() => checkSeal(sealed(flag)), "unsealed-engine", `"${flag}"`);
    });

    it(`refuses unsealed-engine for ${flag} with an empty value`, () => {
      refuses(() => checkSeal(sealed(flag, "")), "unsealed-engine", `"${flag}"`);
    });
  }

  it("refuses unsealed-engine for a thinking level Pi doesn't know", () => {
    refuses(() => checkSeal(sealed("--thinking", "huge")), "unsealed-engine", "huge");
  });

  for (const flag of Object.keys(REFUSED_PI_FLAGS)) {
    it(`refuses unsealed-engine for Pi's ${flag}, naming it`, () => {
      refuses(() => checkSeal(sealed(flag)), "unsealed-engine", JSON.stringify(flag));
    });
  }
});

describe("pi-pin: the engine command", () => {
  const argv = sealed("--model", "loopback/fake-1");
  const digest = (line: string[]) =>
    createHash("sha256").update(JSON.stringify(line)).digest("hex");

  it("runs the pinned Pi's cli.js with this Node by default, and digests the command line", () => {
    const e = engineCommand({ argv });
    const cli = join(PACKAGE_ROOT, LOCK_KEY, "dist", "bundle", "cli.js");
    assert.equal(e.command, process.execPath);
    assert.deepEqual(e.preArgs, [cli]);
    assert.deepEqual(e.argv, argv);
    assert.equal(e.testHook, false);
    assert.equal(e.argvDigest, digest([process.execPath, cli, ...argv]));
    assert.equal(e.pin.integrity, PI_INTEGRITY);
    assert.equal(e.sealed.model, "loopback/fake-1");
  });

  it("takes another command and preArgs as a test hook, and the digest records them", (t) => {
    const root = pinRoot(t);
    const e = engineCommand({ argv, pinRoot: root, command: "/bin/fake", preArgs: ["fake-pi.ts"] });
    assert.equal(e.testHook, true);
    assert.equal(e.argvDigest, digest(["/bin/fake", "fake-pi.ts", ...argv]));
  });

  it("refuses unsealed-engine when preArgs carry --extension", (t) => {
    const preArgs = [piCliPath(pinRoot(t)), "--extension", "x.ts"];
    refuses(() => engineCommand({ argv, preArgs }), "unsealed-engine", '"--extension"');
  });

  it("refuses unsealed-engine when preArgs carry -e, under a hooked command too", () => {
    const options = { argv, command: "/bin/fake", preArgs: ["fake.ts", "-e", "x.ts"] };
    refuses(() => engineCommand(options), "unsealed-engine", '"-e"');
  });

  it("refuses unsealed-engine when preArgs carry --extension=x", () => {
    const options = { argv, command: "/bin/fake", preArgs: ["--extension=x.ts"] };
    refuses(() => engineCommand(options), "unsealed-engine", '"--extension=x.ts"');
  });

  it("refuses unsealed-engine when preArgs pass Pi an argument after its cli.js", () => {
    const preArgs = [piCliPath(), "--no-session"];
    refuses(() => engineCommand({ argv, preArgs }), "unsealed-engine", '"--no-session"');
  });

  it("refuses unsealed-engine for an unsealed argv", () => {
    const options = { argv: without("--no-themes") };
    refuses(() => engineCommand(options), "unsealed-engine", '"--no-themes" is missing');
  });

  it("refuses engine-pin-mismatch under a pin root whose lock pins another version", (t) => {
    const root = pinRoot(t, { entry: { version: "0.84.0", integrity: PI_INTEGRITY } });
    refuses(() => engineCommand({ argv, pinRoot: root }), "engine-pin-mismatch", "0.84.0");
  });

  it("refuses engine-pin-mismatch when the pinned Pi has no cli.js", (t) => {
    const root = pinRoot(t);
    rmSync(piCliPath(root));
    refuses(() => engineCommand({ argv, pinRoot: root }), "engine-pin-mismatch", "cli.js");
  });

  it("binds when nothing changed since construction", (t) => {
    const options = { argv, pinRoot: pinRoot(t) };
    const built = engineCommand(options);
    assert.equal(bindEngine(options, built).argvDigest, built.argvDigest);
  });

  it("refuses unsealed-engine at bind when the argv was changed after construction", () => {
    const mutable = [...argv];
    const options = { argv: mutable };
    const built = engineCommand(options);
    mutable.splice(mutable.indexOf("--model"), 2, "--model", "other");
    refuses(() => bindEngine(options, built), "unsealed-engine", "changed");
  });

  it("refuses unsealed-engine at bind when the argv became unsealed after construction", () => {
    const mutable = [...argv];
    const options = { argv: mutable };
    const built = engineCommand(options);
    mutable.push("-e", "x.ts");
    refuses(() => bindEngine(options, built), "unsealed-engine", '"-e"');
  });

  it("refuses unsealed-engine at bind when the command changed after construction", () => {
    const built = engineCommand({ argv });
    refuses(() => bindEngine({ argv, command: "/bin/sh" }, built), "unsealed-engine", "changed");
  });

  it("refuses engine-pin-mismatch at bind when the lock changed after construction", (t) => {
    const root = pinRoot(t);
    const options = { argv, pinRoot: root };
    const built = engineCommand(options);
    writeLock(root, "package-lock.json", { version: PI_VERSION, integrity: "sha512-CCCC" });
    refuses(() => bindEngine(options, built), "engine-pin-mismatch", "sha512-CCCC");
  });
});

describe("pi-pin: the installed layouts", () => {
  const realPi = join(PACKAGE_ROOT, LOCK_KEY);
  // One copy of the real Pi per layout (copying takes seconds); each test that alters a copy
  // puts it back in a finally.
  let base = "";
  const CONSUMER = { pkg: "app/node_modules/@mosaic/conversation", pi: `app/${LOCK_KEY}` };
  const GLOBAL = {
    pkg: "prefix/lib/node_modules/@mosaic/conversation",
    pi: `prefix/lib/node_modules/@mosaic/conversation/${LOCK_KEY}`,
  };
  before(() => {
    base = mkdtempSync(join(tmpdir(), "conv-pin-inst-"));
    for (const l of [CONSUMER, GLOBAL]) {
      mkdirSync(join(base, l.pkg), { recursive: true });
      writeFileSync(join(base, l.pkg, "package.json"), '{"name":"@mosaic/conversation"}');
      // Pi's own node_modules is not in the digest; leave it out of the copy.
      const skip = join(realPi, "node_modules");
      cpSync(realPi, join(base, l.pi), { recursive: true, filter: (src) => src !== skip });
    }
  });
  after(() => rmSync(base, { recursive: true, force: true }));
  const at = (l: { pkg: string; pi: string }) => ({ pkg: join(base, l.pkg), pi: join(base, l.pi) });
  /** Runs fn with `file` (inside base) changed by `change`, and restores it after. */
  function altered(file: string, change: (file: string) => void, fn: () => void): void {
    const before = existsSync(file) ? readFileSync(file) : null;
    try {
      change(file);
      fn();
    } finally {
      if (before === null) rmSync(file, { force: true });
      else writeFileSync(file, before);
    }
  }

  for (const [name, l] of [
    ["a project (Pi hoisted next to the package)", CONSUMER],
    ["a global prefix (Pi under the package)", GLOBAL],
  ] as const) {
    it(`finds and checks the Pi Node resolves in ${name}`, () => {
      const { pkg, pi } = at(l);
      const pin = readPin(pkg);
      assert.equal(pin.layout, "installed");
      assert.equal(pin.location, pi);
      assert.equal(pin.version, PI_VERSION);
      const e = engineCommand({ argv: sealed(), pinRoot: pkg });
      assert.deepEqual(e.preArgs, [join(pi, "dist", "bundle", "cli.js")]);
      assert.equal(e.testHook, false);
    });

    it(`refuses engine-pin-mismatch for an altered file in ${name}`, () => {
      const { pkg, pi } = at(l);
      const cli = join(pi, "dist", "bundle", "cli.js");
      altered(
        cli,
        (f) => appendFileSync(f, "\n// changed\n"),
        () => {
          refuses(() => readPin(pkg), "engine-pin-mismatch", pi, "differ from the pinned 0.85.1");
        },
      );
    });

    it(`refuses engine-pin-mismatch for another version in ${name}`, () => {
      const { pkg, pi } = at(l);
      const file = join(pi, "package.json");
      const manifest = JSON.parse(readFileSync(file, "utf8"));
      const bump = (f: string) =>
        writeFileSync(f, JSON.stringify({ ...manifest, version: "0.85.2" }));
      altered(file, bump, () =>
        refuses(() => readPin(pkg), "engine-pin-mismatch", "0.85.2", "reinstall"),
      );
    });
  }

  it("prefers a Pi nested under the package to a hoisted one, as Node does", () => {
    const { pkg, pi } = at(CONSUMER);
    const nested = join(pkg, LOCK_KEY);
    mkdirSync(nested, { recursive: true });
    try {
      writeFileSync(
        join(nested, "package.json"),
        JSON.stringify({ name: PI_PACKAGE, version: "1.6.0" }),
      );
      refuses(() => readPin(pkg), "engine-pin-mismatch", nested, "1.6.0");
    } finally {
      rmSync(join(pkg, "node_modules"), { recursive: true });
    }
    assert.equal(readPin(pkg).location, pi);
  });

  it("refuses engine-pin-mismatch for an added file", () => {
    const { pkg, pi } = at(CONSUMER);
    altered(
      join(pi, "dist", "extra.js"),
      (f) => writeFileSync(f, ""),
      () => {
        refuses(() => readPin(pkg), "engine-pin-mismatch", "added");
      },
    );
  });

  it("refuses engine-pin-mismatch when no Pi is installed where Node looks", (t) => {
    const root = tempDir(t, "conv-pin-none-");
    refuses(() => readPin(root), "engine-pin-mismatch", "not installed where Node looks");
  });

  it("refuses engine-pin-mismatch when npm's hidden lockfile lists another integrity", () => {
    const { pkg } = at(CONSUMER);
    const app = join(base, "app");
    const hidden = join(app, "node_modules", ".package-lock.json");
    const write = (integrity: string) => () =>
      writeLock(app, "node_modules/.package-lock.json", { version: PI_VERSION, integrity });
    altered(hidden, write("sha512-CCCC"), () => {
      refuses(() => readPin(pkg), "engine-pin-mismatch", "sha512-CCCC");
    });
    altered(hidden, write(PI_INTEGRITY), () => assert.equal(readPin(pkg).integrity, PI_INTEGRITY));
  });
});
