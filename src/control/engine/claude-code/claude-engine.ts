// Claude Code behind the engine seam (harness.ts), beside Pi's (pi/pi-engine.ts). Its sessions
// sit in the seat's own config folder (claude-files.ts); its command is the pinned binary with
// the sealed argv (claude-pin.ts); its environment is PATH, a scratch HOME and TMPDIR, the
// seat's CLAUDE_CONFIG_DIR and the switches that keep it from calling home. Over the link:
// a prompt is a `user` turn, acknowledged by its echo (`--replay-user-messages`), which starts
// the run; `result` settles it; `can_use_tool` is an approval; an interrupt is its
// `interrupt` control request (Claude Code holds no queue of ours to clear).
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { ClaudeLiveSpends } from "../../../usage/lines.ts";
import { ControlRefusal } from "../../refusal.ts";
import { controlPlace, ensurePrivateDir } from "../../registry/private-dirs.ts";
import type { EngineLink } from "../engine.ts";
import type {
  CommandOptions,
  EngineHarness,
  EngineHooks,
  EngineSession,
  Expected,
  LoadCheck,
  TextCheck,
} from "../harness.ts";
import { HARNESS_LABELS } from "../harness.ts";
import { placeCredentials, removeCredentials } from "./claude-credentials.ts";
import { ClaudeEventMapper } from "./claude-events.ts";
import {
  appendedSince,
  CLAUDE_SESSION_PLACE,
  type ClaudeFileState,
  claudeConfigDir,
  claudeConversationId,
  readClaudeFile,
  readClaudeHead,
  sessionIdOf,
} from "./claude-files.ts";
import { claudeCommand, claudeSealedArgv } from "./claude-pin.ts";
import type { ClaudeCommand, ClaudeEvent, ClaudeOutgoing } from "./claude-wire.ts";
import { CLAUDE_WIRE } from "./claude-wire.ts";

type Link = EngineLink<ClaudeEvent, ClaudeCommand, ClaudeOutgoing>;

/** What the seal sets in the environment; a test hook may set none of it. */
const RESERVED_ENV = new Set([
  "PATH",
  "HOME",
  "TMPDIR",
  "DISABLE_AUTOUPDATER",
  "DISABLE_TELEMETRY",
]);
/** The longest prompt, as Pi's (a CHAT-01 string). */
const MAX_PROMPT_CHARS = 262_144;

function argvFor(o: CommandOptions): string[] {
  const sessionId = sessionIdOf(o.sessionFile);
  if (sessionId === null) {
    throw new ControlRefusal("configuration", "a Claude Code session file is <session id>.jsonl");
  }
  // A new session has no file until its first turn: `--session-id` names it; once written,
  // `--resume` continues it (Claude Code refuses `--session-id` for an id already in use).
  const exists = readClaudeFile(o.sessionFile).exists;
  const settings = o.agentDir === undefined ? null : join(o.agentDir, "settings.json");
  return claudeSealedArgv({
    mode: exists ? { kind: "resume", sessionId } : { kind: "new", sessionId },
    settingsFile: settings !== null && existsSync(settings) ? settings : null,
    extraArgs: o.extraArgs,
  });
}

function commandOf(o: CommandOptions) {
  return claudeCommand({
    argv: argvFor(o),
    pinRoot: o.pinRoot,
    version: o.version,
    command: o.command,
    preArgs: o.preArgs,
  });
}

/** The seed's slash policy for Claude Code: nothing that reads as a command is sent. */
export function checkClaudeText(text: unknown): TextCheck {
  if (typeof text !== "string" || text.trim() === "") {
    return { ok: false, code: "draft", message: "there is no text to send" };
  }
  if (text.length > MAX_PROMPT_CHARS) {
    return {
      ok: false,
      code: "text-policy",
      message: `a prompt is at most ${MAX_PROMPT_CHARS} characters`,
    };
  }
  if (text.trimStart().startsWith("/")) {
    return {
      ok: false,
      code: "text-policy",
      message:
        "Claude Code reads text starting with / as a command; the controller sends none " +
        "(start the text with something else, e.g. a space is not enough: reword it)",
    };
  }
  return { ok: true, text };
}

