// Claude Code's session files behind the harness seam (docs/claude-code-files.md): no header,
// records by uuid and parentUuid, bookkeeping lines between them.
import { parseWhole, type SessionFormat } from "../../parse-sink.ts";
import type { ClaudeRoot, FileRoot } from "../../sources.ts";
import type { Harness } from "../harness.ts";
import { type RecordContext, renderRecord } from "./blocks.ts";
import { describeClaude, headFor } from "./head.ts";
import { CLAUDE_ROWS } from "./rows.ts";
import { CLAUDE_SCANNER, type ClaudeHead, type ClaudeScan } from "./scan.ts";
import { scanClaudeLine } from "./scan-line.ts";
import { isClaudeSessionName } from "./store.ts";

function claude(root: FileRoot): ClaudeRoot {
  if (root.kind !== "claude") throw new Error("the Claude Code harness read a Pi root");
  return root;
}

export const CLAUDE_HARNESS: Harness = {
  name: "claude-code",
  sessionNames: (names) => names.filter(isClaudeSessionName).sort(),
  format: (root) => claudeFormat(root),
  parse: (buf, incomplete, root) => parseWhole(claudeFormat(root), buf, incomplete),
  describe: (head, _partial, tail, root) => describeClaude(head, tail, claude(root)),
  draftOf: (entry) => renderRecord(entry, ALONE),
  // A prompt (a user record that is not a tool result, a command's meta text or a compaction's
  // summary), or a reply: its lines share the API message's id, so they count once (tool results
  // may sit between them). Read by the scan's own rule (scan-line.ts), not by a byte search:
  // Claude Code writes a reply's `message` (with its own `type`) before the record's `type`, and
  // only records with a uuid are entries the reader shows.
  isMessageLine(line, state) {
    const f = scanClaudeLine(line, 0, line.length, false);
    if (!f.json || !f.object || f.uuid === null) return false;
    if (f.type === "user")
      return !(f.toolResult || f.isMeta || f.isCompactSummary || isOutput(line));
    if (f.type !== "assistant") return false;
    const id = f.messageId;
    if (id !== null && id === state.last) return false;
    state.last = id;
    return true;
  },
};

/**
 * Whether a prompt line is a command's output or an interrupt, which a page shows as such and
 * not as a prompt (blocks.ts renderTagged): by the string its text starts with.
 */
function isOutput(line: Buffer): boolean {
  return TAGGED.some((t) => line.includes(t));
}
const TAGGED = [
  '"<local-command-stdout>',
  '"<local-command-stderr>',
  '"[Request interrupted by user',
];

/**
 * No header line: the head is the folder's (the cwd check, the agents' conversation ids), and
 * the first record's cwd is checked when it is scanned, in whichever step or follow brings it.
 */
function claudeFormat(root: FileRoot): SessionFormat<ClaudeHead, ClaudeScan> {
  const head = headFor(claude(root));
  return { head: () => head, scanner: CLAUDE_SCANNER, rows: CLAUDE_ROWS };
}

/** A record rendered from its own line: no call above it to name its tool, no agent links. */
const ALONE: RecordContext = {
  continues: false,
  toolName: () => "",
  agentConversation: () => "",
};
