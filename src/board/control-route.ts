// Steering from the Console (issue 15 item 2): `POST /api/conversations/:id/control` with
// `{ "op", ...fields }`, after auth.ts passed the login, Origin and content-type checks. Each
// logged-in browser session is its own controller connection (one ConversationClient per
// session and conversation), so takeover, generations and confirmations mean what they mean on
// the socket: a session that took control is the controller; another session is an observer.
// The answer is the controller's reply, with the HTTP status of its refusal code (status.ts).
import { ConversationClient, type Outcome } from "../control/client/client.ts";
import {
  type BudgetLimits,
  CONFIRMED_OPERATIONS,
  OPERATIONS,
  type Operation,
} from "../control/protocol.ts";
import { findController } from "../control/registry/registry.ts";
import type { Who } from "./identity.ts";
import { refuseRole } from "./identity.ts";
import { DEFAULT_GRANT } from "./live-control.ts";
import { boardRefusal, jsonReply, type Reply } from "./reply.ts";
import { capabilitiesOf } from "./roles.ts";
import { statusOf } from "./status.ts";

/** The socket's operations that act; `observe` is the live route's own connection. */
type ControlOp = Exclude<Operation, "observe">;
export const CONTROL_OPS: readonly ControlOp[] = OPERATIONS.filter(
  (op): op is ControlOp => op !== "observe",
);

/**
 * One steering call from a logged-in browser session: `session` names its connection, `who`
 * the person (identity.ts), whose role decides what they may do (roles.ts).
 */
export type ControlCall = {
  session: string;
  conversation: string;
  body: Record<string, unknown>;
  who: Who;
};
export type ControlRoute = (call: ControlCall) => Promise<Reply>;

export type ControlRouteOptions = {
  registryDir: string;
  grant?: string;
  log: (line: string) => void;
  /** How long a request waits for the controller's reply; the client's default otherwise. */
  requestTimeoutMs?: number;
};

type Connection = { socket: string; client: ConversationClient };

/** Signed-out logins remembered while a connection of theirs may still be being made. */
const SIGNED_OUT_KEPT = 256;

export function createControlRoute(options: ControlRouteOptions): {
  route: ControlRoute;
  close(): Promise<void>;
  /** Closes every connection a login held (it was signed out); later calls make new ones. */
  forget(session: string): void;
} {
  const connections = new Map<string, Connection>();
  const connecting = new Map<string, Promise<Connection>>();
  /** Logins signed out lately: a connection still being made for one is closed, not kept. */
  const signedOut = new Set<string>();

  async function connectionFor(key: string, socket: string, who: Who): Promise<Connection> {
    const held = connections.get(key);
    if (held?.socket === socket && held.client.connected) return held;
    if (held) {
      connections.delete(key);
      await held.client.close().catch(() => {});
    }
    // Two calls of one session at once share the one connection being made.
    const pending = connecting.get(key);
    if (pending) return pending;
    const made = (async () => {
      const client = new ConversationClient({
        socketPath: socket,
        grant: options.grant ?? DEFAULT_GRANT,
        clientName: "board-console",
        // A person the proxy named acts on the board's grant, narrowed to their role: the
        // controller's ledger names them, and refuses what their role may not do even if the
        // board erred. The local operator is the grant's own actor, as before.
        ...(who.proxied ? { actor: who.identity, capabilities: capabilitiesOf(who.role) } : {}),
        ...(options.requestTimeoutMs === undefined
          ? {}
          : { requestTimeoutMs: options.requestTimeoutMs }),
      });
      await client.connect();
      if (signedOut.has(key.split("\n", 1)[0] ?? "")) {
        await client.close().catch(() => {});
        throw new Error("this login was signed out while its connection was being made");
      }
      const conn = { socket, client };
      connections.set(key, conn);
      client.onClose(() => {
        if (connections.get(key) === conn) connections.delete(key);
      });
      return conn;
    })();
    connecting.set(key, made);
    try {
      return await made;
    } finally {
      connecting.delete(key);
    }
  }

  const route: ControlRoute = async (call) => {
    const op = call.body.op;
    if (typeof op !== "string" || !(CONTROL_OPS as readonly string[]).includes(op)) {
      return boardRefusal("bad-request", `"op" must be one of ${CONTROL_OPS.join(", ")}.`);
    }
    const byRole = refuseRole(
      call.who,
      op,
      op === "confirm" ? "confirm a force stop or a recovery" : op,
    );
    if (byRole !== null) return byRole;
    let entry: ReturnType<typeof findController>;
    try {
      entry = findController(options.registryDir, call.conversation);
    } catch (e) {
      options.log(`board: control: the registry cannot be read: ${describe(e)}`);
      entry = null;
    }
    if (entry === null) {
      return boardRefusal(
        "no-controller",
        "No controller runs this conversation now: start one with `conversation control`, then try again.",
      );
    }
    let conn: Connection;
    try {
      conn = await connectionFor(`${call.session}\n${call.conversation}`, entry.socket, call.who);
    } catch (e) {
      return jsonReply(statusOf("channel"), {
        ok: false,
        refusal: {
          code: "channel",
          reconcile: false,
          message: `The controller could not be reached: ${describe(e)}`,
        },
      });
    }
    const outcome = await perform(conn.client, op as ControlOp, call);
    if (typeof outcome === "string") return boardRefusal("bad-request", outcome);
    return answer(outcome, conn.client);
  };

  return {
    route,
    forget: (session) => {
      signedOut.add(session);
      for (const old of signedOut) {
        if (signedOut.size <= SIGNED_OUT_KEPT) break;
        signedOut.delete(old);
      }
      for (const [key, conn] of connections) {
        if (!key.startsWith(`${session}\n`)) continue;
        connections.delete(key);
        conn.client.close().catch((e: unknown) => {
          options.log(`board: control: closing a signed-out login's connection: ${describe(e)}`);
        });
      }
    },
    close: async () => {
      const all = [...connections.values()];
      connections.clear();
      await Promise.all(all.map((c) => c.client.close().catch(() => {})));
    },
  };
}

