// Waiting with a deadline, so a condition that never comes fails its test instead of hanging
// the runner.

/** Polls `cond` every 5 ms until it holds; throws after `ms`. */
export async function until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`deadline: ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** `p`, or a rejection after `ms`. */
export async function within<T>(p: Promise<T>, what: string, ms = 20_000): Promise<T> {
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
