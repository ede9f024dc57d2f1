// How a tool call reads to a person, without the DOM: edit as a line diff, write as the file
// highlighted by its extension, bash as a command line, read as path and range (Pi's tools and
// Claude Code's Edit/MultiEdit/Write/Bash/Read alike), others as formatted JSON; and when output
// folds. The Console and the exports share these.
import { languageOfPath } from "./language.ts";

/** Tool output longer than this many lines starts folded, with its line count shown. */
export const FOLD_LINES = 20;
/** Line diffs over more lines than this are shown as removed-then-added, not aligned. */
const DIFF_MAX_CELLS = 4_000_000;

export type DiffLine = { op: " " | "-" | "+"; text: string };
export type ToolCallView =
  | { kind: "edit"; path: string; hunks: DiffLine[][] }
  | { kind: "write"; path: string; content: string; lang: string }
  | { kind: "bash"; command: string; timeout: number | null }
  | { kind: "read"; path: string; offset: number | null; limit: number | null }
  | { kind: "json"; text: string };

type Edit = { oldText: string; newText: string };

/**
 * A tool call's arguments (JSON text as recorded) as a view; `json` (pretty-printed, or the
 * raw text when it is not JSON) when the arguments are not what the tool's view needs.
 */
export function toolCallView(name: string, argsText: string): ToolCallView {
  let args: unknown;
  try {
    args = JSON.parse(argsText);
  } catch {
    // Not JSON as recorded (a stream cut short): shown as it is.
    return { kind: "json", text: argsText };
  }
  const json: ToolCallView = { kind: "json", text: JSON.stringify(args, null, 2) };
  if (!isRecord(args)) return json;
  const claude = claudeView(name, args);
  if (claude !== undefined) return claude ?? json;
  const path = typeof args.path === "string" ? args.path : null;
  switch (name) {
    case "edit": {
      const edits: unknown[] = Array.isArray(args.edits) ? args.edits : [args];
      if (path === null || edits.length === 0 || !edits.every(isEdit)) return json;
      return { kind: "edit", path, hunks: edits.map((e) => lineDiff(e.oldText, e.newText)) };
    }
    case "write":
      if (path === null || typeof args.content !== "string") return json;
      return { kind: "write", path, content: args.content, lang: languageOfPath(path) };
    case "bash":
      if (typeof args.command !== "string") return json;
      return { kind: "bash", command: args.command, timeout: numberOr(args.timeout) };
    case "read":
      if (path === null) return json;
      return { kind: "read", path, offset: numberOr(args.offset), limit: numberOr(args.limit) };
    default:
      return json;
  }
}

/**
 * Claude Code's own tools (capitalized names, `file_path`, `old_string`/`new_string`, a Bash
 * timeout in milliseconds) as the same views; null when the arguments do not fit the tool (shown
 * as JSON), undefined when the name is not one of them.
 */
function claudeView(name: string, args: Record<string, unknown>): ToolCallView | null | undefined {
  const path = typeof args.file_path === "string" ? args.file_path : null;
  switch (name) {
    case "Edit":
    case "MultiEdit": {
      const edits: unknown[] = Array.isArray(args.edits) ? args.edits : [args];
      const pairs = edits.map((e) =>
        isRecord(e) ? { oldText: e.old_string, newText: e.new_string } : e,
      );
      if (path === null || pairs.length === 0 || !pairs.every(isEdit)) return null;
      return { kind: "edit", path, hunks: pairs.map((e) => lineDiff(e.oldText, e.newText)) };
    }
    case "Write":
      if (path === null || typeof args.content !== "string") return null;
      return { kind: "write", path, content: args.content, lang: languageOfPath(path) };
    case "Bash": {
      if (typeof args.command !== "string") return null;
      const ms = numberOr(args.timeout);
      return { kind: "bash", command: args.command, timeout: ms === null ? null : ms / 1000 };
    }
    case "Read":
      if (path === null) return null;
      return { kind: "read", path, offset: numberOr(args.offset), limit: numberOr(args.limit) };
    default:
      return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isEdit(e: unknown): e is Edit {
  return isRecord(e) && typeof e.oldText === "string" && typeof e.newText === "string";
}

function numberOr(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** `read`'s range as people say it: "lines 10–29", "from line 10", "first 20 lines", or "". */
export function readRange(offset: number | null, limit: number | null): string {
  if (offset !== null && limit !== null) return `lines ${offset}–${offset + limit - 1}`;
  if (offset !== null) return `from line ${offset}`;
  if (limit !== null) return `first ${limit} lines`;
  return "";
}

/** Lines of `a` → `b` as `{ op: " " | "-" | "+", text }`, aligned on a longest common subsequence. */
export function lineDiff(a: string, b: string): DiffLine[] {
  // A final LF ends the last line; it does not start an empty one.
  const x = (a.endsWith("\n") ? a.slice(0, -1) : a).split("\n");
  const y = (b.endsWith("\n") ? b.slice(0, -1) : b).split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (
    tail < x.length - head &&
    tail < y.length - head &&
    x[x.length - 1 - tail] === y[y.length - 1 - tail]
  ) {
    tail++;
  }
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const out: DiffLine[] = x.slice(0, head).map((text) => ({ op: " ", text }));
  if (xs.length * ys.length > DIFF_MAX_CELLS) {
    for (const text of xs) out.push({ op: "-", text });
    for (const text of ys) out.push({ op: "+", text });
  } else {
    out.push(...alignedDiff(xs, ys));
  }
  for (const text of x.slice(x.length - tail)) out.push({ op: " ", text });
  return out;
}

function alignedDiff(xs: string[], ys: string[]): DiffLine[] {
  const n = xs.length;
  const m = ys.length;
  // lcs[i][j]: the longest common subsequence of xs[i..] and ys[j..], in one flat array.
  const lcs = new Uint32Array((n + 1) * (m + 1));
  const at = (i: number, j: number): number => lcs[i * (m + 1) + j] ?? 0;
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * (m + 1) + j] =
        xs[i] === ys[j] ? at(i + 1, j + 1) + 1 : Math.max(at(i + 1, j), at(i, j + 1));
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && xs[i] === ys[j]) {
      out.push({ op: " ", text: xs[i++] ?? "" });
      j++;
    } else if (i < n && (j === m || at(i + 1, j) >= at(i, j + 1))) {
      out.push({ op: "-", text: xs[i++] ?? "" });
    } else {
      out.push({ op: "+", text: ys[j++] ?? "" });
    }
  }
  return out;
}

/** Number of lines in `text` (a final LF ends the last line, it does not start another). */
export function lineCount(text: string): number {
  if (text === "") return 0;
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return text.endsWith("\n") ? n - 1 : n;
}
