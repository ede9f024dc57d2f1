// A branch as Markdown: message text as written (raw HTML and script links made inert), code,
// tool calls and results in fenced blocks whose fence is longer than any backtick run inside,
// usage per reply and for the branch. Control, bidi and invisible characters are shown as the
// terminal shows them (`^[`, `<U+202E>`), so no file viewer can be steered by the content.
import { metaPhrases, NOTICE_LABELS, whoOf } from "../present/labels.ts";
import { languageOfPath } from "../present/language.ts";
import { lineCount, readRange, toolCallView } from "../present/tool-view.ts";
import { addUsage, modelText, type UsageTotal, usageText } from "../present/usage.ts";
import { makeVisible } from "../present/visible.ts";
import type { Block } from "../protocol/chat-01.ts";
import { type BranchExport, type Entry, entriesOf } from "./branch.ts";
import { titleOf, utcTime } from "./labels.ts";

/** The whole export; `now` is the export's time (a parameter so tests are exact). */
export function renderMarkdown(doc: BranchExport, now = new Date()): string {
  const entries = entriesOf(doc.pages);
  let total: UsageTotal | null = null;
  for (const e of entries) if (e.meta?.usage) total = addUsage(total, e.meta.usage);
  const branch = doc.view.branches.find((b) => b.name === doc.branch);
  const out: string[] = [`# ${inline(titleOf(doc))}`, ""];
  out.push(`- Conversation: ${code(doc.conversation)}`);
  if (doc.row) out.push(`- Project: ${inline(`${doc.row.project} / ${doc.row.seat}`)}`);
  out.push(`- Branch: ${code(doc.branch)}${branch?.label ? ` (${inline(branch.label)})` : ""}`);
  if (total) out.push(`- Usage (${total.messages} replies): ${usageText(total)}`);
  out.push(`- Exported: ${utcTime(now.toISOString())}`, "");
  const readLang = new Map<string, string>();
  for (const entry of entries) {
    out.push("---", "", headOf(entry), "");
    let lang = "";
    for (const block of entry.blocks) {
      if (block.type === "tool-result") lang = readLang.get(block.toolCallId) ?? "";
      out.push(...blockLines(block, entry, lang, readLang), "");
    }
  }
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}

function headOf(entry: Entry): string {
  const bits = [whoOf(entry)];
  const model = modelText(entry.meta);
  if (model) bits.push(model);
  bits.push(...metaPhrases(entry));
  const usage = usageText(entry.meta?.usage);
  if (usage) bits.push(usage);
  const when = utcTime(entry.timestamp);
  if (when) bits.push(when);
  return `### ${inline(bits.join(" · "))} ${code(entry.entry)}`;
}

function blockLines(
  block: Block,
  entry: Entry,
  lang: string,
  readLang: Map<string, string>,
): string[] {
  const isOutput = entry.role === "toolResult";
  switch (block.type) {
    case "text":
      if (isOutput) return [outputNote(block.text), ...fence(block.text, lang)];
      return [inertMarkdown(block.text)];
    case "thinking":
      return ["*Thinking:*", "", quote(inertMarkdown(block.text))];
    case "unavailable":
      return ["*Thinking redacted by the provider.*"];
    case "tool-call":
      return toolCallLines(block.name, block.text, block.id, readLang);
    case "tool-result":
      return [`**Result of ${code(block.toolName)}** (${block.isError ? "error" : "ok"})`];
    case "image":
      return [
        `*[image: ${inline(block.mimeType)}, ${block.data.length} characters of base64; the HTML and JSON exports hold it]*`,
      ];
    case "bash-command":
      return fence(`$ ${block.text}`, "bash");
    case "bash-output":
      return [outputNote(block.text), ...fence(block.text, "")];
    case "notice":
      return [quote(`**${NOTICE_LABELS[block.code]}:** ${inline(block.text)}`)];
    default:
      return unreachable(block);
  }
}

function toolCallLines(
  name: string,
  args: string,
  id: string,
  readLang: Map<string, string>,
): string[] {
  const view = toolCallView(name, args);
  const head = `**Tool call ${code(name)}** ${code(id)}`;
  switch (view.kind) {
    case "edit":
      return [
        `${head} edit ${code(view.path)}`,
        "",
        ...view.hunks.flatMap((h) => [
          ...fence(h.map((l) => `${l.op} ${l.text}`).join("\n"), "diff"),
          "",
        ]),
      ];
    case "write":
      return [`${head} write ${code(view.path)}`, "", ...fence(view.content, view.lang)];
    case "bash":
      return [head, "", ...fence(`$ ${view.command}`, "bash")];
    case "read": {
      readLang.set(id, languageOfPath(view.path));
      const range = readRange(view.offset, view.limit);
      return [`${head} read ${code(view.path)}${range ? ` ${range}` : ""}`];
    }
    case "json":
      return [head, "", ...fence(view.text, "json")];
    default:
      return unreachable(view);
  }
}

