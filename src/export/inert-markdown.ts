// Message text for the Markdown export, written again from the Console's own parse
// (src/present/markdown.ts: markdown-it, CommonMark with tables and strikethrough, raw HTML
// off) rather than patched in place. Every character of text is escaped where it could start a construct, so no
// renderer, however it reads Markdown, finds a link, an image, an autolink or raw HTML that the
// Console did not; the only links written are the tree's checked http(s)/mailto ones, as
// `[text](<url>)` with the URL percent-encoded. Code is fenced or spanned so nothing inside can
// end it. Why a rewrite and not a patch: docs/board.md, "Inert Markdown".
import { markdownTree, type TreeNode } from "../present/markdown.ts";
import { makeVisible } from "../present/visible.ts";
import { fence, longestRun } from "./fence-stream.ts";

type Node = Exclude<TreeNode, string>;

const INLINE_TAGS = new Set(["em", "strong", "s", "code", "a", "span", "br"]);

/**
 * `text` as Markdown that shows what the Console shows: the same blocks, emphasis, code, tables
 * and checked links, and nothing that any renderer could turn into another link or markup.
 * Control, bidi and invisible characters are markers first (`^[`, `<U+202E>`), as in the terminal.
 */
export function inertMarkdown(text: string): string {
  return blockLines(markdownTree(makeVisible(text))).join("\n");
}

/** Block nodes (and runs of inline nodes between them, as paragraphs) as lines. */
function blockLines(nodes: readonly TreeNode[], tight = false): string[] {
  const out: string[] = [];
  let run: TreeNode[] = [];
  let lastList = "";
  const push = (lines: string[]) => {
    if (lines.length === 0) return;
    if (out.length > 0 && !tight) out.push("");
    out.push(...lines);
  };
  const flush = () => {
    if (run.length > 0) push(paragraph(run));
    run = [];
  };
  for (const node of nodes) {
    if (typeof node === "string" || INLINE_TAGS.has(node.tag)) {
      run.push(node);
      lastList = "";
      continue;
    }
    flush();
    if (node.tag === "ul" || node.tag === "ol") {
      // Two lists side by side stay two lists: the second gets the other bullet or delimiter.
      const alternate = lastList === node.tag;
      push(listLines(node, alternate));
      lastList = alternate ? "" : node.tag;
      continue;
    }
    lastList = "";
    push(blockOf(node));
  }
  flush();
  return out;
}

