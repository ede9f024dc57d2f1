// CHAT-01 v2 control records the controller keeps as evidence: bindings, receipts, stops with
// proofs, confirmations, eligibility and dialogs (schema/chat-01.schema.json $defs), chained by
// digest in `Evidence`; `FixtureVerifier`, which judges stop proofs for fixture sessions, and
// `RepositoryVerifier`, which does the same for the sessions of approved repository specs.
// Records are plain JSON; a digest is SHA-256 over canonical JSON (keys sorted at every level).
import { createHash } from "node:crypto";
import { basename, dirname, isAbsolute, relative, resolve } from "node:path";
import {
  type BoardSpec,
  type PiRoot,
  type Root,
  rootsFromSpecs,
  type SeatRegistration,
  sessionsDirOf,
  type UnsupportedRoot,
} from "../../reader/sources.ts";
import type { LauncherKind, StopOutcome, StopProof } from "../cohort/launcher.ts";
import { CLAUDE_SESSION_PLACE } from "../engine/claude-code/claude-files.ts";
import type { LoadedSession, StartupAppend } from "../engine/harness.ts";
import type { BudgetState, ConfirmedOperation, DialogMethod, Receipt } from "../protocol.ts";
import { ControlRefusal } from "../refusal.ts";

/** The K8 load check's verdict on one execution. */
export type BindingRecord = {
  version: 2;
  kind: "binding";
  conversation: string;
  sessionKey: string;
  execution: string;
  incarnation: string;
  generation: number;
  launcher: LauncherKind;
  /** The pinned Pi this execution runs (issue 16); absent in older records. */
  engine?: { name: string; version: string; integrity: string };
  /** Why the controller's launcher was chosen (chooseLauncher); absent in older records. */
  launcherReason?: string;
  /** The cgroup scope directory the engine runs under (cgroup and scope launchers). */
  scope?: string;
  argvDigest: string;
  testHook: boolean;
  expected: { sessionFile: string; sessionId: string; leafId: string | null };
  loaded: LoadedSession | null;
  /** Present when Pi's known startup append moved the leaf and the check accepted it. */
  startupAppend?: StartupAppend;
  state: "bound" | "uncertain";
  reason: string;
  at: string;
};

export type ReceiptRecord = Receipt & { version: 2; kind: "receipt"; at: string };

export type StopTrigger = "interrupt" | "force-stop" | "shutdown";
export type StopResult = "interrupted" | "not-aborted" | "superseded" | "stopped" | "uncertain";

export type StopRecord = {
  version: 2;
  kind: "stop";
  id: string;
  execution: string;
  incarnation: string;
  trigger: StopTrigger;
  /** The stop this one took over (a force stop superseding an Interrupt, or a retry). */
  supersedes: string | null;
  result: StopResult;
  /** Whether the chain wrote an abort (only then can an `aborted` link to it). */
  abortWritten: boolean;
  nativeQueue: "cleared" | "not-cleared" | "unknown";
  approvalDisposition: "resolved" | "uncertain";
  proof: StopProof | null;
  proofDigest: string | null;
  /** How many observations the launcher recorded (they stay in the controller's evidence). */
  observations: number;
  members: number[];
  why: string;
  startedAt: string;
  endedAt: string;
};

export type ConfirmationRecord = {
  version: 2;
  kind: "confirmation";
  id: string;
  operation: ConfirmedOperation;
  target: { conversation: string; execution: string };
  /** The latest stop when issued; a confirmation is refused once the stop changed (H17). */
  stop: string | null;
  connection: string;
  grant: string;
  issuedAt: string;
  expiresAt: string;
};

export type EligibilityRecord = {
  version: 2;
  kind: "eligibility";
  id: string;
  conversation: string;
  sessionKey: string;
  /** The execution and incarnation whose proven stop this follows. */
  execution: string;
  incarnation: string;
  stop: string;
  proofDigest: string;
  leafId: string | null;
  /** The claim revisions reserved: launch acquires only if they are still the latest (K17). */
  reservation: { session: number | null; seat: number | null };
  issuedAt: string;
};