export const CLAUDE_ENGINE: EngineHarness<ClaudeEvent, ClaudeCommand, ClaudeOutgoing> = {
  name: "claude-code",
  label: HARNESS_LABELS["claude-code"],
  place: CLAUDE_SESSION_PLACE,
  readHead: readClaudeHead,
  readKey(file, sessionKey) {
    readClaudeFile(file);
    const id = sessionIdOf(file);
    if (id !== sessionKey) throw new ControlRefusal("mapping", "the session id changed");
    return id;
  },
  conversationOf: claudeConversationId,
  checkText: checkClaudeText,
  command: commandOf,
  // Checked again right before the spawn: the pin (the binary's bytes) and the seal. The argv
  // may differ from construction's in one way only: a session written since is resumed.
  bind: (o) => commandOf(o),
  reservesEnv: (name) =>
    RESERVED_ENV.has(name) || name.startsWith("CLAUDE") || name.startsWith("PI_"),
  env({ home, agentDir, extra, projectRoot, seat }) {
    const configDir = claudeConfigDir(projectRoot, seat);
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    ensurePrivateDir(configDir, controlPlace("the seat's Claude Code folder", "fix its owner"));
    // OAuth credentials, when the agent directory has them: only the config folder is read.
    placeCredentials(agentDir, projectRoot, seat);
    const tmp = join(home, "tmp");
    mkdirSync(tmp, { mode: 0o700 });
    return {
      ...(extra ?? {}),
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      TMPDIR: tmp,
      CLAUDE_CODE_TMPDIR: tmp,
      CLAUDE_CONFIG_DIR: configDir,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
    };
  },
  afterExit: ({ projectRoot, seat }) => removeCredentials(projectRoot, seat),
  linkOptions: () => ({ wire: CLAUDE_WIRE }),
  beforeSpawn: (sessionFile) => readClaudeFile(sessionFile),
  start: (link, hooks, basis) => new ClaudeSession(link, hooks, basis as ClaudeFileState),
};

/** Claude Code's stream-json over one launched engine. */
class ClaudeSession implements EngineSession {
  readonly #link: Link;
  readonly #hooks: EngineHooks;
  readonly #basis: ClaudeFileState;
  readonly #mapper = new ClaudeEventMapper();
  #expected: Expected | null = null;
  /** Prompts written and not yet echoed, oldest first. */
  readonly #unechoed: string[] = [];
  #inRun = false;
  #interrupted = false;
  /** Interrupts waiting for the turn's end. */
  readonly #runEnded: (() => void)[] = [];
  /** What each open permission prompt asked to run, by Claude Code's request id. */
  readonly #inputs = new Map<string, unknown>();
  /** What each reply spent, by the usage rule (the controller's budget counts it). */
  readonly #spends = new ClaudeLiveSpends();

  constructor(link: Link, hooks: EngineHooks, basis: ClaudeFileState) {
    this.#link = link;
    this.#hooks = hooks;
    this.#basis = basis;
    link.onRecord((r) => {
      if (r.kind === "event") this.#on(r.event);
    });
  }

