// The budget a controller keeps (issue 28 item 4; docs/usage.md, Budgets). It counts every reply
// its engines report (budget.ts), refuses a prompt once a limit is reached (`budget`), and when
// a run reaches one it stops the run at the next safe point (the interrupt: Pi's abort, Claude
// Code's interrupt) and opens a budget dialog that asks the controlling operator to raise the
// budget (to how much) or stop. The dialog is answered with `answer`; a raise needs the
// `budget` capability as the `budget` op does. Nothing raises by default or by a timeout: the
// dialog stays open until a person answers it or changes the budget.
//
// The dialog is the controller's, not the engine's: it is not in an execution's Approvals (an
// interrupt denies those first, and this one opens because of the interrupt), it outlives the
// execution it opened in, and a prompt refused `budget` opens it again once it was answered
// "stop", so a later raise always has a dialog to answer.
import { randomUUID } from "node:crypto";
import type { Spend } from "../../usage/lines.ts";
import type { BudgetLimits, BudgetState, Dialog, Request } from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";
import { BudgetMeter, centsOf, type Limits, NO_LIMITS } from "./budget.ts";
import type { Execution } from "./execution.ts";
import type { ControlRecord, DialogRecord } from "./records.ts";

/** How many ended budget dialogs are remembered, to say why a late answer is refused. */
const ENDED_KEPT = 1000;

/** The engine id a budget dialog's records carry: no engine asked it. */
export const BUDGET_NATIVE = "controller-budget";

export type BudgetHost = {
  /** The execution running now (a record names it), or null before the first. */
  execution(): string | null;
  /** A prompt or run holds the dispatch slot: a stop is due. */
  hasTurn(): boolean;
  /** Starts the interrupt (the stop at the next safe point); never throws. */
  interrupt(): void;
  record(record: ControlRecord): void;
  broadcast(message: Dialog): void;
  broadcastState(): void;
};

type By = { connection: string; actor: string };
type Failed = { ok: false; code: ControlRefusalCode; message: string };
export type BudgetAnswer = { ok: true; dialog: Dialog } | Failed;

type Open = { record: DialogRecord; message: Dialog };

export class BudgetGuard {
  readonly #host: BudgetHost;
  readonly #meter: BudgetMeter;
  #open: Open | null = null;
  /** Budget dialogs that ended, by id, with how: a late answer is told so. */
  readonly #ended = new Map<string, string>();

  constructor(host: BudgetHost, limits: Limits = NO_LIMITS) {
    this.#host = host;
    this.#meter = new BudgetMeter(limits);
  }

  /** The state's figures, present once a limit is set. */
  state(): BudgetState | undefined {
    return this.#meter.limited ? this.#meter.state() : undefined;
  }

  /** The open budget dialog's message, for a client welcomed now. */
  openMessages(): Dialog[] {
    return this.#open === null ? [] : [this.#open.message];
  }

  /** Whether `dialog` is a budget dialog this controller opened (open or ended). */
  owns(dialog: string): boolean {
    return this.#open?.record.id === dialog || this.#ended.has(dialog);
  }

