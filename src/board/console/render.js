// A branch's history as DOM, part by part and block by block, appended as pages arrive.
// Fragments of one long string are rejoined into one block even across parts and pages; a
// finished text becomes Markdown (markup.js), a tool call a view by tool (tools.js). Text goes
// in as text nodes only; class names come from the fixed tables here, and the attributes built
// from content are an image's data: URL of checked base64, a checked http(s)/mailto link, and a
// `#c=` link to a subagent transcript whose id matches CHAT-01's id pattern.
import { renderMarkdown } from "./markup.js";
import {
  addUsage,
  imageRefusal,
  languageOfPath,
  metaPhrases,
  modelText,
  noticeLabel,
  usageText,
  whoOf,
} from "./present.js";
import { appendText, el, textEl, timeEl } from "./text.js";
import { toolCallBody, toolOutput } from "./tools.js";

/** CHAT-01's id pattern: a transcript link is built from nothing else. */
const TRANSCRIPT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Class names by kind, role and notice code: fixed, never from conversation text. */
const KIND_CLASSES = {
  message: "message",
  notice: "notice-part",
  compaction: "compaction",
  "branch-summary": "branch-summary",
  "custom-message": "custom-message",
  "bash-execution": "bash-execution",
};
const ROLE_CLASSES = { user: "user", assistant: "assistant", toolResult: "tool-result-part" };
const NOTICE_CLASSES = {
  "malformed-line": "n-malformed",
  "ignored-header": "n-unknown",
  "missing-parent": "n-missing",
  loop: "n-loop",
  "forked-from-earlier-session": "n-forked",
  "unknown-entry-type": "n-unknown",
  "unknown-role": "n-unknown",
  "unknown-content": "n-unknown",
  "long-field": "n-long",
  stopped: "n-stopped",
};

function lookup(table, key) {
  return Object.hasOwn(table, key) ? table[key] : null;
}

function bodyOf(block) {
  if (block.type === "image") return block.data;
  return typeof block.text === "string" ? block.text : "";
}

/**
 * A block's element and how its body (or its fragments) are added and finished. `ctx` says
 * where it is: `output` (a tool result's content, with the language of the file read, if any),
 * `copy` makes a copy button, `onCall` hears each finished tool call's view.
 */
function sinkFor(block, ctx) {
  switch (block.type) {
    case "text":
      if (ctx.output) return outputSink(el("div", "block output"), ctx);
      return markdownSink(el("div", "block text md"), ctx);
    case "thinking": {
      const details = el("details", "block thinking");
      details.append(el("summary", "", "Thinking"));
      const body = el("div", "text md");
      details.append(body);
      return { ...markdownSink(body, ctx), node: details };
    }
    case "unavailable":
      return textSink(el("div", "block unavailable", "Thinking redacted by the provider."));
    case "tool-call":
      return toolCallSink(block, ctx);
    case "tool-result": {
      const node = el("div", "block tool-result");
      node.append(
        el("span", "label", "Result of "),
        textEl("code", "tool-name", block.toolName, true),
      );
      node.append(
        block.isError === true ? el("span", "badge error", "error") : el("span", "badge ok", "ok"),
      );
      // An Agent call's subagent transcript: a conversation of its own, opened here.
      if (typeof block.transcript === "string" && TRANSCRIPT_ID.test(block.transcript)) {
        const link = el("a", "transcript", "Open the agent's transcript");
        link.href = `#${new URLSearchParams({ c: block.transcript })}`;
        node.append(" ", link);
      }
      return textSink(node);
    }
    case "image":
      return imageSink(block);
    case "bash-command": {
      const sink = textSink(el("pre", "block bash-command"));
      sink.node.append(el("span", "prompt", "$ "));
      return sink;
    }
    case "bash-output":
      return outputSink(el("div", "block bash-output"), { ...ctx, lang: "" });
    case "notice": {
      const label = noticeLabel(block.code);
      const node = el("div", `block notice ${lookup(NOTICE_CLASSES, block.code) ?? "n-unknown"}`);
      node.append(label ? el("strong", "", label) : textEl("strong", "", block.code, true));
      const body = el("span", "text");
      node.append(body);
      return { ...textSink(body), node };
    }
    default: {
      const node = el("div", "block notice n-unknown");
      node.append(el("strong", "", "Block of an unknown type: "));
      return textSink(appendText(node, String(block.type), true));
    }
  }
}

function textSink(node) {
  return { node, add: (s) => appendText(node, s), finish() {} };
}

/**
 * A sink whose text shows in `shown` as it arrives and is kept whole: at the end, `done` gets
 * the whole raw text (to render it properly, replacing what was shown).
 */
function wholeSink(node, shown, done) {
  let raw = "";
  return {
    node,
    add(s) {
      raw += s;
      appendText(shown, s);
    },
    finish() {
      done(raw);
    },
  };
}

/** Text shows as it arrives; once whole it becomes Markdown. Its raw text is kept for copy. */
function markdownSink(node, ctx) {
  return wholeSink(node, node, (raw) => {
    renderMarkdown(node, raw);
    ctx.onText?.(raw);
  });
}

/** Tool output: shown as it arrives, then highlighted, folded when long, with a copy button. */
function outputSink(node, ctx) {
  return wholeSink(node, node, (raw) => {
    node.replaceChildren(toolOutput(raw, ctx.lang ?? "", ctx.copy));
    ctx.onText?.(raw);
  });
}

