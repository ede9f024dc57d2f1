// The live transcript as terminal lines of a given width: finished parts as the `read` command
// prints them (render.ts), and what is still running (streaming text, tools, notices, receipts,
// events, seams) in the terminal's words; every line made visible (wrap.ts).
import type { TranscriptItem } from "../control/client/transcript.ts";
import { actLine } from "../present/acts.ts";
import { createPartPrinter } from "./render.ts";
import { wrapText } from "./wrap.ts";

/** One line: made visible with LF as `^J`, cut with `…` when it does not fit. */
export function fitLine(text: string, width: number): string {
  const lines = wrapText(text, { width, oneLine: true });
  if (lines.length <= 1) return lines[0] ?? "";
  const cut = wrapText(text, { width: width - 1, oneLine: true });
  return `${cut[0] ?? ""}…`;
}

/** The transcript's items as lines of at most `width` columns, all made visible. */
export function renderItems(items: readonly TranscriptItem[], width: number): string[] {
  let out: string[] = [];
  const push = (ls: string[]) => {
    out = out.concat(ls);
  };
  const printer = createPartPrinter((text) => {
    push(text.replace(/\n$/, "").split("\n"));
  }, width);
  const one = (text: string, indent = 0) => wrapText(text, { width, indent, oneLine: true });
  for (const item of items) {
    if (item.kind === "part") {
      printer.print(item.part);
      continue;
    }
    printer.finish();
    switch (item.kind) {
      case "streaming":
        push(["", ...one(`── ${item.role} (streaming)`)]);
        if (item.thinking !== "") {
          push(one("[thinking]", 2));
          push(wrapText(item.thinking, { width, indent: 4 }));
        }
        if (item.text !== "") push(wrapText(item.text, { width, indent: 2 }));
        break;
      case "tool": {
        const state = item.state === "running" ? "running" : item.isError ? "failed" : "ended";
        const updates = item.updates > 0 ? `, ${item.updates} updates` : "";
        push(one(`[tool ${item.toolName} · ${item.toolCallId}: ${state}${updates}]`, 2));
        break;
      }
      case "notice":
        push(one(`! ${item.method}: ${item.text}`, 2));
        break;
      case "receipt":
        push(one(`[prompt settled: ${item.reason}]`, 2));
        if (item.reason === "handled-without-run")
          push(wrapText(withoutRun(item.detail), { width, indent: 2 }));
        break;
      case "act":
        push(one(`[${actLine(item)}]`, 2));
        break;
      case "event":
        push(one(`[event ${item.eventKind}]`, 2));
        break;
      case "seam":
        push(["", ...one(`~~ ${item.reason}: ${item.detail} ~~`)]);
        break;
      default: {
        const never: never = item;
        throw new Error(`unhandled item ${JSON.stringify(never)}`);
      }
    }
  }
  printer.finish();
  return out;
}

/**
 * What a `handled-without-run` receipt means, in words: Pi answered the prompt without running
 * it, with Pi's own reason when it gave one (the prompt response's error), and what to check.
 */
export function withoutRun(detail: string | null): string {
  const said =
    detail === null || detail.trim() === "" ? "it gave no reason" : `it said: ${detail.trim()}`;
  return (
    `Pi did not run this prompt (${said}). This is usually the model: check --model and that ` +
    "the agent directory has its credentials (--agent-from ~/.pi/agent), then send it again."
  );
}
