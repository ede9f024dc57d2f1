// The engine seam (SPEC §8): what the controller asks of an engine, whichever harness runs it.
// The shared rules (admission, receipts, claims, cohort, generations, confirmations, stops and
// proofs) live above it in controller/; each harness (pi/, claude-code/) implements it below and
// turns its own wire into the same things: turn signals for the tracker, CHAT-01 stream events
// for clients, dialogs the engine waits on, and a load check.

import type { Spend } from "../../usage/lines.ts";
import type { StreamEvent } from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";
import type { EngineLink, EngineLinkOptions } from "./engine.ts";
import type { PromptAck } from "./prompt-ack.ts";

export const HARNESS_NAMES = ["pi", "claude-code"] as const;
export type HarnessName = (typeof HARNESS_NAMES)[number];

/** How people call each harness: the one place the words "Pi" and "Claude Code" are decided. */
export const HARNESS_LABELS: Readonly<Record<HarnessName, string>> = {
  pi: "Pi",
  "claude-code": "Claude Code",
};

export function isHarnessName(v: unknown): v is HarnessName {
  return (HARNESS_NAMES as readonly unknown[]).includes(v);
}

/** A CHAT-01 stream event, as an engine's mapping produces it (docs/control-protocol.md). */
export type ChatEvent = StreamEvent["event"];

/** What an engine reported it loaded (K8), in the binding record. */
export type LoadedSession = {
  sessionFile: string | null;
  sessionId: string | null;
  leafId: string | null;
  /** How it was asked: Pi's `get_tree` or `get_entries`, Claude Code's `initialize`. */
  via: "get_tree" | "get_entries" | "initialize";
};

/** What Pi appended at startup and the load check accepted (docs/control-cli.md, New). */
export type StartupAppend = {
  /** The appended entries, oldest first: `[model_change,] thinking_level_change`. */
  entries: { id: string; type: "model_change" | "thinking_level_change" }[];
  bytes: number;
};

/** The session the controller expects the engine to load. */
export type Expected = { sessionFile: string; sessionId: string; leafId: string | null };

/** The K8 load check's verdict. */
export type LoadCheck = {
  ok: boolean;
  loaded: LoadedSession | null;
  /** A sentence for people: what the engine loaded, or what went wrong and what to do. */
  reason: string;
  startupAppend?: StartupAppend;
};

/**
 * What the turn tracker reads of an engine's stream (controller/turns.ts), in stream order: a
 * run (Pi's agent run, Claude Code's turn) starting and settling, a user message and its text, an
 * assistant message ended by an abort, and what the engine holds queued.
 */
export type TurnSignal =
  | { type: "run-started" }
  | { type: "user-message"; text: string | null }
  | { type: "aborted" }
  | { type: "queue"; steering: number; followUp: number }
  | { type: "run-settled" };

export type { PromptAck, PromptDisposition } from "./prompt-ack.ts";

/** A tool the engine asks permission to run (Claude Code's `can_use_tool`). */
export type ToolRequest = {
  name: string;
  input: unknown;
  /** The engine's id of the tool call, when it gave one. */
  toolUseId?: string;
  /** The engine's own words about it (a description, why it asks), when it gave them. */
  reason?: string;
};

/** Something the engine asks and waits on. */
export type EngineDialog =
  /** Pi's blocking extension UI (select, confirm, input, editor): never answered (seed P3). */
  | { kind: "ui"; native: string; method: string; title: string | undefined }
  /** A permission prompt: answered allow or deny by the controlling connection. */
  | { kind: "approval"; native: string; tool: ToolRequest };

/** How the controller hears a running engine, every call in stdout order. */
export type EngineHooks = {
  /** The engine's answer to the prompt in flight (Pi's response, Claude Code's echo). */
  prompted(ack: PromptAck): void;
  signal(signal: TurnSignal): void;
  event(event: ChatEvent): void;
  dialog(dialog: EngineDialog): void;
  /**
   * One request's usage, as the engine reported it (Pi's assistant message, Claude Code's
   * assistant line), read by the usage rule of src/usage/lines.ts: the controller's budget.
   */
  spent(spend: Spend): void;
  /** The engine withdrew a dialog it asked (Claude Code's `control_cancel_request`). */
  withdrawn(native: string): void;
  /**
   * The engine showed it is not bound to the session it should be (a turn names another session
   * id, a setting the seal fixes changed): the binding becomes uncertain, as on an overlap.
   */
  unbound(why: string): void;
};

export type Decision = "allow" | "deny";

