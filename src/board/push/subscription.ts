// The body of `POST /api/push/subscribe`, checked field by field (no `as T`): a PushSubscription
// as the browser's `toJSON()` gives it, and the two choices the person made. A key that is not
// a P-256 point or an auth secret that is not 16 bytes is refused here, not when a push fails.
import { createECDH } from "node:crypto";
import { checkEndpoint, type EndpointPolicy } from "./endpoint.ts";

export type SubscriptionKeys = { p256dh: string; auth: string };

export type SubscriptionRequest = {
  endpoint: string;
  keys: SubscriptionKeys;
  /** Opted in: a push names the tool and its input (else only the state and the place). */
  details: boolean;
  /** Opted in: waiting-input pushes too. */
  waitingInput: boolean;
};

export type Parsed<T> =
  | { ok: true; value: T }
  | { ok: false; code: "bad-subscription" | "endpoint-refused"; message: string };

const B64URL = /^[A-Za-z0-9_-]+={0,2}$/;

/** `{ subscription: { endpoint, keys: { p256dh, auth } }, details?, waitingInput? }`. */
export function parseSubscribe(
  body: Record<string, unknown>,
  policy: EndpointPolicy,
): Parsed<SubscriptionRequest> {
  const sub = body.subscription;
  if (typeof sub !== "object" || sub === null || Array.isArray(sub)) {
    return bad("The body needs `subscription`: the browser's PushSubscription as JSON.");
  }
  const { endpoint, keys } = sub as Record<string, unknown>;
  if (typeof endpoint !== "string" || endpoint === "") {
    return bad("`subscription.endpoint` must be the push service's URL.");
  }
  for (const k of ["details", "waitingInput"] as const) {
    if (body[k] !== undefined && typeof body[k] !== "boolean") {
      return bad(`\`${k}\` is true or false.`);
    }
  }
  const checked = checkEndpoint(endpoint, policy);
  if (!checked.ok) return { ok: false, code: "endpoint-refused", message: checked.message };
  if (typeof keys !== "object" || keys === null || Array.isArray(keys)) {
    return bad("`subscription.keys` must hold `p256dh` and `auth`.");
  }
  const { p256dh, auth } = keys as Record<string, unknown>;
  if (typeof p256dh !== "string" || !isP256Point(p256dh)) {
    return bad("`subscription.keys.p256dh` must be a P-256 public key (65 bytes, base64url).");
  }
  if (typeof auth !== "string" || !B64URL.test(auth) || decoded(auth).length !== 16) {
    return bad("`subscription.keys.auth` must be a 16-byte secret, base64url.");
  }
  return {
    ok: true,
    value: {
      endpoint: checked.url.href,
      keys: { p256dh, auth },
      details: body.details === true,
      waitingInput: body.waitingInput === true,
    },
  };
}

/** `{ endpoint }`: the subscription to forget. */
export function parseUnsubscribe(body: Record<string, unknown>): Parsed<{ endpoint: string }> {
  const { endpoint } = body;
  if (typeof endpoint !== "string" || endpoint === "" || endpoint.length > 4096) {
    return bad("The body needs `endpoint`: the subscription's push endpoint URL.");
  }
  return { ok: true, value: { endpoint } };
}

function isP256Point(value: string): boolean {
  if (!B64URL.test(value)) return false;
  const point = decoded(value);
  if (point.length !== 65 || point[0] !== 4) return false;
  try {
    // Refuses a point that is not on the curve.
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    ecdh.computeSecret(point);
    return true;
  } catch {
    return false;
  }
}

function decoded(value: string): Buffer {
  return Buffer.from(value.replace(/=+$/, ""), "base64url");
}

function bad(message: string): Parsed<never> {
  return { ok: false, code: "bad-subscription", message };
}
