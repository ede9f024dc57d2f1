// Claude Code records to CHAT-01 drafts, showing what Claude Code shows a person
// (docs/claude-code-files.md; docs/reader.md "Claude Code"): prompts, replies (one reply's
// chunks are one entry: only its first carries the head), thinking (redacted: unavailable),
// tool calls and results, compaction markers, commands and their output, interrupts and failed
// requests. What the model alone sees (attachments, `isMeta` prompts, progress, retry notices)
// is hidden. Untrusted: every field is checked; an unexpected shape is a notice, never a throw.
import type { Block, PartMeta, ToolResultBlock } from "../../../protocol/chat-01.ts";
import { toChatId } from "../../../protocol/chat-01.ts";
import {
  isObj,
  notice,
  type Obj,
  shortField,
  small,
  str,
  toolCallBlocks,
  unknownContent,
  usageOf,
  wholeNumber,
} from "../../draft.ts";
import type { DraftPart } from "../../parts.ts";
import { type At, contentBlocksOf, headOf, unknownTypePart } from "../content-blocks.ts";

/**
 * Claude's stop reasons in CHAT-01's words, which Pi's replies already use: a reply that ended
 * normally or on a tool call reads the same whoever wrote it (the faces hide those two); others
 * (`stop_sequence`, `refusal`, `pause_turn`) are kept as Claude wrote them.
 */
const STOP_REASONS: Readonly<Record<string, string>> = {
  end_turn: "stop",
  tool_use: "toolUse",
  max_tokens: "length",
};

/** What rendering a record needs beyond its own line. */
export type RecordContext = {
  /** The record continues an entry begun by an earlier line (a reply's later chunk). */
  continues: boolean;
  /** The name of the call with this tool_use id, found above the record, or "". */
  toolName(toolUseId: string): string;
  /** The conversation id of a subagent's transcript, by its agent id. */
  agentConversation(agentId: string): string;
};

/** Record types that are never shown: the model's reminders and progress lines. */
const HIDDEN_TYPES = new Set(["attachment", "progress"]);

/** System records that are bookkeeping, not something Claude Code shows in the history. */
const HIDDEN_SYSTEM = new Set(["api_error", "turn_duration", "stop_hook_summary"]);

/** Whether a record of this type is hidden without reading it. */
export function isHiddenType(type: string): boolean {
  return HIDDEN_TYPES.has(type);
}

/** Renders one record; null when Claude Code does not show it. */
export function renderRecord(r: Obj, ctx: RecordContext): DraftPart | null {
  const { type, at } = headOf(r);
  if (HIDDEN_TYPES.has(type)) return null;
  switch (type) {
    case "user":
      return renderUser(r, at, ctx);
    case "assistant":
      return renderAssistant(r, at, ctx);
    case "system":
      return renderSystem(r, at);
    default:
      return unknownTypePart("A record", type, at);
  }
}

function renderUser(r: Obj, at: At, ctx: RecordContext): DraftPart | null {
  if (r.isMeta === true) return null;
  const m = r.message;
  if (!isObj(m)) {
    return {
      kind: "notice",
      ...at,
      blocks: [notice("unknown-content", "A prompt has no message.")],
    };
  }
  const content = m.content;
  if (r.isCompactSummary === true) {
    // The summary a compaction wrote: the text of its marker (the boundary is the marker's head).
    return { kind: "compaction", ...at, blocks: contentBlocks(content) };
  }
  if (Array.isArray(content) && isObj(content[0]) && content[0].type === "tool_result") {
    return { kind: "message", role: "toolResult", ...at, blocks: toolResults(r, content, ctx) };
  }
  const text = onlyText(content);
  if (text !== null) {
    const special = renderTagged(text, at);
    if (special) return special;
  }
  return { kind: "message", role: "user", ...at, blocks: contentBlocks(content) };
}

/** The text of a content that is one string or one text block, else null. */
function onlyText(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (Array.isArray(content) && content.length === 1 && isObj(content[0])) {
    const c = content[0];
    if (c.type === "text" && typeof c.text === "string") return c.text;
  }
  return null;
}

const INTERRUPTED = /^\[Request interrupted by user( for tool use)?\]$/;

