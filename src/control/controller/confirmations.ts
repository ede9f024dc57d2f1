// Confirmations for force stop and recover (seed: Choices, Confirmations; K6, H17). Each one is
// bound to the connection it was issued to, its operation, the target execution and the latest
// stop at issue; it is consumed on use, even when the use is then refused further on.
import { randomUUID } from "node:crypto";
import type { ConfirmedOperation } from "../protocol.ts";
import type { ConfirmationRecord } from "./records.ts";

export const CONFIRMATION_TTL_MS = 60_000;

export type ConfirmationUse = {
  operation: ConfirmedOperation;
  connection: string;
  target: { conversation: string; execution: string };
  /** The latest stop now. */
  stop: string | null;
};

export type UseResult = { ok: true; record: ConfirmationRecord } | { ok: false; message: string };

export class ConfirmationStore {
  readonly #issued = new Map<string, ConfirmationRecord>();
  readonly #used = new Set<string>();
  readonly #now: () => number;
  readonly #ttlMs: number;

  constructor(options: { now?: () => number; ttlMs?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlMs ?? CONFIRMATION_TTL_MS;
  }

  issue(fields: {
    operation: ConfirmedOperation;
    target: { conversation: string; execution: string };
    stop: string | null;
    connection: string;
    grant: string;
  }): ConfirmationRecord {
    const now = this.#now();
    const record: ConfirmationRecord = {
      version: 2,
      kind: "confirmation",
      id: `cf-${randomUUID()}`,
      ...fields,
      target: { ...fields.target },
      issuedAt: new Date(now).toISOString(),
      expiresAt: new Date(now + this.#ttlMs).toISOString(),
    };
    this.#issued.set(record.id, record);
    return record;
  }

  /**
   * Consumes a confirmation. Refused when it was never issued, already used, issued to another
   * connection or for another operation or execution, expired, or issued before the latest
   * stop changed. A foreign attempt does not consume it.
   */
  use(id: string, use: ConfirmationUse): UseResult {
    if (this.#used.has(id)) return { ok: false, message: "this confirmation was already used" };
    const record = this.#issued.get(id);
    if (!record) return { ok: false, message: "no such confirmation was issued" };
    if (record.connection !== use.connection) {
      return { ok: false, message: "this confirmation was issued to another connection" };
    }
    if (record.operation !== use.operation) {
      return { ok: false, message: `this confirmation is for ${record.operation}` };
    }
    if (
      record.target.conversation !== use.target.conversation ||
      record.target.execution !== use.target.execution
    ) {
      return { ok: false, message: "this confirmation names another execution" };
    }
    this.#issued.delete(id);
    this.#used.add(id);
    if (Date.parse(record.expiresAt) <= this.#now()) {
      return { ok: false, message: "this confirmation expired; ask for a fresh one" };
    }
    if (record.stop !== use.stop) {
      return { ok: false, message: "the stop changed since this confirmation was issued" };
    }
    return { ok: true, record };
  }
}
