// What `control` says at start about Pi's credentials (issue 24 item 13): Pi's resolution rule
// applied to the agent directory the sealed engine gets, never printing a key's value.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { parseCommand } from "../../src/cli/args.ts";
import { credentialsIn, credentialWarning } from "../../src/cli/credentials.ts";

const SECRET = "sk-ant-secret-0123456789";
const ARGV = ["control", "--project", "/p", "--seat", "main", "--session", "/p/s.jsonl"];

function agentDir(t: TestContext, files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "cred-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(dir, { recursive: true });
  for (const [name, value] of Object.entries(files)) {
    writeFileSync(join(dir, name), JSON.stringify(value));
  }
  return dir;
}

/** The command a warning prints on its last line, as argv after the prefix. */
function printedArgv(warning: string): string[] {
  const last = warning.trimEnd().split("\n").at(-1) ?? "";
  const m = /^ {4}npm run conversation -- (.*)$/.exec(last);
  assert.ok(m, last);
  return (m[1] ?? "").split(" ");
}

describe("credentials", () => {
  it("finds API keys, OAuth logins and models.json keys the way Pi resolves them", (t) => {
    const dir = agentDir(t, {
      "auth.json": {
        anthropic: { type: "api_key", key: SECRET },
        openai: { type: "oauth", refresh: "r", access: "a", expires: 1 },
        google: { type: "api_key", key: "$GEMINI_API_KEY" },
        cf: { type: "api_key", key: "$CF_KEY", env: { CF_KEY: "x" } },
        odd: { type: "api_key", key: "!op read 'op://vault/item'" },
      },
      "models.json": { providers: { loopback: { apiKey: "dummy" }, keyless: { baseUrl: "x" } } },
      "settings.json": { defaultProvider: "anthropic" },
    });
    const found = credentialsIn(dir);
    assert.deepEqual(found.providers, ["anthropic", "cf", "loopback", "odd", "openai"]);
    assert.deepEqual(found.unresolved, [
      { file: "auth.json", provider: "google", variables: ["GEMINI_API_KEY"] },
    ]);
    assert.equal(found.defaultProvider, "anthropic");
  });

  it("says nothing when the provider to be used has a credential", (t) => {
    const dir = agentDir(t, { "auth.json": { anthropic: { type: "api_key", key: SECRET } } });
    const base = { agentDir: dir, named: "agent-dir" as const, given: dir, argv: ARGV, env: {} };
    assert.equal(credentialWarning(base), null);
    assert.equal(credentialWarning({ ...base, provider: "anthropic" }), null);
  });

  it("names what is missing and a command that copies Pi's own credentials when none was given", (t) => {
    const usual = agentDir(t, { "auth.json": { anthropic: { type: "api_key", key: SECRET } } });
    const env = { PI_CODING_AGENT_DIR: usual, ANTHROPIC_API_KEY: SECRET };
    const said = credentialWarning({ agentDir: null, named: "none", argv: ARGV, env }) ?? "";
    assert.match(said, /^warning: Pi has no credentials for any provider: no agent directory/);
    assert.match(said, /ANTHROPIC_API_KEY set in this shell do not reach Pi: it runs sealed\./);
    assert.ok(!said.includes(SECRET), "a key's value is never printed");
    const argv = printedArgv(said);
    assert.deepEqual(argv, [...ARGV, "--agent-from", usual]);
    assert.ok(parseCommand(argv).ok, "the printed command runs as printed");
  });

  it("names the provider and the variable the sealed engine lacks when a key cannot resolve", (t) => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Pi's own ${VAR} key syntax.
    const dir = agentDir(t, { "auth.json": { anthropic: { type: "api_key", key: "${MY_KEY}" } } });
    const said =
      credentialWarning({
        agentDir: dir,
        named: "agent-dir",
        given: dir,
        provider: "anthropic",
        argv: ARGV,
        env: { PI_CODING_AGENT_DIR: join(dir, "none") },
      }) ?? "";
    assert.match(said, /no credentials for the provider anthropic: the agent directory /);
    assert.match(said, /auth\.json gives anthropic a key from \$MY_KEY, which the sealed engine/);
    assert.match(said, /What to do: add the key to .*auth\.json/);
  });

  it("lists the providers it has when --model names another", (t) => {
    const dir = agentDir(t, { "models.json": { providers: { loopback: { apiKey: "dummy" } } } });
    const said =
      credentialWarning({
        agentDir: dir,
        named: "agent-from",
        given: dir,
        provider: "openai",
        argv: ARGV,
        env: { PI_CODING_AGENT_DIR: join(dir, "none") },
      }) ?? "";
    assert.match(said, /^ {2}It has credentials for: loopback\.$/m);
    assert.match(said, /log in with Pi \(`pi`, then \/login\)/);
  });

  it("prints a --new run's command again on the conversation it wrote, not a second new one", () => {
    const argv = ["control", "--project", "/p", "--seat", "main", "--new", "--title", "T"];
    const said =
      credentialWarning({
        agentDir: null,
        named: "none",
        argv,
        written: "/p/.pi/state/main/sessions/n.jsonl",
        env: { PI_CODING_AGENT_DIR: "/nonexistent-agent" },
      }) ?? "";
    const again = printedArgv(said);
    assert.deepEqual(again, [
      ...["control", "--project", "/p", "--seat", "main"],
      ...["--session", "/p/.pi/state/main/sessions/n.jsonl", "--agent-from", "/nonexistent-agent"],
    ]);
    assert.ok(parseCommand(again).ok);
  });
});