/** Prompts Claude Code writes for a person's command, its output, or an interrupt. */
function renderTagged(text: string, at: At): DraftPart | null {
  const trimmed = text.trim();
  const interrupted = INTERRUPTED.exec(trimmed);
  if (interrupted) {
    return {
      kind: "notice",
      ...at,
      blocks: [
        notice(
          "stopped",
          interrupted[1] ? "Interrupted by the user while a tool ran." : "Interrupted by the user.",
        ),
      ],
    };
  }
  if (trimmed.startsWith("<command-name>")) {
    // `/compact` and other slash commands, as the person typed them.
    const name = tagText(trimmed, "command-name") ?? "";
    const args = tagText(trimmed, "command-args") ?? "";
    const line = args.trim() === "" ? name : `${name} ${args.trim()}`;
    return { kind: "message", role: "user", ...at, blocks: [{ type: "text", text: line }] };
  }
  if (
    trimmed.startsWith("<local-command-stdout>") ||
    trimmed.startsWith("<local-command-stderr>")
  ) {
    const out = [tagText(trimmed, "local-command-stdout"), tagText(trimmed, "local-command-stderr")]
      .filter((s): s is string => s !== null && s.trim() !== "")
      .join("\n");
    return {
      kind: "custom-message",
      ...at,
      meta: { customType: "command-output" },
      blocks: [{ type: "text", text: out }],
    };
  }
  if (trimmed.startsWith("<bash-input>")) {
    return {
      kind: "bash-execution",
      ...at,
      meta: { exitCode: null, cancelled: false, truncated: false },
      blocks: [{ type: "bash-command", text: tagText(trimmed, "bash-input") ?? "" }],
    };
  }
  if (trimmed.startsWith("<bash-stdout>") || trimmed.startsWith("<bash-stderr>")) {
    const out = [tagText(trimmed, "bash-stdout"), tagText(trimmed, "bash-stderr")]
      .filter((s): s is string => s !== null && s !== "")
      .join("\n");
    return {
      kind: "bash-execution",
      ...at,
      meta: { exitCode: null, cancelled: false, truncated: false },
      blocks: [{ type: "bash-output", text: out }],
    };
  }
  if (trimmed.startsWith("<task-notification>")) {
    return {
      kind: "custom-message",
      ...at,
      meta: { customType: "task-notification" },
      blocks: [{ type: "text", text: tagText(trimmed, "summary") ?? trimmed }],
    };
  }
  return null;
}

/** The text between `<tag>` and `</tag>`, or null. */
function tagText(s: string, tag: string): string | null {
  const open = `<${tag}>`;
  const from = s.indexOf(open);
  if (from < 0) return null;
  const to = s.indexOf(`</${tag}>`, from + open.length);
  return to < 0 ? s.slice(from + open.length) : s.slice(from + open.length, to);
}

/** Each tool_result block opens a result; its content follows as text and image blocks. */
function toolResults(r: Obj, content: unknown[], ctx: RecordContext): Block[] {
  const out: Block[] = [];
  const agent = agentIdOf(r.toolUseResult);
  for (const c of content) {
    if (!isObj(c)) {
      out.push(unknownContent(c));
      continue;
    }
    if (c.type !== "tool_result") {
      out.push(...contentBlocks([c]));
      continue;
    }
    const id = str(c.tool_use_id) ?? "";
    const extra: Block[] = [];
    const toolName = small(ctx.toolName(id), "tool name", extra);
    const head: ToolResultBlock = {
      type: "tool-result",
      toolCallId: toChatId(id),
      toolName,
      isError: c.is_error === true,
    };
    // An Agent (Task) call's result names the transcript of the subagent it ran.
    if (agent !== null && content.length === 1) head.transcript = ctx.agentConversation(agent);
    out.push(head, ...extra, ...contentBlocks(c.content));
  }
  return out;
}

const AGENT_ID = /^[A-Za-z0-9_-]{1,128}$/;

function agentIdOf(result: unknown): string | null {
  if (!isObj(result)) return null;
  const id = result.agentId;
  return typeof id === "string" && AGENT_ID.test(id) ? id : null;
}

/** A prompt's or result's content: a string, or text and image blocks. */
function contentBlocks(content: unknown): Block[] {
  return contentBlocksOf(content, imageItem);
}

function imageItem(c: Obj, out: Block[]): boolean {
  if (c.type !== "image") return false;
  out.push(imageOf(c, out));
  return true;
}

/** An Anthropic image block (`source: { type: "base64", media_type, data }`). */
function imageOf(c: Obj, out: Block[]): Block {
  const src = c.source;
  if (isObj(src) && src.type === "base64" && typeof src.data === "string") {
    const mimeType = small(src.media_type, "image type", out);
    return { type: "image", mimeType, data: src.data };
  }
  return notice("unknown-content", "An image that is not embedded in the file is not shown.");
}

