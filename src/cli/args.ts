// The `conversation` command line: subcommands, their flags and their help texts. Parsing is
// strict (node:util parseArgs): an unknown flag, a missing or extra argument is a usage error,
// returned as a value with the help text to point at. Nothing here reads a file.
import { resolve } from "node:path";
import { EXPORT_FORMATS, isExportFormat } from "../export/index.ts";
import { ID_PATTERN } from "../protocol/chat-01.ts";
import { QUERY_MAX_CHARS, QUERY_MAX_PREFIXES, QUERY_MAX_TOKENS } from "../search/query.ts";
import { ATTACH_HELP, type AttachCommand, parseAttach } from "./attach-args.ts";
import { AUDIT_HELP, type AuditCommand, parseAudit } from "./audit.ts";
import type { SourceFlags } from "./config.ts";
import { CONTROL_HELP, type ControlCommand, parseControl } from "./control-args.ts";
import type { ControllersCommand } from "./controllers.ts";
import type { ExportCommand } from "./export.ts";
import { parseFlags } from "./flags.ts";
import type { InboxCommand } from "./inbox.ts";
import { LOGINS_HELP, type LoginsCommand, parseLogins } from "./logins.ts";
import type { SearchCommand } from "./search.ts";
import {
  PHONE_HELP,
  PHONE_OPTIONS,
  PROXY_HELP,
  PROXY_OPTIONS,
  type ProxyFlagValues,
  proxyFlagsOf,
} from "./serve-proxy.ts";
import { parseUsage, USAGE_OPTIONS, type UsageCommand, usageHelp } from "./usage-args.ts";

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 4173;

export type Command =
  | { name: "help"; text: string }
  | UsageCommand
  | { name: "catalogue"; sources: SourceFlags; json: boolean; stateDir?: string }
  | { name: "read"; sources: SourceFlags; id: string; branch?: string; json: boolean }
  | {
      name: "follow";
      sources: SourceFlags;
      id: string;
      branch?: string;
      json: boolean;
      fromStart: boolean;
    }
  | {
      name: "serve";
      sources: SourceFlags;
      host: string;
      port: number;
      portGiven: boolean;
      stateDir?: string;
      /** Behind a proxy (serve-proxy.ts): the four flags, checked when the board starts. */
      proxy?: ProxyFlagValues;
      /** `--phone`: the person a device link is minted for at start (null: the local operator). */
      phone?: { for: string | null };
    }
  | ControllersCommand
  | InboxCommand
  | ControlCommand
  | AttachCommand
  | AuditCommand
  | LoginsCommand
  | SearchCommand
  | ExportCommand;

/** A usage error: `error` is its first line; `more`, further lines of advice, each its own line. */
export type Parsed =
  | { ok: true; command: Command }
  | { ok: false; error: string; usage: string; more?: string[] };

const SOURCES_HELP = `Sources (with none, each default store that exists: --pi, --claude):
  --pi               Pi's own sessions: $PI_CODING_AGENT_DIR/sessions, else
                     ~/.pi/agent/sessions (one group per project)
  --pi-sessions DIR  Pi's sessions kept in another folder
  --claude           Claude Code's sessions: $CLAUDE_CONFIG_DIR/projects, else
                     ~/.claude/projects
  --claude-projects DIR
                     Claude Code's sessions kept in another projects folder
  --config FILE      a JSON file: { "specs": [...], "registrations": [...] }
                     (board specs, "repository", "pi-agent" or "claude-code",
                     and seat registrations; relative paths are from the
                     file's folder)
  --project DIR      a project root; its conversations are the files in
                     DIR/.pi/state/<seat>/sessions (a seat registered on
                     claude-code: DIR/.pi/state/<seat>/claude/projects)
  --seat NAME        a seat under --project (repeatable; default: main;
                     '*' for every seat in DIR/.pi/state)
  The store flags may be added to each other, --config or --project.`;