/** A dialog the engine asked: Pi's, never answered; or an approval, open until it ends. */
export type DialogRecord = {
  version: 2;
  kind: "dialog";
  id: string;
  /** The engine's request id: Pi's (never answered), Claude Code's `request_id`. */
  native: string;
  execution: string;
  method: DialogMethod;
  title: string;
  disabled: boolean;
  /** Why a disabled dialog is not answered. */
  reason?: string;
  /** An approval's tool, as the engine asked it. */
  tool?: { name: string; input: unknown; toolUseId?: string };
  /** A budget dialog's figures as it opened (the controller's, not the engine's). */
  budget?: BudgetState;
  at: string;
};

/** How an approval ended: allowed or denied by the connection named, or closed unanswered. */
export type DialogEndRecord = {
  version: 2;
  kind: "dialog-end";
  dialog: string;
  native: string;
  execution: string;
  state: "allowed" | "denied" | "closed";
  reason: string;
  answeredBy?: { connection: string; actor: string };
  message?: string;
  /** A budget dialog's figures as it ended (raised: the new limits). */
  budget?: BudgetState;
  at: string;
};

export type ControlRecord =
  | BindingRecord
  | ReceiptRecord
  | StopRecord
  | ConfirmationRecord
  | EligibilityRecord
  | DialogRecord
  | DialogEndRecord;

/** SHA-256 (hex) of canonical JSON: keys sorted at every level. */
export function digestOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export type EvidenceEntry = { record: ControlRecord; digest: string; previous: string | null };

/**
 * The controller's append-only evidence: each entry's digest covers its record and the previous
 * digest, so an edited or dropped record breaks the chain (`verifyChain`).
 */
export class Evidence {
  readonly entries: EvidenceEntry[] = [];

  append(record: ControlRecord): EvidenceEntry {
    const previous = this.entries.at(-1)?.digest ?? null;
    const entry = { record, digest: digestOf({ previous, record }), previous };
    this.entries.push(entry);
    return entry;
  }

  records(): ControlRecord[] {
    return this.entries.map((e) => e.record);
  }

  /** True when every entry's digest matches its record and predecessor. */
  verifyChain(): boolean {
    let previous: string | null = null;
    for (const e of this.entries) {
      if (e.previous !== previous || e.digest !== digestOf({ previous, record: e.record })) {
        return false;
      }
      previous = e.digest;
    }
    return true;
  }
}

export type StopVerdict =
  | { verified: true; proofDigest: string }
  | { verified: false; why: string };

/** What the controller asks of its `verifier` (seed constructor param). */
export type Verifier = {
  /** Refuses `configuration` unless the session file is a fixture this verifier vouches for. */
  checkSession(sessionFile: string): void;
  /** Whether a force stop's outcome proves that every member of the engine's cohort is gone. */
  verifyStop(outcome: StopOutcome, engine: { pid: number | undefined }): StopVerdict;
};

/**
 * The fixture build's verifier. It vouches only for session files under its fixture root, and
 * accepts a stop as proven only when the outcome says `stopped` with a proof whose enumeration
 * and emptiness were both observed, the enumeration names the engine, and every member the stop
 * saw is in the enumeration. A `synthetic` proof (FakeLauncher) is accepted because this is a
 * fixture verifier: it proves nothing about a real host, and no other verifier may accept it.
 */
export class FixtureVerifier implements Verifier {
  readonly fixtureRoot: string;

  constructor(options: { fixtureRoot: string }) {
    if (typeof options.fixtureRoot !== "string" || !isAbsolute(options.fixtureRoot)) {
      throw new ControlRefusal("configuration", "FixtureVerifier needs an absolute fixtureRoot");
    }
    this.fixtureRoot = resolve(options.fixtureRoot);
  }

  checkSession(sessionFile: string): void {
    const rel = relative(this.fixtureRoot, resolve(sessionFile));
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
      throw new ControlRefusal(
        "configuration",
        `the verifier vouches only for fixtures under ${this.fixtureRoot}`,
      );
    }
  }

  verifyStop(outcome: StopOutcome, engine: { pid: number | undefined }): StopVerdict {
    return judgeStop(outcome, engine);
  }
}

/**
 * The verifier of real sessions: it vouches for a session file only when it is a `*.jsonl`
 * directly in the sessions directory of one of its approved repository specs
 * (`<projectRoot>/.pi/state/<seat>/sessions`, as the reader's sources list them), and that root
 * is a Pi root (a seat registration naming another harness makes it unsupported). It judges
 * stops as FixtureVerifier does, except that it never accepts a `synthetic` proof: only a
 * launcher that observed the host can prove a stop here.
 */
export class RepositoryVerifier implements Verifier {
  readonly specs: readonly BoardSpec[];
  readonly registrations: readonly SeatRegistration[];

