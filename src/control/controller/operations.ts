// The operations behind admission: observe, takeover, release, prompt, interrupt, confirm,
// force-stop, recover and launch. Each request id is answered once; the same request again
// gets the same reply while it is in the connection's reply window (reply-window.ts), other
// content under the same id, or any repeat older than the window, refuses
// `conflicting-request`. Every
// reply is a value: refusals are `{ outcome: "refused:<code>", refusal }`, a lost prompt is
// `unknown`, never resent.

import { randomUUID } from "node:crypto";
import { CURSOR_CAP } from "../../reader/cursors.ts";
import type { Reader } from "../../reader/reader.ts";
import type { Claim, ClaimStore, SeatKey } from "../claim/claim.ts";
import type { SessionHead, TextCheck } from "../engine/harness.ts";
import {
  type BudgetLimits,
  type BudgetState,
  type ControllerMessage,
  type ControllerState,
  canonicalRequest,
  type Dialog,
  type Grant,
  type Receipt,
  type ReceiptReason,
  type Reply,
  type Request,
} from "../protocol.ts";
import { type ControlRefusalCode, isControlRefusal } from "../refusal.ts";
import { admit, FORGOTTEN_REQUEST } from "./admission.ts";
import { ConfirmationStore } from "./confirmations.ts";
import type { Execution } from "./execution.ts";
import type { ControlRecord, EligibilityRecord } from "./records.ts";
import { ReplyWindow, replayOf } from "./reply-window.ts";
import type { Connection } from "./socket.ts";
import type { PromptResponse } from "./turns.ts";

/** Pi's reason on a receipt is Pi's text: bounded, as every string a client renders. */
const MAX_DETAIL_CHARS = 4000;

export type OperationsHost = {
  /**
   * True while the session has no file yet: Claude Code writes a new one at its first turn
   * (docs/claude-control.md). An observe then reads an empty page, not a refusal.
   */
  unwritten?: () => boolean;
  conversation: string;
  sessionKey: string;
  sessionFile: string;
  /** The session's key and leaf now (the harness reads the file); throws `mapping`. */
  readHead(): SessionHead;
  /** The session key now, for admission's W4 check; throws `mapping` when the file is gone. */
  readKey(): string;
  /** The harness's text policy (draft, text-policy). */
  checkText(text: unknown): TextCheck;
  seatKey: SeatKey;
  reader: Reader;
  claims: ClaimStore;
  provesStops: boolean;
  exec(): Execution | null;
  claim(): Claim | null;
  setClaim(claim: Claim): void;
  grant(id: string): Grant | null;
  generation(): number;
  controllerConnection(): string | null;
  /** Changes the controller (null: none); the generation goes up by one. */
  setController(connection: string | null): void;
  auditOk(): boolean;
  state(): ControllerState;
  record(record: ControlRecord): void;
  broadcast(message: ControllerMessage): void;
  /** Sends an encoded stream event line to every welcomed connection. */
  broadcastLine(line: string): void;
  /** Answers an open approval for `conn` (its checks passed admission); a refusal or the dialog. */
  answer(
    conn: Connection,
    grant: Grant,
    r: Extract<Request, { op: "answer" }>,
  ): { ok: true; dialog: Dialog } | { ok: false; code: ControlRefusalCode; message: string };
  /** Why a prompt may not start now: the budget is reached (budget-guard.ts); else null. */
  budgetRefusal(): string | null;
  /** The `budget` op: a budget change, refused `capability` without the budget capability. */
  changeBudget(
    conn: Connection,
    grant: Grant,
    limits: BudgetLimits,
  ): { ok: true; budget: BudgetState } | { ok: false; code: ControlRefusalCode; message: string };
  /** A new execution and incarnation (generation + 1), the claim already acquired for it. */
  relaunch(execution: string, incarnation: string, leaf: string | null): Promise<void>;
};

type Pending = { receipt: Receipt; acked: (outcome: "ok" | "failed" | "lost") => void };

/** The main branch name the reader gives the first root's line. */
const DEFAULT_BRANCH = "main";

export class Operations {
  readonly #host: OperationsHost;
  /** Per connection: the replies an identical repeat may get again (bounded). */
  readonly #requests = new Map<string, ReplyWindow>();
  readonly #confirmations = new ConfirmationStore();
  readonly #eligibility = new Map<string, { record: EligibilityRecord; used: boolean }>();
  readonly #receipts = new Map<string, Receipt>();
  readonly #cursorBranch = new Map<string, string>();
  /** Replies already written at their place in the engine's stream (a prompt's, at its ack). */
  readonly #sentInStream = new WeakSet<Reply>();
  #pending: Pending | null = null;
  #leafAtProof: string | null = null;