/** Arguments show as they arrive, then as the tool's view once the whole JSON text is here. */
function toolCallSink(block, ctx) {
  const node = el("div", "block tool-call");
  const head = el("div", "tool-head");
  head.append(el("span", "label", "Tool call "), textEl("code", "tool-name", block.name, true));
  head.append(textEl("span", "tool-id", ` ${block.id}`, true));
  const args = el("pre", "args");
  node.append(head, args);
  return wholeSink(node, args, (raw) => {
    const { node: body, view } = toolCallBody(block.name, raw);
    args.replaceWith(body);
    ctx.onCall?.(block.id, view);
  });
}

/** Only the four raster types, only as a data: URL of plain base64; anything else a notice. */
function imageSink(block) {
  const node = el("figure", "block image");
  const waiting = el("figcaption", "", "Image: the rest follows on the next page.");
  node.append(waiting);
  let data = "";
  return {
    node,
    add(s) {
      data += s;
    },
    finish() {
      waiting.remove();
      const mime = block.mimeType;
      const refusal = imageRefusal(mime, data);
      if (refusal === "type") {
        node.className = "block notice n-unknown";
        node.append(el("strong", "", "Image not shown:"));
        appendText(node, `type ${String(mime)} is not PNG, JPEG, GIF or WebP.`, true);
        return;
      }
      if (refusal === "data") {
        node.className = "block notice n-unknown";
        node.append(el("strong", "", "Image not shown: its data is not base64."));
        return;
      }
      const img = el("img", "");
      img.alt = "Image from the conversation";
      img.src = `data:${mime};base64,${data}`;
      node.append(img, textEl("figcaption", "", mime, true));
    },
  };
}

/**
 * The history of one branch, rendered into `container`. `onLink(entry)` is called when a
 * part's link button is pressed; `copy(getText, label)` makes a copy button. Returns
 * `{ append(parts), elementOf(entry), entries(), totals(), clear() }`.
 */
export function createHistory(container, onLink, copy) {
  const entries = new Map();
  /** Tool call id → the language of the file a `read` call names, for its result. */
  const readLanguage = new Map();
  let total = null;
  let run = null;
  let body = null;
  let ctx = null;

  function closeRun() {
    if (run) run.finish();
    run = null;
  }

  function appendBlock(block) {
    const f = block.fragment;
    if (f && f.index > 0 && run && run.type === block.type && run.count === f.count) {
      if (run.next === f.index) {
        run.add(bodyOf(block));
        run.next += 1;
        if (run.next === run.count) closeRun();
        return;
      }
    }
    closeRun();
    if (block.type === "tool-result") {
      ctx.output = true;
      ctx.lang = readLanguage.get(block.toolCallId) ?? "";
    }
    const sink = sinkFor(block, ctx);
    body.append(sink.node);
    if (f && f.index > 0) {
      sink.node.prepend(el("div", "fragment-gap", "A piece of this text is missing here."));
    }
    sink.add(bodyOf(block));
    if (f && f.index < f.count - 1) {
      run = { ...sink, type: block.type, count: f.count, next: f.index + 1 };
    } else {
      sink.finish();
    }
  }

  /**
   * A part's head: who, model, meta, usage and time wrap as they need (`part-facts`); Copy and
   * ¶ keep the first line's end, never pushed under the rest (a long assistant head at 1400 px).
   */
  function partHead(part, texts) {
    const head = el("header", "part-head");
    const facts = el("div", "part-facts");
    facts.append(el("span", "who", whoOf(part)));
    const model = modelText(part.meta);
    if (model) facts.append(textEl("span", "model", model, true));
    for (const m of metaPhrases(part)) facts.append(textEl("span", "meta", m, true));
    const usage = usageText(part.meta?.usage);
    if (usage) facts.append(el("span", "usage", usage));
    facts.append(timeEl(part.timestamp));
    head.append(facts);
    const tools = el("span", "part-tools");
    tools.append(copy(() => texts.join("\n\n"), "Copy message"));
    const link = el("button", "link", "¶");
    link.type = "button";
    link.title = "Link to this entry";
    link.setAttribute("aria-label", "Link to this entry");
    link.addEventListener("click", () => onLink(part.entry));
    tools.append(link);
    head.append(tools);
    return head;
  }

  function appendPart(part) {
    const kind = lookup(KIND_CLASSES, part.kind) ?? "other";
    const role = part.kind === "message" ? lookup(ROLE_CLASSES, part.role) : null;
    const article = el(
      "article",
      `part ${kind}${role ? ` ${role}` : ""}${part.continues ? " continues" : ""}`,
    );
    article.tabIndex = -1;
    const known = entries.get(part.entry);
    const texts = known?.texts ?? [];
    if (!part.continues) article.append(partHead(part, texts));
    if (part.meta?.usage) total = addUsage(total, part.meta.usage);
    body = el("div", "part-body");
    article.append(body);
    container.append(article);
    if (!known) entries.set(part.entry, { article, texts });
    ctx = {
      output: part.role === "toolResult",
      lang: "",
      copy,
      onText: (t) => texts.push(t),
      onCall(id, view) {
        if (view.kind === "read") readLanguage.set(id, languageOfPath(view.path));
      },
    };
    for (const block of part.blocks) appendBlock(block);
  }

  return {
    append(parts) {
      for (const part of parts) appendPart(part);
    },
    elementOf: (entry) => entries.get(entry)?.article ?? null,
    /** Every part's first article, in order: what j/k step through. */
    articles: () => [...entries.values()].map((e) => e.article),
    totals: () => total,
    clear() {
      run = null;
      body = null;
      ctx = null;
      total = null;
      entries.clear();
      readLanguage.clear();
      container.replaceChildren();
    },
  };
}
