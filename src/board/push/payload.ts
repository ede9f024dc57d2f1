// What a push carries (docs/push.md "Payload"): by default the state, the conversation's id and
// a label that names the state and the place (project folder and seat), never the conversation's
// title or text, since push notifications show on lock screens. A subscription that opted in to
// details adds the tool and its input (an approval's), or the reason (a failure's error).
import type { InboxRow } from "../../attention/watch.ts";
import { type NeedsYouState, notificationLabel } from "../../present/attention-words.ts";

/** The detail's text is cut here, so the whole payload stays far below the 4 KiB push limit. */
export const MAX_DETAIL_CHARS = 1000;

export type PushPayload = {
  v: 1;
  state: NeedsYouState;
  conversation: string;
  label: string;
  since: string;
  detail?: { tool: string | null; input: string };
};

export function payloadOf(row: InboxRow, state: NeedsYouState, details: boolean): PushPayload {
  const a = row.attention;
  const base: PushPayload = {
    v: 1,
    state,
    conversation: row.conversation,
    label: notificationLabel(state, row.project, row.seat),
    since: new Date(a.since).toISOString(),
  };
  if (!details) return base;
  const detail =
    a.approval === undefined
      ? { tool: null, input: a.reason }
      : { tool: a.approval.tool, input: a.approval.title };
  return { ...base, detail: { ...detail, input: detail.input.slice(0, MAX_DETAIL_CHARS) } };
}
