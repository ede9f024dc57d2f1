// What Claude's scan (scan.ts) needs of one line, learned without building its value: whether it
// is a JSON object, and the few fields that place a record in the tree — `type`, `uuid`,
// `parentUuid`, `logicalParentUuid`, `subtype`, `isSidechain`, `isCompactSummary`, `isMeta`, `cwd`,
// `message.id`, and whether `message.content[0]` is a tool result. A Claude line is mostly
// string bodies (replies, tool inputs and outputs, `toolUseResult` copies): json-scan.ts skips
// them four bytes at a time and validates everything else, so only the few strings kept here
// are decoded. The whole line is parsed only when a page renders it.
//
// Exact: for every line, `scanClaudeLine` gives what `claudeFactsOf(JSON.parse(line))` gives, or
// `{ json: false }` where JSON.parse throws (test/reader/harness/claude-code/scan-line.test.ts
// checks it on hand-written cases and fuzzed lines). Its rules, as JSON.parse's:
// - the last of duplicate keys wins, a container's fields with it: a second `message` that is
//   not an object leaves no `message.id`, a second `content` no first block;
// - keys are compared after their escapes are decoded (`"u\u0075id"` is `uuid`);
// - a key inside a string, or inside another object, is not a field of the record;
// - bytes that are not valid UTF-8 decode to U+FFFD inside strings and are errors outside them
//   (json-scan.ts, harness/pi/line-scan.ts's opening comment says why bytes suffice).
import { constants } from "node:buffer";
import { isObject } from "../../entries.ts";
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
  TOKEN_ARRAY,
  TOKEN_KEY,
  TOKEN_NULL,
  TOKEN_NUMBER,
  TOKEN_OBJECT,
  TOKEN_STRING,
  TOKEN_TRUE,
  tape,
  watchedKeys,
} from "../../wasm/line-tokens.ts";

/** A JSON object line's fields, as scan.ts reads them. */
export type ClaudeRecordFacts = {
  json: true;
  object: true;
  /** `type` when a string (maybe empty), else null. */
  type: string | null;
  /**
   * `uuid`, `parentUuid`, `logicalParentUuid`, `cwd`: each when a non-empty string, else null;
   * `cwd` only when asked for (the first record's is checked), else null.
   */
  uuid: string | null;
  parentUuid: string | null;
  logicalParentUuid: string | null;
  cwd: string | null;
  /** `subtype` is "compact_boundary". */
  compactBoundary: boolean;
  /** Whether `isSidechain`, `isCompactSummary`, `isMeta` are `true` (not merely truthy). */
  isSidechain: boolean;
  isCompactSummary: boolean;
  isMeta: boolean;
  /** `message.id` when `message` is an object and its id a non-empty string, else null. */
  messageId: string | null;
  /** `message.content` is an array whose first element is an object of type "tool_result". */
  toolResult: boolean;
};

export type ClaudeLineFacts =
  /** Not valid JSON: `JSON.parse` would throw. */
  | { json: false }
  /** Valid JSON, but an array, number, string, true, false or null. */
  | { json: true; object: false }
  | ClaudeRecordFacts;

/**
 * Where a record's top-level `toolUseResult` value lies, in bytes from the line's start (the
 * last of duplicate keys, as JSON.parse keeps it); -1 and -1 when the record has none. A page
 * parses a result's line without it (rows.ts): Claude Code's structured copy of a tool's output
 * (a Read's whole file, an Edit's original file) is never shown.
 */
export type ValueRange = {
  start: number;
  end: number;
  /** The value is an object whose `agentId` is a string (the one field of it a page reads). */
  agentId: boolean;
};

const NOT_JSON: ClaudeLineFacts = Object.freeze({ json: false });
const NOT_OBJECT: ClaudeLineFacts = Object.freeze({ json: true, object: false });

function nonEmpty(v: unknown): string | null {
  return typeof v === "string" && v !== "" ? v : null;
}

