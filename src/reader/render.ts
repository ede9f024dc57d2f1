// Items of a branch to sized CHAT-01 parts: notices here, entry rows by their harness
// (ParsedSession.rows). An entry too big for one page is rendered once and kept (one slot per
// reader) while its pages are read: rendering parses the entry's line, so rendering it again for
// each page made reading a 24 MB message quadratic in its size.
import { isUtf8 } from "node:buffer";
import type { EntryLines, EntryRec } from "./entries.ts";
import type { Item } from "./items.ts";
import { type DraftPart, type SizedPart, SMALL_LINE_BYTES, sourceBound, toParts } from "./parts.ts";
import type { ParsedSession } from "./tree.ts";

/**
 * Renders one item into its parts (none for a hidden entry): an entry's range is its line in
 * `buf`; `lines` reads other rows' lines, which a harness's rows may need (RowFormat).
 */
export type ItemRenderer = (
  s: ParsedSession,
  buf: Buffer,
  item: Item,
  lines: EntryLines,
) => SizedPart[];

/** Entries whose parts are at least this big are kept for the next page. */
const KEEP_BYTES = 1024 * 1024;

export function createItemRenderer(): ItemRenderer {
  // The snapshot is held weakly: the slot must not keep a snapshot the parse cache let go.
  // Keyed by the snapshot and the entry's byte range: the same bytes render the same parts.
  let kept: { buf: WeakRef<Buffer>; start: number; end: number; parts: SizedPart[] } | null = null;
  return (s, buf, item, lines) => {
    if (item.kind === "notice") return renderNotice(item);
    const { rec } = item;
    if (kept && kept.start === rec.start && kept.end === rec.end && kept.buf.deref() === buf) {
      return kept.parts;
    }
    const parts = s.rows.render(s, buf, rec, lines);
    let bytes = 0;
    for (const p of parts) bytes += p.bytes;
    if (parts.length > 1 || bytes >= KEEP_BYTES) {
      kept = { buf: new WeakRef(buf), start: rec.start, end: rec.end, parts };
    }
    return parts;
  };
}

function renderNotice(item: Extract<Item, { kind: "notice" }>): SizedPart[] {
  const meta = item.line === undefined ? undefined : { line: item.line };
  return toParts(`x.${item.id}`, {
    kind: "notice",
    ...(meta ? { meta } : {}),
    blocks: [{ type: "notice", code: item.code, text: item.text }],
  });
}

/**
 * The sized parts of an entry `key` drafted from the line of `rec`, numbered from `first`: a
 * small line of valid UTF-8 is sized from its bytes (parts.ts sourceBound), any other measured.
 * `utf8`, when the caller already knows it (entries.ts entryObjectUtf8), says whether the line
 * is valid UTF-8; else its bytes are checked.
 */
export function partsOfLine(
  key: string,
  draft: DraftPart,
  buf: Buffer,
  rec: EntryRec,
  first = 0,
  utf8?: boolean,
): SizedPart[] {
  const small =
    rec.end - rec.start <= SMALL_LINE_BYTES && (utf8 ?? isUtf8(buf.subarray(rec.start, rec.end)));
  return toParts(key, draft, small ? sourceBound(rec.end - rec.start, draft) : null, first);
}
