// Claude Code's stream-json control wire (research: claude-code-2.1.328.md), as the engine link
// reads it: one JSON object a line both ways. The controller's requests are `control_request`s
// (`initialize`, `interrupt`) with the link's id as `request_id`, answered by a
// `control_response` naming it; everything else Claude Code writes is an event, kept whole:
// `system`, `stream_event` deltas, whole `assistant` and `user` messages, one `result` a turn,
// its own `control_request`s (`can_use_tool`) and `control_cancel_request`s. With
// `--replay-user-messages` it also echoes what it read: a prompt (`isReplay`) and our own
// answers to its requests, which are events too (their ids are Claude Code's, not the link's).
import type { Wire } from "../engine.ts";
import type { JsonObject, RpcResponse } from "../pi/rpc.ts";

/** Anything Claude Code writes that is not an answer to our request. */
export type ClaudeEvent = JsonObject & { readonly type: string };

/** What the controller asks (the request inside a `control_request`). */
export type ClaudeCommand = { subtype: "initialize" } | { subtype: "interrupt" };

/** What the controller writes that has no answer: a turn, or an answer to Claude Code's request. */
export type ClaudeOutgoing =
  | { type: "user"; message: { role: "user"; content: string } }
  | {
      type: "control_response";
      response: {
        subtype: "success";
        request_id: string;
        response:
          | { behavior: "allow"; updatedInput: unknown }
          | { behavior: "deny"; message: string; interrupt?: boolean };
      };
    };

/** The link's request ids (engine.ts: `req-<n>`): only those are responses to correlate. */
const LINK_ID = /^req-\d+$/;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export const CLAUDE_WIRE: Wire<ClaudeEvent, ClaudeCommand> = {
  request: (command, id) => ({ type: "control_request", request_id: id, request: command }),
  incoming(value) {
    if (!isObj(value)) return { ok: false, reason: "a line is a JSON object" };
    if (typeof value.type !== "string") return { ok: false, reason: "a record has a string type" };
    const r = value.response;
    if (
      value.type === "control_response" &&
      isObj(r) &&
      typeof r.request_id === "string" &&
      LINK_ID.test(r.request_id)
    ) {
      const response: RpcResponse =
        r.subtype === "success"
          ? { type: "response", id: r.request_id, success: true, data: r.response }
          : {
              type: "response",
              id: r.request_id,
              success: false,
              error: typeof r.error === "string" ? r.error.slice(0, 4000) : "the request failed",
            };
      return { ok: true, value: { kind: "response", response } };
    }
    return { ok: true, value: { kind: "event", event: value as ClaudeEvent } };
  },
};
