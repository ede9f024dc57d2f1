// Sends one push (RFC 8030) with `web-push` doing all the cryptography: it encrypts the payload
// for the subscription's keys (aes128gcm, RFC 8291) and signs the VAPID JWT (RFC 8292) in
// `generateRequestDetails`; no byte of it is made here. The request itself is the board's, so
// the endpoint rule holds on the wire: the push services' names must resolve to public
// addresses (checked on the connection), no redirect is followed, the whole exchange has a
// deadline, and at most MAX_REPLY_BYTES of the answer are read.
import { createHash } from "node:crypto";
import { request as httpRequest, type RequestOptions } from "node:http";
import { type Agent, request as httpsRequest } from "node:https";
import webpush from "web-push";
import { publicOnlyLookup } from "./endpoint.ts";
import type { StoredSubscription } from "./store.ts";
import type { Vapid } from "./vapid.ts";

/** A send that has not finished by then is abandoned (the socket is destroyed). */
export const SEND_TIMEOUT_MS = 10_000;
/** How long a push service keeps a push for a device that is offline. */
export const PUSH_TTL_S = 6 * 60 * 60;
/** The most of a push service's answer read (it is a status and a short error). */
const MAX_REPLY_BYTES = 4096;

export type Delivery =
  /** Accepted (201) by the push service. */
  | { kind: "sent"; status: number }
  /** 404 or 410: the subscription expired or was cancelled; forget it. */
  | { kind: "gone"; status: number }
  /** Anything else: a status, a timeout, a refused address; kept, tried at the next change. */
  | { kind: "failed"; status: number | null; why: string };

export type SendOptions = {
  vapid: Vapid;
  /** The push services' rule applies: public addresses only (endpoint.ts). */
  service: boolean;
  /** For the tests' local https endpoint: an agent that trusts its certificate. */
  agent?: Agent;
  timeoutMs?: number;
};

/** Encrypts `payload` for `sub`, signs, and POSTs it to the endpoint. Never rejects. */
export async function deliver(
  sub: Pick<StoredSubscription, "endpoint" | "keys">,
  payload: string,
  topicOf: string,
  options: SendOptions,
): Promise<Delivery> {
  let details: ReturnType<typeof webpush.generateRequestDetails>;
  try {
    details = webpush.generateRequestDetails({ endpoint: sub.endpoint, keys: sub.keys }, payload, {
      vapidDetails: { ...options.vapid },
      TTL: PUSH_TTL_S,
      contentEncoding: "aes128gcm",
      urgency: "high",
      // One per conversation: a push service holding an older one for an offline device
      // replaces it rather than queueing both.
      topic: topic(topicOf),
    });
  } catch (e) {
    return { kind: "failed", status: null, why: e instanceof Error ? e.message : String(e) };
  }
  const url = new URL(details.endpoint);
  const body = details.body ?? Buffer.alloc(0);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(details.headers)) headers[k] = String(v);
  const signal = AbortSignal.timeout(options.timeoutMs ?? SEND_TIMEOUT_MS);
  const init: RequestOptions = {
    method: details.method,
    headers,
    signal,
    ...(options.service ? { lookup: publicOnlyLookup } : {}),
    ...(options.agent === undefined ? {} : { agent: options.agent }),
  };
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Delivery>((resolve) => {
    const req = send(url, init, (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_REPLY_BYTES) res.destroy();
      });
      const done = () => resolve(outcomeOf(status));
      res.on("end", done);
      res.on("close", done);
      res.on("error", done);
    });
    req.on("error", (e: NodeJS.ErrnoException) => {
      const why = signal.aborted
        ? `no answer within ${options.timeoutMs ?? SEND_TIMEOUT_MS} ms`
        : e.message;
      resolve({ kind: "failed", status: null, why });
    });
    req.end(body);
  });
}

function outcomeOf(status: number): Delivery {
  if (status >= 200 && status < 300) return { kind: "sent", status };
  if (status === 404 || status === 410) return { kind: "gone", status };
  return { kind: "failed", status, why: `the push service answered ${status}` };
}

/** A Topic header (at most 32 base64url characters) that names no conversation. */
function topic(key: string): string {
  return createHash("sha256").update(key).digest("base64url").slice(0, 32);
}
