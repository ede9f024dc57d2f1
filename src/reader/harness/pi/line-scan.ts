// A validating JSON scanner for the reader's index pass. It learns what the index needs of a
// line (is it JSON, is it an object, its top-level type/id/parentId) without building the
// value: string bodies, which are most of a Pi line's bytes, are skipped four bytes at a time,
// and only the few strings the index keeps are decoded. It agrees exactly with
// `JSON.parse(buf.toString("utf8", start, end))`; test/reader/harness/pi/line-scan.test.ts checks it
// against that on hand-written cases and many thousands of fuzzed lines.
//
// Why bytes suffice: UTF-8 decoding (with U+FFFD for invalid sequences) maps every byte below
// 0x80 to itself and never lets an invalid sequence swallow one, and it maps bytes from 0x80 up
// only to characters from U+0080 up. JSON's grammar outside strings is all ASCII, and inside a
// string any character from U+0020 up other than `"` and `\` stands for itself. So a byte from
// 0x80 up is a syntax error outside a string and harmless inside one, exactly as its decoded
// character would be (a leading UTF-8 BOM is therefore rejected, as JSON.parse rejects U+FEFF).
// V8's JSON.parse keeps its own stack, so it accepts any nesting depth memory allows; this
// scanner's explicit stack does the same.
import { constants } from "node:buffer";
import {
  CLOSE_ARR,
  CLOSE_OBJ,
  COLON,
  COMMA,
  DIGIT_0,
  DIGIT_9,
  decodeString,
  lineWords,
  MINUS,
  OPEN_ARR,
  OPEN_OBJ,
  QUOTE,
  sawEscape,
  scanLiteral,
  scanNumber,
  scanString,
  skipWs,
} from "../../json-scan.ts";
import {
  ESCAPED,
  lineTokens,
  OFFSET,
  TOKEN_KEY,
  TOKEN_NULL,
  TOKEN_OBJECT,
  TOKEN_STRING,
  tape,
  watchedKeys,
} from "../../wasm/line-tokens.ts";

/** What the index needs to know of one line. */
export type LineFacts =
  /** Not valid JSON: `JSON.parse` would throw. */
  | { json: false }
  /** Valid JSON, but an array, number, string, true, false or null. */
  | { json: true; object: false }
  /**
   * A JSON object. Each of `type`, `id` and `parentId` is the value `JSON.parse` gives that
   * top-level key when it is a string or null (the last duplicate wins), `NON_STRING` when it
   * is a number, boolean, object or array, and undefined when the key is absent.
   */
  | {
      json: true;
      object: true;
      type: unknown;
      id: unknown;
      parentId: unknown;
      hasType: boolean;
      hasId: boolean;
      hasParentId: boolean;
    };

/** Stands for a number, boolean, object or array value of type, id or parentId. */
export const NON_STRING: Readonly<{ nonString: true }> = Object.freeze({ nonString: true });

const NOT_JSON: LineFacts = Object.freeze({ json: false });
const NOT_OBJECT: LineFacts = Object.freeze({ json: true, object: false });

const KEY_NONE = 0;
const KEY_TYPE = 1;
const KEY_ID = 2;
const KEY_PARENT_ID = 3;

/** Container kinds on the nesting stack. */
const IN_ARRAY = 0;
const IN_OBJECT = 1;

/** The longest key bytes that can decode to "parentId": eight `\uXXXX` escapes. */
const MAX_TARGET_KEY_BYTES = 48;

// Scanner state shared by the helpers below (one scan runs at a time; nothing here calls out).
/** The nesting stack, reused across calls and doubled when a line nests deeper. */
let stack = new Uint8Array(64);
/** Which of type/id/parentId the last top-level key read was (KEY_NONE for any other). */
let keyFound = KEY_NONE;

// The top-level type/id/parentId found so far in the line being scanned (either path).
let type: unknown;
let id: unknown;
let parentId: unknown;
let hasType = false;
let hasId = false;
let hasParentId = false;

function clearMembers(): void {
  type = id = parentId = undefined;
  hasType = hasId = hasParentId = false;
}

/** The member `target` (KEY_TYPE, KEY_ID or KEY_PARENT_ID) has `value`: the last one wins. */
function setMember(target: number, value: unknown): void {
  if (target === KEY_TYPE) {
    type = value;
    hasType = true;
  } else if (target === KEY_ID) {
    id = value;
    hasId = true;
  } else {
    parentId = value;
    hasParentId = true;
  }
}