export const HELP = {
  top: `Usage: conversation <command> [options]

Reads Pi and Claude Code conversations; only control runs one (sealed).

Commands:
  catalogue          list the conversations in the sources
  read <id>          print a branch of a conversation, every page in order
  follow <id>        print what is appended to a branch until Ctrl-C
  search <query>     full-text search over every branch of every conversation
  usage              tokens and cost per day, month, project, model or
                     conversation
  export <id>        one branch as Markdown, HTML or JSON
  serve              serve the board and the Console on loopback
  control            run a controller on one session (see control --help)
  controllers        list the running controllers
  inbox              the controlled conversations that need you
  attach <id>        a terminal on a running controller (see attach --help)
  audit <id>         who did what to a conversation; --verify proves it
  logins             the board's device login links; --revoke ID revokes one

${SOURCES_HELP}

  -h, --help         help for a command: conversation <command> --help

Text output is for people (hostile control characters shown as ^[ or
<U+202E>); --json is for scripts. Exit status: 0 ok; 1 refused or failed
(stderr: "refused: <code>: <message>"); 2 usage error. More: README.md and
docs/*.md.
`,
  catalogue: `Usage: conversation catalogue [SOURCES] [--json]

Lists every conversation in the sources, grouped by project (the most recently
active first), newest activity first in each: title, id, project/seat, last
activity and size. Rows that cannot be read say why. A source root that is
refused (missing, unreadable, a link out) is named on stderr and the exit
status is 1; the other roots' rows are still listed.

${SOURCES_HELP}

  --json             the CHAT-01 catalogue record, as the reader returns it,
                     each row with "live": true when a controller runs it
  --state-dir DIR    where to look for running controllers (as control's)
  -h, --help         this help
`,
  read: `Usage: conversation read <id> [SOURCES] [--branch NAME] [--json]

Prints one branch of a conversation, every page in order, from one snapshot.
<id> is a conversation id from \`conversation catalogue\`.

  --branch NAME      the branch to read (default: Pi's default branch)
  --json             one JSON document: { conversation, branch, view, pages },
                     each page a CHAT-01 page

${SOURCES_HELP}

  -h, --help         this help
`,
  follow: `Usage: conversation follow <id> [SOURCES] [--branch NAME]
                           [--from-start] [--json]

Prints the parts appended to a branch as they are written (checked every
half second) until interrupted; Ctrl-C exits 0. A status line goes to stderr.

  --branch NAME      the branch to follow (default: Pi's default branch)
  --from-start       print the branch's history first, then follow it
  --json             JSON lines: one CHAT-01 page per line, for each page
                     that has parts

${SOURCES_HELP}

  -h, --help         this help
`,
  serve: `Usage: conversation serve [SOURCES] [--port N] [--host ADDRESS]

Serves the board and the Console at / on loopback, and prints the URL; Ctrl-C
stops it. Its read-only routes: GET /api/conversations (the catalogue),
GET /api/conversations/:id/page (a page of a branch), GET /api/search?q=
(full-text search), GET /api/conversations/:id/export?format=md|html|json
(a branch as a download). Reading needs no login; steering a run of a
controller (see --state-dir) does, with the login link it prints.

  --port N           the port (default ${DEFAULT_PORT}, or a free one if it is taken;
                     0 always picks a free one)
  --host ADDRESS     127.0.0.1 (default), ::1 or localhost; nothing else
  --state-dir DIR    where to look for running controllers (as control's):
                     the catalogue marks their conversations live

${PROXY_HELP}

${PHONE_HELP}

${SOURCES_HELP}

  -h, --help         this help
`,
  controllers: `Usage: conversation controllers [--json] [--state-dir DIR]

Lists the controllers running on this host: conversation, project and seat,
session file, socket, pid and grants, and how to attach to each. An entry
left by a controller that died (killed, crashed) is recognised by its pid
and start time, left out, and removed.

  --json             one JSON document: { "controllers": [...] }, each the
                     controller's registry entry
  --state-dir DIR    the state directory the controllers were started with
                     (default as control's: $XDG_RUNTIME_DIR or
                     $XDG_STATE_HOME / ~/.local/state, mosaic-conversation)
  -h, --help         this help
`,
  usage: usageHelp(SOURCES_HELP),
  inbox: `Usage: conversation inbox [--watch] [--json] [--state-dir DIR]
                          [--stall-minutes N] [--grant ID]

Lists the running controllers' conversations that need you, oldest wait
first: waiting-approval (an approval is open), waiting-input (a run ended),
failed (an engine error, the engine or the controller died) and stalled (no
event for N minutes during a run). Each says why, how long it has waited, and
the attach line that opens it. Running and idle ones are counted, not listed.

  --watch            keep watching: one line for each change, until Ctrl-C
  --json             { "inbox": [...] }; with --watch, one { "change": ... }
                     per line after it
  --state-dir DIR    the state directory the controllers were started with
  --stall-minutes N  a run with no event for N minutes is stalled (default 5)
  --grant ID         the observe-only grant to watch with (default observer)
  -h, --help         this help
`,
  search: `Usage: conversation search <query> [SOURCES] [--json] [--limit N]

Searches the text of every branch of every conversation in the sources
(messages, thinking, tool calls and results, summaries). Every word of the
query must match, as a prefix (a one-letter word matches only itself);
"quoted words" match as a phrase; at most ${QUERY_MAX_CHARS} characters, ${QUERY_MAX_TOKENS} different
words and ${QUERY_MAX_PREFIXES} prefixes (words in quotes are not prefixes). Newest first. Each hit names its conversation, branch and
entry, and ends with the line that reads it, with the search's own sources:
  conversation search parser crash --project ~/code/app
prints under each hit a line like
  conversation read <id> --branch <branch> --project ~/code/app
A source root that is refused (missing, unreadable) is named on stderr and the
exit status is 1, as for catalogue; the other roots' hits are still printed.

The index is kept in $XDG_CACHE_HOME/mosaic-conversation (else
~/.cache/mosaic-conversation), never in a source; it catches up with what
was appended, and re-reads a file that was rewritten or replaced.

  --json             a JSON list of hits: { conversation, branch, entry,
                     snippet, matches, title, project, seat, timestamp }
  --limit N          at most N hits (default 20, at most 1000)
  --                 the words after it are the query, even one that
                     starts with '-'

${SOURCES_HELP}

  -h, --help         this help
`,
  export: `Usage: conversation export <id> [SOURCES] [--format md|html|json]
                           [--branch NAME] [--out FILE]

Writes one branch of a conversation as a file: md (Markdown, code and tool
calls in fenced blocks), html (one self-contained page: inline CSS, no
script, a strict Content-Security-Policy) or json (the branch's CHAT-01
pages). Hostile text stays inert in all three.

  --format FORMAT    md (the default), html or json
  --branch NAME      the branch (default: Pi's default branch)
  --out FILE         write to FILE (never inside a sessions directory);
                     default: standard output

${SOURCES_HELP}

  -h, --help         this help
`,
  control: CONTROL_HELP,
  attach: ATTACH_HELP,
  audit: AUDIT_HELP,
  logins: LOGINS_HELP,
} as const;

