// How a ConversationClient is set up: its socket and grant, timeouts and line limit, where its
// first connect resumes (an SSE Last-Event-ID read with parseEventId), and reconnecting.
import type { Operation, ResumePoint } from "../protocol.ts";
import { isId } from "./controller-message.ts";

export type ConversationClientOptions = {
  socketPath: string;
  /** The grant id the hello names. */
  grant: string;
  /**
   * The person this connection acts for (hello `actor`): only on a grant that delegates. The
   * controller's audit ledger names them (docs/remote.md).
   */
  actor?: string;
  /** Narrows the grant to these operations (hello `capabilities`), e.g. to a board role's. */
  capabilities?: readonly Operation[];
  /** Sent in the hello as `client`, for the controller's evidence. */
  clientName?: string;
  /** How long `connect` waits for its welcome and a request for its reply. Default 60 s. */
  requestTimeoutMs?: number;
  /** The longest line accepted from the controller, in bytes. Default framing.ts's 64 MiB. */
  maxLineBytes?: number;
  /**
   * Where the first connect resumes (a board maps an SSE `Last-Event-ID` here with
   * parseEventId). Later connects resume from the last event this client received.
   */
  resume?: ResumePoint;
  /**
   * Reconnect by itself when the socket drops (not after close()): one attempt after each
   * delay, in order, until a welcome. Each attempt resumes, so a short drop loses nothing the
   * controller still keeps. Default: no automatic reconnect (connect() again resumes too).
   */
  reconnect?: { delaysMs: readonly number[] };
};

/** Default reconnect delays: about 15 s of attempts, fast at first. */
export const RECONNECT_DELAYS_MS: readonly number[] = [50, 100, 250, 500, 1000, 2000, 4000, 7000];

/**
 * The resume point an event id names (`<streamEpoch>.<sequence>`, the controller's ids), or
 * null: an SSE `Last-Event-ID` header becomes a `resume` option this way.
 */
export function parseEventId(id: string): ResumePoint | null {
  const m = /^(.+)\.(\d{1,15})$/.exec(id);
  if (!m || !isId(m[1])) return null;
  const afterSequence = Number(m[2]);
  return Number.isSafeInteger(afterSequence) ? { streamEpoch: m[1], afterSequence } : null;
}
