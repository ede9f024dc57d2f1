// The slice of Pi's RPC wire protocol the controller uses (dist/modes/rpc/rpc-types.d.ts,
// core/agent-session.d.ts:40-101, research §3.2 and §5). Wire types only: hand-written guards
// turn `unknown` into these unions; nothing here casts parsed JSON. An event type we don't
// know is kept whole as `other`, so nothing Pi sends is dropped.
import type { PromptDisposition } from "../prompt-ack.ts";

export type JsonObject = { readonly [key: string]: unknown };

export type StreamingBehavior = "steer" | "followUp";

/** Commands the controller sends; the engine link adds the `id`. */
export type RpcCommand =
  | { type: "get_state" }
  | { type: "get_commands" }
  | { type: "get_tree" }
  | { type: "get_entries"; since?: string }
  | { type: "get_messages" }
  | { type: "prompt"; message: string; streamingBehavior?: StreamingBehavior }
  | { type: "abort" }
  | { type: "clear_queue" };
export type RpcCommandType = RpcCommand["type"];

/** The answer to a blocking `extension_ui_request` (rpc-mode.js:614-626). No response follows. */
export type RpcUiResponse =
  | { type: "extension_ui_response"; id: string; value: string }
  | { type: "extension_ui_response"; id: string; confirmed: boolean }
  | { type: "extension_ui_response"; id: string; cancelled: true };

/**
 * A command's response (rpc-mode.js:31-39). `id` is absent when Pi could not parse the line
 * (rpc-mode.js:610), `command` when the command had no `type`.
 */
export type RpcResponse =
  | { type: "response"; id?: string; command?: string; success: true; data?: unknown }
  | { type: "response"; id?: string; command?: string; success: false; error: string };

/** A message as Pi's agent emits it (user, assistant, toolResult, custom, ...), kept whole. */
export type RpcMessage = JsonObject & { readonly role: string };

/** `message_update.assistantMessageEvent`: text/thinking/toolcall start, delta and end. */
export type AssistantMessageEvent = JsonObject & { readonly type: string };

export type RpcEntry = JsonObject & { readonly type: string; readonly id: string };

export type RpcEvent =
  | { type: "agent_start" }
  | { type: "turn_start" }
  | { type: "agent_settled" }
  | { type: "agent_end"; messages: RpcMessage[]; willRetry: boolean }
  | { type: "turn_end"; message: RpcMessage; toolResults: RpcMessage[] }
  | { type: "message_start"; message: RpcMessage }
  | { type: "message_update"; assistantMessageEvent: AssistantMessageEvent; usage?: JsonObject }
  | { type: "message_end"; message: RpcMessage }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; args: unknown }
  | {
      type: "tool_execution_update";
      toolCallId: string;
      toolName: string;
      args: unknown;
      partialResult: unknown;
    }
  | {
      type: "tool_execution_end";
      toolCallId: string;
      toolName: string;
      result: unknown;
      isError: boolean;
    }
  | { type: "queue_update"; steering: string[]; followUp: string[] }
  | {
      type: "auto_retry_start";
      attempt: number;
      maxAttempts: number;
      delayMs: number;
      errorMessage: string;
    }
  | { type: "auto_retry_end"; success: boolean; attempt: number; finalError?: string }
  | { type: "compaction_start"; reason: string }
  | {
      type: "compaction_end";
      reason: string;
      result: unknown;
      aborted: boolean;
      willRetry: boolean;
      errorMessage?: string;
    }
  | RpcUiRequest
  | { type: "session_info_changed"; name?: string }
  | { type: "thinking_level_changed"; level: string }
  | { type: "entry_appended"; entry: RpcEntry }
  | { type: "extension_error"; extensionPath: string; event: string; error: string }
  | { type: "bash_execution_update"; id?: string; delta: string }
  | { type: "other"; eventType: string; raw: JsonObject };
export type RpcEventType = RpcEvent["type"];

/** Dialog methods wait for an `extension_ui_response`; the rest are fire-and-forget. */
export const BLOCKING_UI_METHODS = ["select", "confirm", "input", "editor"] as const;

/**
 * `extension_ui_request` (rpc-mode.js:47-193). `blocking` is true for the dialog methods;
 * `raw` keeps the method-specific fields of the others (notify, setStatus, setWidget, ...).
 */
