// Who did what, told to every client (issue 29 item 3): each act a connection's request was
// admitted for — takeover, release, prompt, interrupt, an approval's answer, force stop,
// recover, launch — becomes an `act` stream event naming the connection's actor (the person a
// delegating grant's hello named, else the grant's own), so a terminal or a Console shows in
// the live transcript who sent a prompt, took control or answered, whichever client acted.
// The audit ledger keeps the same acts with their outcomes and inputs; this event carries no
// prompt text (the history shows the message) and no deny message (the dialog's end has it).
// Refused requests are not announced: nothing happened. The reply is seen on its way out, as
// the audit hook sees it, so the operations stay as they are.
import type { Operation, Reply, Request } from "../protocol.ts";
import { isReplay } from "./reply-window.ts";
import type { Connection } from "./socket.ts";

/** The operations whose admitted request is announced. */
export const ANNOUNCED_OPS: readonly Operation[] = [
  "takeover",
  "release",
  "prompt",
  "interrupt",
  "answer",
  "force-stop",
  "recover",
  "launch",
];

/** The `act` event (docs/control-protocol.md). */
export type ActEvent = {
  kind: "act";
  op: Operation;
  actor: string;
  connection: string;
  /** ISO 8601: when the controller admitted it. */
  at: string;
  /** A prompt's receipt id. */
  receipt?: string;
  /** An answer's approval id, and the decision. */
  dialog?: string;
  decision?: "allow" | "deny";
  /** What the answered dialog asked: a budget dialog's allow raised it, its deny stopped. */
  about?: "approval" | "budget";
};

/** The act an admitted `reply` to `request` on `conn` announces, or null (nothing to tell). */
export function actOf(
  conn: Connection,
  request: Request,
  reply: Reply,
  fallbackActor: string,
  at: Date = new Date(),
): ActEvent | null {
  if (reply.outcome !== "admitted" || !ANNOUNCED_OPS.includes(request.op)) return null;
  const act: ActEvent = {
    kind: "act",
    op: request.op,
    actor: conn.actor ?? fallbackActor,
    connection: conn.id,
    at: at.toISOString(),
  };
  if (request.op === "prompt" && reply.receipt !== undefined) act.receipt = reply.receipt.id;
  if (request.op === "answer") {
    act.dialog = request.dialog;
    act.decision = request.decision;
  }
  return act;
}

/**
 * `conn` with a `send` that, once the request's reply has gone out admitted, hands its act to
 * `announce` (which pushes it to every client, the requester included, after its reply).
 */
export function announcingConnection(
  conn: Connection,
  request: Request,
  fallbackActor: () => string,
  announce: (act: ActEvent) => void,
): Connection {
  if (!ANNOUNCED_OPS.includes(request.op)) return conn;
  let seen = false;
  return Object.create(conn, {
    send: {
      value: (message: Parameters<Connection["send"]>[0]) => {
        conn.send(message);
        if (seen || message.type !== "reply" || message.id !== request.id) return;
        // An identical retry's replay is the same act, already announced (reply-window.ts).
        if (isReplay(message)) return;
        seen = true;
        const act = actOf(conn, request, message, fallbackActor());
        if (act !== null) announce(act);
      },
    },
  });
}
