// Whether the sealed Claude Code a controller launches will have a credential, checked at start
// (the Claude Code half of credentials.ts): an OAuth login (`.credentials.json`, what `claude`
// writes at /login) or a key in the `env` of its settings.json (ANTHROPIC_API_KEY,
// ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN) or an `apiKeyHelper` there. The sealed engine
// inherits no environment, so a key exported in the shell does not count, and the warning says
// so. Values are looked at only to see that they are non-empty strings; none is ever printed.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CLAUDE_CREDENTIALS } from "../control/engine/claude-code/claude-credentials.ts";
import { withAgentFrom } from "./credentials.ts";
import { commandLine, shellWord } from "./invocation.ts";

const KEY_VARIABLES = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];

/** Whether `dir` gives Claude Code a credential: a login file, or a key in its settings. */
export function claudeHasCredentials(dir: string | null): boolean {
  if (dir === null) return false;
  if (existsSync(join(dir, CLAUDE_CREDENTIALS))) return true;
  let settings: unknown;
  try {
    settings = JSON.parse(readFileSync(join(dir, "settings.json"), "utf8"));
  } catch {
    // No settings, or not JSON: no key from there.
    return false;
  }
  if (typeof settings !== "object" || settings === null) return false;
  const s = settings as { env?: unknown; apiKeyHelper?: unknown };
  if (typeof s.apiKeyHelper === "string" && s.apiKeyHelper !== "") return true;
  const env = typeof s.env === "object" && s.env !== null ? (s.env as Record<string, unknown>) : {};
  return KEY_VARIABLES.some((k) => typeof env[k] === "string" && env[k] !== "");
}

/** Claude Code's own config folder, as it finds it: CLAUDE_CONFIG_DIR, else ~/.claude. */
export function usualClaudeDir(env: NodeJS.ProcessEnv = process.env): string {
  const set = env.CLAUDE_CONFIG_DIR;
  return set !== undefined && set !== "" ? set : join(homedir(), ".claude");
}

/**
 * The lines to print at start when Claude Code will have no credential, saying what is missing
 * and the command to run instead; null when it has one.
 */
export function claudeCredentialWarning(check: {
  agentDir: string | null;
  named: "agent-dir" | "agent-from" | "none";
  given?: string;
  argv: readonly string[];
  env?: NodeJS.ProcessEnv;
}): string | null {
  if (claudeHasCredentials(check.agentDir)) return null;
  const env = check.env ?? process.env;
  const where =
    check.named === "none"
      ? "no agent directory was given (--agent-from)"
      : `${shellWord(check.given ?? "")} holds no ${CLAUDE_CREDENTIALS} and no key in the env of its settings.json`;
  const lines = [
    `warning: Claude Code has no credentials: ${where}, so each prompt will fail ("Not logged in").`,
  ];
  const shellKeys = KEY_VARIABLES.filter((k) => (env[k] ?? "") !== "");
  if (shellKeys.length > 0) {
    lines.push(
      `  ${shellKeys.join(", ")} set in this shell do not reach Claude Code: it runs sealed.`,
    );
  }
  const usual = usualClaudeDir(env);
  if (check.given !== usual && claudeHasCredentials(usual)) {
    lines.push(
      `  What to do: stop (Ctrl-C) and start again with your Claude Code's login copied from ${shellWord(usual)}:`,
      `    ${commandLine(withAgentFrom(check.argv, usual))}`,
    );
  } else {
    lines.push(
      `  What to do: log in with Claude Code (\`claude\`, then /login), or write a settings.json with {"env": {"ANTHROPIC_API_KEY": "..."}} in a folder of its own; then stop (Ctrl-C) and start again with --agent-from that folder, e.g.:`,
      `    ${commandLine(withAgentFrom(check.argv, usual))}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
