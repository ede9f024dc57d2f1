// Claude Code's store through the command, as a person runs it (child processes): the catalogue
// says who wrote a row, read/search/export find a Claude conversation by its id, and with no
// source named every default store that exists is read and said on stderr.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { richClaudeSession } from "../helpers/claude-sessions.ts";
import { header, tempDir, user, writeSession } from "../helpers/reader.ts";
import { runCli } from "./run-cli.ts";

/** A home with Claude Code's store holding one rich session (and, with `pi`, Pi's store). */
function home(base: string) {
  const projectsDir = join(base, "home", ".claude", "projects");
  const cwd = join(base, "work", "my app");
  const w = richClaudeSession(cwd);
  w.reply([{ type: "text", text: "The word is quetzalcoatlus." }]);
  w.write(join(projectsDir, encodeClaudeCwd(cwd), `${w.sessionId}.jsonl`));
  return { home: join(base, "home"), projectsDir, cwd };
}

describe("claude-sources", () => {
  it("lists a Claude store's rows as written by Claude Code, and reads one by its id", async (t) => {
    const h = home(tempDir(t));
    const list = await runCli(t, ["catalogue", "--claude-projects", h.projectsDir, "--json"]);
    assert.equal(list.code, 0, list.stderr);
    const rows = (JSON.parse(list.stdout) as { conversations: Record<string, unknown>[] })
      .conversations;
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.harness, "claude-code");
    const id = String(rows[0]?.conversation);
    const text = await runCli(t, ["catalogue", "--claude-projects", h.projectsDir]);
    assert.match(text.stdout, /Rich session/);
    assert.match(text.stdout, /Claude Code/);
    const read = await runCli(t, ["read", id, "--claude-projects", h.projectsDir]);
    assert.equal(read.code, 0, read.stderr);
    assert.match(read.stdout, /Write notes and echo/);
    assert.match(read.stdout, /echo hi/);
    assert.match(read.stdout, /quetzalcoatlus/);
  });

  it("finds a Claude reply's words in search and exports the branch saying who wrote it", async (t) => {
    const h = home(tempDir(t));
    const found = await runCli(t, [
      "search",
      "quetzalcoatlus",
      "--claude-projects",
      h.projectsDir,
      "--json",
    ]);
    assert.equal(found.code, 0, found.stderr);
    const hits = JSON.parse(found.stdout) as Record<string, unknown>[];
    assert.equal(hits.length, 1, found.stdout);
    assert.match(String(hits[0]?.conversation), /^cc-/);
    const md = await runCli(t, [
      "export",
      String(hits[0]?.conversation),
      "--claude-projects",
      h.projectsDir,
      "--format",
      "md",
    ]);
    assert.equal(md.code, 0, md.stderr);
    assert.match(md.stdout, /^- Written by: Claude Code$/m);
    assert.match(md.stdout, /quetzalcoatlus/);
    // Claude's Write reads as the file written, not as its JSON arguments.
    assert.doesNotMatch(md.stdout, /"file_path"/);
  });

  it("reads every default store that exists when no source is named, and says so", async (t) => {
    const base = tempDir(t);
    const h = home(base);
    const env = { HOME: h.home, CLAUDE_CONFIG_DIR: undefined, PI_CODING_AGENT_DIR: undefined };
    const claudeOnly = await runCli(t, ["catalogue", "--json"], { env });
    assert.equal(claudeOnly.code, 0, claudeOnly.stderr);
    assert.match(
      claudeOnly.stderr,
      /reading Claude Code's sessions in .*\.claude\/projects \(--claude;/,
    );
    assert.doesNotMatch(claudeOnly.stderr, /Pi's sessions/);

    const project = join(base, "pi project");
    mkdirSync(project);
    const piDir = join(h.home, ".pi", "agent", "sessions", encodeCwd(project));
    mkdirSync(piDir, { recursive: true });
    writeSession(piDir, "s.jsonl", [header(project), user("u1", null, "hello pi")]);
    const both = await runCli(t, ["catalogue", "--json"], { env });
    assert.equal(both.code, 0, both.stderr);
    assert.match(
      both.stderr,
      /Pi's sessions in .* and Claude Code's sessions in .* \(--pi, --claude;/,
    );
    const harnesses = (
      JSON.parse(both.stdout) as { conversations: { harness: string }[] }
    ).conversations
      .map((r) => r.harness)
      .sort();
    assert.deepEqual(harnesses, ["claude-code", "pi"]);

    // CLAUDE_CONFIG_DIR moves Claude's store, as it moves Claude Code's.
    const moved = await runCli(t, ["catalogue", "--claude", "--json"], {
      env: { ...env, CLAUDE_CONFIG_DIR: join(base, "elsewhere") },
    });
    assert.notEqual(moved.code, 0);
    assert.match(moved.stderr, /elsewhere\/projects/);
  });
});
