// The launch records one controller writes (claim/launch-record.ts): each goes down before its
// claim or engine, so a crash anywhere after leaves the execution's scope findable by recovery,
// and goes once the claim ends with a proof (or was never launched on). Only the records this
// controller wrote are removed: another's belong to the recovery that finds them.
import type { ClaimStore, SeatKey } from "../claim/claim.ts";
import { removeLaunchRecord, writeLaunchRecord } from "../claim/launch-record.ts";
import type { Launcher } from "../cohort/launcher.ts";

export type LaunchRecordsHost = {
  claimRoot: string;
  claims: ClaimStore;
  launcher: Launcher;
  seatKey(): SeatKey;
  sessionKey: string;
};

export class LaunchRecords {
  readonly #host: LaunchRecordsHost;
  /** Executions whose launch record this controller wrote (removed once their claim ends). */
  readonly #written = new Set<string>();

  constructor(host: LaunchRecordsHost) {
    this.#host = host;
  }

  has(execution: string): boolean {
    return this.#written.has(execution);
  }

  async write(execution: string, incarnation: string): Promise<void> {
    const m = await this.#host.claims.machine();
    await writeLaunchRecord(this.#host.claimRoot, {
      version: 2,
      kind: "launch-record",
      execution,
      incarnation,
      seatKey: this.#host.seatKey(),
      sessionKey: this.#host.sessionKey,
      host: m.host,
      bootId: m.bootId,
      launcher: this.#host.launcher.kind,
      scope: this.#host.launcher.scopeFor?.(execution) ?? null,
      at: new Date().toISOString(),
    });
    this.#written.add(execution);
  }

  async drop(execution: string): Promise<void> {
    if (!this.#written.delete(execution)) return;
    await removeLaunchRecord(this.#host.claimRoot, execution);
  }
}
