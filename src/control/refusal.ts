// The control layer's refusals (seed: Mediated control, Refusals). These codes reach a socket
// client, never the reader's HTTP routes, so the board's REFUSAL_STATUS does not cover them.
import { Refusal } from "../reader/refusal.ts";

export const CONTROL_REFUSAL_CODES = [
  "malformed",
  "grant",
  "channel",
  "unsupported-capability",
  "scope",
  "mapping",
  "audit",
  "capability",
  "target",
  "generation",
  "controller",
  "conflicting-request",
  "stale-incarnation",
  "fenced",
  "busy",
  "text-policy",
  "draft",
  "no-turn",
  "dialog",
  "budget",
  "already-controller",
  "controller-present",
  "confirmation",
  "stop-proof",
  "preflight",
  "cursor",
  "eligibility",
  "already-active",
  "unsafe-replacement",
  "foreign-host",
  "live-session-refused",
  "unsealed-engine",
  "engine-pin-mismatch",
  "configuration",
] as const;
export type ControlRefusalCode = (typeof CONTROL_REFUSAL_CODES)[number];

/** Thrown by the controller, claim store, live-session guard and engine pin. */
export class ControlRefusal extends Refusal {
  declare readonly code: ControlRefusalCode;

  constructor(code: ControlRefusalCode, message: string) {
    super(code, message, false);
    this.name = "ControlRefusal";
  }
}

export function isControlRefusal(e: unknown): e is ControlRefusal {
  return e instanceof ControlRefusal;
}
