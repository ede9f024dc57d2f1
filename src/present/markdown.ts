// Markdown and code highlighting as a plain tree, never as an HTML string: markdown-it's tokens
// (raw HTML off) and highlight.js's token tree become nodes from a fixed set of tags, links only
// to http(s): and mailto:, images as links (never fetched). The Console turns the tree into DOM
// nodes, the HTML export into escaped markup; both use this one implementation.
import type { Token } from "markdown-it";
import { hljs, markdownIt } from "./vendor.js";

/** A tree node: text, or an element from TREE_TAGS with what it may carry. */
export type TreeNode =
  | string
  | {
      tag: string;
      href?: string;
      cls?: string;
      start?: number;
      lang?: string;
      children: TreeNode[];
    };
type Element = Exclude<TreeNode, string>;
/** While walking: a link that may not be followed keeps its target, shown after its text. */
type Open = Element & { unsafeHref?: string };

/** Every tag a tree may hold; the renderers check it again. */
export const TREE_TAGS: ReadonlySet<string> = new Set([
  "p",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "em",
  "strong",
  "s",
  "code",
  "pre",
  "blockquote",
  "ul",
  "ol",
  "li",
  "a",
  "hr",
  "br",
  "table",
  "thead",
  "tbody",
  "tr",
  "th",
  "td",
  "span",
]);
const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
const SCOPE = /^[a-z][a-z_-]{0,30}$/;
/** Longer code is shown plain: highlighting is a comfort, not worth seconds of a page. */
const HIGHLIGHT_MAX_CHARS = 200_000;

/** The URL as it will be followed, or null unless it is absolute http(s): or mailto:. */
export function safeHref(raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Relative or malformed: there is no base a conversation's link could be relative to.
    return null;
  }
  return LINK_PROTOCOLS.has(url.protocol) ? url.href : null;
}

const BLOCK_TAGS: Readonly<Record<string, string>> = {
  paragraph_open: "p",
  blockquote_open: "blockquote",
  bullet_list_open: "ul",
  ordered_list_open: "ol",
  list_item_open: "li",
  table_open: "table",
  thead_open: "thead",
  tbody_open: "tbody",
  tr_open: "tr",
  th_open: "th",
  td_open: "td",
  em_open: "em",
  strong_open: "strong",
  s_open: "s",
};

/** `text` (Markdown) as a list of nodes: strings and `{ tag, href?, cls?, start?, lang?, children }`. */
export function markdownTree(text: string): TreeNode[] {
  const root: Open = { tag: "root", children: [] };
  walk(markdownIt.parse(text, {}), root);
  return root.children;
}

function walk(tokens: readonly Token[], root: Open): void {
  const stack: Open[] = [root];
  const top = (): Open => stack[stack.length - 1] ?? root;
  /** Just inside a list item, before its first text: where a task marker (`[ ]`) may stand. */
  let taskMayStart = false;
  for (const token of tokens) {
    const type = token.type;
    if (token.nesting === 1) {
      taskMayStart = type === "list_item_open" || (taskMayStart && type === "paragraph_open");
    } else if (token.nesting === 0 && type !== "inline") {
      taskMayStart = false;
    }
    // Tight lists hide their paragraphs: the text goes to the list item, no wrapper.
    if (token.hidden && token.nesting !== 0) {
      if (token.nesting === 1) stack.push(top());
      else stack.pop();
      continue;
    }
    if (token.nesting === 1) {
      let node: Open;
      if (type === "heading_open") node = { tag: headingTag(token.tag), children: [] };
      else if (type === "link_open") node = linkNode(token.attrGet("href"));
      else node = { tag: blockTag(type), children: [] };
      if (type === "ordered_list_open") {
        // markdown-it sets `start` only when it is not 1; Number(null) would read as 0.
        const start = Number(token.attrGet("start") ?? 1);
        if (Number.isInteger(start) && start !== 1) node.start = start;
      }
      top().children.push(node);
      stack.push(node);
      continue;
    }
    if (token.nesting === -1) {
      const closing = stack.pop();
      if (closing?.unsafeHref !== undefined) {
        closing.children.push(` (${closing.unsafeHref})`);
        closing.tag = "span";
        delete closing.unsafeHref;
      }
      continue;
    }
    const out = top().children;
    switch (type) {
      case "inline": {
        const kids = token.children ?? [];
        const task = taskMayStart ? taskMarker(kids) : null;
        taskMayStart = false;
        if (task === null) {
          walk(kids, top());
          break;
        }
        out.push(task.box, ` ${task.rest}`);
        walk(kids.slice(1), top());
        break;
      }
      case "text":
      case "text_special":
      case "html_inline":
      case "html_block":
        out.push(token.content);
        break;
      case "softbreak":
      case "hardbreak":
        out.push({ tag: "br", children: [] });
        break;
      case "code_inline":
        out.push({ tag: "code", children: [token.content] });
        break;
      case "fence":
      case "code_block": {
        const lang = type === "fence" ? (token.info.trim().split(/\s+/, 1)[0] ?? "") : "";
        out.push(codeNode(token.content, lang));
        break;
      }
      case "hr":
        out.push({ tag: "hr", children: [] });
        break;
      case "image":
        out.push(imageNode(token));
        break;
      default:
        out.push(token.content ?? "");
    }
  }
}

