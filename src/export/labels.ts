// What an export calls each entry and notice: the Console's words (render.js), in one table
// for the Markdown and HTML exports.
import type { NoticeCode } from "../protocol/chat-01.ts";
import type { EntryHead as Entry } from "./entries.ts";

const KIND_LABELS: Record<Entry["kind"], string> = {
  message: "Message",
  notice: "Notice",
  compaction: "Compaction",
  "branch-summary": "Branch summary",
  "custom-message": "Custom message",
  "bash-execution": "Bash",
};
const ROLE_LABELS: Record<NonNullable<Entry["role"]>, string> = {
  user: "User",
  assistant: "Assistant",
  toolResult: "Tool result",
};
export const NOTICE_LABELS: Record<NoticeCode, string> = {
  "malformed-line": "Malformed line",
  "ignored-header": "Ignored header",
  "missing-parent": "Missing parent",
  loop: "Loop",
  "forked-from-earlier-session": "Forked from an earlier session",
  "unknown-entry-type": "Unknown entry type",
  "unknown-role": "Unknown role",
  "unknown-content": "Unknown content",
  "long-field": "Long field",
  stopped: "Stopped",
};

export function whoOf(entry: Entry): string {
  if (entry.kind === "message" && entry.role !== undefined) return ROLE_LABELS[entry.role];
  return KIND_LABELS[entry.kind];
}

/** The facts a part's meta carries, as short phrases (the Console's metaText). */
export function metaPhrases(entry: Entry): string[] {
  const m = entry.meta;
  if (!m) return [];
  const out: string[] = [];
  if (m.customType !== undefined) out.push(m.customType);
  if (m.stopReason !== undefined && m.stopReason !== "stop" && m.stopReason !== "toolUse") {
    out.push(`stop: ${m.stopReason}`);
  }
  if (m.exitCode !== undefined) out.push(`exit ${m.exitCode === null ? "?" : m.exitCode}`);
  if (m.cancelled) out.push("cancelled");
  if (m.truncated) out.push("truncated");
  if (m.tokensBefore !== undefined) out.push(`${m.tokensBefore} tokens before`);
  if (m.firstKeptEntry !== undefined) out.push(`kept from ${m.firstKeptEntry}`);
  if (m.fromEntry !== undefined) out.push(`from ${m.fromEntry}`);
  if (m.line !== undefined) out.push(`line ${m.line}`);
  return out;
}

/** `2026-01-01 12:00:00 UTC`, or "" when the time is missing or not a date. */
export function utcTime(iso: string | undefined): string {
  if (iso === undefined) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  return `${t.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** The conversation's title: its name, else its file name, else its id. */
export function titleOf(doc: {
  row: { title: string | null; fileName: string | null } | null;
  conversation: string;
}): string {
  return doc.row?.title ?? doc.row?.fileName ?? doc.conversation;
}
