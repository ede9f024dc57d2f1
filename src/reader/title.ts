// Titles for catalogue rows, shared by the harnesses: a title is a recorded name or the first
// prompt, whitespace collapsed and clipped to 120 code points, and is found in the file's first
// and last bytes only (a catalogue never reads a whole file).

const TITLE_CHARS = 120;
/** A row's preview of its first prompt: two lines of a list at most, never the whole prompt. */
export const PREVIEW_CHARS = 240;

/** `s` with whitespace runs as one space, trimmed, clipped to a title's length; "" stays "". */
export function titleOf(s: string): string {
  return oneLine(s, TITLE_CHARS);
}

/** `s` on one line (whitespace runs as one space, trimmed), at most `max` code points and "…". */
export function oneLine(s: string, max: number): string {
  // Only a bounded prefix is looked at: a prompt can be megabytes long.
  return clip(
    s
      .trimStart()
      .slice(0, (max + 1) * 8)
      .replace(/\s+/g, " ")
      .trim(),
    max,
  );
}

/** A prefix of at most `max` code points, cut on a code point boundary. */
function clip(s: string, max: number): string {
  // This many UTF-16 units hold at least max + 1 code points: enough to know to clip.
  const cps = Array.from(s.slice(0, (max + 1) * 2));
  return cps.length > max ? `${cps.slice(0, max).join("")}…` : cps.join("");
}

/**
 * The JSON objects of the lines of `buf` that contain `needle` (bytes), in order: lines without
 * it are not parsed, so a tail of large tool outputs costs a search, not a parse.
 */
/** The last string `model` of a `type` record in `bufs` (in order) that `pick` finds. */
export function latestModel(
  bufs: (Buffer | null)[],
  needle: string,
  pick: (obj: Record<string, unknown>) => unknown,
): string | null {
  let found: string | null = null;
  for (const buf of bufs) {
    if (buf === null) continue;
    for (const obj of objectsWith(buf, needle)) {
      const m = pick(obj);
      if (typeof m === "string" && m !== "" && m.length <= MODEL_CHARS) found = m;
    }
  }
  return found;
}

/** A model id longer than this is not one (CHAT-01's bound on the row's `model`). */
export const MODEL_CHARS = 200;

export function* objectsWith(buf: Buffer, needle: string): Generator<Record<string, unknown>> {
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    const hit = buf.indexOf(needle, start);
    if (hit >= 0 && hit < end) {
      try {
        const v: unknown = JSON.parse(buf.toString("utf8", start, end));
        if (typeof v === "object" && v !== null && !Array.isArray(v))
          yield v as Record<string, unknown>;
      } catch {
        // A malformed line has no title to give.
      }
    } else if (hit < 0) {
      return;
    }
    start = end + 1;
  }
}