/** The facts of a value JSON.parse made of a line: the truth `scanClaudeLine` must match. */
export function claudeFactsOf(v: unknown, withCwd = true): ClaudeLineFacts {
  if (v === undefined) return NOT_JSON;
  if (!isObject(v)) return NOT_OBJECT;
  const m = v.message;
  const content = isObject(m) ? m.content : undefined;
  const first: unknown = Array.isArray(content) ? content[0] : undefined;
  return {
    json: true,
    object: true,
    type: typeof v.type === "string" ? v.type : null,
    uuid: nonEmpty(v.uuid),
    parentUuid: nonEmpty(v.parentUuid),
    logicalParentUuid: nonEmpty(v.logicalParentUuid),
    cwd: withCwd ? nonEmpty(v.cwd) : null,
    compactBoundary: v.subtype === "compact_boundary",
    isSidechain: v.isSidechain === true,
    isCompactSummary: v.isCompactSummary === true,
    isMeta: v.isMeta === true,
    messageId: isObject(m) ? nonEmpty(m.id) : null,
    toolResult: isObject(first) && first.type === "tool_result",
  };
}

// ---- The fields, as a tree of the keys to watch ----------------------------------------------

// Value slots, reset for every line. A field's slot holds the value JSON.parse would give it
// when that is a string, `null`, `true` or `false`; OTHER for a number, object or array; and
// undefined while the key has not been seen. A container's slot holds its kind.
const S_TYPE = 0;
const S_UUID = 1;
const S_PARENT = 2;
const S_LOGICAL_PARENT = 3;
const S_CWD = 4;
const S_SUBTYPE = 5;
const S_SIDECHAIN = 6;
const S_COMPACT_SUMMARY = 7;
const S_MESSAGE = 8;
const S_MESSAGE_ID = 9;
const S_CONTENT = 10;
const S_FIRST_BLOCK = 11;
const S_FIRST_BLOCK_TYPE = 12;
const S_TOOL_USE_RESULT = 13;
const S_AGENT_ID = 14;
const S_META = 15;
const SLOTS = 16;

/** A number, object or array value of a field; or a container field of another kind. */
const OTHER = 1;
const IS_OBJECT = 2;
const IS_ARRAY = 3;

/**
 * What a watched container holds: the keys of an object (`byLength[n]`: its fields whose keys
 * are n bytes long), or (an array) its first element.
 */
type Shape = { object: true; byLength: Field[][]; first: null } | { object: false; first: Field };

/**
 * A watched key (or an array's first element): its slot, and when its value is a container
 * whose own fields are watched, the shape it must have and the slots below it (reset whenever
 * the key comes again: the last duplicate wins, with everything inside it).
 */
type Field = {
  key: Buffer;
  name: string;
  slot: number;
  /** How a string value is kept (a leaf's): see TEXT, ID, WORD, IS, CWD. */
  keep: number;
  /** For IS: the string compared with. */
  is: Buffer | null;
  shape: Shape | null;
  below: number[];
};

/** A string value decoded. */
const TEXT = 0;
/** An id: decoded, or the same string as one of the last uuids when its bytes are theirs. */
const ID = 1;
/** One of a few words (a record's type): the same string each time, found by its bytes. */
const WORD = 2;
/** Only whether it equals `is`: the slot holds true or false. */
const IS = 3;
/** Decoded only when the scan asks for the cwd. */
const CWD = 4;
/** Not kept: where its value lies in the line (`range`), whatever its type. */
const RANGE = 5;

function leaf(key: string, slot: number, keep = TEXT, is: string | null = null): Field {
  const k = Buffer.from(key, "latin1");
  const v = is === null ? null : Buffer.from(is, "latin1");
  return { key: k, name: key, slot, keep, is: v, shape: null, below: [] };
}

function container(key: string, slot: number, shape: Shape, below: number[]): Field {
  return { key: Buffer.from(key, "latin1"), name: key, slot, keep: TEXT, is: null, shape, below };
}

function objectOf(fields: Field[]): Shape {
  const byLength: Field[][] = [];
  for (let n = 0; n <= LONGEST_KEY; n++) byLength.push(fields.filter((f) => f.key.length === n));
  return { object: true, byLength, first: null };
}

/** The longest watched key, in bytes; an escaped key is at most six bytes per character. */
const LONGEST_KEY = 17;

