// Recovery after a crash (docs/claim.md, Recovery after a crash; issue 18 item 4). A controller
// SIGKILLed mid-turn leaves a claim whose dead holder blocks the session (`unsafe-replacement`,
// the crash barrier). The next controller proves that holder's engine stopped and records the
// proof's digest with `recordProvenStop`, then takes the claim as usual:
//   - a holder of an earlier boot: the reboot ended everything (boot-proof.ts);
//   - a holder of this boot whose launch record names a cgroup scope: the scope's `engine`
//     cgroup is gone, or frozen, empty and `populated 0` (cohort/leftover.ts).
// Anything else is not a proof, and the refusal says what a person can do about it.
import { open } from "node:fs/promises";
import { basename, join } from "node:path";
import { type LeftScopeOptions, observeLeftScope } from "../cohort/leftover.ts";
import { digestOf } from "../controller/records.ts";
import { ControlRefusal, isControlRefusal } from "../refusal.ts";
import { controlPlace, ensurePrivateDir } from "../registry/private-dirs.ts";
import { type BootProof, proveByReboot } from "./boot-proof.ts";
import type { Claim, ClaimHolder, ClaimStore, SeatKey } from "./claim.ts";
import { errnoOf, nameHolder, seatDigest } from "./claim-record.ts";
import { readLaunchRecord, removeLaunchRecord } from "./launch-record.ts";

/** CHAT-01 v2 `cohortProof`: a dead holder's engine cgroup, of this boot, is gone or empty. */
export type CohortProof = {
  version: 2;
  kind: "cohort-proof";
  holder: { host: string; bootId: string; pid: number; execution: string; incarnation: string };
  machine: { host: string; bootId: string };
  launcher: "cgroup";
  scope: string;
  engine:
    | { cgroup: string; seen: "gone" }
    | { cgroup: string; seen: "empty"; frozen: true; members: []; populated: false };
  claim: {
    seatKey: SeatKey;
    sessionKey: string;
    revisions: { session: number | null; seat: number | null };
  };
  at: string;
};

export type RecoveryProof = BootProof | CohortProof;

export type Recovered = { proof: RecoveryProof; proofDigest: string; claim: Claim };

/**
 * When a dead holder blocks `keys` (`unsafe-replacement`), proves its stop and records it for
 * `writer` (the controller about to acquire); returns null when nothing of the kind blocks (the
 * acquire that follows answers for live holders and other hosts). Refuses `unsafe-replacement`
 * when the stop can't be proven, with a message that says what to do; `already-active` when the
 * claim moved meanwhile. The proof is written to `<claim root>/proofs/<digest>.json`.
 */