  constructor(host: OperationsHost) {
    this.#host = host;
  }

  handle(conn: Connection, r: Request): void {
    let seen = this.#requests.get(conn.id);
    if (!seen) {
      seen = new ReplyWindow();
      this.#requests.set(conn.id, seen);
    }
    const canonical = canonicalRequest(r);
    const earlier = seen.lookup(r.id);
    if (earlier.kind === "held" && earlier.canonical === canonical) {
      void earlier.reply.then((reply) => conn.send(replayOf(reply)));
      return;
    }
    const reply = this.#run(
      conn,
      r,
      earlier.kind === "held"
        ? earlier.canonical
        : earlier.kind === "forgotten"
          ? FORGOTTEN_REQUEST
          : null,
    );
    if (earlier.kind === "new") seen.add(r.id, canonical, reply);
    void reply.then((answer) => {
      if (!this.#sentInStream.has(answer)) conn.send(answer);
    });
  }

  forget(connection: string): void {
    this.#requests.delete(connection);
  }

  /** What one connection's reply window holds now (null: it sent no request). */
  replyMemory(connection: string): ReplyWindow["stats"] | null {
    return this.#requests.get(connection)?.stats ?? null;
  }

  /** The prompt's response record, at its place in the engine's stream. */
  promptAcked(success: boolean, response: PromptResponse = {}): void {
    const p = this.#pending;
    if (!p) return;
    this.#pending = null;
    this.#host.exec()?.tracker.ack(p.receipt.id, success, response);
    p.acked(success ? "ok" : "failed");
  }

  /** The tracker settled a receipt: record it and tell every client. */
  settled(receiptId: string, reason: ReceiptReason, detail?: string): void {
    const receipt = this.#receipts.get(receiptId);
    if (!receipt) return;
    const settled: Receipt = {
      ...receipt,
      state: "settled",
      reason,
      ...(detail === undefined ? {} : { detail: detail.slice(0, MAX_DETAIL_CHARS) }),
    };
    this.#receipts.set(receiptId, settled);
    this.#host.record({ ...settled, version: 2, kind: "receipt", at: new Date().toISOString() });
    const exec = this.#host.exec();
    if (exec)
      this.#host.broadcastLine(exec.stream.next({ kind: "receipt", receipt: settled }).line);
    if (this.#pending?.receipt.id === receiptId) {
      this.#pending.acked("lost");
      this.#pending = null;
    }
  }

