// How a person types a budget limit, the one rule of every face that reads one: `control
// --budget-usd/--budget-tokens` (src/cli/control-args.ts), attach's ^Y raise from its draft line
// (src/cli/attach-budget.ts) and the Console's Raise box (src/board/console/live-budget.js, which
// takes this file through the present.js bundle). Pure, and free of Node, so the Console's
// bundle can carry it; the controller checks what arrives again (protocol.ts parseBudgetLimits),
// this only says first, in words, what can only be refused.
import { type BudgetFigures, usdUpText } from "./budget-meter.ts";
import { formatCount } from "./usage-report.ts";

/** The largest USD limit (a typo's guard, not a policy) and the largest token limit. */
export const MAX_BUDGET_USD = 1_000_000;
export const MAX_BUDGET_TOKENS = 1_000_000_000_000;

/**
 * A USD limit as a person types it ("5", "2.50", "$0.30"), as whole cents, else a message that
 * says what a limit looks like.
 */
export function parseUsdText(
  text: string,
): { ok: true; cents: number } | { ok: false; message: string } {
  const m = /^\$?(\d{1,7})(?:\.(\d{1,2}))?$/.exec(text.trim());
  const cents = m ? Number(m[1]) * 100 + Number((m[2] ?? "").padEnd(2, "0")) : 0;
  if (!m || cents <= 0 || cents > MAX_BUDGET_USD * 100) {
    return {
      ok: false,
      message: `${JSON.stringify(text)} is not an amount of dollars above 0 and at most ${MAX_BUDGET_USD}, in whole cents, e.g. 5 or 2.50`,
    };
  }
  return { ok: true, cents };
}

/** A token limit as a person types it ("200000"; "200_000" and "2e5" are refused), else a message. */
export function parseTokensText(
  text: string,
): { ok: true; tokens: number } | { ok: false; message: string } {
  const n = /^\d{1,13}$/.test(text.trim()) ? Number(text.trim()) : 0;
  if (!Number.isSafeInteger(n) || n <= 0 || n > MAX_BUDGET_TOKENS) {
    return {
      ok: false,
      message: `${JSON.stringify(text)} is not a whole number of tokens above 0 and at most ${MAX_BUDGET_TOKENS}`,
    };
  }
  return { ok: true, tokens: n };
}

/** New limits as a raise sends them (protocol.ts BudgetLimits). */
export type RaiseLimits = { usd?: number; tokens?: number };

/**
 * Where the amount is typed and what sends it, in the face's own words: attach's draft line and
 * ^Y, the Console's box and its Raise button.
 */
export type RaiseWords = { field: string; send: string };

export const ATTACH_RAISE_WORDS: RaiseWords = { field: "the draft", send: "^Y" };

/** What to type for a raise, given which limits the dialog has (its figures, or none). */
export function raiseHint(b: BudgetFigures | null, words: RaiseWords = ATTACH_RAISE_WORDS): string {
  const usd = b !== null && b.limit.usd !== null;
  const tokens = b !== null && b.limit.tokens !== null;
  const where = words.field;
  if (tokens && !usd) return `type a new token limit in ${where} (e.g. "50000 tokens")`;
  if (usd && !tokens) return `type a new limit in ${where} (e.g. "5" or "$2.50")`;
  return `type new limits in ${where} (e.g. "$2.50", "50000 tokens", or "$2.50, 50000 tokens")`;
}

/**
 * A typed amount read as new limits: "$2.50" and "2.50" are dollars, "20000 tokens" is tokens,
 * both may be given separated by a comma or "and". A bare number is the one kind the dialog
 * limits; when it limits both, a bare number is dollars only with a "$" (no guessing which).
 * A new limit must be above what was spent (the controller refuses it otherwise; said here
 * first, so nothing is sent that can only be refused).
 */
export function parseRaise(
  typed: string,
  b: BudgetFigures | null,
  words: RaiseWords = ATTACH_RAISE_WORDS,
): { ok: true; limits: RaiseLimits; words: string } | { ok: false; message: string } {
  const text = typed.trim();
  const hint = raiseHint(b, words);
  if (text === "") return { ok: false, message: `nothing raised: ${hint}, then ${words.send}` };
  const onlyTokens = b !== null && b.limit.tokens !== null && b.limit.usd === null;
  const both = b !== null && b.limit.tokens !== null && b.limit.usd !== null;
  const limits: RaiseLimits = {};
  for (const raw of text.split(/\s*(?:,|\band\b)\s*/i)) {
    const part = raw.trim();
    if (part === "") continue;
    const tokensPart = /^(.*?)\s*tokens?$/i.exec(part);
    const bareNumber = /^\d+(?:\.\d+)?$/.test(part);
    // Where the dialog limits only tokens, whatever is not written as dollars is read as tokens,
    // so an unreadable amount is told what a token limit looks like.
    if (tokensPart !== null || (onlyTokens && !part.startsWith("$"))) {
      const parsed = parseTokensText(tokensPart?.[1] ?? part);
      if (!parsed.ok || limits.tokens !== undefined) {
        return {
          ok: false,
          message: `nothing raised: ${parsed.ok ? "tokens given twice" : parsed.message}; ${hint}`,
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
        message: `nothing raised: ${parsed.ok ? "dollars given twice" : parsed.message}; ${hint}`,
      };
    }
    limits.usd = parsed.cents / 100;
  }
  if (limits.usd === undefined && limits.tokens === undefined) {
    return { ok: false, message: `nothing raised: ${hint}, then ${words.send}` };
  }
  const said: string[] = [];
  if (limits.usd !== undefined) {
    const spent = b?.spent.usd ?? 0;
    if (Math.round(limits.usd * 1e9) <= Math.round(spent * 1e9)) {
      return {
        ok: false,
        message: `nothing raised: ${usdUpText(limits.usd)} is not above the ${usdUpText(spent)} spent; type a larger amount`,
      };
    }
    said.push(usdUpText(limits.usd));
  }
  if (limits.tokens !== undefined) {
    const spent = b?.spent.tokens ?? 0;
    if (limits.tokens <= spent) {
      return {
        ok: false,
        message: `nothing raised: ${formatCount(limits.tokens)} tokens is not above the ${formatCount(spent)} spent; type a larger number`,
      };
    }
    said.push(`${formatCount(limits.tokens)} tokens`);
  }
  return { ok: true, limits, words: said.join(", ") };
}
