// The user's own Claude Code install (src/control/engine/claude-code/claude-install.ts and the
// pin in claude-pin.ts): found beside this package as Node resolves it, or as `claude` on PATH
// resolved to its npm package (or a lone binary); any version but 2.1.328, or no install, refused
// `engine-pin-mismatch` naming 2.1.328 and what to install. Fake install trees; the right one's
// binary is a hard link to the real pinned binary (the dev dependency), so its bytes are 2.1.328's.
import assert from "node:assert/strict";
import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { findClaudeInstall } from "../../src/control/engine/claude-code/claude-install.ts";
import { CLAUDE_VERSION, readClaudePin } from "../../src/control/engine/claude-code/claude-pin.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { CLAUDE_BIN } from "../helpers/real-claude.ts";

const INSTALL = `npm install --save-exact @anthropic-ai/claude-code@${CLAUDE_VERSION}`;

function temp(t: TestContext): string {
  const root = mkdtempSync("/tmp/cci-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

/** A package folder `node_modules/<name>` under `dir` at `version`; returns its folder. */
function pkg(dir: string, name: string, version: string): string {
  const at = join(dir, "node_modules", name);
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, "package.json"), JSON.stringify({ name, version }));
  return at;
}

/** Claude Code's two packages under `dir`; `binary`: the real one (a link), or these bytes. */
function claudeTree(
  dir: string,
  version: string,
  o: { binary?: string; platform?: string | null } = {},
): string {
  const main = pkg(dir, "@anthropic-ai/claude-code", version);
  mkdirSync(join(main, "bin"));
  const bin = join(main, "bin", "claude.exe");
  // A hard link: the same bytes as the pinned binary, a file of its own (as npm installs it).
  if (o.binary === undefined) linkSync(CLAUDE_BIN, bin);
  else writeFileSync(bin, o.binary, { mode: 0o755 });
  if (o.platform !== null) pkg(dir, "@anthropic-ai/claude-code-linux-x64", o.platform ?? version);
  return main;
}

/** This package as a user installs it: `<project>/node_modules/@mosaic/conversation`. */
function installedHere(project: string): string {
  return pkg(project, "@mosaic/conversation", "0.0.0");
}

function refusedWith(f: () => unknown, ...words: (string | RegExp)[]): string {
  let message = "";
  assert.throws(f, (e: unknown) => {
    assert.ok(isControlRefusal(e), String(e));
    assert.equal(e.code, "engine-pin-mismatch");
    message = e.message;
    return true;
  });
  for (const w of [CLAUDE_VERSION, INSTALL, ...words]) {
    if (typeof w === "string")
      assert.ok(message.includes(w), `${JSON.stringify(w)} in: ${message}`);
    else assert.match(message, w);
  }
  return message;
}

describe("claude-install", () => {
  it("accepts 2.1.328 installed beside this package in the user's project", (t) => {
    const project = temp(t);
    const here = installedHere(project);
    const main = claudeTree(project, CLAUDE_VERSION);
    const found = findClaudeInstall(here, "");
    assert.equal(found?.packageDir, main);
    assert.equal(found?.how, "beside this package");
    const pin = readClaudePin(here, CLAUDE_VERSION, "");
    assert.equal(pin.binary, join(main, "bin", "claude.exe"));
    assert.equal(pin.version, CLAUDE_VERSION);
  });

  it("refuses another version beside this package, naming 2.1.328 and what to install", (t) => {
    const project = temp(t);
    const here = installedHere(project);
    claudeTree(project, "2.1.0");
    refusedWith(
      () => readClaudePin(here, CLAUDE_VERSION, ""),
      "is 2.1.0, not 2.1.328",
      "beside this package",
    );
  });

  it("refuses a 2.1.328 package whose platform binary package is another version, or missing", (t) => {
    const project = temp(t);
    const here = installedHere(project);
    claudeTree(project, CLAUDE_VERSION, { platform: "2.1.300" });
    refusedWith(
      () => readClaudePin(here, CLAUDE_VERSION, ""),
      "claude-code-linux-x64",
      "is 2.1.300",
    );
    const other = temp(t);
    claudeTree(other, CLAUDE_VERSION, { platform: null });
    refusedWith(() => readClaudePin(installedHere(other), CLAUDE_VERSION, ""), "is not installed");
  });

  it("refuses a 2.1.328 install whose binary is not 2.1.328's bytes", (t) => {
    const project = temp(t);
    claudeTree(project, CLAUDE_VERSION, { binary: "#!/bin/sh\necho not claude\n" });
    refusedWith(
      () => readClaudePin(installedHere(project), CLAUDE_VERSION, ""),
      /is not 2\.1\.328's \(sha256 /,
    );
  });

  it("finds claude on PATH through its link to a global npm install, and checks it the same", (t) => {
    const root = temp(t);
    const here = installedHere(join(root, "project"));
    const prefix = join(root, "prefix", "lib");
    const bin = join(root, "prefix", "bin");
    mkdirSync(bin, { recursive: true });
    const wrong = claudeTree(prefix, "2.0.9", { binary: "#!/bin/sh\n" });
    symlinkSync(join(wrong, "bin", "claude.exe"), join(bin, "claude"));
    refusedWith(
      () => readClaudePin(here, CLAUDE_VERSION, `/nonexistent:${bin}`),
      `on PATH (${join(bin, "claude")})`,
      "is 2.0.9",
    );

    const right = temp(t);
    const rightBin = join(right, "bin");
    mkdirSync(rightBin);
    const main = claudeTree(join(right, "lib"), CLAUDE_VERSION);
    symlinkSync(join(main, "bin", "claude.exe"), join(rightBin, "claude"));
    const found = findClaudeInstall(here, rightBin);
    assert.equal(found?.packageDir, main);
    assert.equal(readClaudePin(here, CLAUDE_VERSION, rightBin).version, CLAUDE_VERSION);
  });

  it("checks a lone claude binary on PATH by its bytes", (t) => {
    const root = temp(t);
    const here = installedHere(join(root, "project"));
    const bin = join(root, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "claude"), "#!/bin/sh\n", { mode: 0o755 });
    chmodSync(join(bin, "claude"), 0o755);
    const found = findClaudeInstall(here, bin);
    assert.deepEqual([found?.packageDir, found?.binary], [null, join(bin, "claude")]);
    refusedWith(() => readClaudePin(here, CLAUDE_VERSION, bin), /is not 2\.1\.328's/);
  });

  it("refuses when there is no install at all, saying what to install", (t) => {
    const here = installedHere(temp(t));
    refusedWith(
      () => readClaudePin(here, CLAUDE_VERSION, "/nonexistent"),
      "Claude Code is not installed",
    );
  });

  it("finds the dev dependency from this checkout", () => {
    const found = findClaudeInstall(join(import.meta.dirname, "../.."), "");
    assert.equal(found?.how, "beside this package");
    assert.equal(readClaudePin(undefined, CLAUDE_VERSION, "").binary, CLAUDE_BIN);
  });
});
