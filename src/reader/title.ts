// Titles for catalogue rows, shared by the harnesses: a title is a recorded name or the first
// prompt, whitespace collapsed and clipped to 120 code points, and is found in the file's first
// and last bytes only (a catalogue never reads a whole file).

const TITLE_CHARS = 120;

/** `s` with whitespace runs as one space, trimmed, clipped to a title's length; "" stays "". */
export function titleOf(s: string): string {
  return clip(s.replace(/\s+/g, " ").trim());
}

/** A title-length prefix, cut on a code point boundary. */
function clip(s: string): string {
  // This many UTF-16 units hold at least TITLE_CHARS + 1 code points: enough to know to clip.
  const cps = Array.from(s.slice(0, (TITLE_CHARS + 1) * 2));
  return cps.length > TITLE_CHARS ? `${cps.slice(0, TITLE_CHARS).join("")}…` : cps.join("");
}

/**
 * The JSON objects of the lines of `buf` that contain `needle` (bytes), in order: lines without
 * it are not parsed, so a tail of large tool outputs costs a search, not a parse.
 */
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
