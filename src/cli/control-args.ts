// The flags of `conversation control` and its help: parsed with node:util parseArgs (strict),
// checked before anything runs (a usage error names the flag); paths are resolved here.

import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseTokensText, parseUsdText } from "../control/controller/budget.ts";
import { HARNESS_NAMES, type HarnessName, isHarnessName } from "../control/engine/harness.ts";
import { PACKAGE_ROOT } from "../control/engine/package-files.ts";
import { isPiVersion, PI_VERSION, PI_VERSIONS, piCliPath } from "../control/engine/pi/pi-pin.ts";
import type { BudgetLimits } from "../control/protocol.ts";
import { parseFlags } from "./flags.ts";

export type ControlTarget = { kind: "session"; file: string } | { kind: "new"; title?: string };

export type ControlCommand = {
  name: "control";
  /** The project root; absent only with `fixtureRoot`, where the session path names it. */
  project?: string;
  seat: string;
  target: ControlTarget;
  /** Test hook: the guard's and FixtureVerifier's root instead of the project's. */
  fixtureRoot?: string;
  stateDir?: string;
  claimRoot?: string;
  socketDir?: string;
  /** The grants file, read when the command runs; absent: the default operator and observer. */
  grants?: string;
  /** Pi's `--model`, `--provider`, `--thinking`, in that order; the seal checks them. */
  engineArgs: string[];
  model?: string;
  provider?: string;
  thinking?: string;
  agentDir?: string;
  agentFrom?: string;
  /** Which pinned Pi runs (`--pi-version`); absent: the default, 0.85.1. */
  piVersion?: string;
  /** Which engine runs the session (`--harness`): Pi, the default, or Claude Code. */
  harness: HarnessName;
  /** `--budget-usd` (whole cents, as dollars) and `--budget-tokens`: the controller's budget. */
  budget?: BudgetLimits;
};

export type ControlParsed =
  | { ok: true; command: ControlCommand | { name: "help"; text: string } }
  | { ok: false; error: string; usage: string };

export const CONTROL_HELP = `Usage: conversation control --project DIR --seat NAME
                            [--harness pi|claude-code]
                            (--session FILE | --new [--title TEXT])
                            [--model M] [--provider P] [--thinking LEVEL]
                            [--agent-from DIR | --agent-dir DIR]
                            [--grants FILE] [--state-dir DIR]
                            [--pi-version 0.85.1|1.6.0]
                            [--budget-usd X] [--budget-tokens N]

Starts a controller on one conversation of a project: takes the writer
claim, launches the pinned Pi sealed (RPC mode, no extensions, offline),
checks that Pi loaded the session, and serves a Unix socket where clients
observe and, with a grant, steer it (docs/control-cli.md). It prints the
conversation id and how to attach. SIGINT or SIGTERM (Ctrl-C) stops Pi and
exits 0.

  --project DIR       the project root (the engine works in it)
  --harness H         pi (the default) or claude-code: the pinned Claude Code
                      2.1.328, sealed (stream-json, no user or project
                      settings, hooks, plugins, MCP servers, CLAUDE.md or
                      slash commands; its config folder is
                      DIR/.pi/state/NAME/claude); it asks before a tool runs,
                      and the controlling client answers (docs/claude-control.md).
                      With claude-code: --session is a file in
                      DIR/.pi/state/NAME/claude/projects/<project>/, --new
                      names a new session Claude Code writes at its first
                      turn, --model is its model, --agent-from DIR copies
                      DIR/settings.json (e.g. its env with ANTHROPIC_API_KEY)
  --seat NAME         the seat: sessions live in DIR/.pi/state/NAME/sessions
  --session FILE      an existing session (a .jsonl file in that directory)
  --new               start a new conversation there (written by Pi's own
                      SessionManager, with the model and thinking level)
  --title TEXT        the new conversation's title (with --new)
  --model M           Pi's --model, e.g. provider/id
  --provider P        Pi's --provider
  --thinking LEVEL    off, minimal, low, medium, high, xhigh or max
  --agent-from DIR    copy Pi's models.json, settings.json and auth.json from
                      DIR (e.g. ~/.pi/agent; only read) into a private agent
                      directory, removed when the controller stops
  --agent-dir DIR     use DIR as Pi's agent directory (outside ~/.pi); with
                      neither, Pi has no model or credentials
  --grants FILE       JSON: [{ "id": ..., "actor": ..., "capabilities":
                      [...] }]; capabilities: observe, takeover, release,
                      prompt, interrupt, confirm, force-stop, recover, launch,
                      answer, budget.
                      Default: "operator" (every capability) and "observer"
  --state-dir DIR     keep claims, sockets and the registry of running
                      controllers under DIR (default: claims in
                      $XDG_STATE_HOME/mosaic-conversation, else
                      ~/.local/state/mosaic-conversation; sockets and the
                      registry in $XDG_RUNTIME_DIR/mosaic-conversation when
                      set, else there too)
  --pi-version V      which pinned Pi runs: 0.85.1 (the default) or 1.6.0,
                      each checked against its integrity (docs/seal-and-pin.md);
                      1.6.0 is a development dependency: it runs in a checkout
                      of this package, not where the package is installed
  --budget-usd X      a budget in dollars (whole cents, e.g. 5 or 2.50) for
                      what this controller's engine spends from now on, as
                      \`conversation usage\` counts it; a prompt once it is
                      reached is refused (refused:budget), and a run that
                      reaches it is stopped and a budget dialog asks the
                      controlling client to raise it or stop
                      (docs/usage.md, Budgets)
  --budget-tokens N   the same for tokens (input, output and cache, together)
  -h, --help          this help

For tests: --fixture-root DIR (the session must be in DIR; fixtures only),
--claim-root DIR and --socket-dir DIR (override the state dir's places).

Exit status: 0 stopped by a signal; 1 refused or failed (stderr: "refused:
<code>: <message>" and what to do); 2 usage error. A stop the cgroup
launcher proves ends the claim. The process-group launcher can't prove a
stop, so after it the claim stays held, marked uncertain (docs/claim.md).
`;

