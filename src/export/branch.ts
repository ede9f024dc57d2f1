// One branch of a conversation, read page by page for an export: the first page opens it (so a
// refusal comes before anything is written), each later one is read only when the export asks
// for it, and none is kept. The catalogue row (title, project, seat) comes with the first.
import type { CatalogueRow, Page, RefusalRecord, View } from "../protocol/chat-01.ts";
import type { Reader } from "../reader/reader.ts";

/** What an export says about the branch before its entries. */
export type BranchHead = {
  conversation: string;
  branch: string;
  view: View;
  row: CatalogueRow | null;
};

/** A page, null once the branch is read to its end, or the refusal that stopped it there. */
export type PageRead = { ok: true; page: Page | null } | { ok: false; refusal: RefusalRecord };

export type BranchPages = {
  head: BranchHead;
  /** The next page: the first on the first call, then each in order; null after the last. */
  next(): PageRead;
};

export type BranchOpen = { ok: true; pages: BranchPages } | { ok: false; refusal: RefusalRecord };

/** Opens `branch` (Pi's default when omitted) at its first page; a refusal is returned as is. */
export function openBranch(
  reader: Reader,
  conversation: string,
  branch: string | undefined,
): BranchOpen {
  const first = reader.open(branch === undefined ? { conversation } : { conversation, branch });
  if (!first.ok) return first;
  const row = reader.catalogue().conversations.find((c) => c.conversation === conversation);
  const head: BranchHead = {
    conversation: first.page.conversation,
    branch: first.page.branch,
    view: first.view,
    row: row ?? null,
  };
  let pending: Page | null = first.page;
  let cursor = first.cursor?.id ?? null;
  return {
    ok: true,
    pages: {
      head,
      next() {
        if (pending !== null) {
          const page = pending;
          pending = null;
          return { ok: true, page };
        }
        if (cursor === null) return { ok: true, page: null };
        const r = reader.next({ cursor, conversation, branch: head.branch });
        if (!r.ok) {
          cursor = null;
          return r;
        }
        cursor = r.cursor?.id ?? null;
        return { ok: true, page: r.page };
      },
    },
  };
}
