// The controller's socket protocol (CHAT-01 version 2): one JSON message per LF-framed line,
// a union per direction discriminated on `type`. parseClientMessage is the only way a line from
// a client becomes a message: it checks every field and returns a refusal reason otherwise.
// docs/control-protocol.md describes each message with an example exchange.
import { MAX_BUDGET_TOKENS, MAX_BUDGET_USD } from "../present/budget-raise.ts";
import { ID_PATTERN } from "../protocol/chat-01.ts";
import type { ControlRefusalCode } from "./refusal.ts";

export const PROTOCOL_VERSION = 2;
/** The longest prompt text (characters), as CHAT-01 strings. */
export const MAX_PROMPT_CHARS = 262_144;

/** Operations a grant's capabilities name. */
export const OPERATIONS = [
  "observe",
  "takeover",
  "release",
  "prompt",
  "interrupt",
  "confirm",
  "force-stop",
  "recover",
  "launch",
  "answer",
  "budget",
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Operations behind a confirmation (seed: Confirmations). */
export const CONFIRMED_OPERATIONS = ["force-stop", "recover"] as const;
export type ConfirmedOperation = (typeof CONFIRMED_OPERATIONS)[number];

export type Grant = {
  id: string;
  actor: string;
  capabilities: Operation[];
  /** False once revoked: a hello naming it refuses `grant`. */
  active?: boolean;
  /** The conversations the grant covers; absent: every conversation (requests refuse `scope`). */
  scope?: { conversations: string[] };
  /**
   * True: a hello on this grant may name the person it acts for (`actor`), who is then
   * recorded instead of the grant's own actor, beside it (`delegatedBy`). A board that logs
   * people in holds such a grant; it can never do more than the grant's capabilities allow.
   */
  delegate?: boolean;
};

/** Names what a request acts on; each present field must match the controller's binding. */
export type Target = { conversation?: string; execution?: string; branch?: string };

type RequestBase = {
  type: "request";
  /** Chosen by the client, unique per connection; reusing it with other content is refused. */
  id: string;
  target?: Target;
  /** The controller generation the client believes in (required for control operations). */
  generation?: number;
  /** The controller incarnation the client was welcomed by. */
  incarnation?: string;
};

export type Request =
  | (RequestBase & { op: "observe"; limit?: number; cursor?: string })
  | (RequestBase & { op: "takeover" })
  | (RequestBase & { op: "release" })
  | (RequestBase & { op: "prompt"; text: string; draft: { id: string; revision: number } })
  | (RequestBase & { op: "interrupt" })
  | (RequestBase & { op: "confirm"; operation: ConfirmedOperation })
  | (RequestBase & { op: "force-stop"; confirmation: string })
  | (RequestBase & { op: "recover"; confirmation: string })
  | (RequestBase & { op: "launch"; eligibility: string })
  | (RequestBase & {
      op: "answer";
      /** The dialog's id, as pushed. */
      dialog: string;
      decision: Decision;
      /** Said to the engine with a deny (Claude Code passes it to the model). */
      message?: string;
      /** With "allow" on a budget dialog: the new limits (a raise needs the `budget` capability). */
      budget?: BudgetLimits;
    })
  | (RequestBase & { op: "budget" } & BudgetLimits);

/**
 * Budget limits as a request sets them: USD (whole cents, more than 0) and/or tokens (a whole
 * number, more than 0); an absent kind is left as it is (docs/usage.md, Budgets).
 */
export type BudgetLimits = { usd?: number; tokens?: number };

/** The largest USD limit (a typo's guard, not a policy) and the largest token limit. */
export { MAX_BUDGET_TOKENS, MAX_BUDGET_USD };

/**
 * What a controller's budget counts: spent since it started (every execution it ran), by the
 * usage rule of src/usage/lines.ts, and the limits (null: no limit of that kind).
 */
export type BudgetState = {
  spent: { usd: number; tokens: number };
  limit: { usd: number | null; tokens: number | null };
};

/** An approval's answer. */
export const DECISIONS = ["allow", "deny"] as const;
export type Decision = (typeof DECISIONS)[number];

/** The longest message an answer may carry (characters). */
export const MAX_ANSWER_MESSAGE_CHARS = 4000;

/** Where a client's view of the stream stopped: the last event it applied. */
export type ResumePoint = { streamEpoch: string; afterSequence: number };

export type Hello = {
  type: "hello";
  protocol: number;
  grant: string;
  client?: string;
  /** Asks for the events after this point, before any live one (docs: Replay). */
  resume?: ResumePoint;
  /**
   * The person this connection acts for, on a grant that delegates (else refused `grant`):
   * every record and ledger line of the connection names them.
   */
  actor?: string;
  /** Narrows the grant: the connection may do only these (each one the grant allows). */
  capabilities?: Operation[];
};

export type ClientMessage = Hello | Request;

/** Why a prompt's receipt settled without a normal run end (seed: receipt reason codes). */
export const RECEIPT_REASONS = [
  "completed",
  "transport-unknown",
  "handled-without-run",
  "ack-without-start",
  "interrupted",
  "run-overlap",
] as const;
export type ReceiptReason = (typeof RECEIPT_REASONS)[number];

export type Receipt = {
  id: string;
  request: string;
  execution: string;
  generation: number;
  state: "admitted" | "settled";
  reason?: ReceiptReason;
  /** Pi's own reason, when it gave one: the `prompt` response's error (handled-without-run). */
  detail?: string;
};

export type Role = "observer" | "controller";

export type ControllerState = {
  incarnation: string;
  execution: string;
  generation: number;
  /** The connection that controls, or null (an orphan has none, H20). */
  controllerConnection: string | null;
  /**
   * The person that connection acts for (its delegated actor, else its grant's), so a client
   * welcomed after the takeover can say who controls without having seen the act.
   */
  controllerActor?: string;
  admission: "open" | "fenced" | "never";
  binding: "bound" | "uncertain";
  /** Present once a budget is set (`--budget-usd`, `--budget-tokens`, the `budget` op). */
  budget?: BudgetState;
};

/** Why a resume is not replayed (see EventStream.plan). */
export const REPLAY_REASONS = ["another-epoch", "older-than-kept", "ahead-of-stream"] as const;
export type ReplayReason = (typeof REPLAY_REASONS)[number];

/** The events a welcome replays: fromSequence..toSequence of the epoch (empty when toSequence
 * is fromSequence - 1). */
export type ReplayRange = { streamEpoch: string; fromSequence: number; toSequence: number };

export type Welcome = {
  type: "welcome";
  protocol: number;
  connection: string;
  role: Role;
  conversation: string;
  state: ControllerState;
  /**
   * The live stream as of this welcome: the first event sent live has `nextSequence` (after
   * any replayed ones). A client that has seen no event yet resumes from here after a drop.
   * Absent only before the first execution.
   */
  stream?: { streamEpoch: string; nextSequence: number };
  /** Only when the hello carried `resume`: what follows the welcome, or "unavailable". */
  replay?: ReplayRange | "unavailable";
  /** With `replay: "unavailable"`: why. */
  replayReason?: ReplayReason;
  /** With `replay: "unavailable"`: for people. */
  replayMessage?: string;
};

export type Reply = {
  type: "reply";
  /** The request id, or null when the line was not a request at all. */
  id: string | null;
  outcome: "admitted" | `refused:${ControlRefusalCode}` | "unknown";
  refusal?: ControlRefusalCode;
  message?: string;
  /** A reader refusal code behind a `cursor` refusal. */
  detail?: string;
  receipt?: Receipt;
  result?: unknown;
};

export type StreamEvent = {
  type: "event";
  streamEpoch: string;
  sequence: number;
  /** A stable id: the same event repeated has the same id and the same bytes. */
  id: string;
  event: { kind: string; [k: string]: unknown };
};

/** Pi's blocking extension methods, and Claude Code's permission prompt. */
export const DIALOG_METHODS = [
  "select",
  "confirm",
  "input",
  "editor",
  "approval",
  "budget",
] as const;
export type DialogMethod = (typeof DIALOG_METHODS)[number];

/** Where a dialog stands: open, or how it ended (docs/control-protocol.md, Approvals). */
export const DIALOG_STATES = ["open", "allowed", "denied", "closed"] as const;
export type DialogState = (typeof DIALOG_STATES)[number];

/**
 * Something the engine asks and waits on, pushed to every client when it opens and again, with
 * the same id, when it ends. Pi's extension dialogs are `disabled` (never answered, seed P3);
 * an `approval` (Claude Code's permission prompt) is answered by the controlling connection
 * with `answer`.
 */
export type Dialog = {
  type: "dialog";
  id: string;
  method: DialogMethod;
  title: string;
  disabled: boolean;
  /** Why it can't be answered (a disabled dialog), or why it closed. */
  reason?: string;
  /** What an approval asks to run: the tool's name and input, as the engine sent them. */
  tool?: { name: string; input: unknown; toolUseId?: string };
  /** Absent on a disabled dialog (it stays as pushed). */
  state?: DialogState;
  /** Who answered, once it is allowed or denied by a person. */
  answeredBy?: { connection: string; actor: string };
  /** A deny's message, as given with the answer. */
  message?: string;
  /** A budget dialog's figures: as it opened, and once raised, the new limits. */
  budget?: BudgetState;
};

export type StateChange = { type: "state"; state: ControllerState };

export type ControllerMessage = Welcome | Reply | StreamEvent | Dialog | StateChange;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is string => typeof v === "string" && ID_PATTERN.test(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

export type Parsed = { ok: true; message: ClientMessage } | { ok: false; reason: string };

/** What an actor's name may be, in a grant or a hello: what a person's name needs, no more. */
export const ACTOR_RULE = "an actor is 1 to 200 characters, none of them a control character";

/**
 * Whether `v` may name an actor: 1–200 characters, no C0 or C1 control character, no line or
 * paragraph separator. A name goes into records, ledger lines and terminals as it is.
 */
export function isActorName(v: unknown): v is string {
  if (typeof v !== "string" || v.length < 1 || v.length > 200) return false;
  for (const ch of v) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) return false;
  }
  return true;
}

