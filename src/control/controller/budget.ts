// A controller's budget arithmetic (issue 28 item 4): what its engines spent, counted by the one
// usage rule (src/usage/lines.ts: each reply once, the repeated lines of one Claude reply kept
// at their largest counts, Claude priced from the pinned table), and the limits it keeps.
//
// Money is counted in whole nano-dollars and limits in whole cents, so a comparison is exact:
// float sums of per-reply costs drift (0.3 + 0.6 is 0.8999999999999999), and a budget of $0.90
// must be reached by replies of $0.30 and $0.60, not missed by 1e-16. Tokens are every kind together (input, output,
// cache read, cache write), the `total` of `conversation usage`.
import { usdUpText } from "../../present/budget-meter.ts";
import { formatCount } from "../../present/usage-report.ts";
import { keepLargest, type Spend } from "../../usage/lines.ts";
import type { BudgetLimits, BudgetState } from "../protocol.ts";

// How a limit is typed is a rule of its own, shared with attach and the Console's bundle.
export { parseTokensText, parseUsdText } from "../../present/budget-raise.ts";

const NANO_PER_USD = 1_000_000_000;
const NANO_PER_CENT = 10_000_000;
/** How many replies' keys are remembered: a reply's repeated lines come one after another. */
const KEYS_KEPT = 256;

/** Limits as kept: whole cents and tokens, null for no limit of that kind. */
export type Limits = { cents: number | null; tokens: number | null };

export const NO_LIMITS: Limits = { cents: null, tokens: null };

/** Dollars (at most two decimals) as whole cents; null when it is not whole cents. */
export function centsOf(usd: number): number | null {
  if (!Number.isFinite(usd)) return null;
  const cents = Math.round(usd * 100);
  return cents / 100 === usd ? cents : null;
}

/** "$12.34" from whole cents. */
export function centsText(cents: number): string {
  return usdUpText(cents / 100);
}

/**
 * Spent dollars for a person: to the cent, rounded up (a budget must never look unreached when
 * it is reached), "$0" for nothing.
 */
export function spentText(nano: number): string {
  return usdUpText(nano / NANO_PER_USD);
}

/** Which limit is reached: spent at or past it. */
export type Reached = "usd" | "tokens";

export class BudgetMeter {
  #limits: Limits;
  #nano = 0;
  #tokens = 0;
  /** The replies counted lately, by key, as counted (their largest counts so far). */
  readonly #byKey = new Map<string, Spend>();

  constructor(limits: Limits = NO_LIMITS) {
    this.#limits = { ...limits };
  }

  get limits(): Limits {
    return { ...this.#limits };
  }

  /** Whether any limit is set: only then do states carry the meter. */
  get limited(): boolean {
    return this.#limits.cents !== null || this.#limits.tokens !== null;
  }

  get spentNano(): number {
    return this.#nano;
  }

  get spentTokens(): number {
    return this.#tokens;
  }

  /**
   * Counts one reply's spend; a later line of a reply already counted (the same key) adds only
   * what its largest counts add. True when the figures changed.
   */
  add(spend: Spend): boolean {
    const before = { nano: this.#nano, tokens: this.#tokens };
    if (spend.key === null) {
      this.#count(spend, 1);
    } else {
      const had = this.#byKey.get(spend.key);
      if (had === undefined) {
        const own = { ...spend };
        this.#byKey.set(spend.key, own);
        if (this.#byKey.size > KEYS_KEPT) {
          const oldest = this.#byKey.keys().next().value;
          if (oldest !== undefined) this.#byKey.delete(oldest);
        }
        this.#count(own, 1);
      } else {
        this.#count(had, -1);
        keepLargest(had, spend);
        this.#count(had, 1);
      }
    }
    return this.#nano !== before.nano || this.#tokens !== before.tokens;
  }

  /** The limit spent reached, USD first; null while both are above what was spent. */
  reached(): Reached | null {
    const { cents, tokens } = this.#limits;
    if (cents !== null && this.#nano >= cents * NANO_PER_CENT) return "usd";
    if (tokens !== null && this.#tokens >= tokens) return "tokens";
    return null;
  }

  /**
   * Why `change` is not a raise that lets work go on: a new limit at or below what was spent,
   * in words; null when every limit it leaves is above the spending.
   */
  refuseRaise(change: BudgetLimits): string | null {
    const next = this.merged(change);
    if (next.cents !== null && next.cents * NANO_PER_CENT <= this.#nano) {
      return `the USD limit ${centsText(next.cents)} is not above what was spent (${spentText(this.#nano)}); give a larger one`;
    }
    if (next.tokens !== null && next.tokens <= this.#tokens) {
      return `the token limit ${formatCount(next.tokens)} is not above what was spent (${formatCount(this.#tokens)} tokens); give a larger one`;
    }
    return null;
  }

  /** The limits `change` would leave: its kinds replaced, the others kept. */
  merged(change: BudgetLimits): Limits {
    let cents = this.#limits.cents;
    if (change.usd !== undefined) {
      // parseBudgetLimits let only whole cents through.
      cents = centsOf(change.usd);
      if (cents === null) throw new Error("a USD limit that is not whole cents reached the meter");
    }
    return { cents, tokens: change.tokens ?? this.#limits.tokens };
  }

  set(change: BudgetLimits): void {
    this.#limits = this.merged(change);
  }

  /** The wire's figures (protocol.ts BudgetState). */
  state(): BudgetState {
    return {
      spent: { usd: this.#nano / NANO_PER_USD, tokens: this.#tokens },
      limit: {
        usd: this.#limits.cents === null ? null : this.#limits.cents / 100,
        tokens: this.#limits.tokens,
      },
    };
  }

  /** "$0.31 of $0.30, 1,234 of 2,000 tokens": each limit set, with what was spent of it. */
  describe(): string {
    const parts: string[] = [];
    if (this.#limits.cents !== null) {
      parts.push(`${spentText(this.#nano)} of ${centsText(this.#limits.cents)}`);
    }
    if (this.#limits.tokens !== null) {
      parts.push(`${formatCount(this.#tokens)} of ${formatCount(this.#limits.tokens)} tokens`);
    }
    return parts.length > 0
      ? parts.join(", ")
      : `${spentText(this.#nano)}, ${formatCount(this.#tokens)} tokens (no limit)`;
  }

  #count(s: Spend, sign: 1 | -1): void {
    this.#nano += sign * Math.round(s.cost * NANO_PER_USD);
    this.#tokens += sign * (s.input + s.output + s.cacheRead + s.cacheWrite);
  }
}
