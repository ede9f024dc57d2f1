// The parts of `conversation control` on a project that need no engine: `--new`'s session
// (written by Pi's SessionManager), `--agent-from`'s copy (the source only read), the
// printed invocation, and RepositoryVerifier's choice of sessions. Temp dirs removed after.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { HELP } from "../../src/cli/args.ts";
import { AGENT_FILES, copyAgentFiles } from "../../src/cli/control.ts";
import { notInstalled, parseControl } from "../../src/cli/control-args.ts";
import { describeLauncher } from "../../src/cli/control-report.ts";
import { asInvoked, commandLine, commandPrefix } from "../../src/cli/invocation.ts";
import { modelOf, writeNewSession } from "../../src/cli/new-session.ts";
import { RepositoryVerifier } from "../../src/control/controller/records.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import { sessionsDirOf } from "../../src/reader/sources.ts";
import { assertUnchanged, fingerprintTree } from "../helpers/fingerprint.ts";
import { readLines } from "../helpers/real-pi.ts";

function temp(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "ctl-parts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("control --new's session", () => {
  it("is Pi's own: header cwd, title, model and thinking, where and as Pi names sessions", async (t) => {
    const project = join(temp(t), "proj");
    mkdirSync(project);
    const sessionsDir = sessionsDirOf(project, "main");
    const file = await writeNewSession({
      projectRoot: project,
      sessionsDir,
      title: "A title",
      model: "loopback/fake-1",
      thinking: "low",
    });
    assert.deepEqual(readdirSync(sessionsDir), [file.split("/").at(-1)], "no temp file left");
    assert.equal(statSync(sessionsDir).mode & 0o777, 0o700);
    const lines = readLines(file);
    assert.deepEqual(
      lines.map((l) => l.type),
      ["session", "session_info", "model_change", "thinking_level_change"],
    );
    assert.equal(lines[0]?.cwd, project);
    assert.ok(file.endsWith(`_${lines[0]?.id as string}.jsonl`), file);
    assert.deepEqual([lines[2]?.provider, lines[2]?.modelId], ["loopback", "fake-1"]);
    assert.equal(lines[3]?.thinkingLevel, "low");
    // The reader lists it, titled.
    const reader = createReader({
      roots: () => rootsFromSpecs([{ kind: "repository", projectRoot: project, seat: "main" }], []),
    });
    assert.deepEqual(
      reader.catalogue().conversations.map((r) => r.title),
      ["A title"],
    );
  });

  it("writes no model entry it can't name, and only the flags' entries", async (t) => {
    const project = temp(t);
    const file = await writeNewSession({
      projectRoot: project,
      sessionsDir: sessionsDirOf(project, "s2"),
      model: "just-an-id",
    });
    assert.deepEqual(
      readLines(file).map((l) => l.type),
      ["session"],
    );
    assert.deepEqual(modelOf({ model: "id", provider: "p" }), { provider: "p", id: "id" });
    assert.deepEqual(modelOf({ model: "p/a/b" }), { provider: "p", id: "a/b" });
    assert.equal(modelOf({ model: "/x" }), null);
    assert.equal(modelOf({}), null);
  });
});

