// Who answered a dialog, in the words attach prints: "you (actor)" for this connection's own
// answer, else the actor and the connection. One rule for approvals and budget dialogs.
import type { Dialog } from "../control/protocol.ts";

/** Who answered `d`, seen from connection `me`; null when nobody did (something else ended it). */
export function answeredByWords(d: Dialog, me: string | null): string | null {
  const by = d.answeredBy;
  if (by === undefined) return null;
  return by.connection === me ? `you (${by.actor})` : `${by.actor} (${by.connection})`;
}
