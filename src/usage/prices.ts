// Prices of Claude models, for the replies whose file records no cost (Claude Code since 1.0;
// Pi records the cost of each reply itself, and that figure is used as written). The table is
// pinned here, never fetched: usage works offline and gives the same figures on every machine.
//
// Source: LiteLLM's model_prices_and_context_window.json as ccusage 18.0.11 (published
// 2026-05-17) carries it for its `--offline` mode, the peer this command agrees with
// (docs/usage.md). Same models, same order, same per-token USD prices, so a reply is priced as
// ccusage prices it. Each row: model, input, output, cache write, cache read per token; then,
// where the model has them, the prices above 200k tokens of a kind in one request; then the
// factor of `speed: "fast"` replies.

/** USD per token: input, output, cache write (creation), cache read. null: not priced. */
type Rates = readonly [number | null, number | null, number | null, number | null];
type Row = readonly [string, ...Rates] | readonly [string, ...Rates, Rates | null, number?];

/** A request's tokens of one kind above this count are priced at the "above" rate. */
export const TIER_TOKENS = 200_000;

export const PRICES_SOURCE =
  "LiteLLM model prices as pinned by ccusage 18.0.11 (2026-05-17), offline";

// Rates many rows share are named once, for the family whose price they are; a row still reads
// as the source's row (its name, then those figures).
const SONNET: Rates = [0.000003, 0.000015, 0.00000375, 3e-7];
const SONNET_3_5_ABOVE: Rates = [0.000006, 0.00003, 0.0000075, 6e-7];
const SONNET_4_ABOVE: Rates = [0.000006, 0.0000225, 0.0000075, 6e-7];
const OPUS: Rates = [0.000015, 0.000075, 0.00001875, 0.0000015];
const OPUS_4_5: Rates = [0.000005, 0.000025, 0.00000625, 5e-7];
const HAIKU_4_5: Rates = [0.000001, 0.000005, 0.00000125, 1e-7];

const ROWS: readonly Row[] = [
  ["anthropic.claude-3-5-haiku-20241022-v1:0", 8e-7, 0.000004, 0.000001, 8e-8],
  ["anthropic.claude-haiku-4-5-20251001-v1:0", ...HAIKU_4_5],
  ["anthropic.claude-haiku-4-5@20251001", ...HAIKU_4_5],
  ["anthropic.claude-3-5-sonnet-20240620-v1:0", ...SONNET, SONNET_3_5_ABOVE],
  ["anthropic.claude-3-5-sonnet-20241022-v2:0", ...SONNET, SONNET_3_5_ABOVE],
  ["anthropic.claude-3-7-sonnet-20240620-v1:0", 0.0000036, 0.000018, 0.0000045, 3.6e-7],
  ["anthropic.claude-3-7-sonnet-20250219-v1:0", ...SONNET],
  ["anthropic.claude-3-haiku-20240307-v1:0", 2.5e-7, 0.00000125, 3.125e-7, 2.5e-8],
  ["anthropic.claude-3-opus-20240229-v1:0", ...OPUS],
  ["anthropic.claude-3-sonnet-20240229-v1:0", ...SONNET],
  ["anthropic.claude-instant-v1", 8e-7, 0.0000024, null, null],
  ["anthropic.claude-opus-4-1-20250805-v1:0", ...OPUS],
  ["anthropic.claude-opus-4-20250514-v1:0", ...OPUS],
  ["anthropic.claude-opus-4-5-20251101-v1:0", ...OPUS_4_5],
  ["anthropic.claude-opus-4-6-v1", ...OPUS_4_5],
  ["anthropic.claude-opus-4-7", ...OPUS_4_5],
  ["anthropic.claude-sonnet-4-6", ...SONNET],
  ["anthropic.claude-sonnet-4-20250514-v1:0", ...SONNET, SONNET_4_ABOVE],
  ["anthropic.claude-sonnet-4-5-20250929-v1:0", ...SONNET, SONNET_4_ABOVE],
  ["anthropic.claude-v1", 0.000008, 0.000024, null, null],
  ["anthropic.claude-v2:1", 0.000008, 0.000024, null, null],
  ["claude-haiku-4-5-20251001", ...HAIKU_4_5],
  ["claude-haiku-4-5", ...HAIKU_4_5],
  ["claude-3-7-sonnet-20250219", ...SONNET],
  ["claude-3-haiku-20240307", 2.5e-7, 0.00000125, 3e-7, 3e-8],
  ["claude-3-opus-20240229", ...OPUS],
  ["claude-4-opus-20250514", ...OPUS],
  ["claude-4-sonnet-20250514", ...SONNET, SONNET_4_ABOVE],
  ["claude-sonnet-4-5", ...SONNET, SONNET_4_ABOVE],
  ["claude-sonnet-4-5-20250929", ...SONNET, SONNET_4_ABOVE],
  ["claude-sonnet-4-6", ...SONNET],
  ["claude-sonnet-4-5-20250929-v1:0", ...SONNET, SONNET_4_ABOVE],
  ["claude-opus-4-1", ...OPUS],
  ["claude-opus-4-1-20250805", ...OPUS],
  ["claude-opus-4-20250514", ...OPUS],
  ["claude-opus-4-5-20251101", ...OPUS_4_5],
  ["claude-opus-4-5", ...OPUS_4_5],
  ["claude-opus-4-6", ...OPUS_4_5, null, 6],
  ["claude-opus-4-6-20260205", ...OPUS_4_5, null, 6],
  ["claude-opus-4-7", ...OPUS_4_5, null, 6],
  ["claude-opus-4-7-20260416", ...OPUS_4_5, null, 6],
  ["claude-sonnet-4-20250514", ...SONNET, SONNET_4_ABOVE],
];

