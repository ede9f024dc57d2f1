// Claude Code's session files behind the harness seam (docs/claude-code-files.md): no header,
// records by uuid and parentUuid, bookkeeping lines between them.
import type { ClaudeRoot, FileRoot } from "../../sources.ts";
import { extendSession, parseSession } from "../../tree.ts";
import type { Harness } from "../harness.ts";
import { type RecordContext, renderRecord } from "./blocks.ts";
import { describeClaude, headFor } from "./head.ts";
import { CLAUDE_ROWS } from "./rows.ts";
import { CLAUDE_SCANNER } from "./scan.ts";
import { isClaudeSessionName } from "./store.ts";

function claude(root: FileRoot): ClaudeRoot {
  if (root.kind !== "claude") throw new Error("the Claude Code harness read a Pi root");
  return root;
}

export const CLAUDE_HARNESS: Harness = {
  name: "claude-code",
  sessionNames: (names) => names.filter(isClaudeSessionName).sort(),
  parse: (buf, _incomplete, root) =>
    parseSession(buf, headFor(claude(root)), CLAUDE_SCANNER, CLAUDE_ROWS),
  // The first record's cwd is checked when it is scanned, in whichever snapshot brings it.
  extend: (prev, buf) => extendSession(prev, buf),
  describe: (head, _partial, tail, root) => describeClaude(head, tail, claude(root)),
  draftOf: (entry) => renderRecord(entry, ALONE),
};

/** A record rendered from its own line: no call above it to name its tool, no agent links. */
const ALONE: RecordContext = {
  continues: false,
  toolName: () => "",
  agentConversation: () => "",
};
