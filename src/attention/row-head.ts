// The fields every listing of a conversation that needs someone starts with, for `conversation
// inbox --json` and the board's /api/inbox alike: which conversation, where, its attention
// state and since when (ISO 8601). One place, so the terminal and the Console say it the same.
import type { Attention } from "./states.ts";
import type { InboxRow } from "./watch.ts";

export type RowHead = {
  conversation: string;
  project: string;
  seat: string;
  state: Attention["state"];
  since: string;
};

export function rowHead(row: InboxRow): RowHead {
  return {
    conversation: row.conversation,
    project: row.project,
    seat: row.seat,
    state: row.attention.state,
    since: new Date(row.attention.since).toISOString(),
  };
}