function blockOf(node: Node): string[] {
  switch (node.tag) {
    case "p":
      return paragraph(node.children);
    case "h1":
    case "h2":
    case "h3":
    case "h4":
    case "h5":
    case "h6": {
      // A closing run of `#` would be read as the heading's end: escape one at the end.
      const body = inline(node.children, { oneLine: true }).replace(/#$/, "\\#");
      return [`${"#".repeat(Number(node.tag[1]))} ${body}`.trimEnd()];
    }
    case "blockquote":
      return blockLines(node.children).map((l) => (l === "" ? ">" : `> ${l}`));
    case "pre":
      return fence(textOf(node), node.lang ?? "");
    case "hr":
      // `***`, not `---`: after a line of text `---` would make it a heading.
      return ["***"];
    case "table":
      return tableLines(node);
    default:
      // A tag the tree may add later: its text, as a paragraph.
      return paragraph(node.children);
  }
}

function listLines(list: Node, alternate: boolean): string[] {
  const items = list.children.filter((c): c is Node => typeof c !== "string" && c.tag === "li");
  // A loose list's items hold paragraphs; a tight one's hold their text directly.
  const loose = items.some((li) => li.children.some((c) => typeof c !== "string" && c.tag === "p"));
  let n = list.tag === "ol" && Number.isInteger(list.start) ? (list.start as number) : 1;
  const out: string[] = [];
  for (const li of items) {
    const marker = list.tag === "ol" ? `${n++}${alternate ? ")" : "."}` : alternate ? "*" : "-";
    const pad = " ".repeat(marker.length + 1);
    const lines = blockLines(li.children, !loose);
    if (loose && out.length > 0) out.push("");
    if (lines.length === 0) {
      out.push(marker);
      continue;
    }
    lines.forEach((l, i) => {
      if (i === 0) out.push(`${marker} ${l}`);
      else out.push(l === "" ? "" : `${pad}${l}`);
    });
  }
  return out;
}

function tableLines(table: Node): string[] {
  const rows: TreeNode[][] = [];
  for (const section of table.children) {
    if (typeof section === "string") continue;
    for (const tr of section.children) {
      if (typeof tr === "string" || tr.tag !== "tr") continue;
      rows.push(tr.children.filter((c) => typeof c !== "string"));
    }
  }
  const width = rows[0]?.length ?? 0;
  if (width === 0) return [];
  const row = (cells: TreeNode[]) => {
    const texts = Array.from({ length: width }, (_, i) => {
      const cell = cells[i];
      return typeof cell === "object"
        ? inline(cell.children, { oneLine: true, inTable: true })
        : "";
    });
    return `| ${texts.join(" | ")} |`;
  };
  const [head, ...body] = rows;
  return [row(head ?? []), `|${" --- |".repeat(width)}`, ...body.map(row)];
}

function paragraph(nodes: readonly TreeNode[]): string[] {
  const text = inline(nodes, {});
  return text === "" ? [] : text.split("\n");
}

type InlineMode = { oneLine?: boolean; inTable?: boolean };

/** Inline nodes as one string; line breaks are hard breaks (`\` at the end of the line). */
function inline(nodes: readonly TreeNode[], mode: InlineMode): string {
  const parts: string[] = [];
  let lineStart = true;
  const walk = (list: readonly TreeNode[]) => {
    for (const node of list) {
      if (typeof node === "string") {
        const lines = node.split("\n");
        lines.forEach((l, i) => {
          if (i > 0) {
            parts.push(mode.oneLine ? " " : "\\\n");
            lineStart = !mode.oneLine;
          }
          if (l === "") return;
          parts.push(escapeText(l, lineStart));
          lineStart = false;
        });
        continue;
      }
      switch (node.tag) {
        case "br":
          parts.push(mode.oneLine ? " " : "\\\n");
          lineStart = !mode.oneLine;
          break;
        case "code":
          parts.push(codeSpan(textOf(node), mode.inTable === true));
          lineStart = false;
          break;
        case "em":
        case "strong":
        case "s":
          emphasis(node);
          break;
        case "a": {
          const href = node.href === undefined ? null : linkTarget(node.href);
          if (href === null) {
            walk(node.children);
            break;
          }
          parts.push("[");
          lineStart = false;
          walk(node.children);
          parts.push(`](<${href}>)`);
          break;
        }
        default:
          walk(node.children);
      }
    }
  };
  const emphasis = (node: Node) => {
    const mark = node.tag === "em" ? "*" : node.tag === "strong" ? "**" : "~~";
    const start = parts.length;
    const wasLineStart = lineStart;
    walk(node.children);
    const inner = parts.splice(start).join("");
    // Whitespace at either edge would stop the marks from being read as emphasis again.
    const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner);
    const [lead, body, trail] = [m?.[1] ?? "", m?.[2] ?? "", m?.[3] ?? ""];
    if (body === "") {
      parts.push(inner);
      return;
    }
    // Spaces that would start a line are written as a character reference: no indentation.
    const before = wasLineStart ? lead.replace(/^[ \t]/, (c) => `&#${c.charCodeAt(0)};`) : lead;
    parts.push(`${before}${mark}${body}${mark}${trail}`);
  };
  walk(nodes);
  return parts.join("").replace(/\\\n$/, "");
}

/**
 * Text with every character that could start a construct escaped: `[` (links, images,
 * references), `<` (autolinks, raw HTML), emphasis, code, strikethrough and table marks, an
 * entity's `&`, a trailing `!` (it would make a following link an image), and at the start of
 * a line whatever would begin a block (heading, quote, list, setext line, indented code).
 */
function escapeText(text: string, lineStart: boolean): string {
  let out = text
    .replace(/[\\`*_[\]<|~]/g, "\\$&")
    .replace(/&(?=[A-Za-z0-9#])/g, "\\&")
    .replace(/!$/, "\\!");
  if (lineStart) {
    out = out
      .replace(/^[ \t]/, (c) => `&#${c.charCodeAt(0)};`)
      .replace(/^[#>+=-]/, "\\$&")
      .replace(/^(\d{1,9})([.)])/, "$1\\$2");
  }
  return out;
}

/** A code span `code` cannot end early; in a table cell, `|` is escaped as GFM reads it there. */
function codeSpan(code: string, inTable: boolean): string {
  const body = code.replace(/\n/g, " ");
  const ticks = "`".repeat(longestRun(body) + 1);
  const pad = /^[` ]|[` ]$/.test(body) ? " " : "";
  const inner = inTable ? body.replace(/\|/g, "\\|") : body;
  return `${ticks}${pad}${inner}${pad}${ticks}`;
}

/**
 * The tree's checked URL as a `<…>` destination: only absolute http(s)/mailto reach here
 * (safeHref), and what could end or bend the destination is percent-encoded.
 */
function linkTarget(href: string): string | null {
  // URL.href is printable ASCII; anything else means it did not come from safeHref.
  if (!/^(https?|mailto):/i.test(href) || /[^!-~]/.test(href)) return null;
  return href.replace(/[<>\\`"'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function textOf(node: TreeNode): string {
  if (typeof node === "string") return node;
  return node.children.map(textOf).join("");
}
