// The Pi versions under control (issue 16 item 2): every pinned version's row agrees with
// package-lock.json and with the installed files; each version's seal is checked against that
// version's own argument parser (every flag its args.js knows is allowed, required or refused
// with a reason); an unpinned version refuses `configuration`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { digestPackageFiles, PACKAGE_ROOT } from "../../src/control/engine/package-files.ts";
import {
  checkSeal,
  EXTRA_FLAGS,
  engineCommand,
  PI_PACKAGE,
  PI_PINS,
  PI_VERSION,
  PI_VERSIONS,
  REFUSED_PI_FLAGS,
  readPin,
  SEALED_ARGS,
  sealedArgv,
} from "../../src/control/engine/pi/pi-pin.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";

const SESSION = "/fixtures/demo/.pi/state/main/sessions/s.jsonl";

function refuses(fn: () => unknown, code: string, ...mentions: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isControlRefusal(e), `expected a ControlRefusal, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const m of mentions) assert.ok(e.message.includes(m), `${e.message} lacks ${m}`);
    return true;
  });
}

type LockEntry = { name?: string; version?: string; integrity?: string };
const lock = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, LockEntry & { devDependencies?: Record<string, string> }>;
};

/** Every flag literal Pi's parser compares an argument with (`arg === "--x"`). */
function parserFlags(version: string): string[] {
  const dir = join(PACKAGE_ROOT, "node_modules", PI_PINS[version as "0.85.1"].dir);
  const src = readFileSync(join(dir, "dist", "cli", "args.js"), "utf8");
  const body = src.slice(
    src.indexOf("export function parseArgs"),
    src.indexOf("export function printHelp"),
  );
  assert.ok(body.length > 1000, `${version}: parseArgs found in args.js`);
  return [...new Set([...body.matchAll(/arg === "([^"]+)"/g)].map((m) => m[1] as string))];
}

describe("the pinned Pi versions", () => {
  it("keeps 0.85.1 the default and pins 1.6.0 beside it", () => {
    assert.equal(PI_VERSION, "0.85.1");
    assert.deepEqual([...PI_VERSIONS], ["0.85.1", "1.6.0"]);
    assert.equal(
      lock.packages[""]?.devDependencies?.["pi-coding-agent-1.6.0"],
      "npm:@earendil-works/pi-coding-agent@1.6.0",
    );
  });

  for (const version of PI_VERSIONS) {
    const row = PI_PINS[version];
    it(`${version}: the row matches package-lock.json, the installed files and readPin`, () => {
      const entry = lock.packages[`node_modules/${row.dir}`];
      assert.ok(entry, `package-lock.json installs node_modules/${row.dir}`);
      assert.equal(entry.version, version);
      assert.equal(entry.integrity, row.integrity);
      if (row.dir !== PI_PACKAGE) assert.equal(entry.name, PI_PACKAGE, "an alias of Pi itself");
      const dir = join(PACKAGE_ROOT, "node_modules", row.dir);
      assert.equal(digestPackageFiles(dir).digest, row.filesDigest);
      const pin = readPin(PACKAGE_ROOT, version);
      assert.deepEqual(
        [pin.name, pin.version, pin.integrity, pin.location],
        [PI_PACKAGE, version, row.integrity, dir],
      );
      const cmd = engineCommand({
        argv: sealedArgv({ sessionFile: SESSION, piVersion: version }),
        piVersion: version,
      });
      assert.equal(cmd.testHook, false);
      assert.deepEqual(cmd.preArgs, [join(dir, "dist", "bundle", "cli.js")]);
      assert.equal(cmd.pin.version, version);
    });

    it(`${version}: every flag of its own parser is allowed, required or refused with a reason`, () => {
      const flags = parserFlags(version);
      assert.ok(flags.length > 40, `${version}: ${flags.length} flags`);
      const required = new Set<string>([...SEALED_ARGS, ...row.sealFlags, "--session"]);
      const allowed = new Set<string>(EXTRA_FLAGS);
      const unexplained = flags.filter(
        (f) => !required.has(f) && !allowed.has(f) && !Object.hasOwn(REFUSED_PI_FLAGS, f),
      );
      assert.deepEqual(unexplained, [], `${version}'s parser knows flags the seal does not name`);
      // Every refused flag this parser knows is refused by this version's seal.
      for (const f of flags.filter((f) => Object.hasOwn(REFUSED_PI_FLAGS, f))) {
        const argv = [...sealedArgv({ sessionFile: SESSION, piVersion: version }), f];
        refuses(() => checkSeal(argv, version), "unsealed-engine", JSON.stringify(f));
      }
    });
  }

  it("1.6.0's seal requires --no-mcp; 0.85.1's refuses it as a flag its parser lacks", () => {
    assert.ok(parserFlags("1.6.0").includes("--no-mcp"));
    assert.ok(!parserFlags("0.85.1").includes("--no-mcp"));
    const base = [...SEALED_ARGS, "--session", SESSION];
    refuses(() => checkSeal(base, "1.6.0"), "unsealed-engine", '"--no-mcp" is missing');
    assert.deepEqual(checkSeal([...base, "--no-mcp"], "1.6.0"), { sessionFile: SESSION });
    refuses(() => checkSeal([...base, "--no-mcp"], "0.85.1"), "unsealed-engine", '"--no-mcp"');
    refuses(
      () => checkSeal([...base, "--no-mcp", "--no-mcp"], "1.6.0"),
      "unsealed-engine",
      "a second",
    );
  });

  it("refuses an unpinned version with configuration, naming the pinned ones", () => {
    for (const v of ["1.5.0", "latest", ""]) {
      refuses(() => readPin(PACKAGE_ROOT, v), "configuration", "0.85.1 or 1.6.0");
      refuses(
        () => sealedArgv({ sessionFile: SESSION, piVersion: v }),
        "configuration",
        "is not pinned",
      );
    }
  });
});