function memberFacts(): LineFacts {
  return { json: true, object: true, type, id, parentId, hasType, hasId, hasParentId };
}

/** Which of type/id/parentId the key body `s..e` (no quotes) is, escapes decoded. */
function keyTarget(buf: Buffer, s: number, e: number, escaped: boolean): number {
  const n = e - s;
  if (escaped) {
    if (n > MAX_TARGET_KEY_BYTES) return KEY_NONE;
    const key = JSON.parse(buf.toString("utf8", s - 1, e + 1)) as string;
    return key === "type"
      ? KEY_TYPE
      : key === "id"
        ? KEY_ID
        : key === "parentId"
          ? KEY_PARENT_ID
          : KEY_NONE;
  }
  // Unescaped: bytes below 0x80 decode to themselves and others to non-ASCII, so compare bytes.
  if (n === 4) {
    return buf[s] === 0x74 && buf[s + 1] === 0x79 && buf[s + 2] === 0x70 && buf[s + 3] === 0x65
      ? KEY_TYPE
      : KEY_NONE;
  }
  if (n === 2) return buf[s] === 0x69 && buf[s + 1] === 0x64 ? KEY_ID : KEY_NONE;
  if (n === 8) {
    return buf[s] === 0x70 &&
      buf[s + 1] === 0x61 &&
      buf[s + 2] === 0x72 &&
      buf[s + 3] === 0x65 &&
      buf[s + 4] === 0x6e &&
      buf[s + 5] === 0x74 &&
      buf[s + 6] === 0x49 &&
      buf[s + 7] === 0x64
      ? KEY_PARENT_ID
      : KEY_NONE;
  }
  return KEY_NONE;
}

