// The content rules both harnesses' renderings share (harness/pi/blocks.ts,
// harness/claude-code/blocks.ts): a content that is a string is one text block, text items are
// text blocks, a record type the reader does not know is a notice, and any item neither the
// shared rule nor the harness knows is an `unknown-content` notice, never an exception. Only
// how an item beyond text is written (an image, a tool call, thinking) differs per harness.
import type { Block } from "../../protocol/chat-01.ts";
import { isObj, notice, type Obj, str, timestampOf, unknownContent } from "../draft.ts";
import type { DraftPart } from "../parts.ts";

/**
 * A harness's rule for one content item that is an object and not a text block: pushes its
 * blocks to `out` and returns true, or returns false when it does not know the item.
 */
export type ItemRule = (c: Obj, out: Block[]) => boolean;

/**
 * The blocks of a content: a string is one text block; in an array, each text item is a text
 * block, each other object goes to `other`, and whatever neither knows is a notice. Anything
 * else (no content, a number) has no blocks.
 */
export function contentBlocksOf(content: unknown, other: ItemRule): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return [];
  const out: Block[] = [];
  for (const c of content) {
    if (!isObj(c)) out.push(unknownContent(c));
    else if (c.type === "text" && typeof c.text === "string")
      out.push({ type: "text", text: c.text });
    else if (!other(c, out)) out.push(unknownContent(c));
  }
  return out;
}

/** A record's recorded time, as a part carries it (none when absent or too long). */
export type At = { timestamp?: string };

/** What every record's rendering starts from: its type ("" when not a string) and its time. */
export function headOf(r: Obj): { type: string; at: At } {
  const timestamp = timestampOf(r);
  return { type: str(r.type) ?? "", at: timestamp === undefined ? {} : { timestamp } };
}

/** The notice a record of a type the reader does not know renders as (`what`: its word). */
export function unknownTypePart(what: string, type: string, at: At): DraftPart {
  const shown = JSON.stringify(type.slice(0, 100));
  return {
    kind: "notice",
    ...at,
    blocks: [notice("unknown-entry-type", `${what} of unknown type ${shown} is not shown.`)],
  };
}
