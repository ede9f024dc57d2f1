// An entry's blocks as the plain text a person sees of them (issue 24 item 10): Markdown as the
// transcript renders it (no `**`, `#`, backticks or link targets; list items, task boxes and
// images as shown), tool calls as their views show them (an edit as its path and diff lines, a
// command as `$ …`, a read as path and range, other arguments as `key: value`), never raw JSON.
// Search hits are cut from this text, so the terminal and the Console show one snippet. The text
// is data: every sink still shows it by the visible-text rule (visible.ts), so it stays inert.
import type { Block } from "../protocol/chat-01.ts";
import { markdownTree, TASK_DONE, TASK_OPEN, type TreeNode } from "./markdown.ts";
import { readRange, toolCallView } from "./tool-view.ts";

/** Longer Markdown is shown from a window of it (around `at`): a snippet never needs it all. */
export const PLAIN_WINDOW = 16 * 1024;

/**
 * The blocks as plain text, one block a line. `focus(text)` says where in a block's raw text
 * the snippet will be (its first match), or -1: a long block is rendered from a window there.
 */
export function plainText(
  blocks: readonly Block[],
  focus: (raw: string) => number = () => -1,
): string {
  return blocks
    .map((b) => plainBlock(b, focus))
    .filter((s) => s !== "")
    .join("\n");
}

function plainBlock(b: Block, focus: (raw: string) => number): string {
  switch (b.type) {
    case "text":
    case "thinking":
      return plainMarkdown(b.text, focus(b.text));
    case "tool-call":
      return plainToolCall(b.name, b.text);
    case "tool-result":
      return b.toolName;
    case "bash-command":
      return `$ ${b.text}`;
    case "bash-output":
      return b.text;
    case "notice":
      return b.code === "stopped" ? b.text : "";
    default:
      return "";
  }
}

/** Markdown as it reads rendered; a long text from a window around `at` (lines kept whole). */
export function plainMarkdown(text: string, at = -1): string {
  if (text.length <= PLAIN_WINDOW) return flatten(markdownTree(text));
  const from = at < 0 ? 0 : lineStart(text, Math.max(0, at - PLAIN_WINDOW / 4));
  const cut = text.indexOf("\n", Math.min(text.length, from + PLAIN_WINDOW));
  const to = cut < 0 ? text.length : cut;
  const body = flatten(markdownTree(text.slice(from, to)));
  return `${from > 0 ? "… " : ""}${body}${to < text.length ? " …" : ""}`;
}

function lineStart(text: string, i: number): number {
  const nl = text.lastIndexOf("\n", i);
  return nl < 0 ? 0 : nl + 1;
}

const BREAKS = new Set([
  "p",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "pre",
  "blockquote",
  "tr",
  "hr",
  "br",
  "table",
]);

/** The text of a tree: elements' words, a line between blocks, list items marked as shown. */
function flatten(nodes: readonly TreeNode[]): string {
  let out = "";
  const walk = (list: readonly TreeNode[], ordered: { next: number } | null) => {
    for (const n of list) {
      if (typeof n === "string") {
        out += n;
        continue;
      }
      if (n.tag === "li") {
        // A task's box stands in its bullet's place, as the transcript shows it.
        out += ordered ? `\n${ordered.next++}. ` : isTask(n) ? "\n" : "\n• ";
        walk(n.children, null);
        continue;
      }
      if (n.tag === "ul" || n.tag === "ol") {
        walk(n.children, n.tag === "ol" ? { next: n.start ?? 1 } : null);
        out += "\n";
        continue;
      }
      if (BREAKS.has(n.tag)) out += "\n";
      walk(n.children, null);
      if (n.tag === "td" || n.tag === "th") out += " ";
      if (BREAKS.has(n.tag)) out += "\n";
    }
  };
  walk(nodes, null);
  return out.replace(/[ \t]*\n[\n \t]*/g, "\n").trim();
}

function isTask(li: Exclude<TreeNode, string>): boolean {
  const first = li.children[0];
  const box = typeof first === "object" && first.tag === "p" ? first.children[0] : first;
  return typeof box === "object" && (box.cls === TASK_OPEN || box.cls === TASK_DONE);
}

/** A tool call as its view shows it (tool-view.ts), as plain text: `$ ls`, `edit a.ts …`. */
export function plainToolCall(name: string, argsText: string): string {
  const view = toolCallView(name, argsText);
  switch (view.kind) {
    case "edit":
      return [
        `edit ${view.path}`,
        ...view.hunks.flatMap((hunk) =>
          hunk.filter((l) => l.op !== " ").map((l) => `${l.op} ${l.text}`),
        ),
      ].join("\n");
    case "write":
      return `write ${view.path}\n${view.content}`;
    case "bash":
      return `$ ${view.command}`;
    case "read": {
      const range = readRange(view.offset, view.limit);
      return `read ${view.path}${range === "" ? "" : ` ${range}`}`;
    }
    default:
      return `${name} ${plainArguments(argsText)}`;
  }
}

/** Arguments as `key: value` lines (as the terminal shows them); anything else as recorded. */
function plainArguments(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON as recorded (a stream cut short): shown as it is.
    return text;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return JSON.stringify(value);
  }
  return Object.entries(value)
    .map(([key, v]) => `${key}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join("\n");
}
