// The stop chain's host over one execution (stops.ts StopHost): its closers fence admission, its
// approvals end with the stop, and the controller's claim moves stopping, uncertain or proven.
// A claim that ends with a proof drops the execution's launch record: no recovery needs it.
import type { Claim, ClaimStore } from "../claim/claim.ts";
import { type DialogOutlet, endApprovals } from "./dialogs.ts";
import type { Execution } from "./execution.ts";
import type { ControlRecord, Verifier } from "./records.ts";
import type { Closer, StopHost } from "./stops.ts";

/** What of the controller a stop chain reaches: its claim, its outlets, its launch records. */
export type StopHostParts = {
  verifier: Verifier;
  claims: ClaimStore;
  claim(): Claim | null;
  setClaim(claim: Claim): void;
  dropLaunchRecord(execution: string): Promise<void>;
  /** Where the approvals' records and messages go. */
  outlet: DialogOutlet;
  record(record: ControlRecord): void;
  broadcastState(): void;
};

export function stopHostOf(exec: Execution, c: StopHostParts): StopHost {
  return {
    execution: exec.execution,
    incarnation: exec.incarnation,
    link: exec.link,
    engine: exec.engine,
    launched: exec.launched,
    tracker: exec.tracker,
    verifier: c.verifier,
    close: (closer: Closer) => {
      exec.closers.add(closer);
      c.broadcastState();
    },
    lift: (closer: Closer) => {
      exec.closers.delete(closer);
      c.broadcastState();
    },
    dialogSeen: () => exec.dialogs.length > 0,
    endApprovals: (state, why) => endApprovals(exec, c.outlet, state, why),
    claimStopping: async () => {
      const claim = c.claim();
      if (claim) c.setClaim(await c.claims.markStopping(claim));
    },
    claimUncertain: async (why) => {
      const claim = c.claim();
      if (claim) c.setClaim(await c.claims.markUncertain(claim, why));
    },
    claimProven: async (digest) => {
      const claim = c.claim();
      if (!claim) throw new Error("no claim to end");
      c.setClaim(await c.claims.recordProvenStop(claim, digest));
      // The claim ended with a proof: no recovery will need to find this execution's scope.
      await c.dropLaunchRecord(exec.execution);
    },
    record: (r) => c.record(r),
  };
}
