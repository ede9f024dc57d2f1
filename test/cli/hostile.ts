// What must never reach a terminal raw (seed: The terminal), stated independently of
// src/present/visible.ts so the tests check it rather than restate it.
import { codePointMarker } from "../../src/present/visible.ts";

/** Whether a code point (a lone surrogate counts as one) may not be printed raw. */
export function isForbidden(cp: number, newlines = false): boolean {
  if (cp === 0x09 || cp === 0x200c || cp === 0x200d) return false;
  if (cp === 0x0a) return newlines;
  return (
    cp < 0x20 ||
    (cp >= 0x7f && cp <= 0x9f) ||
    [0x061c, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff].includes(cp) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0xe0000 && cp <= 0xe007f)
  );
}

/** The first forbidden code point in `s` as `<U+XXXX>`, or null when there is none. */
export function firstForbidden(s: string, newlines = false): string | null {
  for (let i = 0; i < s.length; i++) {
    const cp = s.codePointAt(i) ?? 0;
    if (isForbidden(cp, newlines)) return codePointMarker(cp);
    if (cp > 0xffff) i++;
  }
  return null;
}
