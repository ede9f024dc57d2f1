// Admission (seed: Refusals): the checks every request passes, in CHAT-01 check order and then
// the CHAT-03 narrowings, each answering its own code. Pure over an `AdmissionView` of the
// controller; the checks that consume state (confirmation, stop-proof, eligibility, cursor,
// and the leaf checks of recover and launch) run after these in the operation itself.
// docs/controller.md lists the order and what triggers each code in this build.

import type { TextCheck } from "../engine/harness.ts";
import {
  canonicalRequest,
  type Grant,
  OPERATIONS,
  type Operation,
  type Request,
} from "../protocol.ts";
import type { ControlRefusalCode } from "../refusal.ts";
import { REPLY_WINDOW_BYTES, REPLY_WINDOW_IDS } from "./reply-window.ts";

/** `earlier` for an id used before whose content and reply left the window (never JSON). */
export const FORGOTTEN_REQUEST = "(forgotten)";

export type Refused = { ok: false; code: ControlRefusalCode; message: string };
export type Admitted = { ok: true; text?: string };
export type Admission = Admitted | Refused;

/** What admission reads of the controller at the moment a request arrives. */
export type AdmissionView = {
  connection: string;
  channelOpen: boolean;
  grant: Grant;
  /**
   * Canonical content of an earlier request with the same id on this connection, or
   * FORGOTTEN_REQUEST when the id was used but left the reply window.
   */
  earlier: string | null;
  conversation: string;
  execution: string;
  branch: string;
  incarnation: string;
  generation: number;
  controllerConnection: string | null;
  admission: "open" | "fenced" | "never";
  fenceReason: string;
  /** The launcher can prove a stop (recovery needs one). */
  provesStops: boolean;
  auditOk: boolean;
  /** The session file's header id now; throws ControlRefusal `mapping` when it's gone. */
  readHeaderId(): string;
  /** The engine's text policy: `draft` and `text-policy` (the harness's). */
  checkText(text: unknown): TextCheck;
  sessionKey: string;
  hasTurn: boolean;
  escalationRunning: boolean;
};

/**
 * Operations that act, every one but `observe`: they need the current generation and an audit
 * sink that holds.
 */
const ACTING: ReadonlySet<Operation> = new Set(OPERATIONS.filter((op) => op !== "observe"));
/** Only the controller may do these. */
const CONTROLLER_ONLY: ReadonlySet<Operation> = new Set([
  "release",
  "prompt",
  "interrupt",
  "answer",
]);
/** The controller, or anyone when no controller is connected (an orphan, H20). */
const CONTROLLER_OR_ORPHAN: ReadonlySet<Operation> = new Set(["confirm", "force-stop"]);
/** Recovery: refused `controller-present` while another connection controls. */
const RECOVERY: ReadonlySet<Operation> = new Set(["recover", "launch"]);

const no = (code: ControlRefusalCode, message: string): Refused => ({ ok: false, code, message });

/** Runs the admission checks in order; the first that fails answers. */
export function admit(view: AdmissionView, r: Request): Admission {
  const op = r.op;
  if (!view.channelOpen) return no("channel", "this connection's channel was closed");
  if (RECOVERY.has(op) && !view.provesStops) {
    return no("unsupported-capability", `${op} needs a stop proof this launcher can't give`);
  }
  const scope = view.grant.scope;
  if (scope !== undefined && !scope.conversations.includes(view.conversation)) {
    return no("scope", "the grant's scope does not cover this conversation");
  }
  let headerId: string;
  try {
    headerId = view.readHeaderId();
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === "mapping" || code === "configuration") {
      return no("mapping", `the conversation no longer maps to its session file: ${String(e)}`);
    }
    throw e;
  }
  if (ACTING.has(op) && !view.auditOk) return no("audit", "the audit sink failed; nothing acts");
  if (!view.grant.capabilities.includes(op)) {
    return no("capability", `the grant ${view.grant.id} lacks ${op}`);
  }
  const t = r.target;
  if (t?.conversation !== undefined && t.conversation !== view.conversation) {
    return no("target", "the target names another conversation");
  }
  if (t?.execution !== undefined && t.execution !== view.execution) {
    return no("target", "the target names another execution");
  }
  if (t?.branch !== undefined && t.branch !== view.branch) {
    return no("target", "the target names another branch");
  }
  if (headerId !== view.sessionKey) {
    return no("target", "the session header id changed since construction (W4)");
  }
  if (ACTING.has(op) && r.generation !== view.generation) {
    return no("generation", `the controller generation is ${view.generation}, not ${r.generation}`);
  }
  const controls = view.controllerConnection === view.connection;
  if (CONTROLLER_ONLY.has(op) && !controls) {
    return no("controller", "this connection is not the controller");
  }
  if (CONTROLLER_OR_ORPHAN.has(op) && view.controllerConnection !== null && !controls) {
    return no("controller", "another connection is the controller");
  }
  if (view.earlier === FORGOTTEN_REQUEST) {
    return no(
      "conflicting-request",
      `request id ${r.id} was used earlier on this connection and its reply is no longer held (the controller keeps the last ${REPLY_WINDOW_IDS} replies, up to ${REPLY_WINDOW_BYTES} bytes); send a new request with a fresh id`,
    );
  }
  if (view.earlier !== null && view.earlier !== canonicalRequest(r)) {
    return no("conflicting-request", `request id ${r.id} was used with other content`);
  }
  if (r.incarnation !== undefined && r.incarnation !== view.incarnation) {
    return no("stale-incarnation", "the request names an earlier controller incarnation");
  }
  if (op === "prompt" || op === "interrupt") {
    if (view.admission === "never") {
      return no(
        "preflight",
        "The engine did not load this session as expected when the controller started, so nothing " +
          "can be sent to it; the controller's output says why. Stop the controller, fix that, and " +
          "start it again (K8 load check; admission never opened)",
      );
    }
    if (view.admission === "fenced")
      return no("fenced", `admission is closed: ${view.fenceReason}`);
  }
  if (op === "answer") {
    // Before K8 passed the engine was never let act; while fenced, only a deny may go through:
    // it lets nothing run, and leaving the engine waiting helps no one.
    if (view.admission === "never") {
      return no("preflight", "the load check failed at start, so nothing is answered (K8)");
    }
    if (view.admission === "fenced" && r.decision === "allow") {
      return no(
        "fenced",
        `admission is closed: ${view.fenceReason}; an approval can only be denied`,
      );
    }
  }
  if (op === "force-stop" && view.escalationRunning) {
    return no("fenced", "a force stop is already running");
  }
  if (op === "prompt" && view.hasTurn) {
    return no("busy", "a prompt holds the dispatch slot; there is no queue");
  }
  if (op === "prompt") {
    const text = view.checkText(r.text);
    if (!text.ok) return no(text.code, text.message);
    return { ok: true, text: text.text };
  }
  if (op === "interrupt" && !view.hasTurn) return no("no-turn", "no prompt and no run to stop");
  if (op === "takeover" && controls) return no("already-controller", "you already control it");
  if (RECOVERY.has(op) && view.controllerConnection !== null && !controls) {
    return no("controller-present", "a controller is connected; recovery is its call");
  }
  return { ok: true };
}