const FIRST_BLOCK = container(
  "",
  S_FIRST_BLOCK,
  objectOf([leaf("type", S_FIRST_BLOCK_TYPE, IS, "tool_result")]),
  [S_FIRST_BLOCK_TYPE],
);
const CONTENT = container("content", S_CONTENT, { object: false, first: FIRST_BLOCK }, [
  S_FIRST_BLOCK,
  S_FIRST_BLOCK_TYPE,
]);
const MESSAGE = container("message", S_MESSAGE, objectOf([leaf("id", S_MESSAGE_ID, ID), CONTENT]), [
  S_MESSAGE_ID,
  S_CONTENT,
  S_FIRST_BLOCK,
  S_FIRST_BLOCK_TYPE,
]);
/** Where its value lies (RANGE), and whether it is an object with a string `agentId`. */
const TOOL_USE_RESULT: Field = {
  ...container("toolUseResult", S_TOOL_USE_RESULT, objectOf([leaf("agentId", S_AGENT_ID)]), [
    S_AGENT_ID,
  ]),
  keep: RANGE,
};
const RECORD: Shape = objectOf([
  leaf("type", S_TYPE, WORD),
  leaf("uuid", S_UUID, ID),
  leaf("parentUuid", S_PARENT, ID),
  leaf("logicalParentUuid", S_LOGICAL_PARENT, ID),
  leaf("cwd", S_CWD, CWD),
  leaf("subtype", S_SUBTYPE, IS, "compact_boundary"),
  leaf("isSidechain", S_SIDECHAIN),
  leaf("isCompactSummary", S_COMPACT_SUMMARY),
  leaf("isMeta", S_META),
  TOOL_USE_RESULT,
  MESSAGE,
]);

// ---- Scanner state (one scan runs at a time; nothing here calls out) -------------------------

const slots: unknown[] = new Array(SLOTS).fill(undefined);
/** Per open container: 0 for an array, 1 for an object (as json nesting). */
let kinds = new Uint8Array(64);
/** Per open container: its shape when its fields are watched, else null. */
let shapes: (Shape | null)[] = new Array(64).fill(null);
/** The field the value about to start is, or null. */
let pending: Field | null = null;
/** Whether this line's cwd is wanted. */
let wantCwd = true;
/**
 * The last `toolUseResult` value's bytes, from the line's start: [rangeStart, rangeEnd), -1
 * until seen; `rangeDepth` is the depth its container opened at while it is open, else -1.
 */
let rangeStart = -1;
let rangeEnd = -1;
let rangeDepth = -1;
/** The bytes and strings of the last two ids decoded (ID), most recent first. */
const idBytes = [Buffer.alloc(64), Buffer.alloc(64)];
const idLength = [-1, -1];
const idText = ["", ""];
/** The words seen (WORD), by their bytes; a few, as types are few. */
const words: { bytes: Buffer; text: string }[] = [];
const WORDS_MAX = 64;

function sameBytes(buf: Buffer, s: number, e: number, b: Buffer, n: number): boolean {
  if (e - s !== n) return false;
  for (let i = 0; i < n; i++) if (buf[s + i] !== b[i]) return false;
  return true;
}

/**
 * A string value (body `s..e`) of a leaf, kept as the leaf says. Every way gives what decoding
 * gives (or, for IS, whether it equals the word): a string found by its bytes was decoded from
 * the same unescaped bytes before.
 */
function kept(field: Field, buf: Buffer, s: number, e: number, escaped: boolean): unknown {
  const keep = field.keep;
  if (keep === TEXT) return decodeString(buf, s, e, escaped);
  if (keep === RANGE) return OTHER;
  if (keep === IS) {
    const is = field.is!;
    if (!escaped) return sameBytes(buf, s, e, is, is.length);
    return decodeString(buf, s, e, true) === is.toString("latin1");
  }
  if (keep === CWD) return wantCwd ? decodeString(buf, s, e, escaped) : null;
  if (escaped) return decodeString(buf, s, e, true);
  if (keep === WORD) {
    for (const w of words) if (sameBytes(buf, s, e, w.bytes, w.bytes.length)) return w.text;
    const text = decodeString(buf, s, e, false);
    if (words.length < WORDS_MAX && e - s <= 64) {
      words.push({ bytes: Buffer.from(buf.subarray(s, e)), text });
    }
    return text;
  }
  // ID
  for (let k = 0; k < 2; k++) {
    if (sameBytes(buf, s, e, idBytes[k]!, idLength[k]!)) return idText[k];
  }
  const text = decodeString(buf, s, e, false);
  if (e - s <= 64) {
    const b = idBytes[1]!;
    idBytes[1] = idBytes[0]!;
    idLength[1] = idLength[0]!;
    idText[1] = idText[0]!;
    buf.copy(b, 0, s, e);
    idBytes[0] = b;
    idLength[0] = e - s;
    idText[0] = text;
  }
  return text;
}