const REQUEST_KEYS = new Set(["type", "id", "op", "target", "generation", "incarnation"]);
const OP_KEYS: Record<Operation, string[]> = {
  observe: ["limit", "cursor"],
  takeover: [],
  release: [],
  prompt: ["text", "draft"],
  interrupt: [],
  confirm: ["operation"],
  "force-stop": ["confirmation"],
  recover: ["confirmation"],
  launch: ["eligibility"],
  answer: ["dialog", "decision", "message", "budget"],
  budget: ["usd", "tokens"],
};

function bad(reason: string): Parsed {
  return { ok: false, reason };
}

/** Parses one decoded line from a client. Unknown fields are refused, not ignored. */
export function parseClientMessage(line: string): Parsed {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return bad("the line is not JSON");
  }
  if (!isObj(v)) return bad("a message is a JSON object");
  if (v.type === "hello") {
    for (const k of Object.keys(v)) {
      if (!["type", "protocol", "grant", "client", "resume", "actor", "capabilities"].includes(k))
        return bad(`hello has an unknown field ${k}`);
    }
    if (v.protocol !== PROTOCOL_VERSION) return bad(`hello must name protocol ${PROTOCOL_VERSION}`);
    if (!isId(v.grant)) return bad("hello must name a grant id");
    if (v.client !== undefined && (typeof v.client !== "string" || v.client.length > 200)) {
      return bad("hello's client is a short string");
    }
    const hello: Hello = { type: "hello", protocol: v.protocol, grant: v.grant };
    if (typeof v.client === "string") hello.client = v.client;
    if (v.resume !== undefined) {
      const r = v.resume;
      const keysOk =
        isObj(r) && Object.keys(r).every((k) => k === "streamEpoch" || k === "afterSequence");
      if (!keysOk || !isId(r.streamEpoch) || !isCount(r.afterSequence)) {
        return bad("hello's resume is { streamEpoch, afterSequence }");
      }
      hello.resume = { streamEpoch: r.streamEpoch, afterSequence: r.afterSequence };
    }
    if (v.actor !== undefined) {
      if (!isActorName(v.actor)) return bad(ACTOR_RULE);
      hello.actor = v.actor;
    }
    if (v.capabilities !== undefined) {
      const caps = v.capabilities;
      const known: readonly unknown[] = OPERATIONS;
      if (
        !Array.isArray(caps) ||
        !caps.every((c, i) => known.includes(c) && caps.indexOf(c) === i)
      ) {
        return bad("hello's capabilities are operations, each once");
      }
      hello.capabilities = caps as Operation[];
    }
    return { ok: true, message: hello };
  }
  if (v.type !== "request") return bad("a message is a hello or a request");
  return parseRequest(v);
}

