// Engine dialogs. Pi's blocking extension dialogs are never answered (lead decision 30): each is
// recorded and pushed to every client as disabled, with the reason. An approval (Claude Code's
// permission prompt) is an open dialog the controlling connection answers with `answer`
// (docs/control-protocol.md, Approvals): the first valid answer wins; a connection that lost
// control since the dialog opened may not answer it; an interrupt denies it first; a force stop
// or the engine's exit closes it. Nothing is allowed by default or by a timeout.
import { randomUUID } from "node:crypto";
import type { EngineSession, ToolRequest } from "../engine/harness.ts";
import { BLOCKING_UI_METHODS } from "../engine/pi/rpc.ts";
import type { Decision, Dialog, DialogState, Request } from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";
import type { ControlRecord, DialogEndRecord, DialogRecord } from "./records.ts";

const DIALOG_REASON = "the controller never answers engine dialogs (lead decision 30)";
/** The longest title a dialog carries (what a client renders is bounded). */
const MAX_TITLE_CHARS = 2000;
/** How many ended dialogs an execution remembers, to say why a late answer is refused. */
const ENDED_KEPT = 1000;

/** The record and the pushed message of a blocking dialog `native` the engine raised. */
export function disabledDialog(
  execution: string,
  native: string,
  method: string,
  title: string | undefined,
): { record: DialogRecord; message: Dialog } {
  const m = (BLOCKING_UI_METHODS as readonly string[]).includes(method)
    ? (method as (typeof BLOCKING_UI_METHODS)[number])
    : "input";
  const record: DialogRecord = {
    version: 2,
    kind: "dialog",
    id: `dl-${randomUUID()}`,
    native,
    execution,
    method: m,
    title: (title ?? "").slice(0, MAX_TITLE_CHARS),
    disabled: true,
    reason: DIALOG_REASON,
    at: new Date().toISOString(),
  };
  const message: Dialog = {
    type: "dialog",
    id: record.id,
    method: m,
    title: record.title,
    disabled: true,
    reason: DIALOG_REASON,
  };
  return { record, message };
}

type Open = {
  record: DialogRecord;
  message: Dialog;
  /** Connections that controlled, then lost control, while it was open. */
  lostBy: Set<string>;
};

/** Why an answer is refused: the code and a sentence a person can act on. */
export type AnswerCheck =
  | { ok: true; native: string }
  | { ok: false; code: Extract<ControlRefusalCode, "dialog" | "controller">; message: string };

/** How an ended dialog is recorded and pushed. */
export type Ended = { record: DialogEndRecord; message: Dialog };

/** One execution's approvals: the open ones, and what became of the ones that ended. */
export class Approvals {
  readonly #execution: string;
  readonly #open = new Map<string, Open>();
  readonly #ended = new Map<string, DialogState>();

  constructor(execution: string) {
    this.#execution = execution;
  }

  get openCount(): number {
    return this.#open.size;
  }