export async function recoverDeadHolder(
  store: ClaimStore,
  keys: { seatKey: SeatKey; sessionKey: string },
  writer: ClaimHolder,
  options: LeftScopeOptions = {},
): Promise<Recovered | null> {
  const view = await store.inspect(keys);
  if (view.verdict !== "unsafe-replacement" || view.blocking === null) return null;
  const blocking = view.blocking;
  const h = blocking.holder;
  const m = await store.machine();
  const who = `The session's claim is held by a controller that died (${nameHolder(h)})`;
  // The blocking claim's own keys: on the seat key it may be another session's of this seat.
  const dirs = claimDirs(store.root, {
    seatKey: blocking.seatKey,
    sessionKey: blocking.sessionKey,
  });
  const byHand = `once you are sure nothing of execution ${h.execution} runs, remove ${dirs.session} and ${dirs.seat} by hand, then start again`;

  if (h.bootId !== m.bootId) {
    let proven: { proof: BootProof; claim: Claim };
    try {
      proven = await proveByReboot(store, keys, writer);
    } catch (e) {
      if (!isControlRefusal(e) || e.code === "already-active") throw e;
      throw new ControlRefusal(
        "unsafe-replacement",
        `${who} in an earlier boot, and no boot proof could be made: ${e.message} ${cap(byHand)}.`,
      );
    }
    const proofDigest = digestOf(proven.proof);
    await keepProof(store.root, proofDigest, proven.proof);
    await removeLaunchRecord(store.root, h.execution);
    return { proof: proven.proof, proofDigest, claim: proven.claim };
  }

  const record = await readLaunchRecord(store.root, h.execution);
  if (record === null) {
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who} and left no launch record, so its engine's stop can't be proven. Reboot the machine (the next controller then proves the stop by the reboot), or ${byHand}.`,
    );
  }
  if (
    record.sessionKey !== blocking.sessionKey ||
    record.seatKey.projectRoot !== blocking.seatKey.projectRoot ||
    record.seatKey.seat !== blocking.seatKey.seat ||
    record.incarnation !== h.incarnation
  ) {
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who}, and its launch record names another session or incarnation; nothing is proven from it. Reboot the machine, or ${byHand}.`,
    );
  }
  if (record.host !== h.host || record.bootId !== h.bootId) {
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who}; its launch record is of boot ${record.bootId} on ${record.host} but its claim of boot ${h.bootId}, and another boot's cgroups prove nothing without a boot proof. Reboot the machine (a boot proof then lifts the barrier), or ${byHand}.`,
    );
  }
  if (record.launcher !== "cgroup" || record.scope === null) {
    const how =
      record.launcher === "pgroup"
        ? "the process-group launcher, whose stops can't be proven (a process that left the group can't be seen)"
        : record.launcher === "scope"
          ? `a systemd scope (mosaic-${h.execution}.scope), which this recovery does not read yet (check \`systemctl --user status mosaic-${h.execution}.scope\`)`
          : `the ${record.launcher} launcher, whose stops prove nothing outside tests`;
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who}; its engine ran under ${how}. Reboot the machine (the next controller then proves the stop by the reboot), or ${byHand}. Controllers started where a writable cgroup v2 exists use the cgroup launcher, whose crashes recover by themselves.`,
    );
  }

  // The scope is named for its execution (CgroupLauncher.scopeFor); anything else is not ours.
  if (basename(record.scope) !== `mosaic-${h.execution}`) {
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who}, and its launch record names scope ${record.scope}, not one of execution ${h.execution}; nothing is proven from it. Reboot the machine, or ${byHand}.`,
    );
  }
  const left = await observeLeftScope(record.scope, options);
  if (left.seen === "populated") {
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who}, and its engine still runs in cgroup ${left.engine} (pids ${left.pids.join(", ")}). End it with \`echo 1 > ${left.engine}/cgroup.kill\`, then start the controller again: it proves the stop and takes over.`,
    );
  }
  if (left.seen === "unreadable") {
    throw new ControlRefusal(
      "unsafe-replacement",
      `${who}, and its engine's cgroup ${left.engine} can't be observed (${left.reason}). Run the controller where that cgroup hierarchy is readable and writable (as the user that started the dead one), or reboot the machine, or ${byHand}.`,
    );
  }
  const proof: CohortProof = {
    version: 2,
    kind: "cohort-proof",
    holder: {
      host: h.host,
      bootId: h.bootId,
      pid: h.pid,
      execution: h.execution,
      incarnation: h.incarnation,
    },
    machine: { host: m.host, bootId: m.bootId },
    launcher: "cgroup",
    scope: record.scope,
    engine:
      left.seen === "gone"
        ? { cgroup: left.engine, seen: "gone" }
        : { cgroup: left.engine, seen: "empty", frozen: true, members: [], populated: false },
    claim: {
      seatKey: blocking.seatKey,
      sessionKey: blocking.sessionKey,
      revisions: { ...blocking.revisions },
    },
    at: new Date().toISOString(),
  };
  const proofDigest = digestOf(proof);
  await keepProof(store.root, proofDigest, proof);
  const claim = await store.recordProvenStop(blocking, proofDigest, {
    writer,
    reason: "cohort-proof",
  });
  await removeLaunchRecord(store.root, h.execution);
  return { proof, proofDigest, claim };
}

/** Where a person finds the two claim keys' directories. */
function claimDirs(root: string, keys: { seatKey: SeatKey; sessionKey: string }) {
  return {
    session: join(root, "session", keys.sessionKey),
    seat: join(root, "seat", seatDigest(keys.seatKey)),
  };
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * The proof itself, beside the claim (the revisions hold only its digest), so a person or a
 * later check can see what the digest stands for. Written once; an existing one is the same.
 */
async function keepProof(root: string, digest: string, proof: RecoveryProof): Promise<void> {
  const dir = join(root, "proofs");
  ensurePrivateDir(dir, controlPlace("the proofs folder"));
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(join(dir, `${digest}.json`), "wx", 0o600);
  } catch (e) {
    if (errnoOf(e) === "EEXIST") return;
    throw e;
  }
  try {
    await fh.writeFile(`${JSON.stringify(proof, null, 2)}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
}
