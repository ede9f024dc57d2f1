// CHAT-01 limits (seed: Pages): strings cut into fragments of at most 262,144 characters and
// 1 MiB of JSON, never inside a surrogate pair; at most 64 blocks and 4 MiB per part, so one
// part always fits a page; at most 100 parts and 8 MiB per page. Nothing is clipped.
import type { Block, Part, PartKind, PartMeta, Role } from "../protocol/chat-01.ts";
import { LIMITS } from "../protocol/chat-01.ts";

/** A part before it is sized: what a harness renders an entry into. */
export type DraftPart = {
  kind: PartKind;
  role?: Role;
  timestamp?: string;
  meta?: PartMeta;
  blocks: Block[];
};

/** Room left in a fragment's 1 MiB for the block around the string (small fields ≤ 1024 chars). */
const FRAGMENT_STRING_JSON_MAX = LIMITS.fragmentJsonBytes - 16 * 1024;
/** Room for the page envelope (ids, snapshot, cursor) around its parts. */
const PAGE_ENVELOPE_MAX = 4 * 1024;

export type SizedPart = { part: Part; bytes: number };

function jsonBytes(v: unknown): number {
  return Buffer.byteLength(JSON.stringify(v), "utf8");
}

/** Characters JSON.stringify writes as more than themselves: controls and lone surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it finds.
const ESCAPED_LONG = /[\u0000-\u001f\ud800-\udfff]/;

/**
 * jsonBytes(s) for a string, without making its JSON: a tool call's text is JSON text already,
 * so sizing it by stringifying it again copied every argument twice per page (an eighth of a
 * page's cost on Claude's files). A string with no control character and no surrogate is
 * written as its own UTF-8 with `"` and `\` escaped (one byte more each) between two quotes;
 * any other is measured by JSON.stringify itself.
 */
export function stringJsonBytes(s: string): number {
  if (ESCAPED_LONG.test(s)) return jsonBytes(s);
  let n = Buffer.byteLength(s, "utf8") + 2;
  for (let i = s.indexOf('"'); i >= 0; i = s.indexOf('"', i + 1)) n++;
  for (let i = s.indexOf("\\"); i >= 0; i = s.indexOf("\\", i + 1)) n++;
  return n;
}

function isHigh(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * The UTF-8 bytes JSON.stringify writes for the UTF-16 unit at `i` of `s` (with the unit after
 * it when they form a surrogate pair: then `PAIR`, 4 bytes for two units, is returned).
 * Well-formed JSON.stringify escapes a lone surrogate as `\uXXXX`.
 */
const PAIR = -4;
function unitJsonBytes(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c < 0x80) {
    if (c === 0x22 || c === 0x5c) return 2;
    if (c >= 0x20) return 1;
    // \b \t \n \f \r have short escapes; other controls are \u00XX.
    return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
  }
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdfff) {
    if (isHigh(c) && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) return PAIR;
    }
    return 6;
  }
  return 3;
}

/**
 * Cuts `s` into pieces within both string limits; one piece when it already fits. One pass:
 * each piece is the longest run of whole characters (a surrogate pair is never cut) whose JSON
 * fits, so the work is linear in `s` whatever its characters escape to.
 */
export function splitString(s: string): string[] {
  if (s.length <= LIMITS.stringChars && s.length * 6 + 2 <= FRAGMENT_STRING_JSON_MAX) return [s];
  const pieces: string[] = [];
  let pos = 0;
  let i = 0;
  let bytes = 2; // the quotes
  while (i < s.length) {
    const b = unitJsonBytes(s, i);
    const units = b === PAIR ? 2 : 1;
    const size = b === PAIR ? 4 : b;
    if (
      i > pos &&
      (i + units - pos > LIMITS.stringChars || bytes + size > FRAGMENT_STRING_JSON_MAX)
    ) {
      pieces.push(s.slice(pos, i));
      pos = i;
      bytes = 2;
    }
    bytes += size;
    i += units;
  }
  pieces.push(s.slice(pos));
  return pieces;
}

/** Splits a block whose body string is too long into consecutive fragments of the same type. */
export function fragmentBlock(b: Block): Block[] {
  if (b.type === "image") {
    const pieces = splitString(b.data);
    if (pieces.length === 1) return [b];
    return pieces.map((data, index) => ({ ...b, data, fragment: { index, count: pieces.length } }));
  }
  if (b.type === "tool-result" || b.type === "unavailable") return [b];
  const pieces = splitString(b.text);
  if (pieces.length === 1) return [b];
  return pieces.map((text, index) => ({ ...b, text, fragment: { index, count: pieces.length } }));
}

