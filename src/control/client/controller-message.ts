import { ID_PATTERN } from "../../protocol/chat-01.ts";
import {
  type BudgetState,
  type ControllerMessage,
  type ControllerState,
  DIALOG_METHODS,
  DIALOG_STATES,
  type Dialog,
  RECEIPT_REASONS,
  REPLAY_REASONS,
  type Receipt,
  type Reply,
  type Role,
  type Welcome,
} from "../protocol.ts";
import { CONTROL_REFUSAL_CODES, type ControlRefusalCode } from "../refusal.ts";

export type ParsedControllerMessage =
  | { ok: true; message: ControllerMessage }
  | { ok: false; reason: string };

export type Obj = Record<string, unknown>;

export class Invalid extends Error {}

export function fail(reason: string): never {
  throw new Invalid(reason);
}

export const isObj = (v: unknown): v is Obj =>
  typeof v === "object" && v !== null && !Array.isArray(v);
export const isId = (v: unknown): v is string => typeof v === "string" && ID_PATTERN.test(v);
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
export const isRefusal = (v: unknown): v is ControlRefusalCode =>
  (CONTROL_REFUSAL_CODES as readonly unknown[]).includes(v);

export function obj(v: unknown, what: string): Obj {
  return isObj(v) ? v : fail(`${what} is not an object`);
}

export function id(o: Obj, key: string, what: string): string {
  return isId(o[key]) ? o[key] : fail(`${what}.${key} is not an id`);
}

export function str(o: Obj, key: string, what: string): string {
  const v = o[key];
  return typeof v === "string" ? v : fail(`${what}.${key} is not a string`);
}

export function oneOf<T extends string>(
  o: Obj,
  key: string,
  what: string,
  values: readonly T[],
): T {
  const v = o[key];
  return (values as readonly unknown[]).includes(v)
    ? (v as T)
    : fail(`${what}.${key} is not one of ${values.join(", ")}`);
}

/**
 * Parses one line from the controller into the ControllerMessage union (protocol.ts), or says
 * why not. Unknown fields are ignored (a newer controller may add some); a known field with the
 * wrong type refuses the whole line. Nothing is cast from parsed JSON.
 */
export function parseControllerMessage(line: string): ParsedControllerMessage {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, reason: "the line is not JSON" };
  }
  try {
    return { ok: true, message: readMessage(value) };
  } catch (e) {
    if (e instanceof Invalid) return { ok: false, reason: e.message };
    throw e;
  }
}

export function readMessage(value: unknown): ControllerMessage {
  const o = obj(value, "a message");
  switch (o.type) {
    case "welcome":
      return readWelcome(o);
    case "reply":
      return readReply(o);
    case "event": {
      const event = obj(o.event, "event.event");
      if (typeof event.kind !== "string") fail("event.event.kind is not a string");
      return {
        type: "event",
        streamEpoch: id(o, "streamEpoch", "event"),
        sequence: isCount(o.sequence) ? o.sequence : fail("event.sequence is not a count"),
        id: id(o, "id", "event"),
        event: { ...event, kind: event.kind },
      };
    }
    case "dialog":
      return readDialog(o);
    case "state":
      return { type: "state", state: readState(o.state) };
    default:
      return fail("type is not welcome, reply, event, dialog or state");
  }
}

export function readWelcome(o: Obj): Welcome {
  const welcome: Welcome = {
    type: "welcome",
    protocol: isCount(o.protocol) ? o.protocol : fail("welcome.protocol is not a count"),
    connection: id(o, "connection", "welcome"),
    role: oneOf<Role>(o, "role", "welcome", ["observer", "controller"]),
    conversation: id(o, "conversation", "welcome"),
    state: readState(o.state),
  };
  if (o.stream !== undefined) {
    const st = obj(o.stream, "welcome.stream");
    const next = st.nextSequence;
    if (!isCount(next) || next < 1) fail("welcome.stream.nextSequence is not a sequence");
    welcome.stream = { streamEpoch: id(st, "streamEpoch", "welcome.stream"), nextSequence: next };
  }
  if (o.replay === "unavailable") {
    welcome.replay = "unavailable";
    welcome.replayReason = oneOf(o, "replayReason", "welcome", REPLAY_REASONS);
    if (o.replayMessage !== undefined) welcome.replayMessage = str(o, "replayMessage", "welcome");
  } else if (o.replay !== undefined) {
    const r = obj(o.replay, "welcome.replay");
    const from = r.fromSequence;
    const to = r.toSequence;
    if (!isCount(from) || from < 1) fail("welcome.replay.fromSequence is not a sequence");
    if (!isCount(to) || to < from - 1) fail("welcome.replay.toSequence is before fromSequence");
    welcome.replay = {
      streamEpoch: id(r, "streamEpoch", "welcome.replay"),
      fromSequence: from,
      toSequence: to,
    };
  }
  return welcome;
}