export type RpcUiRequest = {
  type: "extension_ui_request";
  id: string;
  method: string;
  blocking: boolean;
  title?: string;
  message?: string;
  options?: string[];
  placeholder?: string;
  prefill?: string;
  timeout?: number;
  raw: JsonObject;
};

/** `get_state` data (rpc-mode.js:347-362). `model` is never null in 0.85.1 (research, Surprise 5). */
export type RpcSessionState = {
  model?: JsonObject;
  thinkingLevel: string;
  isStreaming: boolean;
  isCompacting: boolean;
  steeringMode: string;
  followUpMode: string;
  sessionFile?: string;
  sessionId: string;
  sessionName?: string;
  autoCompactionEnabled: boolean;
  messageCount: number;
  pendingMessageCount: number;
};

/** `get_commands` items carry `sourceInfo`, not the documented `location` (Surprise 6). */
export type RpcSlashCommand = {
  name: string;
  description?: string;
  source: string;
  sourceInfo: JsonObject;
};

export type RpcTreeNode = { entry: RpcEntry; children: RpcTreeNode[] };
export type RpcTree = { tree: RpcTreeNode[]; leafId: string | null };
export type RpcEntries = { entries: RpcEntry[]; leafId: string | null };
export type RpcQueue = { steering: string[]; followUp: string[] };

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Anything Pi writes to stdout: a response or an event. */
export type RpcIncoming =
  | { kind: "response"; response: RpcResponse }
  | { kind: "event"; event: RpcEvent };

/** Classifies one parsed stdout record. A known event type with wrong fields is refused. */
export function parseIncoming(value: unknown): Parsed<RpcIncoming> {
  return attempt(() => {
    const o = object(value, "record");
    const type = string(o, "type");
    if (type === "response") return { kind: "response", response: readResponse(o) };
    return { kind: "event", event: readEvent(type, o) };
  });
}

export function parseResponse(value: unknown): Parsed<RpcResponse> {
  return attempt(() => {
    const o = object(value, "response");
    if (o.type !== "response") throw new Invalid("type is not response");
    return readResponse(o);
  });
}

export function parseSessionState(data: unknown): Parsed<RpcSessionState> {
  return attempt(() => {
    const o = object(data, "get_state data");
    const state: RpcSessionState = {
      thinkingLevel: string(o, "thinkingLevel"),
      isStreaming: boolean(o, "isStreaming"),
      isCompacting: boolean(o, "isCompacting"),
      steeringMode: string(o, "steeringMode"),
      followUpMode: string(o, "followUpMode"),
      sessionId: string(o, "sessionId"),
      autoCompactionEnabled: boolean(o, "autoCompactionEnabled"),
      messageCount: number(o, "messageCount"),
      pendingMessageCount: number(o, "pendingMessageCount"),
    };
    if (o.model !== undefined) state.model = object(o.model, "model");
    const sessionFile = optionalString(o, "sessionFile");
    if (sessionFile !== undefined) state.sessionFile = sessionFile;
    const sessionName = optionalString(o, "sessionName");
    if (sessionName !== undefined) state.sessionName = sessionName;
    return state;
  });
}

export function parseCommandList(data: unknown): Parsed<RpcSlashCommand[]> {
  return attempt(() =>
    array(object(data, "get_commands data").commands, "commands").map((item, i) => {
      const o = object(item, `commands[${i}]`);
      const command: RpcSlashCommand = {
        name: string(o, "name"),
        source: string(o, "source"),
        sourceInfo: object(o.sourceInfo, "sourceInfo"),
      };
      const description = optionalString(o, "description");
      if (description !== undefined) command.description = description;
      return command;
    }),
  );
}

/**
 * `get_tree` data. Pi itself fails to write a tree about 2,200 entries deep (research §3.4);
 * this walks iteratively so a deep tree can't overflow our stack either.
 */