function parseRequest(v: Obj): Parsed {
  if (!isId(v.id)) return bad("a request needs an id");
  if (typeof v.op !== "string" || !(OPERATIONS as readonly string[]).includes(v.op)) {
    return bad("a request needs a known op");
  }
  const op = v.op as Operation;
  for (const k of Object.keys(v)) {
    if (!REQUEST_KEYS.has(k) && !OP_KEYS[op].includes(k))
      return bad(`${op} has an unknown field ${k}`);
  }
  const base: RequestBase = { type: "request", id: v.id };
  if (v.target !== undefined) {
    const target = parseTarget(v.target);
    if (target === null) return bad("target names conversation, execution and branch ids only");
    base.target = target;
  }
  if (v.generation !== undefined) {
    if (!isCount(v.generation)) return bad("generation is a count");
    base.generation = v.generation;
  }
  if (v.incarnation !== undefined) {
    if (!isId(v.incarnation)) return bad("incarnation is an id");
    base.incarnation = v.incarnation;
  }
  switch (op) {
    case "observe": {
      const r: Request = { ...base, op };
      if (v.limit !== undefined) {
        if (
          !Number.isSafeInteger(v.limit) ||
          (v.limit as number) < 1 ||
          (v.limit as number) > 100
        ) {
          return bad("limit is 1 to 100");
        }
        r.limit = v.limit as number;
      }
      if (v.cursor !== undefined) {
        if (typeof v.cursor !== "string" || v.cursor.length === 0 || v.cursor.length > 512) {
          return bad("cursor is a cursor id");
        }
        r.cursor = v.cursor;
      }
      return { ok: true, message: r };
    }
    case "takeover":
    case "release":
    case "interrupt":
      return { ok: true, message: { ...base, op } };
    case "prompt": {
      // Text is checked by the text policy at admission (draft, text-policy), not here: a
      // prompt with bad text is a well-formed request that admission refuses.
      if (!isObj(v.draft) || !isId(v.draft.id) || !isCount(v.draft.revision)) {
        return bad("prompt needs a draft { id, revision }");
      }
      if (Object.keys(v.draft).some((k) => k !== "id" && k !== "revision")) {
        return bad("draft has only id and revision");
      }
      const text = typeof v.text === "string" ? v.text : "";
      if (v.text !== undefined && typeof v.text !== "string") return bad("prompt text is a string");
      return {
        ok: true,
        message: { ...base, op, text, draft: { id: v.draft.id, revision: v.draft.revision } },
      };
    }
    case "confirm": {
      if (!(CONFIRMED_OPERATIONS as readonly unknown[]).includes(v.operation)) {
        return bad("confirm names force-stop or recover");
      }
      return { ok: true, message: { ...base, op, operation: v.operation as ConfirmedOperation } };
    }
    case "force-stop":
    case "recover": {
      if (!isId(v.confirmation)) return bad(`${op} needs a confirmation id`);
      return { ok: true, message: { ...base, op, confirmation: v.confirmation } };
    }
    case "launch": {
      if (!isId(v.eligibility)) return bad("launch needs an eligibility id");
      return { ok: true, message: { ...base, op, eligibility: v.eligibility } };
    }
    case "answer": {
      if (!isId(v.dialog)) return bad("answer needs a dialog id");
      if (!(DECISIONS as readonly unknown[]).includes(v.decision)) {
        return bad('answer\'s decision is "allow" or "deny"');
      }
      const r: Request = { ...base, op, dialog: v.dialog, decision: v.decision as Decision };
      if (v.message !== undefined) {
        if (typeof v.message !== "string" || v.message.length > MAX_ANSWER_MESSAGE_CHARS) {
          return bad(
            `answer's message is a string of at most ${MAX_ANSWER_MESSAGE_CHARS} characters`,
          );
        }
        r.message = v.message;
      }
      if (v.budget !== undefined) {
        if (!isObj(v.budget) || Object.keys(v.budget).some((k) => k !== "usd" && k !== "tokens")) {
          return bad("answer's budget is { usd?, tokens? }");
        }
        const limits = parseBudgetLimits(v.budget);
        if (typeof limits === "string") return bad(`answer's budget: ${limits}`);
        r.budget = limits;
      }
      return { ok: true, message: r };
    }
    case "budget": {
      const limits = parseBudgetLimits(v);
      if (typeof limits === "string") return bad(`budget: ${limits}`);
      return { ok: true, message: { ...base, op, ...limits } };
    }
    default: {
      const never: never = op;
      return bad(`unknown op ${String(never)}`);
    }
  }
}

