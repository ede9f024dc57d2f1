// The board's push subscriptions, in `<push dir>/subscriptions.json` (0600): each is one
// browser's endpoint and keys, the person (identity) and login that made it, and the person's
// two choices. Kept across restarts (a phone stays subscribed), bounded in number, removed when
// the person unsubscribes, when the login that made it is signed out (made room for, or its
// device link revoked: checked again before every send), and when the push service says it is
// gone (404, 410).
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { readPrivate, writePrivate } from "./files.ts";
import type { SubscriptionRequest } from "./subscription.ts";

/** Subscriptions one person keeps (a few browsers and a phone). */
export const MAX_PER_IDENTITY = 8;
/** Subscriptions the board keeps in all. */
export const MAX_SUBSCRIPTIONS = 64;

export type StoredSubscription = SubscriptionRequest & {
  id: string;
  identity: string;
  /** The login id that made it (auth.ts); its sign-out removes the subscription. */
  login: string;
  /** The device link that login came from (`dl-…`), whose revocation removes it. */
  device: string | null;
  createdAt: string;
};

export type Added = { ok: true; subscription: StoredSubscription } | { ok: false; message: string };

export class SubscriptionStore {
  readonly #path: string;
  #subs: StoredSubscription[];

  private constructor(path: string, subs: StoredSubscription[]) {
    this.#path = path;
    this.#subs = subs;
  }

  /** The store in `dir`, or why its file cannot be used (the message says what to do). */
  static open(
    dir: string,
  ): { ok: true; store: SubscriptionStore } | { ok: false; message: string } {
    const path = join(dir, "subscriptions.json");
    const read = readPrivate(path);
    if (!read.ok) {
      if (read.missing) return { ok: true, store: new SubscriptionStore(path, []) };
      return { ok: false, message: read.message };
    }
    const subs = parseFile(read.text);
    if (subs === null) {
      return {
        ok: false,
        message: `${path} is not the board's subscription list: remove it (each browser then subscribes again).`,
      };
    }
    return { ok: true, store: new SubscriptionStore(path, subs) };
  }

  list(): readonly StoredSubscription[] {
    return this.#subs;
  }

  /** Adds (or renews: the same endpoint is replaced) a subscription for `identity`. */
  add(
    request: SubscriptionRequest,
    who: { identity: string; login: string; device: string | null },
  ): Added {
    const rest = this.#subs.filter((s) => s.endpoint !== request.endpoint);
    const mine = rest.filter((s) => s.identity === who.identity).length;
    if (mine >= MAX_PER_IDENTITY) {
      return {
        ok: false,
        message: `${who.identity} has ${MAX_PER_IDENTITY} push subscriptions, the most the board keeps for one person: turn push off in a browser you no longer use.`,
      };
    }
    if (rest.length >= MAX_SUBSCRIPTIONS) {
      return {
        ok: false,
        message: `The board keeps ${MAX_SUBSCRIPTIONS} push subscriptions in all, and has them.`,
      };
    }
    const subscription: StoredSubscription = {
      ...request,
      id: `ps-${randomBytes(6).toString("hex")}`,
      ...who,
      createdAt: new Date().toISOString(),
    };
    this.#save([...rest, subscription]);
    return { ok: true, subscription };
  }

  /** Removes the subscriptions `drop` picks; how many went. */
  remove(drop: (s: StoredSubscription) => boolean): number {
    const kept = this.#subs.filter((s) => !drop(s));
    const gone = this.#subs.length - kept.length;
    if (gone > 0) this.#save(kept);
    return gone;
  }

  #save(subs: StoredSubscription[]): void {
    writePrivate(this.#path, `${JSON.stringify({ v: 1, subscriptions: subs })}\n`);
    this.#subs = subs;
  }
}

function parseFile(text: string): StoredSubscription[] | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null) return null;
  const list = (v as Record<string, unknown>).subscriptions;
  if ((v as Record<string, unknown>).v !== 1 || !Array.isArray(list)) return null;
  const subs: StoredSubscription[] = [];
  for (const item of list) {
    const s = storedOf(item);
    if (s === null) return null;
    subs.push(s);
  }
  return subs;
}

function storedOf(item: unknown): StoredSubscription | null {
  if (typeof item !== "object" || item === null) return null;
  const o = item as Record<string, unknown>;
  const keys = o.keys as Record<string, unknown> | null | undefined;
  const strings = [o.id, o.identity, o.login, o.endpoint, o.createdAt, keys?.p256dh, keys?.auth];
  if (!strings.every((s) => typeof s === "string")) return null;
  if (typeof o.details !== "boolean" || typeof o.waitingInput !== "boolean") return null;
  if (o.device !== null && typeof o.device !== "string") return null;
  return {
    id: o.id as string,
    identity: o.identity as string,
    login: o.login as string,
    device: o.device as string | null,
    endpoint: o.endpoint as string,
    keys: { p256dh: keys?.p256dh as string, auth: keys?.auth as string },
    details: o.details,
    waitingInput: o.waitingInput,
    createdAt: o.createdAt as string,
  };
}
