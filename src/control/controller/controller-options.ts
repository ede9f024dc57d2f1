// What a Controller is given: where its fixture, claims and socket live, the session and seat,
// the verifier and grants, the launcher and engine, and the limits tests lower.
import type { LedgerAction } from "../../audit/ledger-line.ts";
import type { Launcher } from "../cohort/launcher.ts";
import type { HarnessName } from "../engine/harness.ts";
import type { BudgetLimits, Grant } from "../protocol.ts";
import type { ControlRecord, Verifier } from "./records.ts";

export type ControllerOptions = {
  fixtureRoot: string;
  claimRoot: string;
  socketDir: string;
  sessionFile: string;
  seat: string;
  /** Which engine runs the session (engine/harnesses.ts): "pi", the default, or "claude-code". */
  harness?: HarnessName;
  verifier: Verifier;
  grants: Grant[];
  launcher?: Launcher;
  /** Why this launcher was chosen (chooseLauncher's reason); recorded in each binding record. */
  launcherReason?: string;
  engine?: {
    command?: string;
    preArgs?: string[];
    extraArgs?: string[];
    /** Test hook: extra variables (never PATH, HOME or PI_*). */
    env?: Record<string, string>;
  };
  agentDir?: string;
  pinRoot?: string;
  /**
   * The budget (docs/usage.md, Budgets): USD in whole cents and/or tokens, counted over every
   * execution this controller runs. Refuses `configuration` when a value is not one.
   */
  budget?: BudgetLimits;
  /**
   * Which pinned Pi runs: a version from PI_VERSIONS (pi-pin.ts), default "0.85.1". Refuses
   * `configuration` for any other; the pin and the seal are that version's.
   */
  piVersion?: string;
  /** Where records go besides the in-memory evidence; a throw breaks audit (`audit`). */
  audit?: (record: ControlRecord) => void;
  /**
   * Where each answered act (every request but observe) goes with its actor and outcome: the
   * audit ledger (src/audit/). A throw makes every later act refuse `audit`.
   */
  actions?: (action: LedgerAction) => void;
  /** Extra homes whose live roots the guard protects (the scratch HOME case). */
  homes?: string[];
  /**
   * Per connection: unsent bytes past which a client that stopped reading is closed
   * (default MAX_QUEUED_BYTES, 8 MiB). Tests set it lower.
   */
  maxQueuedBytes?: number;
  /**
   * How much of the current stream epoch is kept for `resume` (default REPLAY_MAX_EVENTS and
   * REPLAY_MAX_BYTES, events.ts). Tests set it lower.
   */
  replay?: { maxEvents?: number; maxBytes?: number };
};
