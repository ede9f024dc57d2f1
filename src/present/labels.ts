// What a part, a role and a notice are called, and the facts a part's meta carries as short
// phrases: the Console's and the exports' words, in one table.
import type { NoticeCode, PartKind, PartMeta, Role } from "../protocol/chat-01.ts";

const KIND_LABELS: Readonly<Record<string, string>> = {
  message: "Message",
  notice: "Notice",
  compaction: "Compaction",
  "branch-summary": "Branch summary",
  "custom-message": "Custom message",
  "bash-execution": "Bash",
} satisfies Record<PartKind, string>;
const ROLE_LABELS: Readonly<Record<string, string>> = {
  user: "User",
  assistant: "Assistant",
  toolResult: "Tool result",
} satisfies Record<Role, string>;
export const NOTICE_LABELS: Readonly<Record<NoticeCode, string>> = {
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

/** The label of a part kind, or null for a kind this version does not know. */
export function kindLabel(kind: string): string | null {
  return Object.hasOwn(KIND_LABELS, kind) ? (KIND_LABELS[kind] ?? null) : null;
}

/** The label of a message's role, or null for a role this version does not know. */
export function roleLabel(role: string | undefined): string | null {
  if (role === undefined || !Object.hasOwn(ROLE_LABELS, role)) return null;
  return ROLE_LABELS[role] ?? null;
}

/** The label of a notice code, or null for a code this version does not know. */
export function noticeLabel(code: string): string | null {
  return Object.hasOwn(NOTICE_LABELS, code) ? NOTICE_LABELS[code as NoticeCode] : null;
}

/** Who a part is from: a message's role, else its kind ("Part" when neither is known). */
export function whoOf(part: { kind: string; role?: string | undefined }): string {
  return (part.kind === "message" ? roleLabel(part.role) : null) ?? kindLabel(part.kind) ?? "Part";
}

/**
 * The facts a part's meta carries, as short phrases. "stop" and "toolUse" are how a reply ends
 * normally (the tool call under it says the second), so they are not repeated.
 */
export function metaPhrases(part: { meta?: PartMeta | undefined }): string[] {
  const m = part.meta;
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

/** A harness as people name it ("Claude Code" for `claude-code`); "" for none. */
export function harnessLabel(harness: string | null | undefined): string {
  if (harness === "claude-code") return "Claude Code";
  if (harness === "pi") return "Pi";
  return typeof harness === "string" ? harness : "";
}
