// Pi entry content to CHAT-01 blocks (message shapes: pi-ai types; entry types: Pi's
// docs/session-format.md). Hidden kinds return null. Untrusted: every field is checked, and an
// unexpected shape becomes a notice, never an exception. Limits are applied later (parts.ts).
import type { Block, PartMeta } from "../../../protocol/chat-01.ts";
import { toChatId } from "../../../protocol/chat-01.ts";
import {
  isObj,
  notice,
  type Obj,
  shortField,
  small,
  str,
  toolCallBlocks,
  usageOf,
  wholeNumber,
} from "../../draft.ts";
import type { DraftPart } from "../../parts.ts";
import { type At, contentBlocksOf, headOf, unknownTypePart } from "../content-blocks.ts";

/**
 * Entry types never shown (seed: Parser): settings, labels, names, extension state; and two
 * that Pi 1.6.0 added (docs/reader.md, "Pi 1.6.0 entries"). `context_edit` changes only what
 * later model requests see, never the target as shown: Pi's session-format.md says the target
 * "remain[s] unchanged in raw history, UI, exports", its buildSessionProjection applies edits
 * to model messages only (session-manager.js:259-280), and its tree view counts it a settings
 * entry, hidden by default (tree-selector.js:259-266). `usage` (cache warming) is bookkeeping
 * that Pi's tree view never lists (tree-selector.js:243-244).
 */
const HIDDEN = new Set([
  "model_change",
  "thinking_level_change",
  "label",
  "session_info",
  "custom",
  "context_edit",
  "usage",
]);
/**
 * Model, provider and usage of an assistant message, each only when well-formed (draft.ts
 * usageOf: all or nothing). Counts an older Pi did not write are 0.
 */
function addUsage(m: Obj, meta: PartMeta, out: Block[]): void {
  const model = shortField(m.model);
  if (model !== undefined) meta.model = model;
  const provider = shortField(m.provider);
  if (provider !== undefined) meta.provider = provider;
  const u = m.usage;
  if (!isObj(u)) return;
  const cost = isObj(u.cost) ? u.cost.total : undefined;
  const counts = {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
  };
  const usage = usageOf(counts, cost, out);
  if (usage) meta.usage = usage;
}

/** Renders one entry; null when Pi's entry kind is not shown. */
export function renderEntry(entry: Obj): DraftPart | null {
  const { type, at } = headOf(entry);
  if (HIDDEN.has(type)) return null;
  switch (type) {
    case "message":
      return isObj(entry.message)
        ? renderMessage(entry.message, at)
        : {
            kind: "notice",
            ...at,
            blocks: [notice("unknown-content", "A message entry has no message.")],
          };
    case "compaction": {
      const meta: PartMeta = {};
      const blocks = textBlocks(entry.summary);
      const tokens = wholeNumber(entry.tokensBefore, "compaction's tokensBefore", 0, blocks);
      if (tokens !== undefined) meta.tokensBefore = tokens;
      const kept = str(entry.firstKeptEntryId);
      if (kept !== undefined) meta.firstKeptEntry = `n.${toChatId(kept)}`;
      // retainedTail entries are already on the path: they are not rendered twice.
      return { kind: "compaction", ...at, meta, blocks };
    }
    case "branch_summary": {
      const from = str(entry.fromId);
      const meta: PartMeta =
        from === undefined ? {} : { fromEntry: from === "root" ? "root" : `n.${toChatId(from)}` };
      return { kind: "branch-summary", ...at, meta, blocks: textBlocks(entry.summary) };
    }
    case "custom_message": {
      if (entry.display !== true) return null;
      const blocks: Block[] = [];
      const customType = small(entry.customType, "custom message type", blocks);
      blocks.push(...contentBlocks(entry.content));
      return { kind: "custom-message", ...at, meta: { customType }, blocks };
    }
    default:
      return unknownTypePart("An entry", type, at);
  }
}

