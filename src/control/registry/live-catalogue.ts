// The catalogue as the command and the board show it: the reader's rows joined with the
// registry, each row marked `live: true` when a running controller serves that conversation
// (else `live: false`). The reader itself never learns about controllers; this join is the
// only place that does. A registry that can't be listed marks nothing live, never fails a read.
import type { Catalogue, CatalogueRow } from "../../protocol/chat-01.ts";
import type { Reader } from "../../reader/reader.ts";
import { listControllers } from "./registry.ts";

export type LiveCatalogueRow = CatalogueRow & { live: boolean };
export type LiveCatalogue = Omit<Catalogue, "conversations"> & {
  conversations: LiveCatalogueRow[];
};

/** The conversations a live controller serves, by the registry in `dir`. */
export function liveConversations(dir: string): Set<string> {
  try {
    return new Set(listControllers(dir).live.map((e) => e.conversation));
  } catch {
    // An unreadable registry (EACCES, not a directory) can only mean "nothing known to be live":
    // the catalogue itself is still right, and the rows simply carry no badge.
    return new Set();
  }
}

/** `catalogue` with every row marked live or not. */
export function markLive(catalogue: Catalogue, live: ReadonlySet<string>): LiveCatalogue {
  return {
    ...catalogue,
    conversations: catalogue.conversations.map((row) => ({
      ...row,
      live: live.has(row.conversation),
    })),
  };
}

/** A reader whose catalogue carries `live`, read from the registry at each call. */
export function withLiveCatalogue(reader: Reader, registryDir: string): Reader {
  return {
    catalogue: () => markLive(reader.catalogue(), liveConversations(registryDir)),
    open: (request) => reader.open(request),
    next: (request) => reader.next(request),
  };
}
