// The budget dialog as `conversation attach` shows it (docs/usage.md, Budgets; docs/control-
// protocol.md, Budget dialogs): the controller's budget is reached, it asks whether to raise it
// or stop. The panel says what was spent of which limit (the one meter text of
// present/budget-meter.ts) and the keys: ^Y raises to the amount typed in the draft line, ^N
// stops here. The amount is typed, not picked, so a raise is always a figure the person wrote;
// an empty or unreadable draft sends nothing and says what to type. Pure, like
// attach-approvals.ts, which shares the panel and the keys with it.

import type { BudgetLimits, BudgetState, Dialog } from "../control/protocol.ts";
import { budgetMeterText } from "../present/budget-meter.ts";
import {
  parseRaise as sharedParseRaise,
  raiseHint as sharedRaiseHint,
} from "../present/budget-raise.ts";
import { answeredByWords } from "./dialog-answerer.ts";

/** The figures a budget dialog carries, or none (a malformed push shows only its title). */
function figures(d: Dialog): BudgetState | null {
  return d.budget ?? null;
}

/** What to type for a raise, given which limits the dialog has. */
export function raiseHint(d: Dialog): string {
  return sharedRaiseHint(figures(d));
}

/** The draft line read as new limits, by the one rule (present/budget-raise.ts parseRaise). */
export function parseRaise(
  draft: string,
  d: Dialog,
): { ok: true; limits: BudgetLimits; words: string } | { ok: false; message: string } {
  return sharedParseRaise(draft, figures(d));
}

/** The open budget dialog in words: the controller's title, else what was spent of what. */
export function budgetHead(d: Dialog): string {
  const b = figures(d);
  if (d.title.trim() !== "") return d.title;
  return b === null ? "budget reached" : budgetMeterText(b);
}

/** The figures line under the title: what was spent of each limit (the status line's words). */
export function budgetFiguresLine(d: Dialog): string | null {
  const b = figures(d);
  return b === null ? null : budgetMeterText(b);
}

/** The keys for an open budget dialog when this connection controls. */
export function budgetKeys(d: Dialog): string {
  return `^Y raises to the amount in the draft · ^N stops here (${raiseHint(d)})`;
}

/** How a budget dialog ended, in words: the controller's reason says who and to what. */
export function budgetEndedWords(d: Dialog, me: string | null): string {
  const who = answeredByWords(d, me);
  const after = d.budget === undefined ? "" : ` — ${budgetMeterText(d.budget)}`;
  if (d.state === "allowed") {
    return `budget raised${who === null ? "" : ` by ${who}`}: the next prompt runs${after}`;
  }
  if (d.state === "denied") {
    return `budget not raised: stopped${who === null ? "" : ` by ${who}`}; the next prompt asks again`;
  }
  return `budget dialog closed${d.reason ? ` (${d.reason})` : ""}`;
}

/** What ^Y or ^N does to an open budget dialog: what to send, or why nothing is sent. */
export type BudgetKey =
  | { send: "raise"; limits: BudgetLimits; saying: string }
  | { send: "stop"; saying: string }
  | { send: null; saying: string };

/** ^Y raises to the draft's amount (read by parseRaise); ^N stops; the draft is not sent. */
export function budgetKey(decision: "allow" | "deny", draft: string, d: Dialog): BudgetKey {
  if (decision === "deny") return { send: "stop", saying: "stopping here…" };
  const raise = parseRaise(draft, d);
  if (!raise.ok) return { send: null, saying: raise.message };
  return { send: "raise", limits: raise.limits, saying: `raising the budget to ${raise.words}…` };
}