/** The seat names the reader's sources accept (sources.ts SEAT_NAME). */
const SEAT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const PATH_FLAGS = [
  "project",
  "session",
  "fixture-root",
  "state-dir",
  "claim-root",
  "socket-dir",
  "grants",
  "agent-dir",
  "agent-from",
] as const;

/** Parses the flags after `control`; throws parseArgs' TypeError on an unknown flag. */
export function parseControl(args: string[]): ControlParsed {
  const bad = (error: string): ControlParsed => ({ ok: false, error, usage: CONTROL_HELP });
  const { values, positionals } = parseFlags(args, {
    project: { type: "string" },
    seat: { type: "string" },
    session: { type: "string" },
    new: { type: "boolean" },
    title: { type: "string" },
    "fixture-root": { type: "string" },
    "state-dir": { type: "string" },
    "claim-root": { type: "string" },
    "socket-dir": { type: "string" },
    grants: { type: "string" },
    model: { type: "string" },
    provider: { type: "string" },
    thinking: { type: "string" },
    "agent-dir": { type: "string" },
    "agent-from": { type: "string" },
    "pi-version": { type: "string" },
    harness: { type: "string" },
    "budget-usd": { type: "string" },
    "budget-tokens": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return { ok: true, command: { name: "help", text: CONTROL_HELP } };
  if (positionals.length > 0) return bad(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const valued = [
    ...PATH_FLAGS,
    ...([
      "seat",
      "title",
      "model",
      "provider",
      "thinking",
      "pi-version",
      "harness",
      "budget-usd",
      "budget-tokens",
    ] as const),
  ];
  for (const flag of valued) {
    if (values[flag] === "") return bad(`--${flag} needs a value`);
  }
  const fixtureRoot = values["fixture-root"];
  const missing: string[] = [];
  if (values.project === undefined && fixtureRoot === undefined) missing.push("--project DIR");
  if (values.seat === undefined) missing.push("--seat NAME");
  if (values.session === undefined && values.new !== true) missing.push("--session FILE or --new");
  if (missing.length > 0) return bad(`missing ${missing.join(", ")}`);
  if (!SEAT_NAME.test(values.seat as string)) {
    // Checked before anything is created: `--new` makes the seat's directory.
    return bad(`--seat ${JSON.stringify(values.seat)} is not a seat name (letters, digits, . _ -)`);
  }
  if (values.session !== undefined && values.new === true) {
    return bad("--session and --new exclude each other: control an existing session, or a new one");
  }
  if (values.title !== undefined && values.new !== true) return bad("--title goes with --new");
  if (values.new === true && values.project === undefined) return bad("--new needs --project DIR");
  if (values["agent-dir"] !== undefined && values["agent-from"] !== undefined) {
    return bad("--agent-dir and --agent-from exclude each other");
  }
  const path = (flag: (typeof PATH_FLAGS)[number]) => {
    const v = values[flag];
    return v === undefined ? {} : { [camel(flag)]: resolve(v) };
  };
  const engineArgs: string[] = [];
  const engine: { model?: string; provider?: string; thinking?: string } = {};
  for (const flag of ["model", "provider", "thinking"] as const) {
    const v = values[flag];
    if (v === undefined) continue;
    engineArgs.push(`--${flag}`, v);
    engine[flag] = v;
  }
  const piVersion = values["pi-version"];
  if (piVersion !== undefined && !isPiVersion(piVersion)) {
    return bad(
      `--pi-version is one of ${PI_VERSIONS.join(", ")}, not ${JSON.stringify(piVersion)}`,
    );
  }
  const harness = values.harness ?? "pi";
  if (!isHarnessName(harness)) {
    return bad(`--harness is one of ${HARNESS_NAMES.join(", ")}, not ${JSON.stringify(harness)}`);
  }
  if (harness === "claude-code") {
    for (const flag of ["provider", "thinking", "pi-version", "title"] as const) {
      if (values[flag] !== undefined)
        return bad(`--${flag} goes with Pi, not --harness claude-code`);
    }
  }
  const budget: BudgetLimits = {};
  if (values["budget-usd"] !== undefined) {
    const usd = parseUsdText(values["budget-usd"]);
    if (!usd.ok) return bad(`--budget-usd: ${usd.message}`);
    budget.usd = usd.cents / 100;
  }
  if (values["budget-tokens"] !== undefined) {
    const tokens = parseTokensText(values["budget-tokens"]);
    if (!tokens.ok) return bad(`--budget-tokens: ${tokens.message}`);
    budget.tokens = tokens.tokens;
  }
  // The default is a dependency: absent, the pin check says so (engine-pin-mismatch).
  const absent =
    piVersion === undefined || piVersion === PI_VERSION ? null : notInstalled(piVersion);
  if (absent !== null) return bad(absent);
  const target: ControlTarget =
    values.session === undefined
      ? { kind: "new", ...(values.title === undefined ? {} : { title: values.title }) }
      : { kind: "session", file: resolve(values.session) };
  return {
    ok: true,
    command: {
      name: "control",
      seat: values.seat as string,
      target,
      engineArgs,
      ...engine,
      ...path("project"),
      ...path("fixture-root"),
      ...path("state-dir"),
      ...path("claim-root"),
      ...path("socket-dir"),
      ...path("agent-dir"),
      ...path("agent-from"),
      ...(values.grants === undefined ? {} : { grants: values.grants }),
      ...(piVersion === undefined ? {} : { piVersion }),
      harness,
      ...(Object.keys(budget).length === 0 ? {} : { budget }),
    },
  };
}

function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Why the pinned Pi `version` cannot run from `pinRoot`, or null when its CLI is there. 1.6.0
 * is a development dependency (issue 24 item 9): present in the package's checkout, absent
 * where the package is installed, so there it is a usage error, said before anything starts,
 * instead of an `engine-pin-mismatch` after the claim.
 */
export function notInstalled(version: string, pinRoot: string = PACKAGE_ROOT): string | null {
  if (existsSync(piCliPath(pinRoot, version))) return null;
  const other = PI_VERSIONS.filter((v) => v !== version && existsSync(piCliPath(pinRoot, v)));
  return (
    `Pi ${version} is not installed here: it is a development dependency of ` +
    "@mosaic/conversation, present only in a checkout of it" +
    (other.length > 0 ? `; run without --pi-version (Pi ${other.join(", ")})` : "")
  );
}
