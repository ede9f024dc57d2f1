// Tool calls and their output as people read them: edit as a diff under its path, write as the
// file highlighted by its extension, bash as a command line, read as a path and range, other
// tools as formatted JSON; the raw arguments one click away; long output folded with its count.
import { codeBlock } from "./markup.js";
import { FOLD_LINES, lineCount, readRange, toolCallView } from "./present.js";
import { appendText, el, textEl } from "./text.js";

/** The element showing a finished tool call, and its view (src/present/tool-view.ts). */
export function toolCallBody(name, raw) {
  const view = toolCallView(name, raw);
  const body = el("div", `tool-view tool-${view.kind}`);
  switch (view.kind) {
    case "edit": {
      body.append(textEl("div", "tool-path", view.path, true));
      for (const hunk of view.hunks) {
        const pre = el("pre", "diff");
        for (const { op, text } of hunk) {
          const line = el("span", op === "+" ? "add" : op === "-" ? "del" : "same");
          appendText(line, `${op} ${text}\n`);
          pre.append(line);
        }
        body.append(pre);
      }
      break;
    }
    case "write":
      body.append(textEl("div", "tool-path", view.path, true));
      body.append(foldable(codeBlock(view.content, view.lang), view.content, "Content"));
      break;
    case "bash": {
      const pre = el("pre", "command");
      pre.append(el("span", "prompt", "$ "));
      appendText(pre, view.command);
      body.append(pre);
      if (view.timeout !== null) body.append(el("div", "tool-note", `timeout ${view.timeout} s`));
      break;
    }
    case "read": {
      const line = textEl("div", "tool-path", view.path, true);
      const range = readRange(view.offset, view.limit);
      if (range) line.append(el("span", "tool-note", ` ${range}`));
      body.append(line);
      break;
    }
    default:
      body.append(codeBlock(view.text, "json"));
  }
  if (view.kind !== "json") {
    const raw_ = el("details", "raw-args");
    raw_.append(el("summary", "", "Raw arguments"));
    raw_.append(textEl("pre", "args", raw));
    body.append(raw_);
  }
  return { node: body, view };
}

/**
 * Tool output: a pre (highlighted when the call was a `read` of a known file type), folded
 * inside a details with its line count when longer than FOLD_LINES, with a copy button.
 */
export function toolOutput(text, lang, copy) {
  const node = codeBlock(text, lang);
  node.classList.add("tool-output");
  const wrap = el("div", "output-wrap");
  const bar = el("div", "output-bar");
  bar.append(copy(() => text, "Copy output"));
  wrap.append(bar, foldable(node, text, "Output"));
  return wrap;
}

/** `node` as is when short; else inside a closed details saying how many lines it holds. */
export function foldable(node, text, what) {
  const lines = lineCount(text);
  if (lines <= FOLD_LINES) return node;
  const details = el("details", "fold");
  details.append(el("summary", "", `${what}: ${lines} lines`), node);
  return details;
}
