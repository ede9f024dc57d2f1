// What `conversation control --harness claude-code` says (issue 26 item 5): the harness is named
// from its one place (HARNESS_LABELS) in the launcher, stop and refusal texts, never "Pi" for a
// Claude Code run; the start's credentials warning is Claude Code's own (its login file, or a
// key in its settings' env), never Pi's; --agent-from copies Claude Code's files.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { copyAgentFiles } from "../../src/cli/control.ts";
import { describeLauncher, refused } from "../../src/cli/control-report.ts";
import { claudeCredentialWarning, claudeHasCredentials } from "../../src/cli/credentials-claude.ts";
import type { Io } from "../../src/cli/io.ts";
import { assertUnchanged, fingerprintTree } from "../helpers/fingerprint.ts";

function temp(t: TestContext): string {
  const root = mkdtempSync("/tmp/ccw-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

function captured(): { io: Io; err: () => string } {
  let err = "";
  return {
    io: { out: () => {}, err: (s) => (err += s), width: 80 },
    err: () => err,
  };
}

describe("control for Claude Code, in words", () => {
  it("names Claude Code in the launcher lines", () => {
    const lines = describeLauncher(
      "cgroup",
      "cgroup2 at /x; no nsdelegate: a root member can move itself out (K13 not enforced)",
      "Claude Code",
    );
    assert.match(lines[0] ?? "", /^Launcher: cgroup: Claude Code runs in a cgroup of its own/);
    assert.ok(lines.some((l) => l.includes("a process Claude Code starts")));
    assert.ok(!lines.join("\n").includes("Pi"), lines.join("\n"));
    assert.match(
      describeLauncher("pgroup", undefined, "Claude Code")[0] ?? "",
      /Claude Code runs in a process group/,
    );
  });

  it("says what to install after a refused pin, and what the seal allows, for Claude Code", () => {
    const pin = captured();
    refused(
      pin.io,
      "engine-pin-mismatch",
      "the Claude Code found on PATH is 2.1.0",
      undefined,
      false,
      "Claude Code",
    );
    assert.match(
      pin.err(),
      /What to do: this build runs Claude Code 2\.1\.328 only: install exactly that version \(npm install --save-exact @anthropic-ai\/claude-code@2\.1\.328\)/,
    );
    const seal = captured();
    refused(
      seal.io,
      "unsealed-engine",
      "--x is not a flag the seal allows",
      undefined,
      false,
      "Claude Code",
    );
    assert.match(seal.err(), /only --model goes to Claude Code/);
    const dead = captured();
    refused(dead.io, "unsafe-replacement", "a dead holder", undefined, false, "Claude Code");
    assert.match(dead.err(), /without proof that Claude Code stopped/);
    for (const e of [pin.err(), seal.err(), dead.err()]) assert.ok(!/\bPi\b/.test(e), e);
  });

  it("warns at start when Claude Code has no credentials, with the command to run instead", (t) => {
    const root = temp(t);
    const empty = join(root, "empty");
    mkdirSync(empty);
    writeFileSync(
      join(empty, "settings.json"),
      JSON.stringify({ env: { ANTHROPIC_BASE_URL: "http://x" } }),
    );
    const own = join(root, "own-claude");
    mkdirSync(own);
    writeFileSync(join(own, ".credentials.json"), "{}");
    const argv = [
      "control",
      "--harness",
      "claude-code",
      "--project",
      "/p",
      "--seat",
      "main",
      "--new",
      "--agent-from",
      empty,
    ];
    const text = claudeCredentialWarning({
      agentDir: join(root, "copy-of-empty"),
      named: "agent-from",
      given: empty,
      argv,
      env: { CLAUDE_CONFIG_DIR: own, ANTHROPIC_API_KEY: "sk-secret-in-the-shell" },
    });
    assert.ok(text);
    assert.match(
      text,
      /^warning: Claude Code has no credentials: .*empty holds no \.credentials\.json/,
    );
    assert.match(
      text,
      /ANTHROPIC_API_KEY set in this shell do not reach Claude Code: it runs sealed/,
    );
    assert.ok(text.includes(`--new --agent-from ${own}`), text);
    assert.ok(!text.includes("sk-secret"), "no key value is printed");
    assert.ok(!/\bPi\b/.test(text), text);
  });

  it("finds a credential in a login file, a settings key or an apiKeyHelper", (t) => {
    const root = temp(t);
    const cases: [string, Record<string, string>, boolean][] = [
      ["login", { ".credentials.json": "{}" }, true],
      ["key", { "settings.json": JSON.stringify({ env: { ANTHROPIC_API_KEY: "k" } }) }, true],
      ["token", { "settings.json": JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: "k" } }) }, true],
      ["helper", { "settings.json": JSON.stringify({ apiKeyHelper: "/bin/key" }) }, true],
      ["empty key", { "settings.json": JSON.stringify({ env: { ANTHROPIC_API_KEY: "" } }) }, false],
      [
        "url only",
        { "settings.json": JSON.stringify({ env: { ANTHROPIC_BASE_URL: "http://x" } }) },
        false,
      ],
      ["not json", { "settings.json": "{" }, false],
    ];
    for (const [name, files, has] of cases) {
      const dir = join(root, name);
      mkdirSync(dir);
      for (const [f, body] of Object.entries(files)) writeFileSync(join(dir, f), body);
      assert.equal(claudeHasCredentials(dir), has, name);
    }
    assert.equal(claudeHasCredentials(null), false);
  });

  it("--agent-from copies Claude Code's settings and login 0600, nothing else, and leaves the source as it was", (t) => {
    const root = temp(t);
    const from = join(root, "claude");
    mkdirSync(join(from, "projects"), { recursive: true });
    writeFileSync(join(from, "settings.json"), "{}");
    writeFileSync(join(from, ".credentials.json"), '{"claudeAiOauth":{}}', { mode: 0o600 });
    writeFileSync(join(from, "auth.json"), "{}");
    const before = fingerprintTree(from);
    const to = join(root, "copy");
    mkdirSync(to, { mode: 0o700 });
    const r = copyAgentFiles(from, to, "claude-code");
    assert.deepEqual(r, { ok: true, value: ["settings.json", ".credentials.json"] });
    assert.deepEqual(readdirSync(to).sort(), [".credentials.json", "settings.json"]);
    for (const f of readdirSync(to)) assert.equal(statSync(join(to, f)).mode & 0o777, 0o600);
    assertUnchanged(before, fingerprintTree(from));
    const none = join(root, "none");
    mkdirSync(none);
    const refusedCopy = copyAgentFiles(none, to, "claude-code");
    assert.ok(
      !refusedCopy.ok &&
        /Claude Code's config folder \(usually ~\/\.claude\)/.test(refusedCopy.error),
    );
  });
});