/** One running engine as the controller drives it: the link and its protocol. */
export type EngineSession = {
  /** K8: whether the engine loaded the session expected. Never throws. */
  loadCheck(expected: Expected): Promise<LoadCheck>;
  /**
   * Writes a prompt. Its answer arrives through `hooks.prompted` at its place in the stream;
   * rejects when the engine goes away before it answered.
   */
  prompt(text: string): Promise<void>;
  /** Interrupt's first step: what the engine held queued, emptied; null when unknown. */
  clearQueue(): Promise<{ steering: number; followUp: number } | null>;
  /** Interrupt's last step: ends the running run. Rejects when the engine is gone. */
  abort(): Promise<void>;
  /** Answers a dialog the engine asked; false when the engine can't be written or asks none. */
  answer(native: string, decision: Decision, message?: string): boolean;
};

/** Where a harness's sessions sit, and what they are called. */
export type SessionPlace = {
  /** The project root of a correctly placed session file for `seat`, else null. */
  projectOf(file: string, seat: string | undefined): string | null;
  /** Where a session must be, for a refusal's words. */
  describe(seat: string | undefined): string;
};

/** A prompt's text as admission sees it: refused `draft` or `text-policy`, or sent as given. */
export type TextCheck =
  | { ok: true; text: string }
  | { ok: false; code: Extract<ControlRefusalCode, "text-policy" | "draft">; message: string };

/** The checked command line an engine is spawned with, and what vouches for it. */
export type EngineCommandBase = {
  command: string;
  preArgs: readonly string[];
  argv: readonly string[];
  /** sha256 (hex) of what the command line runs with: JSON `[command, ...preArgs, ...argv]`. */
  argvDigest: string;
  pin: { name: string; version: string; integrity: string };
  /** A command or preArgs other than the defaults: neither pin nor seal vouches for what runs. */
  testHook: boolean;
};

/** A session file's identity: its session key (the writer claim's) and its leaf. */
export type SessionHead = { sessionKey: string; leafId: string | null };

/** What a harness is given to build its engine's command line. */
export type CommandOptions = {
  sessionFile: string;
  projectRoot: string;
  extraArgs?: readonly string[] | undefined;
  pinRoot?: string | undefined;
  version?: string | undefined;
  command?: string | undefined;
  preArgs?: readonly string[] | undefined;
  /** The agent/config directory the engine is given, if any. */
  agentDir?: string | undefined;
};

/** One harness: how its sessions, engine command, environment and wire work. */
export type EngineHarness<E = unknown, C = unknown, O extends object = object> = {
  readonly name: HarnessName;
  /** How people call it: "Pi", "Claude Code". */
  readonly label: string;
  readonly place: SessionPlace;
  /** The session's key and leaf; refuses `configuration`/`mapping` (ControlRefusal). */
  readHead(file: string): SessionHead;
  /** The session key as it is now (admission's W4 check); throws `mapping` when it is gone. */
  readKey(file: string, sessionKey: string): string;
  /** The conversation id the reader gives this session. */
  conversationOf(projectRoot: string, seat: string, file: string): string;
  /** Text a prompt may not carry, for this engine (the seed's slash policy). */
  checkText(text: unknown): TextCheck;
  /** Checks the pin and the seal; refuses `engine-pin-mismatch`, `unsealed-engine`. */
  command(options: CommandOptions): EngineCommandBase;
  /** The check right before spawn: the same command line and pin as at construction. */
  bind(options: CommandOptions, atConstruction: EngineCommandBase): EngineCommandBase;
  /** Whether a test hook's extra variable is one the seal sets (refused `configuration`). */
  reservesEnv(name: string): boolean;
  /** The engine's whole environment, given its scratch HOME. */
  env(o: {
    home: string;
    agentDir: string | undefined;
    extra: Readonly<Record<string, string>> | undefined;
    projectRoot: string;
    seat: string;
  }): Record<string, string>;
  /** The engine exited: remove what `env` placed for it alone (Claude Code's credentials). */
  afterExit?(o: { projectRoot: string; seat: string }): void;
  /** What the launcher gives the link: this harness's wire. */
  linkOptions(): EngineLinkOptions<E, C>;
  /** Reads what the load check compares with, right before the spawn. */
  beforeSpawn(sessionFile: string): unknown;
  /** The protocol over a launched engine's link; `basis` is what beforeSpawn read. */
  start(link: EngineLink<E, C, O>, hooks: EngineHooks, basis: unknown): EngineSession;
};
