// Timing helpers for the benchmark: an exposed gc, a timer, and median/min/max of samples.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

export type Series = { n: number; median: number; min: number; max: number; samples: number[] };

setFlagsFromString("--expose-gc");
const exposed: unknown = runInNewContext("gc");
setFlagsFromString("--no-expose-gc");

/** A full collection between measurements, so one measurement's garbage is not the next's cost. */
export function gc(): void {
  if (typeof exposed === "function") exposed();
}

export function summarize(samples: number[]): Series {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { n: 0, median: Number.NaN, min: Number.NaN, max: Number.NaN, samples };
  const mid = n >> 1;
  const median = n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { n, median, min: sorted[0]!, max: sorted[n - 1]!, samples };
}

/** Milliseconds `fn` takes, and what it returns. */
export function timed<T>(fn: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = fn();
  return { ms: performance.now() - start, value };
}

export async function timedAsync<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}
