// What goes wrong between a client and its controller, as values the client reports: why a
// connect rejected (ConnectError, with the controller's refusal when it refused the hello), and
// lines or replies that answer nothing (ClientIssue, surfaced through onError, never thrown).
import type { Reply } from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";

/**
 * Why `connect` rejected. `refused` carries the controller's refusal (`grant`, `malformed`);
 * `untrusted-socket`: the socket is not one only this user could have made (registry/peer.ts),
 * so nothing was sent to it.
 */
export type ConnectErrorCode =
  | "already-connected"
  | "untrusted-socket"
  | "channel"
  | "timeout"
  | "refused"
  | "invalid"
  | "protocol";

export class ConnectError extends Error {
  readonly code: ConnectErrorCode;
  readonly refusal: ControlRefusalCode | undefined;

  constructor(code: ConnectErrorCode, message: string, refusal?: ControlRefusalCode) {
    super(message);
    this.name = "ConnectError";
    this.code = code;
    this.refusal = refusal;
  }
}

/** Something the controller sent that answers nothing: surfaced, never thrown. */
export type ClientIssue = {
  code:
    | "invalid-line"
    | "record-too-large"
    | "unexpected-message"
    | "unmatched-reply"
    | "late-reply"
    | "line-refused"
    | "unexpected-reply"
    | "socket-error"
    | "reconnect-failed";
  message: string;
  /** The first 200 characters of an invalid line. */
  line?: string;
  reply?: Reply;
};

/** The issue a reply that settles no pending request is: refused line, late, or unmatched. */
export function unmatched(reply: Reply, late: boolean): ClientIssue {
  if (reply.id === null) {
    const message = `the controller refused a line: ${reply.message ?? reply.outcome}`;
    return { code: "line-refused", message, reply };
  }
  if (late) {
    const message = `a reply to ${reply.id} after its timeout: ${reply.outcome}`;
    return { code: "late-reply", message, reply };
  }
  return { code: "unmatched-reply", message: `a reply to no request of ours: ${reply.id}`, reply };
}
