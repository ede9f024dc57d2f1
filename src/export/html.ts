// A branch as one self-contained HTML file: inline CSS allowed by its hash, no script, a
// strict CSP meta (nothing loads but data: images). Markdown and highlighting come from the
// Console's own trees (src/present/markdown.ts), turned into markup here with every string
// escaped; tool calls read as in the Console (tool-view.ts); long output folds in <details> with
// its line count.
// Written as the pages are read: the branch's totals close the file, after its entries.
import { createHash } from "node:crypto";
import { imageRefusal, isShownImageType } from "../present/image.ts";
import { harnessLabel, metaPhrases, NOTICE_LABELS, whoOf } from "../present/labels.ts";
import { languageOfPath } from "../present/language.ts";
import { codeNode, markdownTree, safeHref, TREE_TAGS, type TreeNode } from "../present/markdown.ts";
import { FOLD_LINES, lineCount, readRange, toolCallView } from "../present/tool-view.ts";
import { modelText, usageText } from "../present/usage.ts";
import { makeVisible } from "../present/visible.ts";
import type { Block } from "../protocol/chat-01.ts";
import type { BranchHead } from "./branch.ts";
import type { EntryHead } from "./entries.ts";
import { type FormatWriter, ReadLanguages } from "./format.ts";
import { EXPORT_CSS } from "./html-style.ts";
import { titleOf, utcTime } from "./labels.ts";

/** A piece of a long image's base64: padding only at the very end. */
const BASE64_PIECE = /^[A-Za-z0-9+/]*={0,2}$/;
const HL_CLASS = /^hl-[a-z][a-z_-]{0,30}$/;