  async #run(conn: Connection, r: Request, earlier: string | null): Promise<Reply> {
    try {
      return await this.#operate(conn, r, earlier);
    } catch (e) {
      if (isControlRefusal(e)) return refused(r.id, e.code, e.message);
      return { type: "reply", id: r.id, outcome: "unknown", message: String(e).slice(0, 2000) };
    }
  }

  async #operate(conn: Connection, r: Request, earlier: string | null): Promise<Reply> {
    const h = this.#host;
    const exec = h.exec();
    const grant = conn.grant === null ? null : h.grant(conn.grant);
    if (exec === null || grant === null) return refused(r.id, "channel", "not welcomed");
    const state = h.state();
    const verdict = admit(
      {
        connection: conn.id,
        channelOpen: conn.channelOpen,
        grant,
        earlier,
        conversation: h.conversation,
        execution: exec.execution,
        branch: DEFAULT_BRANCH,
        incarnation: exec.incarnation,
        generation: h.generation(),
        controllerConnection: h.controllerConnection(),
        admission: state.admission,
        fenceReason: [...exec.closers].join(", ") || "closed",
        provesStops: h.provesStops,
        auditOk: h.auditOk(),
        readHeaderId: () => h.readKey(),
        checkText: (text) => h.checkText(text),
        sessionKey: h.sessionKey,
        hasTurn: exec.tracker.hasTurn(),
        escalationRunning: exec.stops.escalationRunning,
      },
      r,
    );
    if (!verdict.ok) return refused(r.id, verdict.code, verdict.message);
    const ok = (result?: unknown, receipt?: Receipt): Reply => ({
      type: "reply",
      id: r.id,
      outcome: "admitted",
      ...(result === undefined ? {} : { result }),
      ...(receipt === undefined ? {} : { receipt }),
    });
    const target = { conversation: h.conversation, execution: exec.execution };
    switch (r.op) {
      case "observe":
        return this.#observe(r.id, exec, r.cursor, r.limit);
      case "takeover":
        h.setController(conn.id);
        return ok({ generation: h.generation(), role: "controller" });
      case "release":
        h.setController(null);
        return ok({ generation: h.generation(), role: "observer" });
      case "prompt": {
        const over = h.budgetRefusal();
        if (over !== null) return refused(r.id, "budget", over);
        return this.#prompt(conn, r.id, exec, verdict.text ?? r.text);
      }
      case "interrupt":
        return ok({ stop: await exec.stops.interrupt() });
      case "confirm": {
        const record = this.#confirmations.issue({
          operation: r.operation,
          target,
          stop: exec.stops.currentId,
          connection: conn.id,
          grant: grant.id,
        });
        h.record(record);
        return ok({ confirmation: record });
      }
      case "force-stop": {
        if (exec.stops.proven)
          return refused(r.id, "fenced", "the engine is already proven stopped");
        const used = this.#confirmations.use(r.confirmation, {
          operation: "force-stop",
          connection: conn.id,
          target,
          stop: exec.stops.currentId,
        });
        if (!used.ok) return refused(r.id, "confirmation", used.message);
        const stop = await exec.stops.forceStop();
        if (stop.result === "stopped") this.#leafAtProof = h.readHead().leafId;
        h.broadcast({ type: "state", state: h.state() });
        return ok({ stop });
      }
      case "recover":
        return this.#recover(r.id, conn, exec, r.confirmation);
      case "launch":
        return this.#launch(r.id, exec, r.eligibility);
      case "answer": {
        const answered = h.answer(conn, grant, r);
        return answered.ok
          ? ok({ dialog: answered.dialog })
          : refused(r.id, answered.code, answered.message);
      }
      case "budget": {
        const limits = {
          ...(r.usd === undefined ? {} : { usd: r.usd }),
          ...(r.tokens === undefined ? {} : { tokens: r.tokens }),
        };
        const changed = h.changeBudget(conn, grant, limits);
        return changed.ok
          ? ok({ budget: changed.budget })
          : refused(r.id, changed.code, changed.message);
      }
      default: {
        const never: never = r;
        return refused((never as Request).id, "malformed", "unknown operation");
      }
    }
  }

  #observe(id: string, exec: Execution, cursor?: string, limit?: number): Reply {
    const h = this.#host;
    const quietBefore = exec.tracker.isQuiet();
    const fromSequence = exec.stream.nextSequence;
    const read = cursor
      ? h.reader.next({
          cursor,
          conversation: h.conversation,
          branch: this.#cursorBranch.get(cursor) ?? DEFAULT_BRANCH,
        })
      : h.reader.open({ conversation: h.conversation });
    if (!read.ok && cursor === undefined && h.unwritten?.() === true) {
      return emptyPage(id, h.conversation, exec);
    }
    if (!read.ok) {
      const code = cursor ? "cursor" : "mapping";
      return { ...refused(id, code, read.refusal.message), detail: read.refusal.code };
    }
    for (const c of [read.cursor, read.follow]) {
      if (!c) continue;
      this.#cursorBranch.set(c.id, read.page.branch);
      // The reader keeps at most CURSOR_CAP cursors, oldest out first; a branch kept for a
      // cursor it dropped would only grow this map (issue 18 item 2).
      if (this.#cursorBranch.size > CURSOR_CAP) {
        const oldest = this.#cursorBranch.keys().next().value;
        if (oldest !== undefined) this.#cursorBranch.delete(oldest);
      }
    }
    const quiet =
      quietBefore && exec.tracker.isQuiet() && exec.stream.nextSequence === fromSequence;
    const seam = seamAt(exec, fromSequence, quiet);
    return {
      type: "reply",
      id,
      outcome: "admitted",
      result: {
        page: read.page,
        cursor: read.cursor,
        follow: read.follow,
        view: read.view,
        seam,
        ...(limit === undefined ? {} : { limitAdvisory: true }),
      },
    };
  }

  // The reply is written the moment Pi's response is read, before any later engine record is
  // broadcast: it carries the receipt as of the ack and precedes the run's events. Waiting for
  // the promise chain instead let a run that arrived in the same chunk settle first.
  async #prompt(conn: Connection, id: string, exec: Execution, text: string): Promise<Reply> {
    const h = this.#host;
    const receipt: Receipt = {
      id: `rc-${randomUUID()}`,
      request: id,
      execution: exec.execution,
      generation: h.generation(),
      state: "admitted",
    };
    this.#receipts.set(receipt.id, receipt);
    h.record({ ...receipt, version: 2, kind: "receipt", at: new Date().toISOString() });
    exec.tracker.dispatch(receipt.id, text);
    const replied = new Promise<Reply>((resolve) => {
      this.#pending = {
        receipt,
        acked: (outcome) => {
          const now = this.#receipts.get(receipt.id) ?? receipt;
          const reply: Reply =
            outcome === "lost" && now.reason !== "run-overlap"
              ? { type: "reply", id, outcome: "unknown", receipt: now, message: "outcome unknown" }
              : { type: "reply", id, outcome: "admitted", receipt: now };
          this.#sentInStream.add(reply);
          conn.send(reply);
          resolve(reply);
        },
      };
    });
    exec.engine.prompt(text).catch(() => {
      // The engine went away before answering: the outcome is unknown (transport-unknown).
      if (this.#pending?.receipt.id === receipt.id) exec.tracker.engineGone();
    });
    return replied;
  }

  #recover(id: string, conn: Connection, exec: Execution, confirmation: string): Reply {
    const h = this.#host;
    const used = this.#confirmations.use(confirmation, {
      operation: "recover",
      connection: conn.id,
      target: { conversation: h.conversation, execution: exec.execution },
      stop: exec.stops.currentId,
    });
    if (!used.ok) return refused(id, "confirmation", used.message);
    const proven = exec.stops.proven;
    const claim = h.claim();
    if (!proven || exec.stops.latest?.id !== proven.id || proven.proofDigest === null || !claim) {
      return refused(id, "stop-proof", "no verified stop of this execution");
    }
    const leaf = h.readHead().leafId;
    if (leaf !== this.#leafAtProof) return refused(id, "target", "the leaf moved since the proof");
    const record: EligibilityRecord = {
      version: 2,
      kind: "eligibility",
      id: `el-${randomUUID()}`,
      conversation: h.conversation,
      sessionKey: h.sessionKey,
      execution: exec.execution,
      incarnation: exec.incarnation,
      stop: proven.id,
      proofDigest: proven.proofDigest,
      leafId: leaf,
      reservation: { ...claim.revisions },
      issuedAt: new Date().toISOString(),
    };
    this.#eligibility.set(record.id, { record, used: false });
    h.record(record);
    return { type: "reply", id, outcome: "admitted", result: { eligibility: record } };
  }

  async #launch(id: string, exec: Execution, eligibility: string): Promise<Reply> {
    const h = this.#host;
    const el = this.#eligibility.get(eligibility);
    if (!el || el.used) return refused(id, "eligibility", "unknown or used eligibility record");
    if (el.record.incarnation !== exec.incarnation) {
      return refused(id, "eligibility", "the eligibility record is from another incarnation");
    }
    const leaf = h.readHead().leafId;
    if (leaf !== el.record.leafId) return refused(id, "target", "the leaf moved since eligibility");
    el.used = true;
    const execution = `ex-${randomUUID()}`;
    const incarnation = `in-${randomUUID()}`;
    const holder = await h.claims.holderFor({ execution, incarnation });
    const claim = await h.claims.acquire({
      seatKey: h.seatKey,
      sessionKey: h.sessionKey,
      holder,
      expect: el.record.reservation,
    });
    h.setClaim(claim);
    await h.relaunch(execution, incarnation, leaf);
    return { type: "reply", id, outcome: "admitted", result: { state: h.state() } };
  }
}

