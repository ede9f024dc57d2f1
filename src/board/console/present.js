// How a part reads to a person, without the DOM: tool calls by tool (edit as a diff, write as
// the file, bash as a command line, read as path and range, others as formatted JSON), usage
// and cost, and fold limits. The Console and the exports (src/export) share these rules.
import { languageOfPath } from "./markdown.js";

/** Tool output longer than this many lines starts folded, with its line count shown. */
export const FOLD_LINES = 20;
/** Line diffs over more lines than this are shown as removed-then-added, not aligned. */
const DIFF_MAX_CELLS = 4_000_000;

/**
 * A tool call's arguments (JSON text as recorded) as a view:
 * `{ kind: "edit", path, hunks: [[{ op, text }]] }`, `{ kind: "write", path, content, lang }`,
 * `{ kind: "bash", command, timeout }`, `{ kind: "read", path, offset, limit }`, or
 * `{ kind: "json", text }` (pretty-printed, or the raw text when it is not JSON).
 */
export function toolCallView(name, argsText) {
  let args;
  try {
    args = JSON.parse(argsText);
  } catch {
    // Not JSON as recorded (a stream cut short): shown as it is.
    return { kind: "json", text: argsText };
  }
  const json = { kind: "json", text: JSON.stringify(args, null, 2) };
  if (typeof args !== "object" || args === null || Array.isArray(args)) return json;
  const claude = claudeView(name, args);
  if (claude !== undefined) return claude ?? json;
  const path = typeof args.path === "string" ? args.path : null;
  switch (name) {
    case "edit": {
      const edits = Array.isArray(args.edits) ? args.edits : [args];
      if (path === null || !edits.every(isEdit) || edits.length === 0) return json;
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
function claudeView(name, args) {
  const path = typeof args.file_path === "string" ? args.file_path : null;
  switch (name) {
    case "Edit":
    case "MultiEdit": {
      const edits = Array.isArray(args.edits) ? args.edits : [args];
      const pairs = edits.map((e) =>
        typeof e === "object" && e !== null ? { oldText: e.old_string, newText: e.new_string } : e,
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

/** A harness as people name it ("Claude Code" for `claude-code`); "" for none. */
export function harnessLabel(harness) {
  if (harness === "claude-code") return "Claude Code";
  if (harness === "pi") return "Pi";
  return typeof harness === "string" ? harness : "";
}

function isEdit(e) {
  return (
    typeof e === "object" &&
    e !== null &&
    typeof e.oldText === "string" &&
    typeof e.newText === "string"
  );
}

function numberOr(v) {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** `read`'s range as people say it: "lines 10–29", "from line 10", "first 20 lines", or "". */
export function readRange(offset, limit) {
  if (offset !== null && limit !== null) return `lines ${offset}–${offset + limit - 1}`;
  if (offset !== null) return `from line ${offset}`;
  if (limit !== null) return `first ${limit} lines`;
  return "";
}

/** Lines of `a` → `b` as `{ op: " " | "-" | "+", text }`, aligned on a longest common subsequence. */
export function lineDiff(a, b) {
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
  const out = x.slice(0, head).map((text) => ({ op: " ", text }));
  if (xs.length * ys.length > DIFF_MAX_CELLS) {
    for (const text of xs) out.push({ op: "-", text });
    for (const text of ys) out.push({ op: "+", text });
  } else {
    out.push(...alignedDiff(xs, ys));
  }
  for (const text of x.slice(x.length - tail)) out.push({ op: " ", text });
  return out;
}

function alignedDiff(xs, ys) {
  const n = xs.length;
  const m = ys.length;
  // lcs[i][j]: the longest common subsequence of xs[i..] and ys[j..], in one flat array.
  const lcs = new Uint32Array((n + 1) * (m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * (m + 1) + j] =
        xs[i] === ys[j]
          ? lcs[(i + 1) * (m + 1) + j + 1] + 1
          : Math.max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && xs[i] === ys[j]) {
      out.push({ op: " ", text: xs[i++] });
      j++;
    } else if (i < n && (j === m || lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1])) {
      out.push({ op: "-", text: xs[i++] });
    } else {
      out.push({ op: "+", text: ys[j++] });
    }
  }
  return out;
}

/** Number of lines in `text` (a final LF ends the last line, it does not start another). */
export function lineCount(text) {
  if (text === "") return 0;
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return text.endsWith("\n") ? n - 1 : n;
}

/** `1234` → "1.2k", `1234567` → "1.2M". */
export function formatTokens(n) {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** USD with enough digits to tell small costs apart: "$0.0042", "$1.23". */
export function formatCost(usd) {
  if (usd === null || usd === undefined) return "";
  if (usd === 0) return "$0";
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** "in 1.2k · out 340 · cache 5.1k read / 200 write · $0.0042" for one usage record. */
export function usageText(usage) {
  if (!usage) return "";
  const parts = [`in ${formatTokens(usage.input)}`, `out ${formatTokens(usage.output)}`];
  if (usage.cacheRead > 0 || usage.cacheWrite > 0) {
    parts.push(
      `cache ${formatTokens(usage.cacheRead)} read / ${formatTokens(usage.cacheWrite)} write`,
    );
  }
  const cost = formatCost(usage.cost);
  if (cost) parts.push(cost);
  return parts.join(" · ");
}

/** Sums usage records; cost is null only when no record had one. */
export function addUsage(total, usage) {
  const sum = total ?? {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    cost: null,
    messages: 0,
  };
  if (!usage) return sum;
  return {
    input: sum.input + usage.input,
    output: sum.output + usage.output,
    cacheRead: sum.cacheRead + usage.cacheRead,
    cacheWrite: sum.cacheWrite + usage.cacheWrite,
    cost: usage.cost === null ? sum.cost : (sum.cost ?? 0) + usage.cost,
    messages: sum.messages + 1,
  };
}

/** "claude-sonnet-4 · anthropic" or whichever of the two is known. */
export function modelText(meta) {
  if (!meta) return "";
  return [meta.model, meta.provider].filter((s) => typeof s === "string" && s !== "").join(" · ");
}
