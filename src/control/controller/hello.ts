// Who may connect and how a connection joins the stream: the grants (checked once, at
// construction), and the answer to a hello: refused `grant`, or the welcome with the state, the
// stream's position and, for a resumed stream, the replayed lines that follow it at once.
import { ID_PATTERN } from "../../protocol/chat-01.ts";
import { encodeLine } from "../engine/framing.ts";
import {
  type ControllerState,
  type Dialog,
  type Grant,
  type Hello,
  isActorName,
  OPERATIONS,
  PROTOCOL_VERSION,
  type Welcome,
} from "../protocol.ts";
import { ControlRefusal } from "../refusal.ts";
import type { EventStream } from "./events.ts";
import type { Connection, HelloAnswer } from "./socket.ts";

/** What a welcome says about the controller now. */
export type HelloContext = {
  grants: ReadonlyMap<string, Grant>;
  conversation: string;
  controllerConnection: string | null;
  state: ControllerState;
  /** The running execution's stream, if one runs. */
  stream: EventStream | undefined;
  /** The approvals open now: a client welcomed now is sent them after the welcome. */
  openDialogs: readonly Dialog[];
};

/**
 * Answers `conn`'s hello: a grant that is unknown or revoked is refused `grant`; otherwise the
 * connection speaks for that grant from now on and is welcomed.
 */
export function answerHello(conn: Connection, hello: Hello, at: HelloContext): HelloAnswer {
  const grant = at.grants.get(hello.grant);
  if (!grant || grant.active === false) return refusedGrant();
  // Only a delegating grant may name the person it acts for, and a narrowing may only narrow.
  if (hello.actor !== undefined && grant.delegate !== true) {
    return refusedGrant(`the grant ${grant.id} does not delegate: its hello may not name an actor`);
  }
  const beyond = hello.capabilities?.filter((op) => !grant.capabilities.includes(op)) ?? [];
  if (beyond.length > 0) {
    return refusedGrant(`the grant ${grant.id} does not allow ${beyond.join(", ")}`);
  }
  conn.grant = grant.id;
  conn.actor = hello.actor ?? grant.actor;
  conn.capabilities = hello.capabilities ?? null;
  const welcome: Welcome = {
    type: "welcome",
    protocol: PROTOCOL_VERSION,
    connection: conn.id,
    role: at.controllerConnection === conn.id ? "controller" : "observer",
    conversation: at.conversation,
    state: at.state,
  };
  const stream = at.stream;
  if (stream) welcome.stream = { streamEpoch: stream.epoch, nextSequence: stream.nextSequence };
  const dialogs = at.openDialogs.map((d) => encodeLine(d));
  if (hello.resume === undefined) {
    return dialogs.length === 0 ? welcome : { message: welcome, lines: dialogs };
  }
  // The replayed lines go right after the welcome, in the same tick as the grant is set:
  // the next broadcast is the first live event, so nothing is missed or sent twice.
  const { streamEpoch, afterSequence } = hello.resume;
  const plan = stream
    ? stream.plan(streamEpoch, afterSequence)
    : ({ ok: false, reason: "another-epoch", message: "no execution is running" } as const);
  if (!plan.ok) {
    const unavailable: Welcome = {
      ...welcome,
      replay: "unavailable",
      replayReason: plan.reason,
      replayMessage: plan.message,
    };
    return dialogs.length === 0 ? unavailable : { message: unavailable, lines: dialogs };
  }
  welcome.replay = {
    streamEpoch: plan.streamEpoch,
    fromSequence: plan.fromSequence,
    toSequence: plan.toSequence,
  };
  return { message: welcome, lines: [...plan.lines, ...dialogs] };
}

function refusedGrant(message = "the hello names no active grant") {
  return {
    type: "reply" as const,
    id: null,
    outcome: "refused:grant" as const,
    refusal: "grant" as const,
    message,
  };
}

/** Grants: unique CHAT-01 ids, an actor (isActorName), capabilities from OPERATIONS. */
export function checkGrants(grants: unknown): Map<string, Grant> {
  if (!Array.isArray(grants)) throw new ControlRefusal("configuration", "grants are required");
  const out = new Map<string, Grant>();
  for (const g of grants as Grant[]) {
    const ok =
      typeof g === "object" &&
      g !== null &&
      typeof g.id === "string" &&
      ID_PATTERN.test(g.id) &&
      isActorName(g.actor) &&
      (g.delegate === undefined || typeof g.delegate === "boolean") &&
      Array.isArray(g.capabilities) &&
      g.capabilities.every((c) => (OPERATIONS as readonly string[]).includes(c)) &&
      !out.has(g.id);
    if (!ok) throw new ControlRefusal("configuration", `bad grant ${JSON.stringify(g?.id)}`);
    out.set(g.id, { ...g, capabilities: [...g.capabilities] });
  }
  return out;
}