  /** One reply the engine reported: counted; a run that reached a limit is stopped. */
  spent(spend: Spend): void {
    const wasReached = this.#meter.reached() !== null;
    if (!this.#meter.add(spend) || !this.#meter.limited) return;
    this.#host.broadcastState();
    if (wasReached || this.#meter.reached() === null) return;
    if (this.#host.hasTurn()) this.#host.interrupt();
    this.#openDialog();
  }

  /** Why a prompt may not start now (a limit is reached), or null. Opens the dialog again. */
  refusePrompt(): string | null {
    if (this.#meter.reached() === null) return null;
    const dialog = this.#openDialog();
    return (
      `the budget is reached: ${this.#meter.describe()} spent; nothing was sent. ` +
      `Raise the budget (answer budget dialog ${dialog.id} with "allow" and the new limit; ` +
      "that needs the budget capability, an admin's) or stop here"
    );
  }

  /** `answer` on a budget dialog: "allow" with `budget` raises (needs `canRaise`), "deny" stops. */
  answer(by: By, r: Extract<Request, { op: "answer" }>, canRaise: boolean): BudgetAnswer {
    const open = this.#open;
    if (open === null || open.record.id !== r.dialog) {
      const ended = this.#ended.get(r.dialog);
      return {
        ok: false,
        code: "dialog",
        message: `budget dialog ${r.dialog} is no longer open (${ended ?? "unknown"}); nothing was changed`,
      };
    }
    if (r.decision === "deny") {
      if (r.budget !== undefined) {
        return { ok: false, code: "budget", message: 'a "deny" stops; it takes no new budget' };
      }
      const limit = this.#meter.describe();
      return {
        ok: true,
        dialog: this.#end("denied", `stopped by ${by.actor} at ${limit}`, by, r.message),
      };
    }
    if (r.budget === undefined) {
      return {
        ok: false,
        code: "budget",
        message: 'raising needs the new limit: "allow" with budget { usd } and/or { tokens }',
      };
    }
    const raised = this.change(by, r.budget, canRaise);
    if (!raised.ok) return raised;
    const ended = this.#ended.has(open.record.id);
    if (!ended) throw new Error("a raise above the spending left its dialog open");
    return { ok: true, dialog: raised.dialog ?? open.message };
  }

  /**
   * A budget change (the `budget` op, or a raise answering the dialog): refused `capability`
   * without the budget capability. A change that leaves the budget reached is a change all the
   * same (lowering is allowed); one that lifts it ends the open dialog as raised.
   */
  change(
    by: By,
    limits: BudgetLimits,
    canChange: boolean,
  ): { ok: true; budget: BudgetState; dialog?: Dialog } | Failed {
    if (!canChange) {
      return {
        ok: false,
        code: "capability",
        message:
          "changing the budget needs the budget capability (an admin's); ask one to raise it",
      };
    }
    const open = this.#open;
    if (open !== null) {
      const why = this.#meter.refuseRaise(limits);
      if (why !== null)
        return { ok: false, code: "budget", message: `${why}; nothing was changed` };
    }
    this.#meter.set(limits);
    this.#host.broadcastState();
    const budget = this.#meter.state();
    if (open === null) {
      // A lowered budget a running run has now reached stops it, as a reply reaching it would.
      if (this.#meter.reached() !== null) {
        if (this.#host.hasTurn()) this.#host.interrupt();
        this.#openDialog();
      }
      return { ok: true, budget };
    }
    const dialog = this.#end("allowed", `raised by ${by.actor} to ${this.#meter.describe()}`, by);
    return { ok: true, budget, dialog };
  }

  #openDialog(): Dialog {
    if (this.#open !== null) return this.#open.message;
    const budget = this.#meter.state();
    const title = `Budget reached: ${this.#meter.describe()} spent. Raise it, or stop here.`;
    const record: DialogRecord = {
      version: 2,
      kind: "dialog",
      id: `dl-${randomUUID()}`,
      native: BUDGET_NATIVE,
      execution: this.#host.execution() ?? "none",
      method: "budget",
      title,
      disabled: false,
      budget,
      at: new Date().toISOString(),
    };
    const message: Dialog = {
      type: "dialog",
      id: record.id,
      method: "budget",
      title,
      disabled: false,
      state: "open",
      budget,
    };
    this.#open = { record, message };
    this.#host.record(record);
    this.#host.broadcast(message);
    return message;
  }

  #end(state: "allowed" | "denied", reason: string, by: By, said?: string): Dialog {
    const open = this.#open;
    if (open === null) throw new Error("no budget dialog is open");
    this.#open = null;
    this.#ended.set(open.record.id, state === "allowed" ? "raised" : "stopped");
    if (this.#ended.size > ENDED_KEPT) {
      const oldest = this.#ended.keys().next().value;
      if (oldest !== undefined) this.#ended.delete(oldest);
    }
    const budget = this.#meter.state();
    this.#host.record({
      version: 2,
      kind: "dialog-end",
      dialog: open.record.id,
      native: BUDGET_NATIVE,
      execution: open.record.execution,
      state,
      reason,
      answeredBy: by,
      ...(said === undefined ? {} : { message: said }),
      budget,
      at: new Date().toISOString(),
    });
    const message: Dialog = {
      ...open.message,
      state,
      reason,
      answeredBy: by,
      ...(said === undefined ? {} : { message: said }),
      budget,
    };
    this.#host.broadcast(message);
    return message;
  }
}

/** Checked limits (parseBudgetLimits) as the meter keeps them; none when absent. */
export function limitsOf(limits: BudgetLimits | undefined): Limits {
  if (limits === undefined) return NO_LIMITS;
  return {
    cents: limits.usd === undefined ? null : centsOf(limits.usd),
    tokens: limits.tokens ?? null,
  };
}

/**
 * The guard's host over a controller's current execution: its tracker says whether a run is
 * on, its stop chain interrupts (unless a stop already runs: that one ends the run anyway).
 */
export function budgetHost(c: {
  exec(): Execution | null;
  record(record: ControlRecord): void;
  broadcast(message: Dialog): void;
  broadcastState(): void;
}): BudgetHost {
  return {
    execution: () => c.exec()?.execution ?? null,
    hasTurn: () => c.exec()?.tracker.hasTurn() ?? false,
    interrupt: () => {
      const e = c.exec();
      if (e === null || e.closers.has("interrupt") || e.stops.escalationRunning) return;
      // The stop chain records its own outcome (a stop record); nothing here can add to it.
      e.stops.interrupt().catch(() => {});
    },
    record: c.record,
    broadcast: c.broadcast,
    broadcastState: c.broadcastState,
  };
}