export function refused(id: string | null, code: ControlRefusalCode, message: string): Reply {
  return { type: "reply", id, outcome: `refused:${code}`, refusal: code, message };
}

/**
 * The page of a session with no file yet: no parts, the snapshot of zero bytes, and a seam from
 * where the stream is now (everything after it is live), so a client joins the stream at once.
 */
function emptyPage(id: string, conversation: string, exec: Execution): Reply {
  const fromSequence = exec.stream.nextSequence;
  const page = {
    conversation,
    branch: DEFAULT_BRANCH,
    parts: [],
    nextCursor: null,
    snapshot: { bytes: 0, digest: EMPTY_SHA256 },
    sourceEpoch: "unwritten",
  };
  const seam = seamAt(exec, fromSequence, exec.tracker.isQuiet());
  return { type: "reply", id, outcome: "admitted", result: { page, seam } };
}

/**
 * The seam of a page read before the stream's `fromSequence`: `replay` says whether a client
 * that applies the page can rejoin the stream right after it with `resume: { streamEpoch,
 * afterSequence: fromSequence - 1 }` and miss nothing. One rule for a read page and an empty one.
 */
function seamAt(exec: Execution, fromSequence: number, quiet: boolean) {
  const replay = exec.stream.covers(exec.stream.epoch, fromSequence - 1)
    ? "available"
    : "unavailable";
  return { replay, streamEpoch: exec.stream.epoch, fromSequence, reconcile: true, quiet };
}

/** SHA-256 of no bytes. */
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
