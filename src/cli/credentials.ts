// Whether the sealed Pi a controller launches will have a credential, checked at start so a
// person hears what is missing before the first prompt fails with Pi's "No API key found … Use
// /login" (issue 24 item 13). The rule is Pi's own (Pi's docs/providers.md, Resolution Order;
// Pi's docs/models.md, Value Resolution): a provider has a credential when its auth.json entry is an
// API key or an OAuth token, or its models.json provider has an `apiKey`. The sealed engine
// inherits no environment (SPEC §6: PATH, a scratch HOME, PI_OFFLINE, PI_CODING_AGENT_DIR), so a
// key written as `$VAR` resolves only from the auth.json entry's own `env`, and the shell's
// ANTHROPIC_API_KEY and its kind never reach Pi. Values are read to classify them and are never
// printed; a `!command` key is counted as present and not run.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { commandLine, shellWord } from "./invocation.ts";

/** The variables the sealed engine has (execution.ts): all a `$VAR` key could resolve from. */
const ENGINE_ENV = new Set(["PATH", "HOME", "PI_OFFLINE", "PI_CODING_AGENT_DIR"]);

export type Credentials = {
  /** Providers Pi would find a credential for, sorted. */
  providers: string[];
  /** Keys that name variables the sealed engine does not have: `file` `provider` `$VARS`. */
  unresolved: { file: "auth.json" | "models.json"; provider: string; variables: string[] }[];
  /** The provider settings.json names as the default (`defaultProvider`), if any. */
  defaultProvider: string | null;
};

/** What Pi would find in the agent directory `dir` (null: the engine gets none). */
export function credentialsIn(dir: string | null): Credentials {
  const found: Credentials = { providers: [], unresolved: [], defaultProvider: null };
  if (dir === null) return found;
  const names = new Set<string>();
  const auth = readJsonObject(join(dir, "auth.json"));
  for (const [provider, entry] of Object.entries(auth)) {
    if (!isObject(entry)) continue;
    if (entry.type === "oauth") {
      if (typeof entry.refresh === "string" || typeof entry.access === "string")
        names.add(provider);
      continue;
    }
    if (entry.type !== "api_key" || typeof entry.key !== "string" || entry.key === "") continue;
    const own = isObject(entry.env) ? new Set(Object.keys(entry.env)) : new Set<string>();
    const missing = missingVariables(entry.key, own);
    if (missing.length === 0) names.add(provider);
    else found.unresolved.push({ file: "auth.json", provider, variables: missing });
  }
  const models = readJsonObject(join(dir, "models.json"));
  const providers = isObject(models.providers) ? models.providers : {};
  for (const [provider, config] of Object.entries(providers)) {
    if (!isObject(config) || typeof config.apiKey !== "string" || config.apiKey === "") continue;
    if (names.has(provider)) continue;
    const missing = missingVariables(config.apiKey, new Set());
    if (missing.length === 0) names.add(provider);
    else found.unresolved.push({ file: "models.json", provider, variables: missing });
  }
  const settings = readJsonObject(join(dir, "settings.json"));
  if (typeof settings.defaultProvider === "string")
    found.defaultProvider = settings.defaultProvider;
  found.providers = [...names].sort();
  return found;
}

/** The variables a key refers to (`$X`, `${X}`; `$$` is a literal) that neither set has. */
function missingVariables(key: string, own: ReadonlySet<string>): string[] {
  if (key.startsWith("!")) return [];
  const missing: string[] = [];
  for (const m of key.matchAll(/\$(\$|!|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g)) {
    const name = m[2] ?? m[3];
    if (name === undefined) continue;
    if (!own.has(name) && !ENGINE_ENV.has(name) && !missing.includes(name)) missing.push(name);
  }
  return missing;
}

/** Pi's own agent directory, as Pi finds it: PI_CODING_AGENT_DIR, else ~/.pi/agent. */
export function usualAgentDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.PI_CODING_AGENT_DIR;
  if (dir !== undefined && dir !== "") return dir.replace(/^~(?=\/|$)/, homedir());
  return join(homedir(), ".pi", "agent");
}

export type CredentialCheck = {
  /** The agent directory the engine gets (null: none, Pi has no model or credentials). */
  agentDir: string | null;
  /** How the person named it: --agent-dir, --agent-from (copied), or not at all. */
  named: "agent-dir" | "agent-from" | "none";
  /** The directory named with --agent-from or --agent-dir, as given. */
  given?: string;
  /** The provider the person chose with --model provider/id or --provider. */
  provider?: string;
  /** The `control` arguments to run again with, `--agent-from` added when that would help. */
  argv: readonly string[];
  /** The conversation a `--new` or `--fork-from` run wrote: the command to run again names it. */
  written?: string;
  env?: NodeJS.ProcessEnv;
};