export type Price = {
  /** The table's name for the model (it may differ from the name the reply gives). */
  model: string;
  base: Rates;
  above: Rates | null;
  fast: number;
};

const TABLE: readonly Price[] = ROWS.map((r) => ({
  model: r[0],
  base: [r[1], r[2], r[3], r[4]],
  above: (r[5] as Rates | null | undefined) ?? null,
  fast: (r[6] as number | undefined) ?? 1,
}));
const BY_NAME = new Map(TABLE.map((p) => [p.model, p]));
const matched = new Map<string, Price | null>();

/**
 * The price of a model as a reply names it: the row of that exact name, else the first row
 * (in the table's order) whose name contains it or is contained in it, case aside ("claude-3-5-
 * sonnet-20241022" is the Bedrock row's). null when none: the reply counts no cost, and the
 * report names the model (docs/usage.md).
 */
export function priceOf(model: string): Price | null {
  const hit = matched.get(model);
  if (hit !== undefined) return hit;
  let found = BY_NAME.get(model) ?? null;
  if (found === null && model !== "") {
    const lower = model.toLowerCase();
    found =
      TABLE.find((p) => {
        const name = p.model.toLowerCase();
        return name.includes(lower) || lower.includes(name);
      }) ?? null;
  }
  matched.set(model, found);
  return found;
}

export type Tokens = { input: number; output: number; cacheRead: number; cacheWrite: number };

/** USD for one reply's tokens at `price`: each kind tiered on its own, times the fast factor. */
export function costAt(price: Price, t: Tokens, fast: boolean): number {
  const [i, o, w, r] = price.base;
  const up = price.above ?? [null, null, null, null];
  const cost =
    tiered(t.input, i, up[0]) +
    tiered(t.output, o, up[1]) +
    tiered(t.cacheWrite, w, up[2]) +
    tiered(t.cacheRead, r, up[3]);
  return fast ? cost * price.fast : cost;
}

function tiered(tokens: number, base: number | null, above: number | null): number {
  if (tokens <= 0) return 0;
  if (tokens > TIER_TOKENS && above !== null) {
    return (tokens - TIER_TOKENS) * above + (base === null ? 0 : TIER_TOKENS * base);
  }
  return base === null ? 0 : tokens * base;
}
