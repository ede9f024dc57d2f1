// One branch of a conversation, read whole for an export: every page from one snapshot, in
// order, with the catalogue row (title, project, seat), and the same history joined back into
// entries (a part that continues an entry, and string fragments, rejoined exactly).
import type {
  Block,
  CatalogueRow,
  Page,
  Part,
  PartMeta,
  RefusalRecord,
  View,
} from "../protocol/chat-01.ts";
import type { Reader } from "../reader/reader.ts";

export type BranchExport = {
  conversation: string;
  branch: string;
  view: View;
  pages: Page[];
  row: CatalogueRow | null;
};

export type ExportRead = { ok: true; value: BranchExport } | { ok: false; refusal: RefusalRecord };

/** Reads every page of `branch` (Pi's default when omitted); a refusal is returned as is. */
export function readBranchExport(
  reader: Reader,
  conversation: string,
  branch: string | undefined,
): ExportRead {
  let r = reader.open(branch === undefined ? { conversation } : { conversation, branch });
  if (!r.ok) return r;
  const first = r;
  const pages: Page[] = [r.page];
  while (r.cursor) {
    r = reader.next({ cursor: r.cursor.id, conversation, branch: first.page.branch });
    if (!r.ok) return r;
    pages.push(r.page);
  }
  const row = reader.catalogue().conversations.find((c) => c.conversation === conversation);
  return {
    ok: true,
    value: {
      conversation: first.page.conversation,
      branch: first.page.branch,
      view: first.view,
      pages,
      row: row ?? null,
    },
  };
}

/** An entry as an export shows it: its first part's head and every block, fragments joined. */
export type Entry = {
  entry: string;
  kind: Part["kind"];
  role?: Part["role"];
  timestamp?: string;
  meta?: PartMeta;
  blocks: Block[];
};

/** The pages' parts joined into entries; fragments of one string become one block again. */
export function entriesOf(pages: readonly Page[]): Entry[] {
  const out: Entry[] = [];
  let open: {
    block: Record<string, unknown>;
    key: "text" | "data";
    type: string;
    next: number;
    count: number;
  } | null = null;
  for (const page of pages) {
    for (const part of page.parts) {
      let entry = out.at(-1);
      if (!part.continues || entry?.entry !== part.entry) {
        entry = { entry: part.entry, kind: part.kind, blocks: [] };
        if (part.role !== undefined) entry.role = part.role;
        if (part.timestamp !== undefined) entry.timestamp = part.timestamp;
        if (part.meta !== undefined) entry.meta = part.meta;
        out.push(entry);
      }
      for (const block of part.blocks) {
        const f = "fragment" in block ? block.fragment : undefined;
        if (
          f &&
          open &&
          f.index === open.next &&
          f.count === open.count &&
          block.type === open.type
        ) {
          open.block[open.key] = `${open.block[open.key]}${textOf(block)}`;
          open.next++;
          if (open.next === open.count) open = null;
          continue;
        }
        const copy = withoutFragment(block);
        entry.blocks.push(copy);
        open =
          f && f.index < f.count - 1
            ? {
                block: copy as unknown as Record<string, unknown>,
                key: copy.type === "image" ? "data" : "text",
                type: copy.type,
                next: f.index + 1,
                count: f.count,
              }
            : null;
      }
    }
  }
  return out;
}

function textOf(block: Block): string {
  if (block.type === "image") return block.data;
  return "text" in block ? block.text : "";
}

/** A copy without `fragment`: the joined block is one whole string again. */
function withoutFragment(block: Block): Block {
  const { fragment: _, ...rest } = block as Block & { fragment?: unknown };
  return { ...rest } as Block;
}