/** The truth this scanner must match, used for lines too long for `toString` to decode. */
function factsByParse(buf: Buffer, start: number, end: number): LineFacts {
  let v: unknown;
  try {
    v = JSON.parse(buf.toString("utf8", start, end));
  } catch {
    return NOT_JSON;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return NOT_OBJECT;
  const o = v as Record<string, unknown>;
  const pick = (x: unknown) => (typeof x === "string" || x === null ? x : NON_STRING);
  const hasType = Object.hasOwn(o, "type");
  const hasId = Object.hasOwn(o, "id");
  const hasParentId = Object.hasOwn(o, "parentId");
  return {
    json: true,
    object: true,
    type: hasType ? pick(o.type) : undefined,
    id: hasId ? pick(o.id) : undefined,
    parentId: hasParentId ? pick(o.parentId) : undefined,
    hasType,
    hasId,
    hasParentId,
  };
}

/**
 * Reads `"key" :` from `p` (whitespace first); returns the index after the colon or -1. When
 * `topLevel`, sets `keyFound` to which of type/id/parentId the key is.
 */
function readKey(
  buf: Buffer,
  p: number,
  end: number,
  words: Int32Array,
  base: number,
  topLevel: boolean,
): number {
  p = skipWs(buf, p, end);
  if (p >= end || buf[p] !== QUOTE) return -1;
  const close = scanString(buf, p + 1, end, words, base);
  if (close < 0) return -1;
  if (topLevel) keyFound = keyTarget(buf, p + 1, close, sawEscape);
  p = skipWs(buf, close + 1, end);
  return p < end && buf[p] === COLON ? p + 1 : -1;
}

/**
 * What `JSON.parse(buf.toString("utf8", start, end))` would make of the line `start..end`:
 * whether it parses, whether it is an object, and its top-level type, id and parentId.
 * Lines longer than the longest string V8 can make are handed to exactly that expression.
 */
export function scanLine(buf: Buffer, start: number, end: number): LineFacts {
  // Clamp as toString does (integer offsets assumed).
  if (start < 0) start = 0;
  if (end > buf.length) end = buf.length;
  if (end < start) end = start;
  if (end - start > constants.MAX_STRING_LENGTH) return factsByParse(buf, start, end);
  const count = lineTokens(buf, start, end, 1, TAPE_KEYS);
  if (count > 0) return tapeFacts(buf, start, count);
  // No tape (no WebAssembly, a line the module declines or finds invalid): the bytes are read
  // here, and an invalid line is this loop's to judge.

  // The line's whole 4-byte-aligned words, for skipping string bodies.
  const { words, base } = lineWords(buf, start, end);

  clearMembers();
  let depth = 0;
  let st = stack;
  let p = skipWs(buf, start, end);
  const isObject = p < end && buf[p] === OPEN_OBJ;
  keyFound = KEY_NONE;

  for (;;) {
    // A value starts here. `keyFound` names it when it is a top-level type, id or parentId.
    p = skipWs(buf, p, end);
    if (p >= end) return NOT_JSON;
    const c = buf[p]!;
    let value: unknown = NON_STRING;
    if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (depth === st.length) {
        const grown = new Uint8Array(st.length * 2);
        grown.set(st);
        st = grown;
        // Keep a grown stack for later lines, unless one pathological line made it huge.
        if (grown.length <= 4096) stack = grown;
      }
      st[depth++] = c === OPEN_OBJ ? IN_OBJECT : IN_ARRAY;
      p = skipWs(buf, p + 1, end);
      if (p < end && buf[p] === (c === OPEN_OBJ ? CLOSE_OBJ : CLOSE_ARR)) {
        depth--;
        p++;
      } else {
        if (depth === 2 && keyFound !== KEY_NONE) {
          // A top-level member whose value is an object or array.
          setMember(keyFound, NON_STRING);
          keyFound = KEY_NONE;
        }
        if (c === OPEN_OBJ) {
          p = readKey(buf, p, end, words, base, depth === 1);
          if (p < 0) return NOT_JSON;
        }
        continue;
      }
    } else if (c === QUOTE) {
      const close = scanString(buf, p + 1, end, words, base);
      if (close < 0) return NOT_JSON;
      if (keyFound !== KEY_NONE) value = decodeString(buf, p + 1, close, sawEscape);
      p = close + 1;
    } else if (c === MINUS || (c >= DIGIT_0 && c <= DIGIT_9)) {
      p = scanNumber(buf, p, end);
      if (p < 0) return NOT_JSON;
    } else {
      p = scanLiteral(buf, p, end);
      if (p < 0) return NOT_JSON;
      if (c === 0x6e /* n */) value = null;
    }
    if (keyFound !== KEY_NONE) {
      // Only top-level members set keyFound, and nested values clear it before they start.
      setMember(keyFound, value);
      keyFound = KEY_NONE;
    }

    // A value ended: close containers and take commas until the next value starts.
    for (;;) {
      p = skipWs(buf, p, end);
      if (depth === 0) {
        if (p !== end) return NOT_JSON;
        if (!isObject) return NOT_OBJECT;
        return memberFacts();
      }
      if (p >= end) return NOT_JSON;
      const d = buf[p]!;
      const inObject = st[depth - 1] === IN_OBJECT;
      if (d === COMMA) {
        p++;
        if (inObject) {
          p = readKey(buf, p, end, words, base, depth === 1);
          if (p < 0) return NOT_JSON;
        }
        break;
      }
      if (d !== (inObject ? CLOSE_OBJ : CLOSE_ARR)) return NOT_JSON;
      depth--;
      p++;
    }
  }
}

/** The keys the module puts on the tape with their values (and every escaped key). */
const TAPE_KEYS = watchedKeys(["type", "id", "parentId"]);

/**
 * The facts of a valid line from the module's tape of its top level (wasm/line-tokens.ts): its
 * first token is the line's value, then each watched member's key and value, in order.
 */
function tapeFacts(buf: Buffer, start: number, count: number): LineFacts {
  if ((tape[0]! & 0xff) !== TOKEN_OBJECT) return NOT_OBJECT;
  clearMembers();
  let target = KEY_NONE;
  for (let i = 1; i < count; i++) {
    const kind = tape[i * 3]! & 0xff;
    const from = start + tape[i * 3 + 1]!;
    const to = tape[i * 3 + 2]!;
    if (kind === TOKEN_KEY) {
      target = keyTarget(buf, from, start + (to & OFFSET), (to & ESCAPED) !== 0);
      continue;
    }
    if (target === KEY_NONE) continue;
    const value =
      kind === TOKEN_STRING
        ? decodeString(buf, from, start + (to & OFFSET), (to & ESCAPED) !== 0)
        : kind === TOKEN_NULL
          ? null
          : NON_STRING;
    setMember(target, value);
    target = KEY_NONE;
  }
  return memberFacts();
}