  #on(e: ClaudeEvent): void {
    const h = this.#hooks;
    if (e.type === "control_request") {
      const req = e.request as Record<string, unknown> | undefined;
      const id = typeof e.request_id === "string" ? e.request_id : null;
      if (id !== null && req?.subtype === "can_use_tool" && typeof req.tool_name === "string") {
        this.#inputs.set(id, req.input);
        h.dialog({
          kind: "approval",
          native: id,
          tool: {
            name: req.tool_name,
            input: req.input,
            ...(typeof req.tool_use_id === "string" ? { toolUseId: req.tool_use_id } : {}),
            ...(typeof req.description === "string" ? { reason: req.description } : {}),
          },
        });
      }
      h.event({ kind: "native", eventType: `control_request.${String(req?.subtype)}` });
      return;
    }
    if (e.type === "control_cancel_request") {
      if (typeof e.request_id === "string") h.withdrawn(e.request_id);
      return;
    }
    if (e.type === "control_response") return; // our own answer, echoed back
    if (e.type === "system" && e.subtype === "init") {
      const want = this.#expected?.sessionId;
      if (want !== undefined && e.session_id !== want) {
        h.unbound(`Claude Code runs session ${String(e.session_id)}, not ${want}`);
      }
    }
    if (e.type === "user" && e.isReplay === true) {
      const message = e.message as { content?: unknown } | undefined;
      const text = typeof message?.content === "string" ? message.content : null;
      if (this.#unechoed.length > 0) {
        this.#unechoed.shift();
        h.prompted({ success: true, disposition: "started" });
      }
      if (!this.#inRun) {
        this.#inRun = true;
        this.#interrupted = false;
        h.signal({ type: "run-started" });
        h.event({ kind: "run-started" });
      }
      h.signal({ type: "user-message", text });
    }
    const spend = this.#spends.read(e);
    if (spend) h.spent(spend);
    for (const mapped of this.#mapper.map(e)) h.event(mapped);
    if (e.type === "result") {
      if (this.#interrupted && e.subtype === "error_during_execution")
        h.signal({ type: "aborted" });
      this.#inRun = false;
      this.#interrupted = false;
      h.signal({ type: "run-settled" });
      for (const resolve of this.#runEnded.splice(0)) resolve();
    }
  }

  /**
   * K8 for Claude Code: it answers `initialize` (it runs and speaks the protocol), and the file
   * is byte for byte what it was before the launch (its leaf is the expected one); the session
   * id is the one the argv fixed, and the first turn's `system.init` must name it (else the
   * binding becomes uncertain: `unbound`).
   */
  async loadCheck(expected: Expected): Promise<LoadCheck> {
    this.#expected = expected;
    try {
      const init = await this.#link.request({ subtype: "initialize" }, { timeoutMs: 60_000 });
      if (!init.success) {
        return { ok: false, loaded: null, reason: `Claude Code refused initialize: ${init.error}` };
      }
      const now = readClaudeFile(expected.sessionFile);
      const loaded = {
        sessionFile: expected.sessionFile,
        sessionId: expected.sessionId,
        leafId: now.leafId,
        via: "initialize" as const,
      };
      const added = appendedSince(expected.sessionFile, this.#basis);
      if (!added.ok) {
        return {
          ok: false,
          loaded,
          reason:
            `the session file changed while Claude Code started (${added.why}): another ` +
            "program may be writing it; make sure nothing else has it open, then start the " +
            "controller again",
        };
      }
      if (now.leafId !== expected.leafId) {
        return {
          ok: false,
          loaded,
          reason: `the session's last record is ${now.leafId ?? "none"}, not ${expected.leafId ?? "none"}`,
        };
      }
      // Its own start-up bookkeeping is said, so a reader of the binding knows the file grew.
      const reason =
        added.types.length === 0
          ? "loaded"
          : `loaded (Claude Code added ${added.types.join(", ")} at its start)`;
      return { ok: true, loaded, reason };
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      return { ok: false, loaded: null, reason: `Claude Code did not answer initialize: ${why}` };
    }
  }

  async prompt(text: string): Promise<void> {
    this.#unechoed.push(text);
    if (!this.#link.send({ type: "user", message: { role: "user", content: text } })) {
      throw new Error("Claude Code's input is closed");
    }
  }

  async clearQueue(): Promise<{ steering: number; followUp: number }> {
    // One prompt at a time and nothing else writes its input: there is no queue to clear.
    return { steering: 0, followUp: 0 };
  }

  /**
   * Claude Code answers the interrupt at once and ends the turn just after, with its `result`:
   * the abort is done when that result has been read (or the engine is gone), so the stop chain
   * is still running when the turn's end arrives and links it (no O6).
   */
  async abort(): Promise<void> {
    this.#interrupted = true;
    const ended = this.#inRun
      ? new Promise<void>((resolve) => this.#runEnded.push(resolve))
      : Promise.resolve();
    const r = await this.#link.request({ subtype: "interrupt" });
    if (!r.success) throw new Error(`Claude Code refused the interrupt: ${r.error}`);
    await Promise.race([ended, this.#link.exited.then(() => {})]);
  }

  answer(native: string, decision: "allow" | "deny", message?: string): boolean {
    const input = this.#inputOf(native);
    this.#inputs.delete(native);
    return this.#link.send({
      type: "control_response",
      response: {
        subtype: "success",
        request_id: native,
        response:
          decision === "allow"
            ? { behavior: "allow", updatedInput: input }
            : {
                behavior: "deny",
                message: message ?? "denied by the person controlling this session",
              },
      },
    });
  }

  // The input an allow runs with is the one the engine asked about, never a client's.
  #inputOf(native: string): unknown {
    return this.#inputs.get(native) ?? {};
  }
}