/** The export's Content-Security-Policy: its one style element by hash, data: images only. */
export function exportCsp(css = EXPORT_CSS): string {
  const hash = createHash("sha256").update(css, "utf8").digest("base64");
  return [
    "default-src 'none'",
    `style-src 'sha256-${hash}'`,
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

/** Text for HTML: controls made visible as in the terminal, then escaped. */
export function escapeText(text: string, oneLine = false): string {
  return makeVisible(text, { showNewlines: oneLine })
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** A markdownTree as markup: only TREE_TAGS, only checked links and highlight classes. */
export function treeHtml(nodes: readonly TreeNode[]): string {
  let out = "";
  for (const node of nodes) {
    if (typeof node === "string") {
      out += escapeText(node);
      continue;
    }
    const inner = treeHtml(node.children);
    if (!TREE_TAGS.has(node.tag)) {
      out += inner;
      continue;
    }
    let attrs = "";
    if (node.tag === "a") {
      const href = safeHref(node.href);
      if (href === null) {
        out += inner;
        continue;
      }
      attrs = ` href="${escapeText(href, true)}" rel="noopener noreferrer"`;
    }
    if (node.tag === "ol" && Number.isInteger(node.start)) attrs = ` start="${node.start}"`;
    if (node.tag === "span" && node.cls !== undefined && HL_CLASS.test(node.cls)) {
      attrs = ` class="${node.cls}"`;
    }
    if (node.tag === "pre") attrs = ' class="code"';
    out += ["br", "hr"].includes(node.tag)
      ? `<${node.tag}>`
      : `<${node.tag}${attrs}>${inner}</${node.tag}>`;
  }
  return out;
}

function codeHtml(code: string, lang: string): string {
  return treeHtml([codeNode(code, lang)]);
}

function folded(html: string, text: string, what: string): string {
  const n = lineCount(text);
  if (n <= FOLD_LINES) return html;
  return `<details class="fold"><summary>${what}: ${n} lines</summary>${html}</details>`;
}

/** The HTML writer; `now` is the export's time (a parameter so tests are exact). */
export function htmlWriter(doc: BranchHead, now = new Date()): FormatWriter {
  const readLang = new ReadLanguages();
  let lang = "";
  let inArticle = false;
  let long: LongRun | null = null;
  const closeArticle = () => {
    const out = inArticle ? "</article>\n" : "";
    inArticle = false;
    return out;
  };
  const closeLong = () => {
    const out = long?.end() ?? "";
    long = null;
    return out;
  };
  return {
    begin() {
      const branch = doc.view.branches.find((b) => b.name === doc.branch);
      const title = escapeText(titleOf(doc), true);
      const facts = [
        `<code>${escapeText(doc.conversation, true)}</code>`,
        doc.row ? escapeText(`${doc.row.project} / ${doc.row.seat}`, true) : "",
        doc.row?.harness && doc.row.harness !== "pi"
          ? `written by ${escapeText(harnessLabel(doc.row.harness), true)}`
          : "",
        `branch <code>${escapeText(doc.branch, true)}</code>${branch?.label ? ` (${escapeText(branch.label, true)})` : ""}`,
        `exported ${utcTime(now.toISOString())}`,
      ].filter((s) => s !== "");
      return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${exportCsp()}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${EXPORT_CSS}</style>
</head>
<body>
<header><h1>${title}</h1><p class="facts">${facts.join(" · ")}</p></header>
<main>
`;
    },
    entry(head) {
      lang = "";
      const out = `${closeArticle()}${entryOpen(head)}`;
      inArticle = true;
      return out;
    },
    block(block, head) {
      if (block.type === "tool-result") lang = readLang.get(block.toolCallId);
      return blockHtml(block, head, lang, readLang);
    },
    longStart(block, head, count) {
      long = longRun(block, head, count);
      return long.start;
    },
    longPiece(text) {
      return long?.piece(text) ?? "";
    },
    longEnd() {
      return closeLong();
    },
    end(summary) {
      const facts = [`${summary.entries} entries`];
      if (summary.usage) {
        facts.push(
          escapeText(
            `usage (${summary.usage.messages} replies): ${usageText(summary.usage)}`,
            true,
          ),
        );
      }
      return `${closeArticle()}</main>
<footer class="totals"><h2>End of the branch</h2><p class="facts">${facts.join(" · ")}</p></footer>
</body>
</html>
`;
    },
    stopped(refusal, summary) {
      const why = escapeText(`${refusal.code}: ${refusal.message}`, true);
      return `${closeLong()}${closeArticle()}</main>
<footer class="notice stopped" role="alert"><h2>Export stopped</h2><p><strong>This export is incomplete.</strong> ${why} It holds the first ${summary.entries} entries; export the branch again.</p></footer>
</body>
</html>
`;
    },
  };
}

function entryOpen(entry: EntryHead): string {
  const role = entry.role ?? "";
  const cls = `part ${entry.kind}${role ? ` ${role}` : ""}`;
  const head = [`<span class="who">${escapeText(whoOf(entry), true)}</span>`];
  const model = modelText(entry.meta);
  if (model) head.push(`<span class="model">${escapeText(model, true)}</span>`);
  for (const m of metaPhrases(entry)) head.push(`<span class="meta">${escapeText(m, true)}</span>`);
  const usage = usageText(entry.meta?.usage);
  if (usage) head.push(`<span class="usage">${escapeText(usage, true)}</span>`);
  const when = utcTime(entry.timestamp);
  if (when) head.push(`<time>${when}</time>`);
  head.push(`<code class="entry">${escapeText(entry.entry, true)}</code>`);
  return `<article class="${cls}"><div class="head">${head.join(" ")}</div>`;
}

/** What a long run writes as its pieces come, and at its end. */
type LongRun = { start: string; piece(text: string): string; end(): string };

/**
 * A block too long to hold whole, written as it comes: text and code escaped into a `<pre>`
 * (not read as Markdown, not highlighted), output folded, an image's base64 checked piece by
 * piece (a bad piece ends the image there, with a notice).
 */
function longRun(block: Block, entry: EntryHead, count: number): LongRun {
  const first = "text" in block ? block.text : "";
  const note = (what: string) =>
    `<p class="muted">${what}, long (read in ${count} pieces), shown as written.</p>`;
  const pre = (open: string, close: string): LongRun => {
    let lines = 0;
    let last = "";
    const piece = (text: string) => {
      for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) lines++;
      if (text !== "") last = text[text.length - 1] ?? "";
      return escapeText(text);
    };
    return {
      start: `${open}${piece(first)}`,
      piece,
      end: () => close.replace("{lines}", String(last === "\n" || last === "" ? lines : lines + 1)),
    };
  };
  switch (block.type) {
    case "text":
      if (entry.role === "toolResult") {
        return pre(
          `<div class="block output"><details class="fold"><summary>Output, long (read in ${count} pieces)</summary><pre class="code"><code>`,
          `</code></pre></details><p class="muted">{lines} lines.</p></div>`,
        );
      }
      return pre(
        `<div class="block md">${note("Text")}<pre class="code"><code>`,
        "</code></pre></div>",
      );
    case "thinking":
      return pre(
        `<details class="block thinking"><summary>Thinking</summary>${note("Text")}<pre class="code"><code>`,
        "</code></pre></details>",
      );
    case "tool-call":
      return pre(
        `<div class="block tool-call"><div class="tool-head">Tool call <code class="tool-name">${escapeText(block.name, true)}</code> <code class="muted">${escapeText(block.id, true)}</code></div>${note("Arguments")}<pre class="code"><code>`,
        "</code></pre></div>",
      );
    case "bash-command":
      return pre(`<pre class="code command">$ `, "</pre>");
    case "bash-output":
      return pre(
        `<div class="block output"><details class="fold"><summary>Output, long (read in ${count} pieces)</summary><pre class="code"><code>`,
        `</code></pre></details><p class="muted">{lines} lines.</p></div>`,
      );
    case "notice":
      return pre(
        `<p class="block notice"><strong>${escapeText(NOTICE_LABELS[block.code], true)}</strong> `,
        "</p>",
      );
    case "image":
      return longImage(block.mimeType, block.data);
    case "unavailable":
    case "tool-result":
      // Never cut into fragments: nothing long in them.
      return { start: "", piece: () => "", end: () => "" };
    default:
      return unreachable(block);
  }
}

function longImage(mimeType: string, first: string): LongRun {
  if (!isShownImageType(mimeType)) {
    return { start: imageRefused(mimeType), piece: () => "", end: () => "" };
  }
  let written = 0;
  let padded = false;
  let bad = false;
  const piece = (text: string) => {
    if (bad || text === "") return "";
    if (padded || !BASE64_PIECE.test(text)) {
      bad = true;
      return "";
    }
    padded = text.endsWith("=");
    written += text.length;
    return text;
  };
  return {
    start: `<figure class="block"><img alt="Image from the conversation" src="data:${mimeType};base64,${piece(first)}`,
    piece,
    end: () =>
      `"><figcaption>${mimeType}${bad ? ` — the image data stops being base64 after ${written} characters; the image is cut there` : ""}</figcaption></figure>`,
  };
}

function imageRefused(mimeType: string): string {
  return `<p class="block notice">Image not shown: type ${escapeText(mimeType, true)} or its data is not a PNG, JPEG, GIF or WebP in base64.</p>`;
}

function blockHtml(block: Block, entry: EntryHead, lang: string, readLang: ReadLanguages): string {
  switch (block.type) {
    case "text":
      if (entry.role === "toolResult") {
        return `<div class="block output">${folded(codeHtml(block.text, lang), block.text, "Output")}</div>`;
      }
      return `<div class="block md">${treeHtml(markdownTree(block.text))}</div>`;
    case "thinking":
      return `<details class="block thinking"><summary>Thinking</summary><div class="md">${treeHtml(markdownTree(block.text))}</div></details>`;
    case "unavailable":
      return `<p class="block muted">Thinking redacted by the provider.</p>`;
    case "tool-call":
      return toolCallHtml(block.name, block.text, block.id, readLang);
    case "tool-result":
      return `<div class="block result">Result of <code>${escapeText(block.toolName, true)}</code> <span class="badge ${block.isError ? "error" : "ok"}">${block.isError ? "error" : "ok"}</span>${block.transcript ? ` the agent's transcript is conversation <code>${escapeText(block.transcript, true)}</code>` : ""}</div>`;
    case "image":
      if (imageRefusal(block.mimeType, block.data) !== null) {
        return imageRefused(block.mimeType);
      }
      return `<figure class="block"><img alt="Image from the conversation" src="data:${block.mimeType};base64,${block.data}"><figcaption>${block.mimeType}</figcaption></figure>`;
    case "bash-command":
      return `<pre class="code command">$ ${escapeText(block.text)}</pre>`;
    case "bash-output":
      return `<div class="block output">${folded(codeHtml(block.text, ""), block.text, "Output")}</div>`;
    case "notice":
      return `<p class="block notice"><strong>${escapeText(NOTICE_LABELS[block.code], true)}</strong> ${escapeText(block.text)}</p>`;
    default:
      return unreachable(block);
  }
}

function toolCallHtml(name: string, args: string, id: string, readLang: ReadLanguages): string {
  const view = toolCallView(name, args);
  const head = `<div class="tool-head">Tool call <code class="tool-name">${escapeText(name, true)}</code> <code class="muted">${escapeText(id, true)}</code></div>`;
  let body: string;
  switch (view.kind) {
    case "edit":
      body =
        `<div class="tool-path">${escapeText(view.path, true)}</div>` +
        view.hunks
          .map(
            (h) =>
              `<pre class="diff">${h.map((l) => `<span class="${l.op === "+" ? "add" : l.op === "-" ? "del" : "same"}">${escapeText(`${l.op} ${l.text}`)}\n</span>`).join("")}</pre>`,
          )
          .join("");
      break;
    case "write":
      body = `<div class="tool-path">${escapeText(view.path, true)}</div>${folded(codeHtml(view.content, view.lang), view.content, "Content")}`;
      break;
    case "bash":
      body = `<pre class="code command">$ ${escapeText(view.command)}</pre>`;
      break;
    case "read": {
      readLang.set(id, languageOfPath(view.path));
      const range = readRange(view.offset, view.limit);
      body = `<div class="tool-path">${escapeText(view.path, true)}${range ? ` <span class="muted">${range}</span>` : ""}</div>`;
      break;
    }
    case "json":
      return `<div class="block tool-call">${head}${codeHtml(view.text, "json")}</div>`;
    default:
      return unreachable(view);
  }
  const raw = `<details class="raw"><summary>Raw arguments</summary><pre class="code">${escapeText(args)}</pre></details>`;
  return `<div class="block tool-call">${head}${body}${raw}</div>`;
}

function unreachable(x: never): never {
  throw new Error(`unhandled ${JSON.stringify(x)}`);
}
