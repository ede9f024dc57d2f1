// A branch as one self-contained HTML file: inline CSS allowed by its hash, no script, a
// strict CSP meta (nothing loads but data: images). Markdown and highlighting come from the
// Console's own trees (src/present/markdown.ts), turned into markup here with every string
// escaped; tool calls read as in the Console (tool-view.ts); long output folds in <details> with its line count.
import { createHash } from "node:crypto";
import { imageRefusal } from "../present/image.ts";
import { metaPhrases, NOTICE_LABELS, whoOf } from "../present/labels.ts";
import { languageOfPath } from "../present/language.ts";
import { codeNode, markdownTree, safeHref, TREE_TAGS, type TreeNode } from "../present/markdown.ts";
import { FOLD_LINES, lineCount, readRange, toolCallView } from "../present/tool-view.ts";
import { addUsage, modelText, type UsageTotal, usageText } from "../present/usage.ts";
import { makeVisible } from "../present/visible.ts";
import type { Block } from "../protocol/chat-01.ts";
import { type BranchExport, type Entry, entriesOf } from "./branch.ts";
import { EXPORT_CSS } from "./html-style.ts";
import { titleOf, utcTime } from "./labels.ts";

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

/** A markdown.js tree as markup: only TREE_TAGS, only checked links and highlight classes. */
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

/** The whole file; `now` is the export's time (a parameter so tests are exact). */
export function renderHtml(doc: BranchExport, now = new Date()): string {
  const entries = entriesOf(doc.pages);
  let total: UsageTotal | null = null;
  for (const e of entries) if (e.meta?.usage) total = addUsage(total, e.meta.usage);
  const branch = doc.view.branches.find((b) => b.name === doc.branch);
  const title = escapeText(titleOf(doc), true);
  const facts = [
    `<code>${escapeText(doc.conversation, true)}</code>`,
    doc.row ? escapeText(`${doc.row.project} / ${doc.row.seat}`, true) : "",
    `branch <code>${escapeText(doc.branch, true)}</code>${branch?.label ? ` (${escapeText(branch.label, true)})` : ""}`,
    total ? escapeText(`usage (${total.messages} replies): ${usageText(total)}`, true) : "",
    `exported ${utcTime(now.toISOString())}`,
  ].filter((s) => s !== "");
  const readLang = new Map<string, string>();
  const articles = entries.map((e) => entryHtml(e, readLang)).join("\n");
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
${articles}
</main>
</body>
</html>
`;
}

function entryHtml(entry: Entry, readLang: Map<string, string>): string {
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
  let lang = "";
  const blocks = entry.blocks.map((b) => {
    if (b.type === "tool-result") lang = readLang.get(b.toolCallId) ?? "";
    return blockHtml(b, entry, lang, readLang);
  });
  return `<article class="${cls}"><div class="head">${head.join(" ")}</div>${blocks.join("")}</article>`;
}

function blockHtml(
  block: Block,
  entry: Entry,
  lang: string,
  readLang: Map<string, string>,
): string {
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
      return `<div class="block result">Result of <code>${escapeText(block.toolName, true)}</code> <span class="badge ${block.isError ? "error" : "ok"}">${block.isError ? "error" : "ok"}</span></div>`;
    case "image":
      if (imageRefusal(block.mimeType, block.data) !== null) {
        return `<p class="block notice">Image not shown: type ${escapeText(block.mimeType, true)} or its data is not a PNG, JPEG, GIF or WebP in base64.</p>`;
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

function toolCallHtml(
  name: string,
  args: string,
  id: string,
  readLang: Map<string, string>,
): string {
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