/**
 * The lines to print at start when Pi will have no credential for the provider it is to use,
 * saying what is missing and what to add; null when it has one. A `--model` without a
 * provider prefix is checked only for "some credential at all".
 */
export function credentialWarning(check: CredentialCheck): string | null {
  const env = check.env ?? process.env;
  const found = credentialsIn(check.agentDir);
  const wanted = check.provider ?? found.defaultProvider ?? null;
  const ok = wanted === null ? found.providers.length > 0 : found.providers.includes(wanted);
  if (ok) return null;
  const lines: string[] = [];
  const need = wanted === null ? "any provider" : `the provider ${wanted}`;
  const where =
    check.named === "none"
      ? "no agent directory was given (--agent-from or --agent-dir)"
      : check.named === "agent-from"
        ? `the files copied from ${shellWord(check.given ?? "")} hold no API key or login for it`
        : `the agent directory ${shellWord(check.given ?? "")} holds no API key or login for it`;
  lines.push(
    `warning: Pi has no credentials for ${need}: ${where}, so each prompt will be refused ` +
      `("No API key found").`,
  );
  if (found.providers.length > 0)
    lines.push(`  It has credentials for: ${found.providers.join(", ")}.`);
  for (const u of found.unresolved) {
    lines.push(
      `  ${u.file} gives ${u.provider} a key from ${u.variables.map((v) => `$${v}`).join(", ")}, ` +
        "which the sealed engine does not have (it inherits no environment): put the key, or an " +
        `"env" entry with it, in auth.json.`,
    );
  }
  const shellKeys = Object.keys(env)
    .filter((k) => /_API_KEY$/.test(k) && env[k] !== "")
    .sort();
  if (shellKeys.length > 0) {
    lines.push(`  ${shellKeys.join(", ")} set in this shell do not reach Pi: it runs sealed.`);
  }
  const usual = usualAgentDir(env);
  const usualHas = credentialsIn(usual);
  const usualOk =
    wanted === null ? usualHas.providers.length > 0 : usualHas.providers.includes(wanted);
  const example =
    `{"${wanted ?? "anthropic"}": {"type": "api_key", "key": "..."}}` +
    " (see Pi's docs/providers.md, in its package @earendil-works/pi-coding-agent)";
  if (check.named !== "agent-dir" && usualOk && check.given !== usual) {
    lines.push(
      `  What to do: stop (Ctrl-C) and start again with Pi's own credentials copied from ${shellWord(usual)}:`,
      `    ${commandLine(withAgentFrom(check.argv, usual, check.written))}`,
    );
  } else if (check.named === "agent-dir") {
    lines.push(
      `  What to do: add the key to ${shellWord(join(check.given ?? "", "auth.json"))}, e.g. ${example}, then stop (Ctrl-C) and start again.`,
    );
  } else {
    lines.push(
      `  What to do: log in with Pi (\`pi\`, then /login) or write ${shellWord(join(usual, "auth.json"))}, e.g. ${example}; then stop (Ctrl-C) and start again with:`,
      `    ${commandLine(withAgentFrom(check.argv, usual, check.written))}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/**
 * `argv` with `--agent-from dir` in place of any --agent-from/--agent-dir. A `--new` (or
 * `--fork-from`) run has written its conversation already: run again on that session, not on a
 * second new one (or a second fork).
 */
export function withAgentFrom(argv: readonly string[], dir: string, written?: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--agent-from" || a === "--agent-dir") {
      i++;
      continue;
    }
    if (a.startsWith("--agent-from=") || a.startsWith("--agent-dir=")) continue;
    if (written !== undefined && (a === "--title" || a === "--new" || a === "--pi-sessions")) {
      if (a === "--new") out.push("--session", written);
      else i++;
      continue;
    }
    // A fork was written too (--fork-from): run again on it, not on a second fork.
    if (written !== undefined && (a === "--fork-from" || a.startsWith("--fork-from="))) {
      if (a === "--fork-from") i++;
      out.push("--session", written);
      continue;
    }
    if (written !== undefined && (a.startsWith("--title=") || a.startsWith("--pi-sessions="))) {
      continue;
    }
    out.push(a);
  }
  out.push("--agent-from", dir);
  return out;
}

function readJsonObject(file: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(readFileSync(file, "utf8"));
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