/** The field of `shape` (an object's) whose key is the string body `s..e`, or null. */
function fieldOf(shape: Shape, buf: Buffer, s: number, e: number, escaped: boolean): Field | null {
  if (!shape.object) return null;
  const n = e - s;
  if (escaped) {
    if (n > LONGEST_KEY * 6) return null;
    const key = decodeString(buf, s, e, true);
    const fields = shape.byLength[key.length];
    if (fields !== undefined) for (const f of fields) if (f.name === key) return f;
    return null;
  }
  // Unescaped: bytes below 0x80 decode to themselves and others to non-ASCII, so compare bytes.
  if (n > LONGEST_KEY) return null;
  for (const f of shape.byLength[n]!) {
    const k = f.key;
    let i = 0;
    while (i < n && buf[s + i] === k[i]) i++;
    if (i === n) return f;
  }
  return null;
}

/**
 * Reads `"key" :` from `p` (whitespace first) in an object of `shape` (null: not watched);
 * returns the index after the colon or -1, and sets `pending` to the key's field.
 */
function readKey(
  buf: Buffer,
  p: number,
  end: number,
  words: Int32Array,
  base: number,
  shape: Shape | null,
): number {
  p = skipWs(buf, p, end);
  if (p >= end || buf[p] !== QUOTE) return -1;
  const close = scanString(buf, p + 1, end, words, base);
  if (close < 0) return -1;
  pending = shape === null ? null : fieldOf(shape, buf, p + 1, close, sawEscape);
  p = skipWs(buf, close + 1, end);
  return p < end && buf[p] === COLON ? p + 1 : -1;
}

function recordFacts(): ClaudeRecordFacts {
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return {
    json: true,
    object: true,
    type: text(slots[S_TYPE]),
    uuid: nonEmpty(slots[S_UUID]),
    parentUuid: nonEmpty(slots[S_PARENT]),
    logicalParentUuid: nonEmpty(slots[S_LOGICAL_PARENT]),
    cwd: nonEmpty(slots[S_CWD]),
    compactBoundary: slots[S_SUBTYPE] === true,
    isSidechain: slots[S_SIDECHAIN] === true,
    isCompactSummary: slots[S_COMPACT_SUMMARY] === true,
    isMeta: slots[S_META] === true,
    messageId: slots[S_MESSAGE] === IS_OBJECT ? nonEmpty(slots[S_MESSAGE_ID]) : null,
    toolResult:
      slots[S_MESSAGE] === IS_OBJECT &&
      slots[S_CONTENT] === IS_ARRAY &&
      slots[S_FIRST_BLOCK] === IS_OBJECT &&
      slots[S_FIRST_BLOCK_TYPE] === true,
  };
}

/**
 * What `claudeFactsOf(JSON.parse(buf.toString("utf8", start, end)))` would say of the line
 * `start..end` (NOT_JSON where JSON.parse throws). Lines longer than the longest string V8 can
 * make are handed to exactly that expression.
 */
export function scanClaudeLine(
  buf: Buffer,
  start: number,
  end: number,
  withCwd = true,
  range?: ValueRange,
): ClaudeLineFacts {
  const facts = scanFacts(buf, start, end, withCwd);
  if (range) {
    const whole = facts.json && facts.object && rangeEnd >= 0;
    range.start = whole ? rangeStart : -1;
    range.end = whole ? rangeEnd : -1;
    range.agentId =
      whole && slots[S_TOOL_USE_RESULT] === IS_OBJECT && typeof slots[S_AGENT_ID] === "string";
  }
  return facts;
}

