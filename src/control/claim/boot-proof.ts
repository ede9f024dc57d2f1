// The boot proof (docs/claim.md, The crash barrier): a claim holder that held its claim in an
// earlier boot of this machine is gone, and so is every process it had, because a reboot ends
// them all. A recovery records the proof's SHA-256 on the dead holder's claim with
// `recordProvenStop`, which lifts the barrier. A dead holder of the current boot needs a cohort
// proof instead, and a holder on another host cannot be judged from here.
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { digestOf } from "../controller/records.ts";
import { ControlRefusal } from "../refusal.ts";
import type { Claim, ClaimHolder, ClaimStore, SeatKey } from "./claim.ts";
import { parseHolder } from "./claim-record.ts";

/** CHAT-01 v2 `bootProof`: the holder's boot is not this machine's current boot. */
export type BootProof = {
  version: 2;
  kind: "boot-proof";
  /** The dead holder's host and the boot it held the claim in. */
  holder: { host: string; bootId: string };
  /** This machine now: its host name and /proc/sys/kernel/random/boot_id. */
  machine: { host: string; bootId: string };
  /** The claim the proof covers: its keys and the holder's latest revision on each. */
  claim: {
    seatKey: SeatKey;
    sessionKey: string;
    revisions: { session: number | null; seat: number | null };
  };
  at: string;
};

export const BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id";

/**
 * Proves by reboot the stop of whatever blocks `keys`, and records it with `writer` (this
 * recovery, a holder of this machine's current boot). Refuses `stop-proof` unless the blocking
 * holder is on this host with a boot id other than the current one; `configuration` when the
 * store or the writer is not of this machine's current boot. `recordProvenStop` may refuse
 * `already-active` when the claim moved since it was inspected.
 */
export async function proveByReboot(
  store: ClaimStore,
  keys: { seatKey: SeatKey; sessionKey: string },
  writer: ClaimHolder,
): Promise<{ proof: BootProof; claim: Claim }> {
  const checked = parseHolder(writer);
  if (typeof checked === "string") throw new ControlRefusal("configuration", `writer: ${checked}`);
  const host = hostname();
  const bootId = (await readFile(BOOT_ID_FILE, "utf8")).trim();
  const m = await store.machine();
  if (m.host !== host || m.bootId !== bootId) {
    throw new ControlRefusal(
      "configuration",
      "The claim store plays another host or boot; a boot proof needs this machine's own.",
    );
  }
  if (writer.host !== host || writer.bootId !== bootId) {
    throw new ControlRefusal("configuration", "The writer is not of this machine's current boot.");
  }
  const view = await store.inspect(keys);
  const blocking = view.blocking;
  if (blocking === null) {
    throw new ControlRefusal("stop-proof", `Nothing blocks the claim: ${view.why}`);
  }
  const h = blocking.holder;
  if (h.host !== host) {
    throw new ControlRefusal(
      "stop-proof",
      `The holder is on host ${h.host}; a reboot of this host proves nothing about it.`,
    );
  }
  if (h.bootId === bootId) {
    throw new ControlRefusal(
      "stop-proof",
      "The holder is of the current boot: no reboot ended it (a dead one needs a cohort proof).",
    );
  }
  const proof: BootProof = {
    version: 2,
    kind: "boot-proof",
    holder: { host: h.host, bootId: h.bootId },
    machine: { host, bootId },
    claim: {
      seatKey: blocking.seatKey,
      sessionKey: blocking.sessionKey,
      revisions: { ...blocking.revisions },
    },
    at: new Date().toISOString(),
  };
  const claim = await store.recordProvenStop(blocking, digestOf(proof), {
    writer,
    reason: "boot-proof",
  });
  return { proof, claim };
}