describe("control --agent-from", () => {
  it("copies models, settings and auth 0600 and leaves the source exactly as it was", (t) => {
    const dir = temp(t);
    const source = join(dir, "agent");
    mkdirSync(source);
    for (const name of AGENT_FILES) writeFileSync(join(source, name), `{"${name}":1}\n`);
    writeFileSync(join(source, "other.json"), "{}");
    mkdirSync(join(source, "sessions"));
    const to = join(dir, "copy");
    mkdirSync(to, { mode: 0o700 });
    const before = fingerprintTree(source);
    const r = copyAgentFiles(source, to);
    assertUnchanged(before, fingerprintTree(source));
    assert.deepEqual(r, { ok: true, value: [...AGENT_FILES] });
    assert.deepEqual(readdirSync(to).sort(), [...AGENT_FILES].sort());
    for (const n of AGENT_FILES) assert.equal(statSync(join(to, n)).mode & 0o777, 0o600);
  });

  it("says what is wrong with a source that is missing, not a directory or holds none of them", (t) => {
    const dir = temp(t);
    const to = join(dir, "copy");
    mkdirSync(to);
    const file = join(dir, "f");
    writeFileSync(file, "");
    const empty = join(dir, "empty");
    mkdirSync(empty);
    const cases: [string, RegExp][] = [
      [join(dir, "absent"), /absent: ENOENT/],
      [file, /is not a directory/],
      [empty, /has none of models\.json, settings\.json, auth\.json; name Pi's agent directory/],
    ];
    for (const [from, why] of cases) {
      const r = copyAgentFiles(from, to);
      assert.equal(r.ok, false);
      assert.match(r.ok ? "" : r.error, why);
    }
  });
});

describe("the printed invocation", () => {
  it("names every command the top help lists as it is run from here, in help texts", () => {
    const commands = [...HELP.top.matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1]);
    assert.ok(commands.length >= 13, `commands listed: ${commands.join(" ")}`);
    for (const name of commands) {
      assert.equal(
        asInvoked(`Try \`conversation ${name} --help\`.`, "npx conversation"),
        `Try \`npx conversation ${name} --help\`.`,
        name,
      );
    }
  });

  it("is npm's script from the sources, npx under npx, else the bin; arguments quoted", () => {
    assert.equal(commandPrefix({ fromSource: true }), "npm run conversation --");
    assert.equal(commandPrefix({ npmCommand: "exec", script: "/x/bin" }), "npx conversation");
    assert.equal(
      commandPrefix({ script: "/p/node_modules/@mosaic/conversation/bin/conversation.js" }),
      "npx conversation",
    );
    assert.equal(
      commandPrefix({ script: "/opt/c d/conversation.js", path: "" }),
      "'/opt/c d/conversation.js'",
    );
    const prefix = "npm run conversation --";
    assert.equal(
      commandLine(
        ["attach", "pi-0a", "--state-dir", "/tmp/it's here", "--grant", "operator"],
        prefix,
      ),
      `npm run conversation -- attach pi-0a --state-dir '/tmp/it'\\''s here' --grant operator`,
    );
    // A control character is shown, never sent to the terminal.
    assert.equal(commandLine(["attach", "--socket", "/s\x1b[2J"], prefix).includes("\x1b"), false);
  });
});

describe("RepositoryVerifier", () => {
  it("vouches only for .jsonl files directly in an approved seat's sessions directory", () => {
    const v = new RepositoryVerifier({
      specs: [{ kind: "repository", projectRoot: "/p", seat: "main" }],
    });
    v.checkSession("/p/.pi/state/main/sessions/a.jsonl");
    for (const bad of [
      "/p/.pi/state/review/sessions/a.jsonl",
      "/p/.pi/state/main/sessions/sub/a.jsonl",
      "/p/.pi/state/main/sessions/a.json",
      "/q/.pi/state/main/sessions/a.jsonl",
    ]) {
      assert.throws(
        () => v.checkSession(bad),
        (e) => isControlRefusal(e) && e.code === "configuration" && /approved/.test(e.message),
        bad,
      );
    }
    const other = new RepositoryVerifier({
      specs: [{ kind: "repository", projectRoot: "/p", seat: "main" }],
      registrations: [
        {
          seat: "main",
          layout: "repo",
          project: "/p",
          sessionsDir: "/p/.pi/state/main/sessions",
          harness: "claude-code",
          startedAt: "2026-01-01T00:00:00Z",
        },
      ],
    });
    assert.throws(
      () => other.checkSession("/p/.pi/state/main/sessions/a.jsonl"),
      (e) => isControlRefusal(e) && /runs claude-code, not Pi/.test(e.message),
    );
  });

  it("never accepts a synthetic proof", () => {
    const v = new RepositoryVerifier({
      specs: [{ kind: "repository", projectRoot: "/p", seat: "main" }],
    });
    const observed = { phase: "kill", atMs: 0, kind: "members", status: "observed" };
    const verdict = v.verifyStop(
      {
        result: "stopped",
        proof: {
          method: "synthetic",
          enumerated: { ...observed, pids: [1] },
          emptied: { ...observed, empty: true },
        },
        members: [1],
        observations: [],
      } as unknown as Parameters<RepositoryVerifier["verifyStop"]>[0],
      { pid: 1 },
    );
    assert.deepEqual(verdict, {
      verified: false,
      why: "a synthetic proof proves nothing about this host",
    });
  });
});