function renderAssistant(r: Obj, at: At, ctx: RecordContext): DraftPart {
  const m = r.message;
  if (!isObj(m)) {
    return {
      kind: "notice",
      ...at,
      blocks: [notice("unknown-content", "A reply has no message.")],
    };
  }
  if (r.isApiErrorMessage === true) {
    // A request that failed: Claude Code shows its error text, not a reply of the model's.
    const text = textOf(m.content);
    return {
      kind: "message",
      role: "assistant",
      ...at,
      blocks: [notice("stopped", `The reply failed${text ? `: ${text}` : "."}`)],
    };
  }
  const blocks = replyBlocks(m.content);
  if (ctx.continues) return { kind: "message", role: "assistant", ...at, blocks };
  // The head of the reply: its model, stop reason and usage, once for all its chunks.
  const meta: PartMeta = {};
  const model = shortField(m.model);
  if (model !== undefined && model !== "<synthetic>") meta.model = model;
  const stopReason = shortField(m.stop_reason);
  if (stopReason !== undefined) {
    meta.stopReason = Object.hasOwn(STOP_REASONS, stopReason)
      ? (STOP_REASONS[stopReason] ?? stopReason)
      : stopReason;
  }
  const u = m.usage;
  if (isObj(u)) {
    const counts = {
      input: u.input_tokens,
      output: u.output_tokens,
      cacheRead: u.cache_read_input_tokens,
      cacheWrite: u.cache_creation_input_tokens,
    };
    // Claude Code records no cost per reply since 1.0; an older `costUSD` is kept.
    const usage = usageOf(counts, r.costUSD, blocks);
    if (usage) meta.usage = usage;
  }
  return { kind: "message", role: "assistant", ...at, meta, blocks };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((c): c is Obj => isObj(c) && c.type === "text" && typeof c.text === "string")
    .map((c) => c.text as string)
    .join("\n");
}

function replyBlocks(content: unknown): Block[] {
  return contentBlocksOf(content, replyItem);
}

function replyItem(c: Obj, out: Block[]): boolean {
  if (c.type === "thinking") {
    out.push({ type: "thinking", text: str(c.thinking) ?? "" });
  } else if (c.type === "redacted_thinking") {
    // The API withholds this reasoning; its `data` is opaque and never shown.
    out.push({ type: "unavailable", of: "thinking", text: "" });
  } else if (c.type === "tool_use" || c.type === "server_tool_use") {
    out.push(...toolCallBlocks(c.name, c.id, c.input));
  } else if (typeof c.type === "string" && c.type.endsWith("_tool_result")) {
    // A server tool's result (web search…), carried in the reply itself.
    out.push(
      {
        type: "tool-result",
        toolCallId: toChatId(str(c.tool_use_id) ?? ""),
        toolName: small(c.type, "tool result type", out),
        isError: false,
      },
      ...serverResultText(c.content),
    );
  } else {
    return imageItem(c, out);
  }
  return true;
}

function serverResultText(content: unknown): Block[] {
  if (content === undefined) return [];
  const text = typeof content === "string" ? content : JSON.stringify(content, null, 2);
  return typeof text === "string" ? [{ type: "text", text }] : [];
}

function renderSystem(r: Obj, at: At): DraftPart | null {
  const subtype = str(r.subtype) ?? "";
  if (subtype === "compact_boundary") {
    const meta: PartMeta = {};
    const blocks: Block[] = [];
    const cm = r.compactMetadata;
    if (isObj(cm)) {
      const tokens = wholeNumber(cm.preTokens, "compaction's preTokens", 0, blocks);
      if (tokens !== undefined) meta.tokensBefore = tokens;
      const kept = isObj(cm.preservedSegment) ? str(cm.preservedSegment.headUuid) : undefined;
      if (kept !== undefined) meta.firstKeptEntry = `n.${toChatId(kept)}`;
    }
    return { kind: "compaction", ...at, meta, blocks };
  }
  if (r.isMeta === true || HIDDEN_SYSTEM.has(subtype)) return null;
  const content = str(r.content);
  if (content === undefined || content.trim() === "") return null;
  if (content.trim().startsWith("<local-command-")) return renderTagged(content, at);
  const blocks: Block[] = [];
  const customType = small(subtype === "" ? "system" : subtype, "system message type", blocks);
  blocks.push({ type: "text", text: content });
  return { kind: "custom-message", ...at, meta: { customType }, blocks };
}

/** The text a branch starting at this record is labelled by. */
export function labelTextOf(draft: DraftPart | null): string | null {
  const block = draft?.blocks.find((x) => x.type === "text" || x.type === "bash-command");
  return block && "text" in block ? block.text : null;
}