function outputNote(text: string): string {
  const n = lineCount(text);
  return `*Output, ${n} line${n === 1 ? "" : "s"}:*`;
}

/** A fenced block that `text` cannot close: the fence is longer than its longest backtick run. */
export function fence(text: string, lang: string): string[] {
  const visible = makeVisible(text);
  const longest = Math.max(0, ...[...visible.matchAll(/`+/g)].map((m) => m[0].length));
  const bar = "`".repeat(Math.max(3, longest + 1));
  const info = /^[A-Za-z0-9+#._-]{1,30}$/.test(lang) ? lang : "";
  return [`${bar}${info}`, visible.replace(/\n$/, ""), bar];
}

/** An inline code span `text` cannot end early, on one line. */
function code(text: string): string {
  const visible = makeVisible(text, { showNewlines: true });
  const longest = Math.max(0, ...[...visible.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = "`".repeat(longest + 1);
  const pad = visible.startsWith("`") || visible.endsWith("`") ? " " : "";
  return `${ticks}${pad}${visible}${pad}${ticks}`;
}

/** One line of text with Markdown's punctuation escaped, so it shows as written. */
function inline(text: string): string {
  return makeVisible(text, { showNewlines: true }).replace(/[\\`*_[\]<>|~&]/g, "\\$&");
}

function quote(text: string): string {
  return text
    .split("\n")
    .map((l) => `> ${l}`)
    .join("\n");
}

const SCRIPT_LINK = /(\]\(\s*<?\s*|^\s{0,3}\[[^\]]*\]:\s*<?\s*)(javascript|vbscript|data|file):/gim;
const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Message text kept as Markdown, made inert: outside fenced code every `<` that is not in a
 * code span becomes `&lt;` (no tag can form, an autolink shows as text), an image becomes a
 * link (`\![`: nothing is fetched when the file is viewed), and links to
 * javascript:, vbscript:, data: or file: are renamed `blocked-…:` so no viewer follows them.
 */
export function inertMarkdown(text: string): string {
  const lines = makeVisible(text).split("\n");
  let inFence: string | null = null;
  const out = lines.map((line) => {
    const m = FENCE_OPEN.exec(line);
    if (inFence !== null) {
      if (
        m?.[1] &&
        m[1][0] === inFence[0] &&
        m[1].length >= inFence.length &&
        line.trim() === m[1]
      ) {
        inFence = null;
      }
      return line;
    }
    if (m?.[1] && !(m[1][0] === "`" && line.slice(m[0].length).includes("`"))) {
      inFence = m[1];
      return line;
    }
    return escapeOutsideCodeSpans(line).replace(SCRIPT_LINK, "$1blocked-$2:");
  });
  // A fence the text left open is closed here, so it cannot swallow what the export adds.
  if (inFence !== null) out.push(inFence);
  return out.join("\n");
}

/** `<` → `&lt;` except inside code spans (a backtick run closed by one of the same length). */
function escapeOutsideCodeSpans(line: string): string {
  let out = "";
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) {
      out += line[i + 1] === "<" ? "&lt;" : line.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (c === "`") {
      let n = 1;
      while (line[i + n] === "`") n++;
      const closing = findRun(line, i + n, n);
      if (closing >= 0) {
        out += line.slice(i, closing + n);
        i = closing + n;
      } else {
        out += line.slice(i, i + n);
        i += n;
      }
      continue;
    }
    // `<` can start no tag; `![` links to an image instead of embedding (and fetching) it.
    if (c === "<") out += "&lt;";
    else if (c === "!" && line[i + 1] === "[") out += "\\!";
    else out += c;
    i++;
  }
  return out;
}

/** Where the next backtick run of exactly `n` starts at or after `from`, or -1. */
function findRun(line: string, from: number, n: number): number {
  for (let i = from; i < line.length; ) {
    if (line[i] !== "`") {
      i++;
      continue;
    }
    let m = 1;
    while (line[i + m] === "`") m++;
    if (m === n) return i;
    i += m;
  }
  return -1;
}

function unreachable(x: never): never {
  throw new Error(`unhandled ${JSON.stringify(x)}`);
}