/** GFM's task list item marker: `[ ]`, `[x]` or `[X]` and a space, where a list item's text starts. */
const TASK_MARKER = /^\[([ xX])\](?:[ \t]+|$)/;

/**
 * A list item's task marker, when its first text starts with one (and something follows it,
 * as GFM asks): the box it shows as (☐ to do, ☑ done) and the rest of that first text. A box,
 * not a checkbox: the exports stay inert (src/export/inert-markdown.ts) and the Console needs
 * no form control that does nothing.
 */
function taskMarker(kids: readonly Token[]): { box: TreeNode; rest: string } | null {
  const first = kids[0];
  if (first?.type !== "text") return null;
  const m = TASK_MARKER.exec(first.content);
  if (!m) return null;
  const rest = first.content.slice(m[0].length);
  if (rest === "" && kids.length === 1) return null;
  const done = m[1] !== " ";
  return {
    box: { tag: "span", cls: done ? TASK_DONE : TASK_OPEN, children: [done ? "☑" : "☐"] },
    rest,
  };
}

/** The classes of a task's box (the renderers set no other class on a span but highlights'). */
export const TASK_OPEN = "task-open";
export const TASK_DONE = "task-done";

function blockTag(type: string): string {
  return (Object.hasOwn(BLOCK_TAGS, type) && BLOCK_TAGS[type]) || "span";
}

function headingTag(tag: string): string {
  return /^h[1-6]$/.test(tag) ? tag : "p";
}

function linkNode(raw: unknown): Open {
  const href = safeHref(raw);
  if (href !== null) return { tag: "a", href, children: [] };
  // Not followable: the link text stays, with the target shown as text after it.
  return { tag: "a-off", unsafeHref: String(raw ?? ""), children: [] };
}

function imageNode(token: Token): TreeNode {
  const alt = token.content || "image";
  const href = safeHref(token.attrGet("src"));
  if (href === null) return `[image: ${alt} (${String(token.attrGet("src") ?? "")})]`;
  return { tag: "a", href, children: [`[image: ${alt}]`] };
}

/** A code block, highlighted when its language is one we bundle. */
export function codeNode(code: string, lang: string): TreeNode {
  const language = typeof lang === "string" && lang !== "" ? lang.toLowerCase() : "";
  const node: Element = {
    tag: "pre",
    children: [{ tag: "code", children: highlightTree(code, language) }],
  };
  if (language !== "" && /^[a-z0-9+#._-]{1,30}$/.test(language)) node.lang = language;
  return node;
}

/** `code` as nodes: strings and `{ tag: "span", cls: "hl-<scope>", children }`. */
export function highlightTree(code: string, lang: string): TreeNode[] {
  if (!lang || code.length > HIGHLIGHT_MAX_CHARS || !hljs.getLanguage(lang)) return [code];
  const result: unknown = hljs.highlight(code, { language: lang, ignoreIllegals: true });
  // highlight.js 11 keeps the token tree it rendered from on `_emitter` (not in its types);
  // if a later version drops it, code is shown plain rather than through its HTML string.
  const root = field(field(result, "_emitter"), "rootNode");
  const children = field(root, "children");
  if (!Array.isArray(children)) return [code];
  return children.map(fromHljs);
}

/** `value[name]` when `value` is an object, else undefined: highlight.js's tree is unchecked. */
function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null ? Reflect.get(value, name) : undefined;
}

function fromHljs(node: unknown): TreeNode {
  if (typeof node === "string") return node;
  const kids = field(node, "children");
  const children = Array.isArray(kids) ? kids.map(fromHljs) : [];
  const scopeOf = field(node, "scope");
  const scope = typeof scopeOf === "string" ? (scopeOf.split(".", 1)[0] ?? "") : "";
  return SCOPE.test(scope)
    ? { tag: "span", cls: `hl-${scope}`, children }
    : { tag: "span", children };
}
