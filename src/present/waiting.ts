// A waiting time in words, the same in the terminal's inbox and the Console's (issue 27).

/** "3 s", "2 min", "1 h", "1 h 5 min", "3 days". */
export function waited(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h >= 48) return `${Math.floor(h / 24)} days`;
  return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
}