export function parseTree(data: unknown): Parsed<RpcTree> {
  return attempt(() => {
    const o = object(data, "get_tree data");
    const tree: RpcTreeNode[] = [];
    const work: { raw: unknown; into: RpcTreeNode[] }[] = array(o.tree, "tree").map((raw) => ({
      raw,
      into: tree,
    }));
    // Depth-first; `into` keeps each node under its parent in the original order.
    work.reverse();
    for (let item = work.pop(); item !== undefined; item = work.pop()) {
      const n = object(item.raw, "tree node");
      const node: RpcTreeNode = { entry: entry(n.entry), children: [] };
      item.into.push(node);
      const children = array(n.children, "children");
      for (let i = children.length - 1; i >= 0; i--) {
        work.push({ raw: children[i], into: node.children });
      }
    }
    return { tree, leafId: leafId(o) };
  });
}

export function parseEntries(data: unknown): Parsed<RpcEntries> {
  return attempt(() => {
    const o = object(data, "get_entries data");
    return { entries: array(o.entries, "entries").map(entry), leafId: leafId(o) };
  });
}

/** `clear_queue` data and `queue_update`'s lists. */
export function parseQueue(data: unknown): Parsed<RpcQueue> {
  return attempt(() => {
    const o = object(data, "queue");
    return { steering: strings(o, "steering"), followUp: strings(o, "followUp") };
  });
}

/** The text of a `text_delta`, or null for any other assistant message event. */
/**
 * What 1.6.0 says it did with a prompt (`data.disposition` of the prompt response, 1.6.0
 * rpc-mode.js 329-331, agent-session.d.ts 176-177): `started` a run, `queued` it behind the
 * running one, or `handled` it without a run (a command). 0.85.1 sends no data: null. An
 * unknown value is null too, so a newer Pi never makes the tracker guess.
 */
export type { PromptDisposition } from "../prompt-ack.ts";

export function promptDisposition(data: unknown): PromptDisposition | null {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return null;
  const d = (data as { disposition?: unknown }).disposition;
  return d === "started" || d === "queued" || d === "handled" ? d : null;
}

export function textDelta(e: AssistantMessageEvent): string | null {
  return e.type === "text_delta" && typeof e.delta === "string" ? e.delta : null;
}

function readResponse(o: JsonObject): RpcResponse {
  const id = optionalString(o, "id");
  const command = optionalString(o, "command");
  const success = boolean(o, "success");
  const base = {
    type: "response" as const,
    ...(id === undefined ? {} : { id }),
    ...(command === undefined ? {} : { command }),
  };
  if (success)
    return o.data === undefined ? { ...base, success } : { ...base, success, data: o.data };
  return { ...base, success, error: string(o, "error") };
}

function readEvent(type: string, o: JsonObject): RpcEvent {
  switch (type) {
    case "agent_start":
    case "turn_start":
    case "agent_settled":
      return { type };
    case "agent_end":
      return { type, messages: messages(o, "messages"), willRetry: boolean(o, "willRetry") };
    case "turn_end":
      return { type, message: message(o.message), toolResults: messages(o, "toolResults") };
    case "message_start":
    case "message_end":
      return { type, message: message(o.message) };
    case "message_update": {
      const ame = object(o.assistantMessageEvent, "assistantMessageEvent");
      string(ame, "type");
      const event: RpcEvent = { type, assistantMessageEvent: ame as AssistantMessageEvent };
      if (o.usage !== undefined) event.usage = object(o.usage, "usage");
      return event;
    }
    case "tool_execution_start":
      return { type, ...toolCall(o), args: o.args };
    case "tool_execution_update":
      return { type, ...toolCall(o), args: o.args, partialResult: o.partialResult };
    case "tool_execution_end":
      return { type, ...toolCall(o), result: o.result, isError: boolean(o, "isError") };
    case "queue_update":
      return { type, steering: strings(o, "steering"), followUp: strings(o, "followUp") };
    case "auto_retry_start":
      return {
        type,
        attempt: number(o, "attempt"),
        maxAttempts: number(o, "maxAttempts"),
        delayMs: number(o, "delayMs"),
        errorMessage: string(o, "errorMessage"),
      };
    case "auto_retry_end": {
      const event: RpcEvent = {
        type,
        success: boolean(o, "success"),
        attempt: number(o, "attempt"),
      };
      const finalError = optionalString(o, "finalError");
      if (finalError !== undefined) event.finalError = finalError;
      return event;
    }
    case "compaction_start":
      return { type, reason: string(o, "reason") };
    case "compaction_end": {
      const event: RpcEvent = {
        type,
        reason: string(o, "reason"),
        result: o.result,
        aborted: boolean(o, "aborted"),
        willRetry: boolean(o, "willRetry"),
      };
      const errorMessage = optionalString(o, "errorMessage");
      if (errorMessage !== undefined) event.errorMessage = errorMessage;
      return event;
    }
    case "extension_ui_request":
      return uiRequest(o);
    case "session_info_changed": {
      const name = optionalString(o, "name");
      return name === undefined ? { type } : { type, name };
    }
    case "thinking_level_changed":
      return { type, level: string(o, "level") };
    case "entry_appended":
      return { type, entry: entry(o.entry) };
    case "extension_error":
      return {
        type,
        extensionPath: string(o, "extensionPath"),
        event: string(o, "event"),
        error: string(o, "error"),
      };
    case "bash_execution_update": {
      const id = optionalString(o, "id");
      const delta = string(o, "delta");
      return id === undefined ? { type, delta } : { type, id, delta };
    }
    default:
      return { type: "other", eventType: type, raw: o };
  }
}