export function readState(value: unknown): ControllerState {
  const o = obj(value, "state");
  const connection = o.controllerConnection;
  if (connection !== null && !isId(connection)) fail("state.controllerConnection is not an id");
  return {
    incarnation: id(o, "incarnation", "state"),
    execution: id(o, "execution", "state"),
    generation: isCount(o.generation) ? o.generation : fail("state.generation is not a count"),
    controllerConnection: connection,
    ...(o.controllerActor === undefined
      ? {}
      : { controllerActor: str(o, "controllerActor", "state") }),
    admission: oneOf(o, "admission", "state", ["open", "fenced", "never"] as const),
    binding: oneOf(o, "binding", "state", ["bound", "uncertain"] as const),
    ...(o.budget === undefined ? {} : { budget: readBudget(o.budget, "state.budget") }),
  };
}

/** A budget's figures: spent USD and tokens (counts from 0), each limit a count or null. */
export function readBudget(value: unknown, where: string): BudgetState {
  const o = obj(value, where);
  const spent = obj(o.spent, `${where}.spent`);
  const limit = obj(o.limit, `${where}.limit`);
  const usd = (v: unknown, name: string): number =>
    typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : fail(`${name} is not an amount`);
  return {
    spent: {
      usd: usd(spent.usd, `${where}.spent.usd`),
      tokens: isCount(spent.tokens) ? spent.tokens : fail(`${where}.spent.tokens is not a count`),
    },
    limit: {
      usd: limit.usd === null ? null : usd(limit.usd, `${where}.limit.usd`),
      tokens:
        limit.tokens === null || isCount(limit.tokens)
          ? limit.tokens
          : fail(`${where}.limit.tokens is not a count or null`),
    },
  };
}

export function readReply(o: Obj): Reply {
  if (o.id !== null && !isId(o.id)) fail("reply.id is not an id or null");
  const outcome = o.outcome;
  let reply: Reply;
  if (outcome === "admitted" || outcome === "unknown") {
    if (o.refusal !== undefined) fail(`an ${outcome} reply has no refusal`);
    reply = { type: "reply", id: o.id, outcome };
  } else {
    const code = typeof outcome === "string" ? outcome.slice("refused:".length) : undefined;
    if (typeof outcome !== "string" || !outcome.startsWith("refused:") || !isRefusal(code)) {
      fail("reply.outcome is not admitted, unknown or refused:<code>");
    }
    if (o.refusal !== undefined && o.refusal !== code) fail("reply.refusal differs from outcome");
    reply = { type: "reply", id: o.id, outcome: `refused:${code}`, refusal: code };
  }
  if (o.message !== undefined) reply.message = str(o, "message", "reply");
  if (o.detail !== undefined) reply.detail = str(o, "detail", "reply");
  if (o.receipt !== undefined) reply.receipt = readReceipt(o.receipt);
  if (o.result !== undefined) reply.result = o.result;
  return reply;
}

export function readReceipt(value: unknown): Receipt {
  const o = obj(value, "receipt");
  const receipt: Receipt = {
    id: id(o, "id", "receipt"),
    request: id(o, "request", "receipt"),
    execution: id(o, "execution", "receipt"),
    generation: isCount(o.generation) ? o.generation : fail("receipt.generation is not a count"),
    state: oneOf(o, "state", "receipt", ["admitted", "settled"] as const),
  };
  if (o.reason !== undefined) receipt.reason = oneOf(o, "reason", "receipt", RECEIPT_REASONS);
  if (o.detail !== undefined) {
    if (typeof o.detail !== "string") fail("receipt.detail is not a string");
    receipt.detail = o.detail;
  }
  return receipt;
}

/** A dialog: Pi's disabled ones as before; an approval with its tool, state and answerer. */
function readDialog(o: Obj): Dialog {
  if (typeof o.disabled !== "boolean") fail("dialog.disabled is not a boolean");
  // Only an approval is answerable: Pi's dialogs are disabled, always (seed P3).
  if (o.disabled !== (o.method !== "approval" && o.method !== "budget")) {
    fail("dialog.disabled is true exactly when the method is not approval or budget");
  }
  const d: Dialog = {
    type: "dialog",
    id: id(o, "id", "dialog"),
    method: oneOf(o, "method", "dialog", DIALOG_METHODS),
    title: str(o, "title", "dialog"),
    disabled: o.disabled,
  };
  if (o.reason !== undefined) d.reason = str(o, "reason", "dialog");
  else if (o.disabled) fail("a disabled dialog has no reason");
  if (o.state !== undefined) d.state = oneOf(o, "state", "dialog", DIALOG_STATES);
  if (o.tool !== undefined) {
    const t = obj(o.tool, "dialog.tool");
    d.tool = { name: str(t, "name", "dialog.tool"), input: t.input };
    if (t.toolUseId !== undefined) d.tool.toolUseId = str(t, "toolUseId", "dialog.tool");
  }
  if (o.answeredBy !== undefined) {
    const a = obj(o.answeredBy, "dialog.answeredBy");
    d.answeredBy = {
      connection: str(a, "connection", "dialog.answeredBy"),
      actor: str(a, "actor", "dialog.answeredBy"),
    };
  }
  if (o.message !== undefined) d.message = str(o, "message", "dialog");
  if (o.budget !== undefined) d.budget = readBudget(o.budget, "dialog.budget");
  return d;
}