  /** The open approvals' messages, oldest first (a client welcomed now is sent them). */
  openMessages(): Dialog[] {
    return [...this.#open.values()].map((o) => o.message);
  }

  /** A permission prompt the engine asked: open, answerable by the controller. */
  open(native: string, tool: ToolRequest): { record: DialogRecord; message: Dialog } {
    const title = `${tool.name}${tool.reason ? `: ${tool.reason}` : ""}`.slice(0, MAX_TITLE_CHARS);
    const record: DialogRecord = {
      version: 2,
      kind: "dialog",
      id: `dl-${randomUUID()}`,
      native,
      execution: this.#execution,
      method: "approval",
      title,
      disabled: false,
      tool: toolOf(tool),
      at: new Date().toISOString(),
    };
    const message: Dialog = {
      type: "dialog",
      id: record.id,
      method: "approval",
      title,
      disabled: false,
      tool: toolOf(tool),
      state: "open",
    };
    this.#open.set(record.id, { record, message, lostBy: new Set() });
    return { record, message };
  }

  /** Control passed from `connection` to another: it may not answer what is open now. */
  lostControl(connection: string): void {
    for (const o of this.#open.values()) o.lostBy.add(connection);
  }

  /** Whether `connection` (the controller, admission checked that) may answer `id` now. */
  check(id: string, connection: string): AnswerCheck {
    const o = this.#open.get(id);
    if (o === undefined) {
      const ended = this.#ended.get(id);
      return {
        ok: false,
        code: "dialog",
        message:
          ended === undefined
            ? `no approval ${id} is open in this execution`
            : `approval ${id} is no longer open (${ended}); nothing was changed`,
      };
    }
    if (o.lostBy.has(connection)) {
      return {
        ok: false,
        code: "controller",
        message:
          "this connection lost control after the approval opened, so its answer is refused; " +
          "look at the approval again and answer it anew if it is still open",
      };
    }
    return { ok: true, native: o.record.native };
  }

  /** The open approval the engine knows as `native`, if any. */
  idOf(native: string): string | null {
    for (const [id, o] of this.#open) if (o.record.native === native) return id;
    return null;
  }

  /** Ends an open approval: answered (allowed, denied), or closed without an answer. */
  end(
    id: string,
    state: Exclude<DialogState, "open">,
    why: { reason: string; answeredBy?: { connection: string; actor: string }; message?: string },
  ): Ended | null {
    const o = this.#open.get(id);
    if (o === undefined) return null;
    this.#open.delete(id);
    this.#ended.set(id, state);
    if (this.#ended.size > ENDED_KEPT) {
      const oldest = this.#ended.keys().next().value;
      if (oldest !== undefined) this.#ended.delete(oldest);
    }
    const record: DialogEndRecord = {
      version: 2,
      kind: "dialog-end",
      dialog: id,
      native: o.record.native,
      execution: this.#execution,
      state,
      reason: why.reason,
      ...(why.answeredBy === undefined ? {} : { answeredBy: why.answeredBy }),
      ...(why.message === undefined ? {} : { message: why.message }),
      at: new Date().toISOString(),
    };
    const message: Dialog = {
      ...o.message,
      state,
      reason: why.reason,
      ...(why.answeredBy === undefined ? {} : { answeredBy: why.answeredBy }),
      ...(why.message === undefined ? {} : { message: why.message }),
    };
    return { record, message };
  }

  /** The engine's id of open approval `id`, or null. */
  nativeOf(id: string): string | null {
    return this.#open.get(id)?.record.native ?? null;
  }

  /** Every open approval's id, oldest first. */
  openIds(): string[] {
    return [...this.#open.keys()];
  }
}

/** A decision as a dialog's end state. */
export function stateOf(decision: Decision): "allowed" | "denied" {
  return decision === "allow" ? "allowed" : "denied";
}

function toolOf(tool: ToolRequest): NonNullable<Dialog["tool"]> {
  return tool.toolUseId === undefined
    ? { name: tool.name, input: tool.input }
    : { name: tool.name, input: tool.input, toolUseId: tool.toolUseId };
}

/** Where approvals' records go (the evidence and audit) and their messages (every client). */
export type DialogOutlet = {
  record(record: ControlRecord): void;
  broadcast(message: Dialog): void;
};

/** What of an execution the approvals need: its book, its engine's answer, its dialog list. */
export type ApprovalExecution = {
  approvals: Approvals;
  engine: Pick<EngineSession, "answer">;
  dialogs: DialogRecord[];
};

/** A permission prompt the engine asked: recorded, and pushed open to every client. */
export function openApproval(
  exec: ApprovalExecution,
  out: DialogOutlet,
  native: string,
  tool: ToolRequest,
): void {
  const { record, message } = exec.approvals.open(native, tool);
  exec.dialogs.push(record);
  out.record(record);
  out.broadcast(message);
}

/** Ends one open approval: recorded, and pushed again with its end state. */
export function endApproval(
  exec: ApprovalExecution,
  out: DialogOutlet,
  id: string,
  state: Exclude<DialogState, "open">,
  why: Parameters<Approvals["end"]>[2],
): Dialog | null {
  const ended = exec.approvals.end(id, state, why);
  if (ended === null) return null;
  out.record(ended.record);
  out.broadcast(ended.message);
  return ended.message;
}

/** An interrupt denies what is open (the engine is told first); a stop or an exit closes it. */
export function endApprovals(
  exec: ApprovalExecution,
  out: DialogOutlet,
  state: "denied" | "closed",
  reason: string,
): void {
  for (const id of exec.approvals.openIds()) {
    const native = exec.approvals.nativeOf(id);
    if (state === "denied" && native !== null) exec.engine.answer(native, "deny", reason);
    endApproval(exec, out, id, state, { reason });
  }
}

/**
 * `answer` (admission checked the controller, the generation and the capability): the first
 * valid answer wins, and the engine hears it before any client is told.
 */
export function answerApproval(
  exec: ApprovalExecution | null,
  out: DialogOutlet,
  by: { connection: string; actor: string },
  r: Extract<Request, { op: "answer" }>,
): { ok: true; dialog: Dialog } | { ok: false; code: ControlRefusalCode; message: string } {
  if (exec === null) return { ok: false, code: "dialog", message: "no execution runs" };
  const checked = exec.approvals.check(r.dialog, by.connection);
  if (!checked.ok) return checked;
  if (!exec.engine.answer(checked.native, r.decision, r.message)) {
    return {
      ok: false,
      code: "dialog",
      message: "the engine can't be written to (it is exiting); nothing was answered",
    };
  }
  const state = stateOf(r.decision);
  const reason = `${state} by ${by.actor}`;
  const why =
    r.message === undefined
      ? { reason, answeredBy: by }
      : { reason, answeredBy: by, message: r.message };
  const ended = endApproval(exec, out, r.dialog, state, why);
  if (ended === null) throw new Error("an approval checked open was not open");
  return { ok: true, dialog: ended };
}