function renderMessage(m: Obj, at: At): DraftPart | null {
  const role = str(m.role) ?? "";
  switch (role) {
    case "user":
      return { kind: "message", role, ...at, blocks: contentBlocks(m.content) };
    case "assistant": {
      const blocks = assistantBlocks(m.content);
      const stopReason = str(m.stopReason);
      const meta: PartMeta = {};
      const shownReason = shortField(stopReason);
      if (shownReason !== undefined) meta.stopReason = shownReason;
      addUsage(m, meta, blocks);
      if (stopReason === "aborted" || stopReason === "error") {
        const why = str(m.errorMessage) ?? "";
        blocks.push(
          notice(
            "stopped",
            `The reply ${stopReason === "aborted" ? "was aborted" : "failed"}${why ? `: ${why}` : "."}`,
          ),
        );
      }
      return { kind: "message", role, ...at, meta, blocks };
    }
    case "toolResult": {
      const blocks: Block[] = [];
      const toolName = small(m.toolName, "tool name", blocks);
      blocks.unshift({
        type: "tool-result",
        toolCallId: toChatId(str(m.toolCallId) ?? ""),
        toolName,
        isError: m.isError === true,
      });
      blocks.push(...contentBlocks(m.content));
      return { kind: "message", role, ...at, blocks };
    }
    case "bashExecution": {
      const blocks: Block[] = [
        { type: "bash-command", text: str(m.command) ?? "" },
        { type: "bash-output", text: str(m.output) ?? "" },
      ];
      const meta: PartMeta = {
        exitCode: wholeNumber(m.exitCode, "command's exit code", null, blocks) ?? null,
        cancelled: m.cancelled === true,
        truncated: m.truncated === true,
      };
      return { kind: "bash-execution", ...at, meta, blocks };
    }
    case "system":
      // Pi 1.6.0 saves the system prompt (and later patches of its sections and tools) as a
      // `system` message before a run's first request (session-manager.js:171, docs
      // session-format.md "SessionMessageEntry"). Its chat view draws nothing for one
      // (interactive-mode.js:3339-3340, `case "system": break;`), and a prompt is not part of
      // the conversation a person reads here: hidden like the other settings entries.
      return null;
    case "custom":
    case "hookMessage": {
      // `custom` comes only from Pi's v2→v3 migration of `hookMessage` (SM:56-70).
      if (m.display === false) return null;
      const blocks: Block[] = [];
      const customType = small(m.customType, "custom message type", blocks);
      blocks.push(...contentBlocks(m.content));
      return { kind: "custom-message", ...at, meta: { customType }, blocks };
    }
    default:
      return {
        kind: "notice",
        ...at,
        blocks: [
          notice(
            "unknown-role",
            `A message with unknown role ${JSON.stringify(role.slice(0, 100))} is not shown.`,
          ),
        ],
      };
  }
}

function textBlocks(v: unknown): Block[] {
  return typeof v === "string" ? [{ type: "text", text: v }] : [];
}

/** User, tool result and custom content: a string, or text and image items. */
function contentBlocks(content: unknown): Block[] {
  return contentBlocksOf(content, imageItem);
}

function imageItem(c: Obj, out: Block[]): boolean {
  if (c.type !== "image" || typeof c.data !== "string") return false;
  out.push(imageBlock(c, out));
  return true;
}

function imageBlock(c: Obj, out: Block[]): Block {
  const mimeType = small(c.mimeType, "image type", out);
  return { type: "image", mimeType, data: c.data as string };
}

function assistantBlocks(content: unknown): Block[] {
  return contentBlocksOf(content, assistantItem);
}

function assistantItem(c: Obj, out: Block[]): boolean {
  if (c.type === "thinking") {
    // Redacted reasoning is unavailable; thinkingSignature is never read.
    if (c.redacted === true) out.push({ type: "unavailable", of: "thinking", text: "" });
    else out.push({ type: "thinking", text: str(c.thinking) ?? "" });
  } else if (c.type === "toolCall") {
    out.push(...toolCallBlocks(c.name, c.id, c.arguments));
  } else {
    return imageItem(c, out);
  }
  return true;
}
