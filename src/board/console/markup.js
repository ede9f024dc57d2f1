// Markdown and highlighted code into the page: the trees of src/present/markdown.ts become DOM
// nodes made with createElement and text nodes only. Tags are checked against TREE_TAGS again
// here, the only attributes set are a checked link (with rel="noopener noreferrer"), a list
// start number, a highlight class of a fixed pattern and a task box's class.
import { codeNode, markdownTree, safeHref, TASK_DONE, TASK_OPEN, TREE_TAGS } from "./present.js";
import { appendText, el } from "./text.js";

const HL_CLASS = /^hl-[a-z][a-z_-]{0,30}$/;

/** A span's class from the tree: a highlight scope's, or a task box's (☐ / ☑). */
function isSpanClass(cls) {
  return HL_CLASS.test(cls) || cls === TASK_OPEN || cls === TASK_DONE;
}

/** Appends `nodes` (a markdownTree) under `parent`. */
export function appendTree(parent, nodes) {
  for (const node of nodes) {
    if (typeof node === "string") {
      appendText(parent, node);
      continue;
    }
    if (!TREE_TAGS.has(node.tag)) {
      appendTree(parent, node.children);
      continue;
    }
    const child = el(node.tag, "");
    if (node.tag === "a") {
      const href = safeHref(node.href);
      if (href === null) {
        appendTree(parent, node.children);
        continue;
      }
      child.href = href;
      child.rel = "noopener noreferrer";
      child.target = "_blank";
    }
    if (node.tag === "ol" && Number.isInteger(node.start)) child.start = node.start;
    if (node.tag === "span" && typeof node.cls === "string" && isSpanClass(node.cls)) {
      child.className = node.cls;
    }
    if (node.tag === "pre") child.className = "code";
    appendTree(child, node.children);
    parent.append(child);
  }
  return parent;
}

/** `text` as rendered Markdown inside `parent` (replacing what it held). */
export function renderMarkdown(parent, text) {
  parent.replaceChildren();
  return appendTree(parent, markdownTree(text));
}

/** A highlighted code block element for `code` in language `lang` (may be ""). */
export function codeBlock(code, lang) {
  const holder = el("div", "code-wrap");
  appendTree(holder, [codeNode(code, lang)]);
  return holder.firstChild;
}
