// The budget dialog as `conversation attach` shows it (docs/usage.md, Budgets; docs/control-
// protocol.md, Budget dialogs): the controller's budget is reached, it asks whether to raise it
// or stop. The panel says what was spent of which limit (the one meter text of
// present/budget-meter.ts) and the keys: ^Y raises to the amount typed in the draft line, ^N
// stops here. The amount is typed, not picked, so a raise is always a figure the person wrote;
// an empty or unreadable draft sends nothing and says what to type. Pure, like
// attach-approvals.ts, which shares the panel and the keys with it.

import { parseTokensText, parseUsdText } from "../control/controller/budget.ts";
import type { BudgetLimits, BudgetState, Dialog } from "../control/protocol.ts";
import { budgetMeterText, usdUpText } from "../present/budget-meter.ts";
import { formatCount } from "../present/usage-report.ts";

/** The figures a budget dialog carries, or none (a malformed push shows only its title). */
function figures(d: Dialog): BudgetState | null {
  return d.budget ?? null;
}

/** What to type for a raise, given which limits the dialog has. */
export function raiseHint(d: Dialog): string {
  const b = figures(d);
  const usd = b?.limit.usd !== null && b?.limit.usd !== undefined;
  const tokens = b?.limit.tokens !== null && b?.limit.tokens !== undefined;
  if (tokens && !usd) return 'type a new token limit in the draft (e.g. "50000 tokens")';
  if (usd && !tokens) return 'type a new limit in the draft (e.g. "5" or "$2.50")';
  return 'type new limits in the draft (e.g. "$2.50", "50000 tokens", or "$2.50, 50000 tokens")';
}

/**
 * The draft line read as new limits: "$2.50" and "2.50" are dollars, "20000 tokens" is tokens,
 * both may be given separated by a comma or "and". A bare number is the one kind the dialog
 * limits; when it limits both, a bare number is dollars only with a "$" (no guessing which).
 * A new limit must be above what was spent (the controller refuses it otherwise; said here
 * first, so nothing is sent that can only be refused).
 */
export function parseRaise(
  draft: string,
  d: Dialog,
): { ok: true; limits: BudgetLimits; words: string } | { ok: false; message: string } {
  const text = draft.trim();
  if (text === "") return { ok: false, message: `nothing raised: ${raiseHint(d)}, then ^Y` };
  const b = figures(d);
  const onlyTokens = b !== null && b.limit.tokens !== null && b.limit.usd === null;
  const both = b !== null && b.limit.tokens !== null && b.limit.usd !== null;
  const limits: BudgetLimits = {};
  for (const raw of text.split(/\s*(?:,|\band\b)\s*/i)) {
    const part = raw.trim();
    if (part === "") continue;
    const tokensPart = /^(.*?)\s*tokens?$/i.exec(part);
    const bareNumber = /^\d+(?:\.\d+)?$/.test(part);
    if (tokensPart !== null || (bareNumber && onlyTokens)) {
      const parsed = parseTokensText(tokensPart?.[1] ?? part);
      if (!parsed.ok || limits.tokens !== undefined) {
        return {
          ok: false,
          message: `nothing raised: ${parsed.ok ? "tokens given twice" : parsed.message}; ${raiseHint(d)}`,
        };
      }
      limits.tokens = parsed.tokens;
      continue;
    }
    if (bareNumber && both) {
      return {
        ok: false,
        message: `nothing raised: "${part}" is dollars or tokens? write "$${part}" or "${part} tokens"`,
      };
    }
    const parsed = parseUsdText(part);
    if (!parsed.ok || limits.usd !== undefined) {
      return {
        ok: false,
        message: `nothing raised: ${parsed.ok ? "dollars given twice" : parsed.message}; ${raiseHint(d)}`,
      };
    }
    limits.usd = parsed.cents / 100;
  }
  if (limits.usd === undefined && limits.tokens === undefined) {
    return { ok: false, message: `nothing raised: ${raiseHint(d)}, then ^Y` };
  }
  const words: string[] = [];
  if (limits.usd !== undefined) {
    const spent = b?.spent.usd ?? 0;
    if (Math.round(limits.usd * 1e9) <= Math.round(spent * 1e9)) {
      return {
        ok: false,
        message: `nothing raised: ${usdUpText(limits.usd)} is not above the ${usdUpText(spent)} spent; type a larger amount`,
      };
    }
    words.push(usdUpText(limits.usd));
  }
  if (limits.tokens !== undefined) {
    const spent = b?.spent.tokens ?? 0;
    if (limits.tokens <= spent) {
      return {
        ok: false,
        message: `nothing raised: ${formatCount(limits.tokens)} tokens is not above the ${formatCount(spent)} spent; type a larger number`,
      };
    }
    words.push(`${formatCount(limits.tokens)} tokens`);
  }
  return { ok: true, limits, words: words.join(", ") };
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
  const by = d.answeredBy;
  const who =
    by === undefined
      ? null
      : by.connection === me
        ? `you (${by.actor})`
        : `${by.actor} (${by.connection})`;
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