const STATE_DIR = { type: "string" } as const;

/** The source flags, shared with `npm start` (demo.ts). */
export const SOURCE_OPTIONS = {
  config: { type: "string" },
  project: { type: "string" },
  seat: { type: "string", multiple: true },
  pi: { type: "boolean" },
  "pi-sessions": { type: "string" },
  claude: { type: "boolean" },
  "claude-projects": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Parses `argv` (without node and the script). */
export function parseCommand(argv: string[]): Parsed {
  const [name, ...rest] = argv;
  if (name === undefined) return { ok: false, error: "name a command", usage: HELP.top };
  if (name === "--help" || name === "-h" || name === "help") {
    if (name === "help" && rest[0] !== undefined && isCommandName(rest[0])) {
      return { ok: true, command: { name: "help", text: HELP[rest[0]] } };
    }
    return { ok: true, command: { name: "help", text: HELP.top } };
  }
  if (!isCommandName(name)) {
    return { ok: false, error: `unknown command ${JSON.stringify(name)}`, usage: HELP.top };
  }
  const usage = HELP[name];
  try {
    return parseSubcommand(name, rest);
  } catch (e) {
    // parseArgs throws a TypeError with an ERR_PARSE_ARGS_* code for every bad argv.
    if (!isParseArgsError(e)) throw e;
    // Its advice on positionals that start with '-' does not apply to these commands. Its
    // other message is lines; they are split where Node breaks them (never at a line break
    // inside an argument it quotes), so each is printed as a line of its own.
    const [first = e.message, ...more] = e.message.split(/\n(?=Did you forget|To specify)/);
    return { ok: false, error: first.split(". To specify")[0] ?? first, usage, more };
  }
}

type CommandName =
  | "catalogue"
  | "read"
  | "follow"
  | "serve"
  | "control"
  | "controllers"
  | "inbox"
  | "attach"
  | "audit"
  | "logins"
  | "search"
  | "usage"
  | "export";

function isCommandName(s: string): s is CommandName {
  return [
    "catalogue",
    "read",
    "follow",
    "serve",
    "control",
    "controllers",
    "inbox",
    "attach",
    "audit",
    "logins",
    "search",
    "usage",
    "export",
  ].includes(s);
}

function stateDirOf(v: { "state-dir"?: string }): { stateDir?: string } {
  return v["state-dir"] === undefined ? {} : { stateDir: resolve(v["state-dir"]) };
}

function isParseArgsError(e: unknown): e is Error {
  const code = (e as { code?: unknown } | null)?.code;
  return e instanceof TypeError && typeof code === "string" && code.startsWith("ERR_PARSE_ARGS");
}

/** The source flags among parsed values (SOURCE_OPTIONS). */
export function sourcesOf(v: {
  config?: string;
  project?: string;
  seat?: string[];
  pi?: boolean;
  "pi-sessions"?: string;
  claude?: boolean;
  "claude-projects"?: string;
}): SourceFlags {
  const out: SourceFlags = {};
  if (v.config !== undefined) out.config = v.config;
  if (v.project !== undefined) out.project = v.project;
  if (v.seat !== undefined) out.seat = v.seat;
  if (v.pi !== undefined) out.pi = v.pi;
  if (v["pi-sessions"] !== undefined) out.piSessions = v["pi-sessions"];
  if (v.claude !== undefined) out.claude = v.claude;
  if (v["claude-projects"] !== undefined) out.claudeProjects = v["claude-projects"];
  return out;
}

function parseSubcommand(name: CommandName, args: string[]): Parsed {
  const usage = HELP[name];
  const bad = (error: string): Parsed => ({ ok: false, error, usage });
  switch (name) {
    case "catalogue": {
      const { values, positionals } = parseFlags(args, {
        ...SOURCE_OPTIONS,
        json: { type: "boolean" },
        "state-dir": STATE_DIR,
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      if (positionals.length > 0)
        return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
      if (values["state-dir"] === "") return bad("--state-dir needs a value");
      return {
        ok: true,
        command: {
          name,
          sources: sourcesOf(values),
          json: values.json ?? false,
          ...stateDirOf(values),
        },
      };
    }
    case "read":
    case "follow": {
      const { values, positionals } = parseFlags(args, {
        ...SOURCE_OPTIONS,
        json: { type: "boolean" },
        branch: { type: "string" },
        "from-start": { type: "boolean" },
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      if (name === "read" && values["from-start"] !== undefined) {
        return bad("Unknown option '--from-start'");
      }
      const [id, extra] = positionals;
      if (id === undefined || id === "") return bad("missing the conversation <id>");
      if (extra !== undefined) return bad(`unexpected argument ${JSON.stringify(extra)}`);
      const branch = values.branch === undefined ? {} : { branch: values.branch };
      const common = { sources: sourcesOf(values), id, ...branch, json: values.json ?? false };
      if (name === "read") return { ok: true, command: { name, ...common } };
      return {
        ok: true,
        command: { name, ...common, fromStart: values["from-start"] === true },
      };
    }
    case "serve": {
      const { values, positionals } = parseFlags(args, {
        ...SOURCE_OPTIONS,
        port: { type: "string" },
        host: { type: "string" },
        "state-dir": STATE_DIR,
        ...PROXY_OPTIONS,
        ...PHONE_OPTIONS,
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      if (positionals.length > 0)
        return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
      const port = values.port === undefined ? DEFAULT_PORT : parsePort(values.port);
      if (port === null)
        return bad(`--port ${JSON.stringify(values.port)} is not a port (0-65535)`);
      const proxy = proxyFlagsOf(values);
      if (!proxy.ok) return bad(proxy.error);
      if (values["phone-for"] !== undefined && !values.phone)
        return bad("--phone-for goes with --phone");
      if (values.phone && proxy.value !== null && values["phone-for"] === undefined) {
        return bad("behind a proxy, --phone needs --phone-for NAME: the person the link logs in");
      }
      const phone = values.phone ? { phone: { for: values["phone-for"] ?? null } } : {};
      return {
        ok: true,
        command: {
          name,
          sources: sourcesOf(values),
          host: values.host ?? DEFAULT_HOST,
          port,
          portGiven: values.port !== undefined,
          ...stateDirOf(values),
          ...(proxy.value === null ? {} : { proxy: proxy.value }),
          ...phone,
        },
      };
    }
    case "controllers": {
      const { values, positionals } = parseFlags(args, {
        json: { type: "boolean" },
        "state-dir": STATE_DIR,
        help: { type: "boolean", short: "h" },
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      if (positionals.length > 0)
        return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
      if (values["state-dir"] === "") return bad("--state-dir needs a value");
      return { ok: true, command: { name, json: values.json ?? false, ...stateDirOf(values) } };
    }
    case "inbox": {
      const { values, positionals } = parseFlags(args, {
        json: { type: "boolean" },
        watch: { type: "boolean" },
        "state-dir": STATE_DIR,
        "stall-minutes": { type: "string" },
        grant: { type: "string" },
        help: { type: "boolean", short: "h" },
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      if (positionals.length > 0)
        return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
      if (values["state-dir"] === "") return bad("--state-dir needs a value");
      const minutes = values["stall-minutes"] ?? "5";
      if (!/^\d{1,4}(\.\d{1,3})?$/.test(minutes) || Number(minutes) <= 0) {
        return bad(`--stall-minutes ${JSON.stringify(minutes)} is not a number of minutes above 0`);
      }
      // `control`'s observe-only grant (grants-file.ts DEFAULT_GRANTS), as the board's streams use.
      const grant = values.grant ?? "observer";
      if (!ID_PATTERN.test(grant)) return bad(`--grant ${JSON.stringify(grant)} is not a grant id`);
      return {
        ok: true,
        command: {
          name,
          json: values.json ?? false,
          watch: values.watch ?? false,
          stallMs: Math.round(Number(minutes) * 60_000),
          grant,
          ...stateDirOf(values),
        },
      };
    }
    case "search": {
      const { values, positionals } = parseFlags(args, {
        ...SOURCE_OPTIONS,
        json: { type: "boolean" },
        limit: { type: "string" },
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      // Every word is the query (all must match), as a shell splits `search tokenizer crash`;
      // after `--` too, so a word that starts with '-' can be searched for.
      const query = positionals.join(" ");
      if (query.trim() === "") return bad("missing the <query>");
      const limit = values.limit === undefined ? 20 : Number(values.limit);
      if (!/^\d{1,4}$/.test(values.limit ?? "20") || limit < 1 || limit > 1000) {
        return bad(`--limit ${JSON.stringify(values.limit)} is not a number from 1 to 1000`);
      }
      const json = values.json ?? false;
      return { ok: true, command: { name, sources: sourcesOf(values), query, json, limit } };
    }
    case "usage": {
      const { values, positionals } = parseFlags(args, { ...SOURCE_OPTIONS, ...USAGE_OPTIONS });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      const parsed = parseUsage(values, positionals, sourcesOf(values));
      return parsed.ok ? parsed : bad(parsed.error);
    }
    case "export": {
      const { values, positionals } = parseFlags(args, {
        ...SOURCE_OPTIONS,
        branch: { type: "string" },
        format: { type: "string" },
        out: { type: "string" },
      });
      if (values.help) return { ok: true, command: { name: "help", text: usage } };
      const [id, extra] = positionals;
      if (id === undefined || id === "") return bad("missing the conversation <id>");
      if (extra !== undefined) return bad(`unexpected argument ${JSON.stringify(extra)}`);
      // Markdown unless told otherwise: what a person exporting a conversation usually wants.
      const format = values.format ?? "md";
      if (!isExportFormat(format)) {
        return bad(`--format must be one of ${EXPORT_FORMATS.join(", ")}`);
      }
      const command: ExportCommand = { name, sources: sourcesOf(values), id, format };
      if (values.branch !== undefined) command.branch = values.branch;
      if (values.out !== undefined) command.out = values.out;
      return { ok: true, command };
    }
    case "control":
      return parseControl(args);
    case "attach":
      return parseAttach(args);
    case "audit":
      return parseAudit(args);
    case "logins":
      return parseLogins(args);
    default:
      return unreachable(name);
  }
}

/** A decimal port from 0 to 65535, or null. */
export function parsePort(s: string): number | null {
  if (!/^\d{1,5}$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

function unreachable(x: never): never {
  throw new Error(`unhandled command ${String(x)}`);
}