/** The operation on this session's connection; a string says which field is wrong. */
async function perform(
  client: ConversationClient,
  op: ControlOp,
  { body }: ControlCall,
): Promise<Outcome<object> | string> {
  const text = (name: string): string | null => {
    const v = body[name];
    return typeof v === "string" && v !== "" ? v : null;
  };
  switch (op) {
    case "takeover":
      return client.takeover();
    case "release":
      return client.release();
    case "interrupt":
      return client.interrupt();
    case "prompt": {
      const t = text("text");
      return t === null ? '"prompt" needs "text", a non-empty string.' : client.prompt(t);
    }
    case "confirm": {
      const operation = body.operation;
      if (operation !== "force-stop" && operation !== "recover") {
        return `"confirm" needs "operation": one of ${CONFIRMED_OPERATIONS.join(", ")}.`;
      }
      return client.confirm(operation);
    }
    case "force-stop": {
      const c = text("confirmation");
      return c === null ? '"force-stop" needs "confirmation" from "confirm".' : client.forceStop(c);
    }
    case "recover": {
      const c = text("confirmation");
      return c === null ? '"recover" needs "confirmation" from "confirm".' : client.recover(c);
    }
    case "launch": {
      const e = text("eligibility");
      return e === null ? '"launch" needs "eligibility" from "recover".' : client.launch(e);
    }
    case "answer": {
      const dialog = text("dialog");
      const decision = body.decision;
      if (dialog === null) return '"answer" needs "dialog", the id of the approval it answers.';
      if (decision !== "allow" && decision !== "deny") {
        return '"answer" needs "decision": "allow" or "deny".';
      }
      const message = body.message;
      if (message !== undefined && typeof message !== "string") {
        return '"answer"\'s "message" is a string.';
      }
      if (body.budget !== undefined) {
        if (decision !== "allow" || typeof body.budget !== "object" || body.budget === null) {
          return '"answer"\'s "budget" goes with "allow" on a budget dialog: { "usd", "tokens" }.';
        }
        return client.raiseBudget(dialog, body.budget as BudgetLimits);
      }
      return client.answer(dialog, decision, message);
    }
    case "budget":
      return client.budget({
        ...(body.usd === undefined ? {} : { usd: body.usd as number }),
        ...(body.tokens === undefined ? {} : { tokens: body.tokens as number }),
      });
    default:
      return unreachable(op);
  }
}

/** The controller's reply as the board answers it, with this connection's role and state. */
function answer(outcome: Outcome<object>, client: ConversationClient): Reply {
  const who = { role: client.role, connection: client.welcome?.connection ?? null };
  if (outcome.outcome === "admitted") return jsonReply(200, { ok: true, ...outcome, ...who });
  if (outcome.outcome === "unknown") {
    return jsonReply(statusOf("outcome-unknown"), {
      ok: false,
      refusal: {
        code: "outcome-unknown",
        reconcile: true,
        message: `${outcome.message} The request was not sent again; look at the transcript.`,
      },
      ...who,
    });
  }
  return jsonReply(statusOf(outcome.refusal), {
    ok: false,
    refusal: {
      code: outcome.refusal,
      reconcile: false,
      message: outcome.message,
      ...(outcome.detail === undefined ? {} : { detail: outcome.detail }),
    },
    ...who,
  });
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function unreachable(value: never): never {
  throw new Error(`Unhandled op ${JSON.stringify(value)}`);
}
