// The reader's refusals: one closed set of codes, each with its fixed reconcile flag (the
// seed's Refusal codes table). Reader internals throw `Refusal`; reader.ts turns it into the
// `{ ok: false, refusal }` value in one place, so no caller sees an exception for a "no".
import type { ReaderRefusalCode, RefusalRecord } from "../protocol/chat-01.ts";

/** Whether a client should re-read from the start after this refusal. */
export const RECONCILE: Record<ReaderRefusalCode, boolean> = {
  "unknown-conversation": true,
  "unknown-branch": true,
  unavailable: false,
  "unsupported-harness": false,
  "unsafe-path": false,
  "foreign-project": false,
  unreadable: false,
  "not-a-pi-session": false,
  "incomplete-header": true,
  "too-large": false,
  "cursor-unknown": true,
  "cursor-expired": true,
  "cursor-foreign": true,
  "source-replaced": true,
  "unknown-actor": false,
  "unsupported-purpose": false,
};

/**
 * A reader refusal. ControlRefusal (src/control/refusal.ts) subclasses it with the control
 * layer's codes, which never reconcile a reader view.
 */
export class Refusal extends Error {
  readonly code: string;
  readonly reconcile: boolean;

  constructor(code: ReaderRefusalCode, message: string);
  constructor(code: string, message: string, reconcile: boolean);
  constructor(code: string, message: string, reconcile?: boolean) {
    super(message);
    this.name = "Refusal";
    this.code = code;
    this.reconcile = reconcile ?? RECONCILE[code as ReaderRefusalCode] ?? false;
  }

  toRecord(): RefusalRecord {
    return { code: this.code, reconcile: this.reconcile, message: this.message };
  }
}

export function isRefusal(e: unknown): e is Refusal {
  return e instanceof Refusal;
}
