// How a recorded time reads in the terminal: the catalogue's rows, a part's header and a search
// hit all say it the same way.

/** `2026-01-01 10:00:01 UTC` for an ISO time in UTC; anything else as written. */
export function formatTime(ts: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(\.\d+)?Z$/.exec(ts);
  return m ? `${m[1]} ${m[2]} UTC` : ts;
}