function uiRequest(o: JsonObject): RpcUiRequest {
  const method = string(o, "method");
  const blocking = (BLOCKING_UI_METHODS as readonly string[]).includes(method);
  const request: RpcUiRequest = {
    type: "extension_ui_request",
    id: string(o, "id"),
    method,
    blocking,
    raw: o,
  };
  // Dialog fields per rpc-types.d.ts RpcExtensionUIRequest; required ones checked for dialogs.
  const title = blocking || method === "setTitle" ? string(o, "title") : optionalString(o, "title");
  if (title !== undefined) request.title = title;
  const msg =
    method === "confirm" || method === "notify"
      ? string(o, "message")
      : optionalString(o, "message");
  if (msg !== undefined) request.message = msg;
  if (method === "select") request.options = strings(o, "options");
  const placeholder = optionalString(o, "placeholder");
  if (placeholder !== undefined) request.placeholder = placeholder;
  const prefill = optionalString(o, "prefill");
  if (prefill !== undefined) request.prefill = prefill;
  if (o.timeout !== undefined) request.timeout = number(o, "timeout");
  return request;
}

function toolCall(o: JsonObject): { toolCallId: string; toolName: string } {
  return { toolCallId: string(o, "toolCallId"), toolName: string(o, "toolName") };
}

function message(value: unknown): RpcMessage {
  const o = object(value, "message");
  string(o, "role");
  return o as RpcMessage;
}

function messages(o: JsonObject, key: string): RpcMessage[] {
  return array(o[key], key).map(message);
}

function entry(value: unknown): RpcEntry {
  const o = object(value, "entry");
  string(o, "type");
  string(o, "id");
  return o as RpcEntry;
}

function leafId(o: JsonObject): string | null {
  if (o.leafId === null) return null;
  return string(o, "leafId");
}

// Thrown only inside `attempt`, which turns it into `{ ok: false, reason }`.
class Invalid extends Error {}

function attempt<T>(read: () => T): Parsed<T> {
  try {
    return { ok: true, value: read() };
  } catch (e) {
    if (e instanceof Invalid) return { ok: false, reason: e.message };
    throw e;
  }
}

function object(value: unknown, what: string): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Invalid(`${what} is not an object`);
  }
  return value as JsonObject;
}

function array(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new Invalid(`${what} is not an array`);
  return value;
}

function string(o: JsonObject, key: string): string {
  const v = o[key];
  if (typeof v !== "string") throw new Invalid(`${key} is not a string`);
  return v;
}

function optionalString(o: JsonObject, key: string): string | undefined {
  return o[key] === undefined ? undefined : string(o, key);
}

function strings(o: JsonObject, key: string): string[] {
  return array(o[key], key).map((v) => {
    if (typeof v !== "string") throw new Invalid(`${key} holds a non-string`);
    return v;
  });
}

function number(o: JsonObject, key: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v)) throw new Invalid(`${key} is not a number`);
  return v;
}

function boolean(o: JsonObject, key: string): boolean {
  const v = o[key];
  if (typeof v !== "boolean") throw new Invalid(`${key} is not a boolean`);
  return v;
}
