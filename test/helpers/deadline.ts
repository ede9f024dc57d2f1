// Waiting with a deadline, so a condition that never comes fails its test instead of hanging
// the runner.

/**
 * The deadline of a wait on something that will happen (a child's line or exit, a server's
 * answer, a browser's page, a socket's frame): long, because it only turns a hang into a
 * failure. `npm test` runs several files at once on two cores shared with other work, where a
 * step that takes a second alone has taken over 30 s (docs/testing.md). Use it, or a multiple,
 * for every such wait; a shorter figure belongs only to a wait that is meant to run out (a
 * check that something does not happen), said so next to it.
 */
export const DEADLINE_MS = 60_000;

/** Polls `cond` every 5 ms until it holds; throws after `ms`. */
export async function until(cond: () => boolean, what: string, ms = DEADLINE_MS): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`deadline: ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** `p`, or a rejection after `ms`. */
export async function within<T>(p: Promise<T>, what: string, ms = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`deadline: ${what} after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The timeout of a test that waits on a real engine, a browser, a proxy or many children, when
 * it names one: such a test takes seconds alone and minutes on a busy machine. Every other test
 * has the runner's 180 s (scripts/test.ts); like DEADLINE_MS, it only turns a hang into a failure.
 */
export const SLOW_TEST_MS = 300_000;
