// Pi behind the engine seam (harness.ts): its sessions (`.pi/state/<seat>/sessions`, the header
// id as the session key), the pin and seal (pi-pin.ts), its environment (SPEC §6: PATH, a
// scratch HOME, PI_OFFLINE=1, PI_CODING_AGENT_DIR when given), and the running engine's RPC:
// the prompt's response as its ack, the tracker's signals from Pi's events, blocking extension
// dialogs (never answered, seed P3), clear_queue and abort for an interrupt, and the K8 load
// check (pi-load.ts).
import { basename } from "node:path";
import { conversationId } from "../../../reader/sources.ts";
import { piLiveSpend } from "../../../usage/lines.ts";
import type { EngineLink } from "../engine.ts";
import { PI_SESSION_PLACE } from "../guard.ts";
import type {
  CommandOptions,
  EngineHarness,
  EngineHooks,
  EngineSession,
  Expected,
  LoadCheck,
  TurnSignal,
} from "../harness.ts";
import { HARNESS_LABELS } from "../harness.ts";
import { mapEvent } from "./pi-events.ts";
import { checkLoad, readStartupBasis, type StartupBasis } from "./pi-load.ts";
import { bindEngine, type EngineOptions, engineCommand, sealedArgv } from "./pi-pin.ts";
import {
  parseQueue,
  promptDisposition,
  type RpcCommand,
  type RpcEvent,
  type RpcMessage,
  type RpcUiResponse,
} from "./rpc.ts";
import { readSessionHead } from "./session-head.ts";
import { checkPromptText } from "./text-policy.ts";

/** What the seal sets in Pi's environment; a test hook may set none of it. */
const RESERVED_ENV = new Set(["PATH", "HOME", "PI_OFFLINE", "PI_CODING_AGENT_DIR"]);

export const PI_ENGINE: EngineHarness<RpcEvent, RpcCommand, RpcUiResponse> = {
  name: "pi",
  label: HARNESS_LABELS.pi,
  place: PI_SESSION_PLACE,
  readHead(file) {
    const head = readSessionHead(file);
    return { sessionKey: head.headerId, leafId: head.leafId };
  },
  readKey: (file) => readSessionHead(file).headerId,
  conversationOf: (projectRoot, seat, file) => conversationId(projectRoot, seat, basename(file)),
  checkText: checkPromptText,
  command: (o) => engineCommand(engineOptionsOf(o)),
  bind: (o, atConstruction) => bindEngine(engineOptionsOf(o), atConstruction),
  reservesEnv: (name) => RESERVED_ENV.has(name) || name.startsWith("PI_"),
  env({ home, agentDir, extra }) {
    const env: Record<string, string> = {
      ...(extra ?? {}),
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      PI_OFFLINE: "1",
    };
    if (agentDir !== undefined) env.PI_CODING_AGENT_DIR = agentDir;
    return env;
  },
  linkOptions: () => ({}),
  // Read before the spawn: the load check accepts only Pi's known startup append past it.
  beforeSpawn: (sessionFile) => readStartupBasis(sessionFile),
  start: (link, hooks, basis) => new PiSession(link, hooks, basis as StartupBasis | null),
};

/** The sealed command line a construction names and a bind checks again: one rule for both. */
function engineOptionsOf(o: CommandOptions): EngineOptions {
  return {
    argv: sealedArgv({ sessionFile: o.sessionFile, extraArgs: o.extraArgs, piVersion: o.version }),
    pinRoot: o.pinRoot,
    piVersion: o.version,
    command: o.command,
    preArgs: o.preArgs,
  };
}

/** Pi's RPC over one launched engine. */
class PiSession implements EngineSession {
  readonly #link: EngineLink<RpcEvent, RpcCommand, RpcUiResponse>;
  readonly #basis: StartupBasis | null;

  constructor(
    link: EngineLink<RpcEvent, RpcCommand, RpcUiResponse>,
    hooks: EngineHooks,
    basis: StartupBasis | null,
  ) {
    this.#link = link;
    this.#basis = basis;
    // The model of the latest reply: a compaction's request ran on it (as in the file).
    let lastModel = "unknown";
    link.onRecord((r) => {
      if (r.kind === "response" && r.matched && r.response.command === "prompt") {
        const res = r.response;
        hooks.prompted(
          res.success
            ? { success: true, disposition: promptDisposition(res.data) }
            : { success: false, error: res.error },
        );
        return;
      }
      if (r.kind !== "event") return;
      const e = r.event;
      for (const signal of piSignals(e)) hooks.signal(signal);
      if (e.type === "extension_ui_request" && e.blocking) {
        hooks.dialog({ kind: "ui", native: e.id, method: e.method, title: e.title });
      }
      const spend = piLiveSpend(e, lastModel);
      if (spend) {
        if (e.type === "message_end") lastModel = spend.model;
        hooks.spent(spend);
      }
      const mapped = mapEvent(e);
      if (mapped) hooks.event(mapped);
    });
  }

  loadCheck(expected: Expected): Promise<LoadCheck> {
    return checkLoad(this.#link, expected, undefined, this.#basis);
  }

  async prompt(text: string): Promise<void> {
    await this.#link.request({ type: "prompt", message: text });
  }

  async clearQueue(): Promise<{ steering: number; followUp: number } | null> {
    const cleared = await this.#link.request({ type: "clear_queue" });
    const q = cleared.success ? parseQueue(cleared.data) : null;
    return q?.ok ? { steering: q.value.steering.length, followUp: q.value.followUp.length } : null;
  }

  async abort(): Promise<void> {
    await this.#link.request({ type: "abort" });
  }

  // Pi's dialogs are never answered (lead decision 30, P3).
  answer(): boolean {
    return false;
  }
}

/** What the tracker reads of one Pi event (docs/controller.md, Overlap signals). */
export function piSignals(e: RpcEvent): TurnSignal[] {
  switch (e.type) {
    case "agent_start":
      return [{ type: "run-started" }];
    case "message_start":
      return e.message.role === "user" ? [{ type: "user-message", text: textOf(e.message) }] : [];
    case "message_end":
      return e.message.role === "assistant" && e.message.stopReason === "aborted"
        ? [{ type: "aborted" }]
        : [];
    case "queue_update":
      return e.steering.length + e.followUp.length > 0
        ? [{ type: "queue", steering: e.steering.length, followUp: e.followUp.length }]
        : [];
    case "agent_settled":
      return [{ type: "run-settled" }];
    default:
      return [];
  }
}

/** The text a user message carries: a string content, or its text blocks joined. */
function textOf(message: RpcMessage): string | null {
  const c = message.content;
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return null;
  let text = "";
  for (const block of c) {
    if (typeof block !== "object" || block === null) return null;
    const b = block as { type?: unknown; text?: unknown };
    if (b.type !== "text" || typeof b.text !== "string") return null;
    text += b.text;
  }
  return text;
}
