// Pi's RPC events to CHAT-01 stream events (seed: Pieces, events). Blocking dialogs are not
// stream events: the controller pushes them as `dialog` messages.
import type { ChatEvent } from "../../controller/events.ts";
import type { RpcEvent, RpcMessage } from "./rpc.ts";

/** The CHAT-01 event for a native event, or null when it is not streamed (a blocking dialog). */
export function mapEvent(e: RpcEvent): ChatEvent | null {
  switch (e.type) {
    case "agent_start":
      return { kind: "run-started" };
    case "turn_start":
      return { kind: "turn-started" };
    case "turn_end":
      return { kind: "turn-ended", stopReason: stopReasonOf(e.message) };
    case "agent_end":
      return { kind: "run-ended", willRetry: e.willRetry };
    case "agent_settled":
      return { kind: "run-settled" };
    case "message_start":
      return { kind: "message-started", role: e.message.role };
    case "message_update": {
      const u = e.assistantMessageEvent;
      if ((u.type === "text_delta" || u.type === "thinking_delta") && typeof u.delta === "string") {
        return { kind: u.type === "text_delta" ? "text-delta" : "thinking-delta", delta: u.delta };
      }
      return { kind: "message-updated", update: u.type };
    }
    case "message_end":
      return {
        kind: "message-ended",
        role: e.message.role,
        stopReason: stopReasonOf(e.message),
        message: e.message,
      };
    case "tool_execution_start":
      return { kind: "tool-started", toolCallId: e.toolCallId, toolName: e.toolName };
    case "tool_execution_update":
      return { kind: "tool-progress", toolCallId: e.toolCallId, toolName: e.toolName };
    case "tool_execution_end":
      return {
        kind: "tool-ended",
        toolCallId: e.toolCallId,
        toolName: e.toolName,
        isError: e.isError,
      };
    case "queue_update":
      return { kind: "queue-updated", steering: e.steering.length, followUp: e.followUp.length };
    case "extension_ui_request":
      if (e.blocking) return null;
      return { kind: "engine-notice", method: e.method, message: e.message ?? e.title ?? "" };
    case "auto_retry_start":
    case "auto_retry_end":
    case "compaction_start":
    case "compaction_end":
    case "session_info_changed":
    case "thinking_level_changed":
    case "entry_appended":
    case "extension_error":
    case "bash_execution_update":
      return { kind: "native", eventType: e.type };
    case "other":
      return { kind: "native", eventType: e.eventType };
    default: {
      const never: never = e;
      return { kind: "native", eventType: String((never as { type: unknown }).type) };
    }
  }
}

function stopReasonOf(m: RpcMessage): string | null {
  return typeof m.stopReason === "string" ? m.stopReason : null;
}
