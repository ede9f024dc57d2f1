// The controller's audit hook (issue 29 items 2 and 3): every request but `observe` is reported,
// once, with the reply it got (an identical retry's replay not again: reply-window.ts), to the
// controller's action sink (the CLI's audit ledger), naming the connection's actor: the person a
// delegating grant's hello named, else the grant's own.
// A hello's narrowing of its grant (`capabilities`) is held here too, before the operations see
// the request. The reply is seen on its way out (the connection's `send`), so the operations
// stay as they are; a sink that throws makes the controller refuse every later act `audit`.
import type { LedgerAction } from "../../audit/ledger-line.ts";
import type { Grant, Reply, Request } from "../protocol.ts";
import { refused } from "./operations.ts";
import { isReplay } from "./reply-window.ts";
import type { Connection } from "./socket.ts";

/** Request fields that frame a request rather than say what it asks. */
const ENVELOPE = new Set(["type", "id", "op", "target", "generation", "incarnation", "draft"]);

export type AuditHost = {
  conversation: string;
  grant(id: string): Grant | null;
  /** Where actions go; absent: nowhere (a controller without a ledger). */
  sink: ((action: LedgerAction) => void) | undefined;
  /** The sink threw: nothing may act from now on. */
  failed(error: unknown): void;
};

/**
 * The connection the operations answer `request` on: `conn` itself for `observe` (reading is
 * not audited), else `conn` with a `send` that reports the request's first reply. Null when the
 * request was refused here (`capability`: the hello narrowed the grant to exclude it).
 */
export function auditedConnection(
  conn: Connection,
  request: Request,
  host: AuditHost,
): Connection | null {
  if (conn.capabilities !== null && !conn.capabilities.includes(request.op)) {
    const reply = refused(
      request.id,
      "capability",
      `this connection may not ${request.op}: its hello narrowed the grant ${conn.grant} to ${conn.capabilities.join(", ") || "nothing"}`,
    );
    report(conn, request, reply, host);
    conn.send(reply);
    return null;
  }
  if (request.op === "observe" || host.sink === undefined) return conn;
  let reported = false;
  const audited: Connection = Object.create(conn, {
    send: {
      value: (message: Parameters<Connection["send"]>[0]) => {
        if (!reported && message.type === "reply" && message.id === request.id) {
          reported = true;
          report(conn, request, message, host);
        }
        conn.send(message);
      },
    },
  });
  return audited;
}

function report(conn: Connection, request: Request, reply: Reply, host: AuditHost): void {
  if (host.sink === undefined || request.op === "observe" || isReplay(reply)) return;
  const grant = conn.grant === null ? null : host.grant(conn.grant);
  const actor = conn.actor ?? grant?.actor ?? "unknown";
  const input: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(request)) if (!ENVELOPE.has(k)) input[k] = v;
  const action: LedgerAction = {
    at: new Date().toISOString(),
    conversation: host.conversation,
    actor,
    grant: conn.grant ?? "none",
    ...(grant !== null && grant.actor !== actor ? { delegatedBy: grant.actor } : {}),
    connection: conn.id,
    op: request.op,
    request: request.id,
    outcome: reply.outcome,
    input,
    answer: summarize(reply),
  };
  try {
    host.sink(action);
  } catch (e) {
    host.failed(e);
  }
}

/**
 * What a reply said, kept short: a refusal's message, the receipt, and of the result its plain
 * fields and the id, state and result of each record it holds (a confirmation, a stop, an
 * eligibility record), never a page of history.
 */
function summarize(reply: Reply): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (reply.message !== undefined) out.message = reply.message;
  if (reply.receipt !== undefined) {
    const { id, state, reason } = reply.receipt;
    out.receipt = { id, state, ...(reason === undefined ? {} : { reason }) };
  }
  const result = reply.result;
  if (typeof result === "object" && result !== null && !Array.isArray(result)) {
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(result)) {
      if (v === null || typeof v !== "object") kept[k] = v;
      else if (!Array.isArray(v)) {
        const r = v as Record<string, unknown>;
        const brief: Record<string, unknown> = {};
        for (const f of ["id", "kind", "state", "result", "operation", "generation"]) {
          if (r[f] !== undefined && (r[f] === null || typeof r[f] !== "object")) brief[f] = r[f];
        }
        kept[k] = brief;
      }
    }
    out.result = kept;
  }
  return out;
}
