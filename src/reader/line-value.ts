// An entry line's JSON value with its long string values decoded outside JSON.parse. A page
// parses every line it shows, and most of a session's bytes are a few long strings (tool
// output: 86% of a Pi session's bytes); JSON.parse reads those a character at a time, and the
// line they are decoded in becomes a two-byte string when any character of it is not Latin-1.
// Here the module reads the line's strings and writes the long values' characters as UTF-16 or
// Latin-1 (wasm/long-strings.ts), each becomes a string by a copy, and JSON.parse reads the rest
// of the line, where each long value stands as a short marker; a walk of the parsed value then
// puts each back in its marker's place.
//
// The value is exactly JSON.parse's of the line's UTF-8 text: a marker replaces a string body
// by another valid one, so the text parses (or fails) exactly as the line does, keys and their
// order, duplicates and `__proto__` included; an escaped surrogate, paired or not, is its code
// unit, as JSON.parse keeps it. The markers carry a random nonce of the process, which no line
// can know to imitate. A line not valid UTF-8 is parsed whole, so the decoder's repairs need
// not be matched.
import { randomBytes } from "node:crypto";
import { listLongStrings, longs } from "./wasm/long-strings.ts";

/** Lines shorter than this are parsed whole: too little of them can be long values. */
export const LONG_LINE_MIN_BYTES = 2048;

/** A marker is NONCE and its value's index: ASCII, so the text around it stays one-byte. */
const NONCE = `~${randomBytes(16).toString("hex")}~`;

/**
 * The JSON value of the line `buf[start, end)`, with the value at `[cutFrom, cutTo)` read as
 * `null` (a cut is a whole value; before `start` for none), as JSON.parse of its text gives it;
 * null when this way does not apply (a short line, no long value, not valid UTF-8, not JSON,
 * no WebAssembly) and the caller decodes and parses the line whole.
 */
export function parseLongValues(
  buf: Buffer,
  start: number,
  end: number,
  cutFrom = -1,
  cutTo = -1,
): { value: unknown } | null {
  if (end - start < LONG_LINE_MIN_BYTES) return null;
  const count = listLongStrings(buf, start, end, cutFrom, cutTo);
  if (count <= 0) return null;
  // Its strings are UTF-8 (the module checked), so the text between long values decodes as it
  // does within the whole line (each piece ends at an ASCII byte), and any other byte that is
  // not ASCII lies outside strings, where JSON.parse refuses it as it refuses the line.
  const pieces: string[] = new Array(count);
  let text = "";
  let pos = start;
  let cut = cutFrom >= start;
  for (let i = 0; i < count; i++) {
    const s = start + longs.bodyStart(i);
    const e = start + longs.bodyEnd(i);
    if (cut && s > cutFrom) {
      text += `${buf.toString("utf8", pos, cutFrom)}null`;
      pos = cutTo;
      cut = false;
    }
    text += buf.toString("utf8", pos, s) + NONCE + i;
    pos = e;
    pieces[i] = longs.value(i);
  }
  if (cut) {
    text += `${buf.toString("utf8", pos, cutFrom)}null`;
    pos = cutTo;
  }
  text += buf.toString("utf8", pos, end);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return { value: putBack(value, pieces) };
}

/** The piece a string stands for, or undefined when it is not a marker. */
function pieceOf(v: string, pieces: string[]): string | undefined {
  if (v.length <= NONCE.length || !v.startsWith(NONCE)) return undefined;
  return pieces[Number(v.slice(NONCE.length))];
}

/**
 * `value` with each marker replaced by its piece, in place: a walk with its own stack (a line
 * nested as deep as JSON.parse takes is no deeper for it), which stops once every marker is back.
 * A marker may be gone (a duplicate key's earlier value): the walk then visits everything.
 */
function putBack(value: unknown, pieces: string[]): unknown {
  if (typeof value === "string") return pieceOf(value, pieces) ?? value;
  let left = pieces.length;
  const stack: unknown[] = [value];
  while (stack.length > 0 && left > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null) continue;
    const o = node as Record<string | number, unknown>;
    // An array by its indices; an object by its own keys, `__proto__` among them: JSON.parse
    // makes it an own data property, which an assignment then sets (never the prototype's setter).
    const keys = Array.isArray(node) ? null : Object.keys(o);
    const n = keys ? keys.length : (node as unknown[]).length;
    for (let i = 0; i < n; i++) {
      const k = keys ? keys[i]! : i;
      const v = o[k];
      if (typeof v === "string") {
        const p = pieceOf(v, pieces);
        if (p !== undefined) {
          o[k] = p;
          left--;
        }
      } else if (typeof v === "object" && v !== null) stack.push(v);
    }
  }
  return value;
}
