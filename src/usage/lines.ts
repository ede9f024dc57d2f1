// What one line of a session file spent: the usage records of Pi's and Claude Code's files, each
// with the key that tells a second copy of it (docs/usage.md, "Counted once").
//
// Pi writes one line per assistant message, with its usage and the cost it worked out
// (message.usage.cost.total), and a compaction or branch summary with the usage of the request
// that wrote it. A fork or clone copies lines into a new file with their ids and timestamps
// (research: pi-0.85.1.md §1.8, item 10), so the key is the line's id, its timestamp and its
// counts: the same line in two files is one request.
//
// Claude Code writes one line per content block of a reply, each with the same message id,
// request id and usage, and copies them into a new file on --fork-session; so one reply is one
// (message id, request id). Its lines record no cost since 1.0 (an older `costUSD` is used):
// the reply is priced from prices.ts.
import { costAt, priceOf } from "./prices.ts";

export type Harness = "pi" | "claude-code";

/** One request's usage, as a line records it. */
export type Spend = {
  /** Two lines with the same key are the same request; null: none can be told (counted each time). */
  key: string | null;
  /** Milliseconds since the epoch (the line's timestamp). */
  ms: number;
  model: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** USD: as recorded, else as priced; 0 when neither. */
  cost: number;
  /** The model has no price and the line no cost: counted as $0, and said so. */
  unpriced: boolean;
};

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A token count: a whole number from 0 up, else 0 (as the reader's usageOf counts it). */
function count(v: unknown): number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

function money(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

function timeOf(v: unknown): number | null {
  if (typeof v !== "string" || v.length > 64) return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
}

/** Text no longer than 200 characters (a model name), else undefined. */
function shortText(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" && v.length <= 200 ? v : undefined;
}

/**
 * The spend of one parsed line of a Pi session file, or null. `lastModel` is the model of the
 * latest assistant message before it in the file: a summary's request ran on it (Pi records no
 * model on a compaction or branch summary).
 */
export function piSpend(line: unknown, lastModel: string): Spend | null {
  if (!isObj(line)) return null;
  const type = line.type;
  let usage: unknown;
  let model: string;
  if (type === "message") {
    const m = line.message;
    if (!isObj(m) || m.role !== "assistant") return null;
    usage = m.usage;
    model = shortText(m.model) ?? "unknown";
  } else if (type === "compaction" || type === "branch_summary") {
    usage = line.usage;
    model = lastModel;
  } else {
    return null;
  }
  if (!isObj(usage) || typeof usage.input !== "number" || typeof usage.output !== "number")
    return null;
  const ms = timeOf(line.timestamp);
  if (ms === null) return null;
  const input = count(usage.input);
  const output = count(usage.output);
  const cacheRead = count(usage.cacheRead);
  const cacheWrite = count(usage.cacheWrite);
  const cost = isObj(usage.cost) ? money(usage.cost.total) : null;
  const id = typeof line.id === "string" ? line.id : "";
  return {
    key: `pi\0${id}\0${String(line.timestamp)}\0${input}\0${output}\0${cacheRead}\0${cacheWrite}`,
    ms,
    model,
    input,
    output,
    cacheRead,
    cacheWrite,
    cost: cost ?? 0,
    unpriced: false,
  };
}

/** The model of a Pi assistant message line, else undefined (for piSpend's `lastModel`). */
export function piModelOf(line: unknown): string | undefined {
  if (!isObj(line) || line.type !== "message" || !isObj(line.message)) return undefined;
  return line.message.role === "assistant" ? shortText(line.message.model) : undefined;
}

/** The spend of one parsed line of a Claude Code session file, or null. */
export function claudeSpend(line: unknown): Spend | null {
  if (!isObj(line)) return null;
  const m = line.message;
  if (!isObj(m) || !isObj(m.usage)) return null;
  const u = m.usage;
  if (typeof u.input_tokens !== "number" || typeof u.output_tokens !== "number") return null;
  const name = shortText(m.model);
  // Claude Code's own stand-in for a reply it did not ask the API for: no request, no tokens.
  if (name === "<synthetic>") return null;
  const ms = timeOf(line.timestamp);
  if (ms === null) return null;
  const fast = u.speed === "fast";
  const tokens = {
    input: count(u.input_tokens),
    output: count(u.output_tokens),
    cacheRead: count(u.cache_read_input_tokens),
    cacheWrite: count(u.cache_creation_input_tokens),
  };
  const recorded = money(line.costUSD);
  let cost = recorded ?? 0;
  let unpriced = false;
  if (recorded === null && name !== undefined) {
    const price = priceOf(name);
    if (price) cost = costAt(price, tokens, fast);
    else unpriced = true;
  }
  const id = typeof m.id === "string" ? m.id : null;
  const request = typeof line.requestId === "string" ? line.requestId : "";
  return {
    key: id === null ? null : `cc\0${id}\0${request}`,
    ms,
    // A fast reply is priced differently: its own row, as ccusage shows it.
    model: name === undefined ? "unknown" : fast ? `${name}-fast` : name,
    ...tokens,
    cost,
    unpriced,
  };
}

/**
 * A later line of the same request (an older Claude Code wrote the output count as it
 * streamed; a reply of several blocks repeats its usage): the largest count of each kind, and
 * the largest cost, are the request's. `into` takes them.
 */
export function keepLargest(into: Spend, s: Spend): void {
  into.input = Math.max(into.input, s.input);
  into.output = Math.max(into.output, s.output);
  into.cacheRead = Math.max(into.cacheRead, s.cacheRead);
  into.cacheWrite = Math.max(into.cacheWrite, s.cacheWrite);
  into.cost = Math.max(into.cost, s.cost);
}

/**
 * The spend of one event of a running Pi (RPC mode): an assistant message's `message_end`, or
 * a compaction's `compaction_end` with its request's usage, read as the line Pi writes for it
 * (so the same rule counts a live reply and a file's line). Each such event is one request, so
 * the spend has no key: a controller counts every one. `lastModel` as for piSpend.
 */
export function piLiveSpend(event: unknown, lastModel: string, now = Date.now()): Spend | null {
  if (!isObj(event)) return null;
  let line: Obj;
  if (event.type === "message_end" && isObj(event.message)) {
    const at = typeof event.message.timestamp === "number" ? event.message.timestamp : now;
    line = { type: "message", timestamp: isoOf(at, now), message: event.message };
  } else if (event.type === "compaction_end" && isObj(event.result)) {
    line = { type: "compaction", timestamp: isoOf(now, now), usage: event.result.usage };
  } else {
    return null;
  }
  const spend = piSpend(line, lastModel);
  return spend === null ? null : { ...spend, key: null };
}

/**
 * The spends of a running Claude Code's stream-json lines. Its `assistant` lines are the lines
 * it writes to the session file (one per content block, each with the reply's id and the usage
 * as the reply began), counted as `claudeSpend` counts the file's. The reply's final counts
 * come later, in the `message_delta` of its stream (`--include-partial-messages`): read as one
 * more line of the same reply, so the rule for repeated lines (keepLargest: each count at its
 * largest) gives the reply its real output. Keyed by the reply's id alone: within one stream
 * it names one request. The turn's `result` sums what its replies said and is not counted.
 */
export class ClaudeLiveSpends {
  /** The reply streaming now: its id, model and usage so far (from its message_start). */
  #streaming: { id: string; model: unknown; usage: Obj } | null = null;

  read(event: unknown, now = Date.now()): Spend | null {
    if (!isObj(event)) return null;
    const at = typeof event.timestamp === "string" ? event.timestamp : isoOf(now, now);
    if (event.type === "assistant") {
      return claudeSpend({ ...event, requestId: undefined, timestamp: at });
    }
    if (event.type !== "stream_event" || !isObj(event.event)) return null;
    const e = event.event;
    if (e.type === "message_start" && isObj(e.message) && typeof e.message.id === "string") {
      const usage = isObj(e.message.usage) ? e.message.usage : {};
      this.#streaming = { id: e.message.id, model: e.message.model, usage };
      return null;
    }
    if (e.type !== "message_delta" || !isObj(e.usage) || this.#streaming === null) return null;
    const { id, model, usage } = this.#streaming;
    const merged: Obj = { ...usage };
    for (const [k, v] of Object.entries(e.usage)) if (typeof v === "number") merged[k] = v;
    return claudeSpend({
      type: "assistant",
      timestamp: at,
      message: { id, model, usage: merged },
    });
  }
}

function isoOf(ms: number, fallback: number): string {
  const d = new Date(Number.isFinite(ms) ? ms : fallback);
  return Number.isFinite(d.getTime()) ? d.toISOString() : new Date(fallback).toISOString();
}