function scanFacts(buf: Buffer, start: number, end: number, withCwd: boolean): ClaudeLineFacts {
  // Clamp as toString does (integer offsets assumed).
  if (start < 0) start = 0;
  if (end > buf.length) end = buf.length;
  if (end < start) end = start;
  if (end - start > constants.MAX_STRING_LENGTH) {
    rangeStart = rangeEnd = rangeDepth = -1;
    return factsByParse(buf, start, end, withCwd);
  }
  slots.fill(undefined);
  pending = null;
  wantCwd = withCwd;
  rangeStart = -1;
  rangeEnd = -1;
  rangeDepth = -1;
  const count = lineTokens(buf, start, end, TAPE_DEPTH, TAPE_KEYS);
  if (count > 0) return tapeFacts(buf, start, count);
  // No tape (no WebAssembly, a line the module declines or finds invalid): the bytes are read
  // here, and an invalid line is this loop's to judge.
  const { words, base } = lineWords(buf, start, end);

  if (kinds.length > 4096) {
    // One pathologically deep line grew the stacks: later lines start small again.
    kinds = new Uint8Array(64);
    shapes = new Array(64).fill(null);
  }
  let depth = 0;
  let p = skipWs(buf, start, end);
  const isObjectLine = p < end && buf[p] === OPEN_OBJ;

  for (;;) {
    // A value starts here; `pending` is the watched field it is, or null.
    p = skipWs(buf, p, end);
    if (p >= end) return NOT_JSON;
    const c = buf[p]!;
    // (readKey sets `pending`, which TypeScript's narrowing of this function cannot see.)
    const field = pending as Field | null;
    pending = null;
    if (c === OPEN_OBJ || c === OPEN_ARR) {
      let shape: Shape | null = null;
      if (depth === 0) {
        // The line itself: a record when it is an object.
        shape = c === OPEN_OBJ ? RECORD : null;
      } else if (field !== null) {
        if (field.keep === RANGE) {
          rangeStart = p - start;
          rangeEnd = -1;
          rangeDepth = depth;
        }
        shape = openField(field, c === OPEN_OBJ);
      }
      if (depth === kinds.length) {
        const grown = new Uint8Array(kinds.length * 2);
        grown.set(kinds);
        kinds = grown;
        shapes.length = kinds.length;
      }
      kinds[depth] = c === OPEN_OBJ ? 1 : 0;
      shapes[depth] = shape;
      depth++;
      p = skipWs(buf, p + 1, end);
      if (p < end && buf[p] === (c === OPEN_OBJ ? CLOSE_OBJ : CLOSE_ARR)) {
        depth--;
        p++;
        if (depth === rangeDepth) closeRange(p - start);
      } else {
        if (c === OPEN_OBJ) {
          p = readKey(buf, p, end, words, base, shape);
          if (p < 0) return NOT_JSON;
        } else if (shape !== null) {
          pending = shape.first;
        }
        continue;
      }
    } else if (c === QUOTE) {
      const close = scanString(buf, p + 1, end, words, base);
      if (close < 0) return NOT_JSON;
      if (field !== null) {
        if (field.keep === RANGE) scalarRange(p - start, close + 1 - start);
        stringField(field, buf, p + 1, close, sawEscape);
      }
      p = close + 1;
    } else if (c === MINUS || (c >= DIGIT_0 && c <= DIGIT_9)) {
      const at = p;
      p = scanNumber(buf, p, end);
      if (p < 0) return NOT_JSON;
      if (field !== null) {
        if (field.keep === RANGE) scalarRange(at - start, p - start);
        literalField(field, undefined);
      }
    } else {
      const at = p;
      p = scanLiteral(buf, p, end);
      if (p < 0) return NOT_JSON;
      if (field !== null) {
        if (field.keep === RANGE) scalarRange(at - start, p - start);
        literalField(field, c === 0x6e /* n */ ? null : buf[at] === 0x74 /* t */);
      }
    }

    // A value ended: close containers and take commas until the next value starts.
    for (;;) {
      p = skipWs(buf, p, end);
      if (depth === 0) {
        if (p !== end) return NOT_JSON;
        return isObjectLine ? recordFacts() : NOT_OBJECT;
      }
      if (p >= end) return NOT_JSON;
      const d = buf[p]!;
      const inObject = kinds[depth - 1] === 1;
      if (d === COMMA) {
        p++;
        if (inObject) {
          p = readKey(buf, p, end, words, base, shapes[depth - 1] ?? null);
          if (p < 0) return NOT_JSON;
        }
        // An array's later elements are never watched (pending stays null).
        break;
      }
      if (d !== (inObject ? CLOSE_OBJ : CLOSE_ARR)) return NOT_JSON;
      depth--;
      p++;
      if (depth === rangeDepth) closeRange(p - start);
    }
  }
}

// ---- The same fields read from the module's tape (wasm/line-tokens.ts) ---------------------

/** The deepest watched value: a first content block's `type` (record, message, content, block). */
const TAPE_DEPTH = 4;
/** Every watched key, at any depth (the tape leaves the others' values off). */
const TAPE_KEYS = watchedKeys(keysOf(RECORD));
/** Per depth: the shape of the container last opened there when watched, else null. */
const tapeShapes: (Shape | null)[] = new Array(TAPE_DEPTH + 1).fill(null);
/** Per depth: whether the array last opened there has had its first element. */
const tapeFirstSeen = new Uint8Array(TAPE_DEPTH + 1);

