// Listeners of a client's pushes (events, dialogs, state, issues, close): each subscribe
// returns its detach function, and a throwing listener cannot stop the others.

export function subscribe<T>(fns: Set<(v: T) => void>, fn: (v: T) => void): () => void {
  fns.add(fn);
  return () => {
    fns.delete(fn);
  };
}

// A throwing listener is a bug; it is rethrown outside the read loop so the other listeners,
// and the lines after it, are still handled.
export function emit<T>(fns: Set<(v: T) => void>, value: T): void {
  for (const fn of [...fns]) {
    try {
      fn(value);
    } catch (e) {
      queueMicrotask(() => {
        throw e;
      });
    }
  }
}
