// Markdown and code highlighting as a plain tree, never as an HTML string: markdown-it's tokens
// (raw HTML off) and highlight.js's token tree become nodes from a fixed set of tags, links only
// to http(s): and mailto:, images as links (never fetched). The Console turns the tree into DOM
// nodes, the HTML export into escaped markup; both use this one implementation.
import { hljs, markdownIt } from "./vendor.js";

/** Every tag a tree may hold; the renderers check it again. */
export const TREE_TAGS = new Set([
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
export function safeHref(raw) {
  if (typeof raw !== "string") return null;
  let url;
  try {
    url = new URL(raw);
  } catch {
    // Relative or malformed: there is no base a conversation's link could be relative to.
    return null;
  }
  return LINK_PROTOCOLS.has(url.protocol) ? url.href : null;
}

const BLOCK_TAGS = {
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
export function markdownTree(text) {
  const root = { tag: "root", children: [] };
  walk(markdownIt.parse(text, {}), root);
  return root.children;
}

function walk(tokens, root) {
  const stack = [root];
  const top = () => stack[stack.length - 1];
  for (const token of tokens) {
    const type = token.type;
    // Tight lists hide their paragraphs: the text goes to the list item, no wrapper.
    if (token.hidden && token.nesting !== 0) {
      if (token.nesting === 1) stack.push(top());
      else stack.pop();
      continue;
    }
    if (token.nesting === 1) {
      let node;
      if (type === "heading_open") node = { tag: headingTag(token.tag), children: [] };
      else if (type === "link_open") node = linkNode(token.attrGet("href"));
      else if (Object.hasOwn(BLOCK_TAGS, type)) node = { tag: BLOCK_TAGS[type], children: [] };
      else node = { tag: "span", children: [] };
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
      case "inline":
        walk(token.children ?? [], top());
        break;
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
        const lang = type === "fence" ? token.info.trim().split(/\s+/, 1)[0] : "";
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

function headingTag(tag) {
  return /^h[1-6]$/.test(tag) ? tag : "p";
}

function linkNode(raw) {
  const href = safeHref(raw);
  if (href !== null) return { tag: "a", href, children: [] };
  // Not followable: the link text stays, with the target shown as text after it.
  return { tag: "a-off", unsafeHref: String(raw ?? ""), children: [] };
}

function imageNode(token) {
  const alt = token.content || "image";
  const href = safeHref(token.attrGet("src"));
  if (href === null) return `[image: ${alt} (${String(token.attrGet("src") ?? "")})]`;
  return { tag: "a", href, children: [`[image: ${alt}]`] };
}

/** A code block, highlighted when its language is one we bundle. */
export function codeNode(code, lang) {
  const language = typeof lang === "string" && lang !== "" ? lang.toLowerCase() : "";
  const node = { tag: "pre", children: [{ tag: "code", children: highlightTree(code, language) }] };
  if (language !== "" && /^[a-z0-9+#._-]{1,30}$/.test(language)) node.lang = language;
  return node;
}

/** `code` as nodes: strings and `{ tag: "span", cls: "hl-<scope>", children }`. */
export function highlightTree(code, lang) {
  if (!lang || code.length > HIGHLIGHT_MAX_CHARS || !hljs.getLanguage(lang)) return [code];
  const result = hljs.highlight(code, { language: lang, ignoreIllegals: true });
  // highlight.js 11 keeps the token tree it rendered from on `_emitter`; if a later version
  // drops it, code is shown plain rather than through its HTML string.
  const root = result?._emitter?.rootNode;
  if (!root || !Array.isArray(root.children)) return [code];
  return root.children.map(fromHljs);
}

function fromHljs(node) {
  if (typeof node === "string") return node;
  const children = Array.isArray(node.children) ? node.children.map(fromHljs) : [];
  const scope = typeof node.scope === "string" ? node.scope.split(".", 1)[0] : "";
  return SCOPE.test(scope)
    ? { tag: "span", cls: `hl-${scope}`, children }
    : { tag: "span", children };
}

/** The highlight.js language for a file name's extension, or "". */
export function languageOfPath(path) {
  const m = /\.([A-Za-z0-9]+)$/.exec(typeof path === "string" ? path : "");
  if (!m) return "";
  const ext = m[1].toLowerCase();
  return Object.hasOwn(EXTENSIONS, ext) ? EXTENSIONS[ext] : "";
}

const EXTENSIONS = {
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  hpp: "cpp",
  css: "css",
  diff: "diff",
  patch: "diff",
  go: "go",
  java: "java",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascript",
  json: "json",
  jsonl: "json",
  md: "markdown",
  py: "python",
  rs: "rust",
  sql: "sql",
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  cts: "typescript",
  html: "xml",
  xml: "xml",
  svg: "xml",
  yml: "yaml",
  yaml: "yaml",
};