/**
 * The facts of a valid line from its tape of `count` tokens: the loop of scanFacts, over the
 * tokens of the watched levels instead of bytes (the module has validated the line). A token's
 * container is the last opened one level up: every container at a tape depth is on the tape.
 */
function tapeFacts(buf: Buffer, start: number, count: number): ClaudeLineFacts {
  if ((tape[0]! & 0xff) !== TOKEN_OBJECT) return NOT_OBJECT;
  tapeShapes[0] = RECORD;
  for (let i = 1; i < count; i++) {
    const head = tape[i * 3]!;
    const kind = head & 0xff;
    const d = head >> 8;
    const shape = tapeShapes[d - 1]!;
    const container = kind === TOKEN_OBJECT || kind === TOKEN_ARRAY;
    let field: Field | null = null;
    if (shape !== null) {
      if (kind === TOKEN_KEY) {
        const to = tape[i * 3 + 2]!;
        pending = fieldOf(
          shape,
          buf,
          start + tape[i * 3 + 1]!,
          start + (to & OFFSET),
          (to & ESCAPED) !== 0,
        );
        continue;
      }
      if (shape.object) {
        field = pending;
        pending = null;
      } else if (tapeFirstSeen[d - 1] === 0) {
        // An array's later elements are never watched.
        tapeFirstSeen[d - 1] = 1;
        field = shape.first;
      }
    }
    if (field === null) {
      if (container) tapeShapes[d] = null;
      continue;
    }
    const from = tape[i * 3 + 1]!;
    const to = tape[i * 3 + 2]!;
    if (container) {
      if (field.keep === RANGE) scalarRange(from, to);
      tapeShapes[d] = openField(field, kind === TOKEN_OBJECT);
      tapeFirstSeen[d] = 0;
    } else if (kind === TOKEN_STRING) {
      const close = to & OFFSET;
      if (field.keep === RANGE) scalarRange(from - 1, close + 1);
      stringField(field, buf, start + from, start + close, (to & ESCAPED) !== 0);
    } else {
      if (field.keep === RANGE) scalarRange(from, to);
      literalField(
        field,
        kind === TOKEN_NUMBER ? undefined : kind === TOKEN_NULL ? null : kind === TOKEN_TRUE,
      );
    }
  }
  return recordFacts();
}

function keysOf(shape: Shape): string[] {
  const fields = shape.object ? shape.byLength.flat() : [shape.first];
  const names = fields.map((f) => f.name).filter((n) => n !== "");
  for (const f of fields) if (f.shape) names.push(...keysOf(f.shape));
  return [...new Set(names)];
}

// ---- A watched field's value, as both loops record it -----------------------------------------

/**
 * A container value of `field` starts: it replaces what an earlier duplicate of the key held, and
 * its slot says its kind. Returns the shape its own fields are watched by, or null. (A scalar
 * needs no reset: a container field's slot then says OTHER, and every slot below it is read only
 * when it says IS_OBJECT or IS_ARRAY, in recordFacts; a leaf has nothing below it.)
 */
function openField(field: Field, isObject: boolean): Shape | null {
  for (const s of field.below) slots[s] = undefined;
  const want = field.shape;
  if (want !== null && want.object === isObject) {
    slots[field.slot] = isObject ? IS_OBJECT : IS_ARRAY;
    return want;
  }
  slots[field.slot] = OTHER;
  return null;
}

/** A string value of `field`, its body `s..e` in `buf`. */
function stringField(field: Field, buf: Buffer, s: number, e: number, escaped: boolean): void {
  slots[field.slot] = field.shape === null ? kept(field, buf, s, e, escaped) : OTHER;
}

/** A value of `field` that is `true`, `false` or `null` (`literal`), or a number (undefined). */
function literalField(field: Field, literal: boolean | null | undefined): void {
  slots[field.slot] =
    literal === undefined || field.shape !== null || field.keep === IS ? OTHER : literal;
}

/** A RANGE field's scalar value: [from, to) of the line. */
function scalarRange(from: number, to: number): void {
  rangeStart = from;
  rangeEnd = to;
  rangeDepth = -1;
}

/** A RANGE field's container closed at `to`. */
function closeRange(to: number): void {
  rangeEnd = to;
  rangeDepth = -1;
}

function factsByParse(buf: Buffer, start: number, end: number, withCwd: boolean): ClaudeLineFacts {
  let v: unknown;
  try {
    v = JSON.parse(buf.toString("utf8", start, end));
  } catch {
    return NOT_JSON;
  }
  return claudeFactsOf(v, withCwd);
}
