// Claude Code's stream-json events to CHAT-01 stream events (docs/control-protocol.md, the
// same vocabulary as Pi's, engine/pi/pi-events.ts). One reply streams as `stream_event`s
// (message_start, deltas, message_stop) with its blocks also written whole, one `assistant`
// record per block sharing the message id; the message ends at message_stop with every block
// seen, in the shapes the live transcript reads (Pi's: text, thinking, toolCall). Tool results
// arrive as `user` records of tool_result blocks: each is a `toolResult` message and a
// tool-ended. A `result` ends the turn (turn-ended, run-ended, run-settled).
import type { ChatEvent } from "../harness.ts";
import type { ClaudeEvent } from "./claude-wire.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** The longest text a mapped block keeps (a client renders bounded strings). */
const MAX_TEXT = 262_144;

export class ClaudeEventMapper {
  /** The reply streaming now: its id, and its blocks in Pi's shapes. */
  #reply: { id: string | null; blocks: Obj[] } | null = null;
  /** Tool names by call id, for tool-ended (a tool_result names only the id). */
  readonly #toolNames = new Map<string, string>();

  map(e: ClaudeEvent): ChatEvent[] {
    switch (e.type) {
      case "stream_event":
        return this.#stream(isObj(e.event) ? e.event : {});
      case "assistant":
        return this.#assistant(isObj(e.message) ? e.message : {}, e.is_api_error_message === true);
      case "user":
        return this.#user(e);
      case "result":
        return [
          { kind: "turn-ended", stopReason: str(e.stop_reason) ?? str(e.subtype) },
          { kind: "run-ended", willRetry: false },
          { kind: "run-settled" },
        ];
      default:
        return [{ kind: "native", eventType: nativeName(e) }];
    }
  }

  #stream(ev: Obj): ChatEvent[] {
    switch (ev.type) {
      case "message_start": {
        const m = isObj(ev.message) ? ev.message : {};
        this.#reply = { id: str(m.id), blocks: [] };
        return [{ kind: "turn-started" }, { kind: "message-started", role: "assistant" }];
      }
      case "content_block_delta": {
        const d = isObj(ev.delta) ? ev.delta : {};
        if (d.type === "text_delta" && typeof d.text === "string") {
          return [{ kind: "text-delta", delta: d.text }];
        }
        if (d.type === "thinking_delta" && typeof d.thinking === "string") {
          return [{ kind: "thinking-delta", delta: d.thinking }];
        }
        return [{ kind: "message-updated", update: str(d.type) ?? "delta" }];
      }
      case "message_stop": {
        const reply = this.#reply;
        this.#reply = null;
        const message = { role: "assistant", content: reply?.blocks ?? [] };
        const ended: ChatEvent = {
          kind: "message-ended",
          role: "assistant",
          stopReason: null,
          message,
        };
        const tools: ChatEvent[] = (reply?.blocks ?? [])
          .filter((b) => b.type === "toolCall")
          .map((b) => ({ kind: "tool-started", toolCallId: b.id, toolName: b.name }));
        return [ended, ...tools];
      }
      default:
        return [{ kind: "message-updated", update: str(ev.type) ?? "stream" }];
    }
  }

  // A whole block of the reply streaming now (Claude Code writes one record per block).
  // `apiError`: Claude Code's own record of a request that failed (`is_api_error_message`, its
  // text "API Error: 400 …"), never streamed: the reply ended on an error, as Pi's `error`.
  #assistant(m: Obj, apiError = false): ChatEvent[] {
    const blocks = Array.isArray(m.content) ? m.content.filter(isObj).map(piBlock) : [];
    for (const b of blocks) {
      if (b.type === "toolCall" && typeof b.id === "string" && typeof b.name === "string") {
        this.#toolNames.set(b.id, b.name);
      }
    }
    if (this.#reply && (this.#reply.id === null || this.#reply.id === str(m.id))) {
      this.#reply.blocks.push(...blocks);
      return [];
    }
    // Not streamed (no partial messages, or a failed request): the record is the whole message.
    const failed = apiError
      ? {
          stopReason: "error",
          errorMessage: blocks
            .map((b) => (typeof b.text === "string" ? b.text : ""))
            .join("")
            .slice(0, MAX_TEXT),
        }
      : {};
    return [
      { kind: "message-started", role: "assistant" },
      {
        kind: "message-ended",
        role: "assistant",
        stopReason: apiError ? "error" : null,
        message: { role: "assistant", content: blocks, ...failed },
      },
    ];
  }

  #user(e: ClaudeEvent): ChatEvent[] {
    const m = isObj(e.message) ? e.message : {};
    const content = m.content;
    if (!Array.isArray(content)) {
      const text = typeof content === "string" ? content.slice(0, MAX_TEXT) : "";
      const message = { role: "user", content: [{ type: "text", text }] };
      return [
        { kind: "message-started", role: "user" },
        { kind: "message-ended", role: "user", stopReason: null, message },
      ];
    }
    const out: ChatEvent[] = [];
    for (const block of content.filter(isObj)) {
      if (block.type !== "tool_result") continue;
      const toolCallId = str(block.tool_use_id) ?? "";
      const toolName = this.#toolNames.get(toolCallId) ?? "";
      const isError = block.is_error === true;
      const message = {
        role: "toolResult",
        toolCallId,
        toolName,
        isError,
        content: [{ type: "text", text: resultText(block.content) }],
      };
      out.push(
        { kind: "message-started", role: "toolResult" },
        { kind: "message-ended", role: "toolResult", stopReason: null, message },
        { kind: "tool-ended", toolCallId, toolName, isError },
      );
    }
    return out;
  }
}

/** A Claude content block in the shape the live transcript reads (Pi's). */
function piBlock(b: Obj): Obj {
  switch (b.type) {
    case "text":
      return { type: "text", text: (str(b.text) ?? "").slice(0, MAX_TEXT) };
    case "thinking":
      return { type: "thinking", thinking: (str(b.thinking) ?? "").slice(0, MAX_TEXT) };
    case "tool_use":
      return { type: "toolCall", id: str(b.id) ?? "", name: str(b.name) ?? "", arguments: b.input };
    default:
      return { type: str(b.type) ?? "unknown" };
  }
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content.slice(0, MAX_TEXT);
  if (!Array.isArray(content)) return "";
  return content
    .filter(isObj)
    .map((c) => (c.type === "text" && typeof c.text === "string" ? c.text : `[${String(c.type)}]`))
    .join("\n")
    .slice(0, MAX_TEXT);
}

/** `system.init`, `control_request.can_use_tool`, …: the record's type and subtype. */
function nativeName(e: ClaudeEvent): string {
  const sub = str(e.subtype) ?? (isObj(e.request) ? str(e.request.subtype) : null);
  return sub === null ? e.type : `${e.type}.${sub}`.slice(0, 200);
}