/**
 * `usd` and `tokens` of a budget change, each checked; at least one. A string says what is
 * wrong. USD is whole cents: 0.1 + 0.2 as a client computes it is refused, not rounded.
 */
export function parseBudgetLimits(v: Obj): BudgetLimits | string {
  const out: BudgetLimits = {};
  if (v.usd !== undefined) {
    const usd = v.usd;
    if (typeof usd !== "number" || !Number.isFinite(usd) || usd <= 0 || usd > MAX_BUDGET_USD) {
      return `usd is a number of dollars above 0, at most ${MAX_BUDGET_USD}`;
    }
    if (Math.round(usd * 100) / 100 !== usd) return "usd is whole cents (at most two decimals)";
    out.usd = usd;
  }
  if (v.tokens !== undefined) {
    const tokens = v.tokens;
    if (
      !Number.isSafeInteger(tokens) ||
      (tokens as number) < 1 ||
      (tokens as number) > MAX_BUDGET_TOKENS
    ) {
      return `tokens is a whole number above 0, at most ${MAX_BUDGET_TOKENS}`;
    }
    out.tokens = tokens as number;
  }
  if (out.usd === undefined && out.tokens === undefined) return "name usd, tokens or both";
  return out;
}

function parseTarget(v: unknown): Target | null {
  if (!isObj(v)) return null;
  const t: Target = {};
  for (const [k, val] of Object.entries(v)) {
    if (k !== "conversation" && k !== "execution" && k !== "branch") return null;
    if (typeof val !== "string" || val.length === 0 || val.length > 200) return null;
    t[k] = val;
  }
  return t;
}

/** The canonical content of a request (keys sorted at every level), to recognise a request id
 * reused with other content (`conflicting-request`). */
export function canonicalRequest(r: Request): string {
  return canonical(r);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObj(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