/** Lines up to this size, when valid UTF-8, are sized from their bytes (see sourceBound). */
export const SMALL_LINE_BYTES = 256 * 1024;
/** Room per block, and for the part around them, for what the source line does not hold. */
const OVERHEAD_PER_BLOCK = 1024;

/**
 * An upper bound on the JSON of the parts rendered from one small source line, or null when
 * the line is not small enough to bound this way. Why it holds: the line is valid UTF-8, so
 * every string in it re-serializes to at most the bytes it took in the line (JSON.stringify
 * never escapes what the source could leave raw), and each string appears once in the blocks;
 * a line of at most 256 KiB also holds no string over 262,144 UTF-16 units. What the line does
 * not hold — keys, types, hashed ids (42 characters), our notice texts — fits in 1 KiB per
 * block. Tool arguments are re-serialized (numbers can grow), so they are measured exactly.
 */
export function sourceBound(lineBytes: number, draft: DraftPart): number | null {
  if (lineBytes > SMALL_LINE_BYTES || draft.blocks.length > LIMITS.blocksPerPart) return null;
  let bytes = lineBytes + OVERHEAD_PER_BLOCK * (draft.blocks.length + 1);
  for (const b of draft.blocks) {
    if (b.type === "tool-call") {
      if (b.text.length > LIMITS.stringChars) return null;
      bytes += stringJsonBytes(b.text);
    }
  }
  return bytes <= LIMITS.partBytes ? bytes : null;
}

/**
 * The parts of one entry: its blocks fragmented and grouped, at most 64 blocks and 4 MiB of
 * JSON each. Every part after the first says `continues: true`. An entry with no blocks still
 * has one (empty) part, so a message without content is visible. `bound`, from sourceBound,
 * says the whole entry fits one part of at most that many bytes, with no string to cut. Parts
 * are numbered from `first`: an entry drafted from several lines (a Claude reply's chunks)
 * continues its earlier lines' parts, and every part from a later line continues.
 */
export function toParts(
  entry: string,
  draft: DraftPart,
  bound: number | null = null,
  first = 0,
): SizedPart[] {
  if (bound !== null) {
    const part: Part = { id: `${entry}.${first}`, ...headOf(entry, draft), blocks: draft.blocks };
    if (first > 0) part.continues = true;
    return [{ part, bytes: bound }];
  }
  const head = headOf(entry, draft);
  // Room for any part number (ten digits), so how an entry splits never depends on `first`.
  const envelope = jsonBytes({ id: `${entry}.0000000000`, continues: true, ...head, blocks: [] });
  const out: SizedPart[] = [];
  let blocks: Block[] = [];
  let bytes = envelope;
  const flush = () => {
    const index = first + out.length;
    const part: Part = { id: `${entry}.${index}`, ...head, blocks };
    if (index > 0) part.continues = true;
    out.push({ part, bytes });
    blocks = [];
    bytes = envelope;
  };
  for (const block of draft.blocks) {
    for (const piece of fragmentBlock(block)) {
      const size = jsonBytes(piece) + 1;
      if (
        blocks.length > 0 &&
        (blocks.length >= LIMITS.blocksPerPart || bytes + size > LIMITS.partBytes)
      ) {
        flush();
      }
      blocks.push(piece);
      bytes += size;
    }
  }
  if (blocks.length > 0 || out.length === 0) flush();
  return out;
}

function headOf(entry: string, draft: DraftPart): Omit<Part, "id" | "blocks"> {
  const head: Omit<Part, "id" | "blocks"> = { entry, kind: draft.kind };
  if (draft.role !== undefined) head.role = draft.role;
  if (draft.timestamp !== undefined) head.timestamp = draft.timestamp;
  if (draft.meta !== undefined && Object.keys(draft.meta).length > 0) head.meta = draft.meta;
  return head;
}

export type Position = { item: number; part: number };

/**
 * Fills one page from `start`: whole parts only, at most 100 and 8 MiB. `partsOf` renders an
 * item (its parts may be empty for hidden entries). `next` is null when the items are done.
 */
export function fillPage(
  itemCount: number,
  start: Position,
  partsOf: (item: number) => SizedPart[],
): { parts: Part[]; next: Position | null } {
  const parts: Part[] = [];
  let bytes = PAGE_ENVELOPE_MAX;
  let item = start.item;
  let skip = start.part;
  while (item < itemCount) {
    const rendered = partsOf(item);
    for (let p = skip; p < rendered.length; p++) {
      const sized = rendered[p]!;
      if (parts.length >= LIMITS.partsPerPage || bytes + sized.bytes + 1 > LIMITS.pageBytes) {
        return { parts, next: { item, part: p } };
      }
      parts.push(sized.part);
      bytes += sized.bytes + 1;
    }
    item++;
    skip = 0;
  }
  return { parts, next: null };
}