  constructor(options: { specs: BoardSpec[]; registrations?: SeatRegistration[] }) {
    if (!Array.isArray(options.specs) || options.specs.length === 0) {
      throw new ControlRefusal("configuration", "RepositoryVerifier needs at least one spec");
    }
    this.specs = options.specs;
    this.registrations = options.registrations ?? [];
  }

  checkSession(sessionFile: string): void {
    const file = resolve(sessionFile);
    // A Claude Code seat's session (docs/claude-control.md): its place names the project and
    // seat, which a repository spec must approve.
    const claudeProject = CLAUDE_SESSION_PLACE.projectOf(file, undefined);
    if (claudeProject !== null) {
      const seat = basename(dirname(dirname(dirname(dirname(file)))));
      const approved = this.specs.some(
        (s) =>
          s.kind === "repository" &&
          resolve(String(s.projectRoot)) === claudeProject &&
          s.seat === seat,
      );
      if (approved) return;
    }
    // Repository roots only: Pi's own store (`pi-agent` specs) is a live root the controller
    // never runs Pi on, and fleet or connector specs are never roots.
    const repositorySpecs = this.specs.filter((spec) => spec.kind === "repository");
    // A seat on Claude Code is read from its Claude folder, but is not Pi's to control here.
    const roots = rootsFromSpecs(repositorySpecs, [...this.registrations])
      .map(
        (r): Root =>
          r.kind === "claude-seat"
            ? {
                ...r,
                kind: "unsupported",
                harness: "claude-code",
                sessionsDir: sessionsDirOf(r.projectRoot, r.seat),
              }
            : r,
      )
      .filter(
        (r): r is PiRoot | UnsupportedRoot =>
          r.kind === "unsupported" || (r.kind === "pi" && r.store === undefined),
      );
    const root = roots.find((r) => r.sessionsDir === dirname(file));
    const name = basename(file);
    if (root === undefined || !name.endsWith(".jsonl") || name === ".jsonl") {
      const places = roots.map((r) => r.sessionsDir);
      throw new ControlRefusal(
        "configuration",
        `${file} is not a session of an approved project and seat (approved: ${places.join(", ") || "none"})`,
      );
    }
    if (root.kind !== "pi") {
      throw new ControlRefusal(
        "configuration",
        `the seat ${root.seat} of ${root.project} runs ${root.harness}, not Pi; it can't be controlled`,
      );
    }
  }

  verifyStop(outcome: StopOutcome, engine: { pid: number | undefined }): StopVerdict {
    if (outcome.result === "stopped" && outcome.proof.method === "synthetic") {
      return { verified: false, why: "a synthetic proof proves nothing about this host" };
    }
    return judgeStop(outcome, engine);
  }
}

/**
 * A stop is proven only when the outcome says `stopped` with a proof whose enumeration and
 * emptiness were both observed, the enumeration names the engine (or its exit was seen), and
 * every member the stop saw is in the enumeration.
 */
function judgeStop(outcome: StopOutcome, engine: { pid: number | undefined }): StopVerdict {
  if (outcome.result !== "stopped") return { verified: false, why: "the stop ended uncertain" };
  const { proof } = outcome;
  if (proof.enumerated.status !== "observed" || proof.emptied.status !== "observed") {
    return { verified: false, why: "an observation the proof needs is absent" };
  }
  if (!proof.emptied.empty) return { verified: false, why: "the cohort was not seen empty" };
  const enumerated = new Set(proof.enumerated.pids);
  // The engine must be in the enumeration, or have been seen to exit before it: a controller
  // that closed the engine's input first enumerates an already-empty cohort, honestly.
  const exitSeen = outcome.observations.some(
    (o) => o.kind === "engine-exit" && o.status === "observed",
  );
  if (engine.pid !== undefined && !enumerated.has(engine.pid) && !exitSeen) {
    return { verified: false, why: "the enumeration does not name the engine" };
  }
  const missed = outcome.members.filter((pid) => !enumerated.has(pid));
  if (missed.length > 0) {
    return { verified: false, why: `members outside the enumeration: ${missed.join(", ")}` };
  }
  return { verified: true, proofDigest: digestOf(proof) };
}

export function isVerifier(v: unknown): v is Verifier {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as Verifier).checkSession === "function" &&
    typeof (v as Verifier).verifyStop === "function"
  );
}
