// The rules every harness's rendering keeps, in one place: names too long for a field move into
// a text block after a notice, numbers copied into `meta` are whole and exact, a reply's usage is
// all or nothing, recorded times are copied only when short, tool arguments become JSON text at
// any depth, and content the reader does not know is a notice, never an exception.
import type { Block, NoticeCode, Usage } from "../protocol/chat-01.ts";
import { toChatId } from "../protocol/chat-01.ts";
import { jsonText } from "./json-text.ts";

/** Names, ids and types longer than this move into a text block after a notice. */
export const SMALL_FIELD_MAX = 1024;
/** The longest recorded time CHAT-01 copies (`recordedTime`). */
export const RECORDED_TIME_MAX = 256;

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export function notice(code: NoticeCode, text: string): Block {
  return { type: "notice", code, text };
}

/** Keeps a short label as is; a long one becomes "" with the full text in blocks after it. */
export function small(value: unknown, label: string, out: Block[]): string {
  const s = typeof value === "string" ? value : "";
  if (s.length <= SMALL_FIELD_MAX) return s;
  out.push(
    notice("long-field", `The ${label} is ${s.length} characters long; it follows in full.`),
  );
  out.push({ type: "text", text: s });
  return "";
}

/** A short string field as recorded (a model name, a stop reason), else undefined. */
export function shortField(v: unknown): string | undefined {
  return typeof v === "string" && v.length <= SMALL_FIELD_MAX ? v : undefined;
}

/**
 * A number copied into `meta` must be a safe integer (and at least `min` when it is a number):
 * CHAT-01's integer rule. Anything else that is a number (1.5, -1 tokens, 1e400, which is
 * Infinity once parsed) is left out with an `unknown-content` notice saying what it was; a
 * value that is not a number at all is simply absent, as before.
 */
export function wholeNumber(
  v: unknown,
  label: string,
  min: number | null,
  out: Block[],
): number | undefined {
  if (typeof v !== "number") return undefined;
  if (Number.isSafeInteger(v) && (min === null || v >= min)) return v;
  out.push(
    notice(
      "unknown-content",
      `The ${label} (${String(v)}) is not ${min === null ? "a whole number" : `a whole number from ${min} up`}; it is left out.`,
    ),
  );
  return undefined;
}

/** An entry's `timestamp` when CHAT-01 may copy it (a string of at most 256 characters). */
export function timestampOf(entry: Obj): string | undefined {
  const t = entry.timestamp;
  return typeof t === "string" && t.length <= RECORDED_TIME_MAX ? t : undefined;
}

/**
 * A reply's usage from its recorded counts and cost. A token count that is a number but not a
 * whole number from 0 up, or a cost that is not a finite number from 0 up, leaves the whole
 * usage out with an `unknown-content` notice (a record with one count dropped would make the
 * branch's totals wrong without saying so); a count that is absent is 0, no cost is null.
 */
export function usageOf(
  counts: { input: unknown; output: unknown; cacheRead: unknown; cacheWrite: unknown },
  cost: unknown,
  out: Block[],
): Usage | null {
  const wrong: string[] = [];
  const count = (v: unknown, label: string): number => {
    if (typeof v !== "number") return 0;
    if (Number.isSafeInteger(v) && v >= 0) return v;
    wrong.push(`the ${label} token count (${String(v)}) is not a whole number from 0 up`);
    return 0;
  };
  const input = count(counts.input, "input");
  const output = count(counts.output, "output");
  const cacheRead = count(counts.cacheRead, "cache read");
  const cacheWrite = count(counts.cacheWrite, "cache write");
  let total: number | null = null;
  if (typeof cost === "number") {
    if (Number.isFinite(cost) && cost >= 0) total = cost;
    else wrong.push(`the cost (${String(cost)}) is not a number from 0 up`);
  }
  if (wrong.length) {
    out.push(notice("unknown-content", `This reply's usage is left out: ${wrong.join("; ")}.`));
    return null;
  }
  return { input, output, cacheRead, cacheWrite, cost: total };
}

/** A content item the reader does not show, named by its type. */
export function unknownContent(c: unknown): Block {
  const t =
    isObj(c) && typeof c.type === "string"
      ? JSON.stringify(c.type.slice(0, 100))
      : "without a type";
  return notice("unknown-content", `A content item ${t} is not shown.`);
}

/**
 * A tool call's blocks: its name (moved out when long), its id through toChatId, and its
 * arguments as JSON text. Arguments may nest deeper than JSON.stringify can recurse: jsonText
 * never throws, and says when the text would be longer than the longest string.
 */
export function toolCallBlocks(name: unknown, id: unknown, args: unknown): Block[] {
  const out: Block[] = [];
  const shown = small(name, "tool name", out);
  const text = args === undefined ? "{}" : jsonText(args);
  const chatId = toChatId(str(id) ?? "");
  if (text === null) {
    out.push(
      notice(
        "unknown-content",
        "This tool call's arguments are too long to show: their JSON text would be longer than the longest string this reader can make.",
      ),
      { type: "tool-call", id: chatId, name: shown, text: "" },
    );
  } else out.push({ type: "tool-call", id: chatId, name: shown, text });
  return out;
}