describe("control-report", () => {
  it("says the launcher in plain words, its probe on a line of its own and the rule id once, last, when cgroup2 has no nsdelegate", () => {
    const reason =
      "scope: no systemd user manager answers (1: Failed to connect to bus); cgroup: cgroup2 at " +
      "/sys/fs/cgroup (rw,relatime); no nsdelegate: a root member can move itself out (K13 not enforced)";
    const lines = describeLauncher("cgroup", reason);
    assert.equal(
      lines[0],
      "Launcher: cgroup: Pi runs in a cgroup of its own, so stopping it can be proven",
    );
    assert.match(lines[1] ?? "", /^ {2}how it was chosen: scope: .+can move itself out$/);
    const note = lines[2] ?? "";
    assert.match(
      note,
      /^Note: this host's cgroup2 is mounted without nsdelegate, .+ closes this\. \(rule K13 is not enforced here\)$/,
    );
    // No parentheses nest inside another pair, and the rule id is said once.
    for (const l of lines) assert.doesNotMatch(l, /\([^()]*\(/, l);
    assert.equal(lines.join("\n").match(/K13/g)?.length, 1);
  });
});

describe("control-args", () => {
  it("refuses --pi-version 1.6.0 as a usage error, saying why, where that Pi is not installed", (t) => {
    const installed = mkdtempSync(join(tmpdir(), "pin-"));
    t.after(() => rmSync(installed, { recursive: true, force: true }));
    // An installed package: no package-lock, no pi-coding-agent-1.6.0 beside it.
    const said = notInstalled("1.6.0", installed) ?? "";
    assert.match(
      said,
      /^Pi 1\.6\.0 is not installed here: it is a development dependency of @mosaic\/conversation/,
    );
    // In this checkout it is there, and the flag parses.
    assert.equal(notInstalled("1.6.0"), null);
    const argv = ["--project", installed, "--seat", "main", "--new", "--pi-version", "1.6.0"];
    assert.equal(parseControl(argv).ok, true);
  });

  it("reads --budget-usd as whole cents and --budget-tokens as a count, for either harness", () => {
    const base = ["--project", "/tmp/p", "--seat", "main", "--new"];
    const parsed = parseControl([...base, "--budget-usd", "2.50", "--budget-tokens", "200000"]);
    assert.ok(parsed.ok && parsed.command.name === "control", JSON.stringify(parsed));
    assert.deepEqual(parsed.command.budget, { usd: 2.5, tokens: 200_000 });
    const claude = parseControl([...base, "--harness", "claude-code", "--budget-usd", "$0.29"]);
    assert.ok(claude.ok && claude.command.name === "control");
    assert.deepEqual(claude.command.budget, { usd: 0.29 });
    const none = parseControl(base);
    assert.ok(none.ok && none.command.name === "control");
    assert.equal(none.command.budget, undefined);
  });

  it("refuses a budget that is not one as a usage error with words", () => {
    const base = ["--project", "/tmp/p", "--seat", "main", "--new"];
    const cases: [string[], RegExp][] = [
      [["--budget-usd", "0"], /--budget-usd: "0" is not an amount of dollars above 0/],
      [["--budget-usd", "1.005"], /in whole cents, e\.g\. 5 or 2\.50/],
      [["--budget-usd", "five"], /--budget-usd: "five"/],
      [["--budget-usd", ""], /--budget-usd needs a value/],
      [["--budget-tokens", "2e5"], /--budget-tokens: "2e5" is not a whole number of tokens/],
      [["--budget-tokens=-1"], /--budget-tokens: "-1" is not a whole number/],
    ];
    for (const [flags, words] of cases) {
      const parsed = parseControl([...base, ...flags]);
      assert.equal(parsed.ok, false, flags.join(" "));
      if (!parsed.ok) assert.match(parsed.error, words);
    }
  });
});
