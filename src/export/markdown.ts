// A branch as Markdown, written as its pages are read: a header, each entry with its blocks,
// then the branch's totals (or, when a refusal stopped the read, a last section saying so).
// Message text is the Console's parse written again with nothing live in it (inert-markdown.ts);
// code, tool calls and output are fenced blocks no content can close. Control, bidi and
// invisible characters are shown as the terminal shows them (`^[`, `<U+202E>`).

import { harnessLabel, metaPhrases, NOTICE_LABELS, whoOf } from "../present/labels.ts";
import { languageOfPath } from "../present/language.ts";
import { lineCount, readRange, toolCallView } from "../present/tool-view.ts";
import { modelText, usageText } from "../present/usage.ts";
import { makeVisible } from "../present/visible.ts";
import type { Block, RefusalRecord } from "../protocol/chat-01.ts";
import type { BranchHead } from "./branch.ts";
import type { EntryHead } from "./entries.ts";
import { FenceStream, fence } from "./fence-stream.ts";
import { type ExportSummary, type FormatWriter, ReadLanguages } from "./format.ts";
import { inertMarkdown } from "./inert-markdown.ts";
import { titleOf, utcTime } from "./labels.ts";

export { inertMarkdown };

/** What a long run writes first, as its pieces come, and at its end. */
type LongRun = { start: string; piece(text: string): string; end(): string };

/** The Markdown writer; `now` is the export's time (a parameter so tests are exact). */
export function markdownWriter(doc: BranchHead, now = new Date()): FormatWriter {
  const readLang = new ReadLanguages();
  let lang = "";
  let long: LongRun | null = null;
  return {
    begin() {
      const branch = doc.view.branches.find((b) => b.name === doc.branch);
      const lines = [`# ${inline(titleOf(doc))}`, ""];
      lines.push(`- Conversation: ${code(doc.conversation)}`);
      if (doc.row) lines.push(`- Project: ${inline(`${doc.row.project} / ${doc.row.seat}`)}`);
      if (doc.row?.harness && doc.row.harness !== "pi") {
        lines.push(`- Written by: ${inline(harnessLabel(doc.row.harness))}`);
      }
      lines.push(
        `- Branch: ${code(doc.branch)}${branch?.label ? ` (${inline(branch.label)})` : ""}`,
      );
      lines.push(`- Exported: ${utcTime(now.toISOString())}`, "");
      return lines.join("\n");
    },
    entry(head) {
      lang = "";
      return `\n---\n\n${headOf(head)}\n`;
    },
    block(block, head) {
      if (block.type === "tool-result") lang = readLang.get(block.toolCallId);
      const lines = blockLines(block, head, lang, readLang);
      return lines.length === 0 ? "" : `\n${lines.join("\n")}\n`;
    },
    longStart(block, head, count) {
      long = longRun(block, head, count, lang);
      return long.start;
    },
    longPiece(text) {
      return long?.piece(text) ?? "";
    },
    longEnd() {
      const out = long?.end() ?? "";
      long = null;
      return out;
    },
    end(summary) {
      const lines = ["", "---", "", "## End of the branch", ""];
      lines.push(`- Entries: ${summary.entries}`);
      if (summary.usage) {
        lines.push(`- Usage (${summary.usage.messages} replies): ${usageText(summary.usage)}`);
      }
      return `${lines.join("\n")}\n`;
    },
    stopped(refusal, summary) {
      // A run cut off mid-way is closed first, so the notice below is not inside its fence.
      const open = long?.end() ?? "";
      long = null;
      return `${open}\n${stoppedLines(refusal, summary).join("\n")}\n`;
    },
  };
}

function stoppedLines(refusal: RefusalRecord, summary: ExportSummary): string[] {
  return [
    "",
    "---",
    "",
    "## Export stopped",
    "",
    quote(
      `**This export is incomplete.** ${inline(refusal.code)}: ${inline(refusal.message)} It holds the first ${summary.entries} entries; export the branch again.`,
    ),
  ];
}

function headOf(entry: EntryHead): string {
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
  entry: EntryHead,
  lang: string,
  readLang: ReadLanguages,
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
      return [
        `**Result of ${code(block.toolName)}** (${block.isError ? "error" : "ok"})${
          block.transcript
            ? `; the agent's transcript is conversation ${code(block.transcript)}`
            : ""
        }`,
      ];
    case "image":
      return [imageLine(block.mimeType, block.data.length)];
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

/**
 * A block too long to hold whole, written as it comes: code and output in a fence that grows
 * when the text could close it; message text shown as written (too long to parse as Markdown
 * here); an image counted and named at its end.
 */
function longRun(block: Block, entry: EntryHead, count: number, lang: string): LongRun {
  const first = "text" in block ? block.text : "";
  const fenced = (note: string, info: string, prefix = "", lead = ""): LongRun => {
    const stream = new FenceStream(`${lead}${first}`, info, prefix);
    return {
      // A blank line between the note and the fence, inside the quote when there is one.
      start: `\n${note === "" ? "" : `${note}\n${prefix.trimEnd()}\n`}${stream.open()}${stream.write(lead)}${stream.write(first)}`,
      piece: (text) => stream.write(text),
      end: () =>
        `${stream.close()}\n${isOutputNote(block, entry) ? `\n*${stream.lines} lines.*\n` : ""}`,
    };
  };
  switch (block.type) {
    case "text":
      if (entry.role === "toolResult") return fenced(longNote("Output", count), lang);
      return fenced(longNote("Text", count, "shown as written, not read as Markdown"), "");
    case "thinking":
      return fenced(
        `*Thinking:*\n\n${quote(longNote("Text", count, "shown as written, not read as Markdown"))}`,
        "",
        "> ",
      );
    case "tool-call":
      return fenced(
        `**Tool call ${code(block.name)}** ${code(block.id)} ${longNote("arguments", count, "as recorded")}`,
        "json",
      );
    case "bash-command":
      return fenced("", "bash", "", "$ ");
    case "bash-output":
      return fenced(longNote("Output", count), "");
    case "image": {
      let chars = block.data.length;
      return {
        start: "",
        piece: (text) => {
          chars += text.length;
          return "";
        },
        end: () => `\n${imageLine(block.mimeType, chars)}\n`,
      };
    }
    case "notice":
      return {
        start: `\n> **${NOTICE_LABELS[block.code]}:** ${inline(block.text)}`,
        piece: (text) => inline(text),
        end: () => "\n",
      };
    case "unavailable":
    case "tool-result":
      // Never cut into fragments: nothing long in them.
      return { start: "", piece: () => "", end: () => "" };
    default:
      return unreachable(block);
  }
}

function isOutputNote(block: Block, entry: EntryHead): boolean {
  return block.type === "bash-output" || (block.type === "text" && entry.role === "toolResult");
}

function longNote(what: string, count: number, how = ""): string {
  return `*${what}, long (read in ${count} pieces)${how === "" ? "" : `, ${how}`}:*`;
}

function imageLine(mimeType: string, chars: number): string {
  return `*[image: ${inline(mimeType)}, ${chars} characters of base64; the HTML and JSON exports hold it]*`;
}

function toolCallLines(name: string, args: string, id: string, readLang: ReadLanguages): string[] {
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
      ].slice(0, -1);
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
  return makeVisible(text, { showNewlines: true }).replace(/[\\`*_[\]<>|~&#]/g, "\\$&");
}

function quote(text: string): string {
  return text
    .split("\n")
    .map((l) => (l === "" ? ">" : `> ${l}`))
    .join("\n");
}

function unreachable(x: never): never {
  throw new Error(`unhandled ${JSON.stringify(x)}`);
}
