// What a Claude Code session file says of itself before its history: the first record's cwd
// (checked against the folder it was read from), its session id and time, and the title a
// catalogue row shows. A file has no header line; its first record stands in for one.
import { resolve } from "node:path";
import { toChatId } from "../../../protocol/chat-01.ts";
import { RECORDED_TIME_MAX } from "../../draft.ts";
import { isObject } from "../../entries.ts";
import { Refusal } from "../../refusal.ts";
import { isCwdInsideProject } from "../../safe-fs.ts";
import { type ClaudeRoot, claudeAgentId } from "../../sources.ts";
import { objectsWith, titleOf } from "../../title.ts";
import type { FileFacts } from "../harness.ts";
import type { ClaudeHead } from "./scan.ts";
import { checkClaudeStoreCwd } from "./store.ts";

/** The head of a file read through `root`: its cwd check and how its agents are named. */
export function headFor(root: ClaudeRoot): ClaudeHead {
  return {
    parentSession: false,
    checkCwd(cwd) {
      if (typeof cwd !== "string" || cwd === "") {
        throw new Refusal(
          "foreign-project",
          "The session's first record names no working directory.",
        );
      }
      if (root.store) checkClaudeStoreCwd(cwd, root.store.dirName);
      else if (!isCwdInsideProject(cwd, root.projectRoot)) {
        throw new Refusal(
          "foreign-project",
          "The session's working directory is relative or outside this project.",
        );
      }
    },
    agentConversation: (agentId) => claudeAgentId(root.identity, agentId),
  };
}

/**
 * A catalogue row's facts from the file's first and last whole lines. The first record (the
 * first line with a `uuid`) must pass the cwd check; a head without one (a session that has
 * written only bookkeeping so far, or an enormous first prompt) leaves the project, id and time
 * unknown. Title: the latest `custom-title` (a name the person gave), else the latest
 * `ai-title`, else the latest `summary` (older files), else the first prompt in the head.
 */
export function describeClaude(head: Buffer, tail: Buffer | null, root: ClaudeRoot): FileFacts {
  const check = headFor(root);
  let facts: FileFacts = { sessionId: null, createdAt: null, title: null };
  for (const obj of objectsWith(head, '"uuid"')) {
    if (typeof obj.uuid !== "string" || obj.uuid === "") continue;
    check.checkCwd(obj.cwd);
    const t = obj.timestamp;
    facts = {
      ...(root.store && typeof obj.cwd === "string" ? { project: resolve(obj.cwd) } : {}),
      sessionId: typeof obj.sessionId === "string" ? toChatId(obj.sessionId) : null,
      createdAt: typeof t === "string" && t.length <= RECORDED_TIME_MAX ? t : null,
      title: null,
    };
    break;
  }
  const named =
    latest([head, tail], "custom-title", "customTitle") ??
    latest([head, tail], "ai-title", "aiTitle") ??
    latest([head, tail], "summary", "summary");
  return { ...facts, title: named ?? firstPrompt(head) };
}

/** The last non-empty `field` of a `type` record in `bufs`, in order, as a title. */
function latest(bufs: (Buffer | null)[], type: string, field: string): string | null {
  let found: string | null = null;
  for (const buf of bufs) {
    if (buf === null) continue;
    for (const obj of objectsWith(buf, `"${type}"`)) {
      if (obj.type !== type || typeof obj[field] !== "string") continue;
      const title = titleOf(obj[field] as string);
      if (title !== "") found = title;
    }
  }
  return found;
}

/** The first prompt a person typed: not a tool result, a command, a caveat or a summary. */
function firstPrompt(buf: Buffer): string | null {
  for (const obj of objectsWith(buf, '"user"')) {
    if (obj.type !== "user" || obj.isMeta === true || obj.isCompactSummary === true) continue;
    const m = obj.message;
    if (!isObject(m)) continue;
    const c = m.content;
    let text = typeof c === "string" ? c : "";
    if (Array.isArray(c)) {
      const first: unknown = c[0];
      if (isObject(first) && first.type === "tool_result") continue;
      const block = c.find((b: unknown) => isObject(b) && b.type === "text");
      if (isObject(block) && typeof block.text === "string") text = block.text;
    }
    const trimmed = text.trim();
    if (trimmed === "" || trimmed.startsWith("<") || trimmed.startsWith("[Request interrupted")) {
      continue;
    }
    return titleOf(trimmed);
  }
  return null;
}
