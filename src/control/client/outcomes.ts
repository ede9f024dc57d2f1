// What a request to the controller answers, as values: admitted (with what its operation
// promises), refused (the controller's code, or `channel`/`malformed` from the library), or
// unknown (written once, its outcome lost). Pure: the client settles each request through
// outcomeOf, so an admitted reply that lacks what it promises is unknown, never admitted.
import type { Receipt, Reply } from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";
import type { ClientIssue } from "./client-issues.ts";
import { isCount, isId, isObj, type Obj } from "./controller-message.ts";

/** A refusal, from the controller or (`channel`, `malformed`) from this library. */
export type Refused = {
  [C in ControlRefusalCode]: {
    outcome: `refused:${C}`;
    refusal: C;
    message: string;
    /** A reader refusal code behind a `cursor` refusal. */
    detail?: string;
  };
}[ControlRefusalCode];

/**
 * The request was written but its outcome is lost: the socket closed or the timeout passed
 * before its reply, the controller replied `unknown`, or the reply broke the protocol. Never
 * resent; check the transcript.
 */
export type Unknown = { outcome: "unknown"; request: string; message: string };

export type Outcome<T extends object> = ({ outcome: "admitted" } & T) | Refused | Unknown;

/** takeover, release, interrupt, force-stop, launch: `result` is whatever the reply carried. */
export type ControlOutcome = Outcome<{ result?: unknown }>;
export type PromptOutcome = Outcome<{ receipt: Receipt }>;
export type ConfirmOutcome = Outcome<{ confirmation: string; result: unknown }>;
export type RecoverOutcome = Outcome<{ eligibility: string; result: unknown }>;

/** The seam between an observe page and the live stream (seed: The seam). */
export type Seam = {
  /**
   * `available`: the controller still keeps the events from `fromSequence` on, so a client
   * that resumes at `{ streamEpoch, afterSequence: fromSequence - 1 }` misses nothing after the
   * page; `unavailable`: those events are no longer kept.
   */
  replay: "available" | "unavailable";
  streamEpoch: string;
  /** The first live sequence number that follows the page. */
  fromSequence: number;
  reconcile: true;
  /** No run visible and no prompt in the slot as the page was read: nothing at the cut. */
  quiet: boolean;
};

/** `result` is the controller's whole observe result (the reader page and more). */
export type ObserveOutcome = Outcome<{ seam: Seam; result: Obj }>;

/** Which request a `confirmed` outcome came from: the confirm, or the operation using it. */
export type Confirmed<T> = T & { step: "confirm" | "use" };

/** How a request ended on the socket: its reply, lost (closed, timed out), or refused here. */
export type Settled =
  | { kind: "reply"; id: string; reply: Reply }
  | { kind: "lost"; id: string; message: string }
  | { kind: "local"; refusal: "channel" | "malformed"; message: string };

/**
 * The outcome of a settled request; `admitted` reads what the operation promises from its reply
 * (or says what is missing). An admitted reply that lacks it breaks the protocol: the operation
 * may have happened, so the outcome is unknown, and the reply goes to `onIssue`.
 */
export function outcomeOf<T extends object>(
  settled: Settled,
  admitted: (reply: Reply) => T | string,
  onIssue: (issue: ClientIssue) => void,
): Outcome<T> {
  if (settled.kind === "local") return localRefusal(settled.refusal, settled.message);
  if (settled.kind === "lost") {
    return { outcome: "unknown", request: settled.id, message: settled.message };
  }
  const { reply, id } = settled;
  if (reply.outcome === "unknown") {
    const message = reply.message ?? "the controller could not tell the outcome";
    return { outcome: "unknown", request: id, message };
  }
  if (reply.outcome !== "admitted") {
    // parseControllerMessage sets `refusal` on every refused reply.
    const refusal = reply.refusal ?? "malformed";
    return refused(refusal, reply.message ?? refusal, reply.detail);
  }
  const fields = admitted(reply);
  if (typeof fields === "string") {
    onIssue({ code: "unexpected-reply", message: `${id}: ${fields}`, reply });
    return { outcome: "unknown", request: id, message: fields };
  }
  return { ...fields, outcome: "admitted" };
}

/** The seam of an observe result, or why it is not one. */
export function readSeam(v: unknown): Seam | string {
  if (!isObj(v)) return "observe's result has no seam";
  if (v.replay !== "available" && v.replay !== "unavailable") {
    return "seam.replay is not available or unavailable";
  }
  if (!isId(v.streamEpoch)) return "seam.streamEpoch is not an id";
  if (!isCount(v.fromSequence)) return "seam.fromSequence is not a count";
  if (v.reconcile !== true) return "seam.reconcile is not true";
  if (typeof v.quiet !== "boolean") return "seam.quiet is not a boolean";
  return {
    replay: v.replay,
    streamEpoch: v.streamEpoch,
    fromSequence: v.fromSequence,
    reconcile: true,
    quiet: v.quiet,
  };
}

/**
 * The id of a confirmation or eligibility record in a result: `result[kind]` as an id or as a
 * record with an `id`, or the result itself when it is the record (`kind` names it).
 */
export function idIn(result: unknown, kind: "confirmation" | "eligibility"): string | null {
  if (!isObj(result)) return null;
  const v = result[kind];
  if (isId(v)) return v;
  if (isObj(v) && isId(v.id)) return v.id;
  return result.kind === kind && isId(result.id) ? result.id : null;
}

function refused(refusal: ControlRefusalCode, message: string, detail?: string): Refused {
  // TypeScript can't correlate a generic code with its outcome string; they are built together.
  const r = { outcome: `refused:${refusal}`, refusal, message } as Refused;
  if (detail !== undefined) r.detail = detail;
  return r;
}

export function localRefusal(refusal: "channel" | "malformed", message: string): Refused {
  return refused(refusal, message);
}
