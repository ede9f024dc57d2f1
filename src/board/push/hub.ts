// Web Push on the board (issue 27 item 3; docs/push.md): the routes the Console subscribes
// through, and the sender that tells every subscription when an attention state changes to
// one a person is needed for. The state lives in `<board dir>/push/` (a private folder, made
// and checked on first use, not at start: a board nobody subscribes from leaves nothing there):
// the VAPID pair (vapid.ts) and the subscriptions (store.ts).
//
// - `GET /api/push/key`: `{ ok, publicKey }`, the key the browser's subscribe needs. Public by
//   nature, so no login; the first call makes the pair.
// - `POST /api/push/subscribe`, `POST /api/push/unsubscribe`: acting, so through acting.ts's
//   checks (Host, the connection's user, Origin, JSON, then the login key header: a cookie
//   alone never authorises), then here.
import { existsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Agent } from "node:https";
import { join } from "node:path";
import type { InboxRow } from "../../attention/watch.ts";
import { ensurePrivateFolder } from "../../fs/private-folder.ts";
import type { NeedsYouState } from "../../present/attention-words.ts";
import { isRevokedLink } from "../device-links.ts";
import type { Who } from "../identity.ts";
import { send } from "../live.ts";
import { boardRefusal, jsonReply, type Reply } from "../reply.ts";
import { type BoardRequest, checkRequest } from "../routes.ts";
import { checkEndpoint, type EndpointPolicy } from "./endpoint.ts";
import { payloadOf } from "./payload.ts";
import { deliver } from "./send.ts";
import { type StoredSubscription, SubscriptionStore } from "./store.ts";
import { parseSubscribe, parseUnsubscribe } from "./subscription.ts";
import { loadOrMakeVapid, type Vapid } from "./vapid.ts";

export const PUSH_KEY_ROUTE = /^\/api\/push\/key(\?.*)?$/;
/** The acting routes (a path, without the query). */
export const PUSH_ACT_ROUTE = /^\/api\/push\/(subscribe|unsubscribe)$/;

/** Pushes one subscription gets in a minute at most; more are dropped (and logged once). */
export const MAX_PUSHES_PER_MINUTE = 10;
/** Sends in flight at once, and waiting; a change beyond the queue is dropped, logged. */
const MAX_IN_FLIGHT = 4;
const MAX_QUEUED = 256;

/** Notified to every subscription; waiting-input only to those that opted in. */
const ALWAYS: ReadonlySet<string> = new Set(["waiting-approval", "failed", "stalled"]);

export type PushOptions = {
  /** The board's state folder (`<state-dir>/board`): push state goes in its `push/`. */
  dir: string;
  /** Endpoint origins accepted besides the browsers' push services (endpoint.ts), exact. */
  origins?: readonly string[];
  /** The VAPID `sub` contact, when the pair is made. */
  subject?: string;
  /** An https agent for the sends (the tests' own certificate authority). */
  agent?: Agent;
  timeoutMs?: number;
};

export type PushHubOptions = PushOptions & {
  hosts: ReadonlySet<string>;
  log(line: string): void;
};

type Ready = { ok: true; vapid: Vapid; store: SubscriptionStore } | { ok: false; message: string };

export type PushStats = { sent: number; gone: number; failed: number; dropped: number };

export class PushHub {
  readonly #o: PushHubOptions;
  readonly #policy: EndpointPolicy;
  #ready: Ready | null = null;
  /** `<state> <since>` last pushed per conversation: one push per change. */
  readonly #told = new Map<string, string>();
  /** Send times in the last minute, per subscription id. */
  readonly #recent = new Map<string, number[]>();
  readonly #queue: (() => Promise<void>)[] = [];
  readonly #running = new Set<Promise<void>>();
  readonly #stats: PushStats = { sent: 0, gone: 0, failed: 0, dropped: 0 };
  #closed = false;

  constructor(options: PushHubOptions) {
    this.#o = options;
    this.#policy = { origins: new Set((options.origins ?? []).map((o) => new URL(o).origin)) };
  }

  stats(): PushStats {
    return { ...this.#stats };
  }

  /** `GET /api/push/key`. */
  serveKey(req: IncomingMessage, res: ServerResponse, request: BoardRequest): void {
    send(res, this.#keyReply(request), req.method);
  }

  #keyReply(request: BoardRequest): Reply {
    const refused = checkRequest(this.#o.hosts, request);
    if (refused !== null) return refused;
    if (request.method !== "GET" && request.method !== "HEAD") {
      const allow = { Allow: "GET, HEAD" };
      return boardRefusal("method-not-allowed", "The push key: GET only.", allow);
    }
    const ready = this.#open();
    if (!ready.ok) return unavailable(ready.message);
    return jsonReply(200, { ok: true, publicKey: ready.vapid.publicKey });
  }

  /**
   * A logged-in `POST /api/push/subscribe` or `/unsubscribe` (acting.ts checked everything up
   * to the login): `login` is the login's id, `device` the device link it came from.
   */
  act(
    path: string,
    body: Record<string, unknown>,
    by: { login: string; who: Who; device: string | null },
  ): Reply {
    const ready = this.#open();
    if (!ready.ok) return unavailable(ready.message);
    if (path.endsWith("/unsubscribe")) {
      const parsed = parseUnsubscribe(body);
      if (!parsed.ok) return boardRefusal(parsed.code, parsed.message);
      const { endpoint } = parsed.value;
      // Only the person's own: one person cannot turn off another's pushes.
      const removed = ready.store.remove(
        (s) => s.identity === by.who.identity && s.endpoint === endpoint,
      );
      return jsonReply(200, { ok: true, removed });
    }
    const parsed = parseSubscribe(body, this.#policy);
    if (!parsed.ok) return boardRefusal(parsed.code, parsed.message);
    const added = ready.store.add(parsed.value, {
      identity: by.who.identity,
      login: by.login,
      device: by.device,
    });
    if (!added.ok) return boardRefusal("too-many-subscriptions", added.message);
    const { id, details, waitingInput } = added.subscription;
    return jsonReply(200, { ok: true, id, details, waitingInput });
  }

  /** A login was signed out (made room for, revoked): its subscriptions go with it. */
  forget(login: string): void {
    if (this.#ready?.ok) this.#ready.store.remove((s) => s.login === login);
  }

  /** An attention row changed (AttentionWatch.onChange): push it if a person is needed now. */
  onRow(row: InboxRow): void {
    if (this.#closed) return;
    const { state } = row.attention;
    const key = `${state} ${row.attention.since}`;
    if (this.#told.get(row.conversation) === key) return;
    this.#told.set(row.conversation, key);
    if (!ALWAYS.has(state) && state !== "waiting-input") return;
    // No subscription was ever made here: no state dir is made or touched.
    if (this.#ready === null && !existsSync(join(this.#o.dir, "push"))) return;
    const ready = this.#open();
    if (!ready.ok) return;
    const notify = state as NeedsYouState;
    for (const sub of ready.store.list()) {
      if (state === "waiting-input" && !sub.waitingInput) continue;
      if (!this.#withinRate(sub.id)) {
        this.#stats.dropped += 1;
        this.#o.log(
          `board: push: ${sub.id} got ${MAX_PUSHES_PER_MINUTE} pushes this minute; this one is dropped`,
        );
        continue;
      }
      const payload = JSON.stringify(payloadOf(row, notify, sub.details));
      this.#enqueue(() => this.#sendOne(ready, sub, payload, row.conversation));
    }
  }

  /** Stops sending; waits for the sends in flight (each has its deadline). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#queue.length = 0;
    await Promise.all([...this.#running]);
  }

  /** Resolves once nothing is queued or in flight (tests). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.race([...this.#running]);
  }

  async #sendOne(
    ready: Ready & { ok: true },
    sub: StoredSubscription,
    payload: string,
    conversation: string,
  ) {
    // A revoked device link's subscription goes before anything is sent to it.
    if (sub.device !== null && isRevokedLink(this.#o.dir, sub.device)) {
      ready.store.remove((s) => s.id === sub.id);
      return;
    }
    const checked = checkEndpoint(sub.endpoint, this.#policy);
    if (!checked.ok) {
      // The rule changed since it was stored (an origin no longer named): never sent to.
      this.#stats.failed += 1;
      return;
    }
    const outcome = await deliver(sub, payload, conversation, {
      vapid: ready.vapid,
      service: checked.service,
      ...(this.#o.agent === undefined ? {} : { agent: this.#o.agent }),
      ...(this.#o.timeoutMs === undefined ? {} : { timeoutMs: this.#o.timeoutMs }),
    });
    if (outcome.kind === "sent") this.#stats.sent += 1;
    else if (outcome.kind === "gone") {
      this.#stats.gone += 1;
      ready.store.remove((s) => s.id === sub.id);
    } else {
      this.#stats.failed += 1;
      this.#o.log(`board: push to ${sub.id} failed: ${outcome.why}`);
    }
  }

  #withinRate(id: string): boolean {
    const now = Date.now();
    const times = (this.#recent.get(id) ?? []).filter((t) => now - t < 60_000);
    if (times.length >= MAX_PUSHES_PER_MINUTE) {
      this.#recent.set(id, times);
      return false;
    }
    times.push(now);
    this.#recent.set(id, times);
    return true;
  }

  #enqueue(job: () => Promise<void>): void {
    if (this.#queue.length >= MAX_QUEUED) {
      this.#stats.dropped += 1;
      return;
    }
    this.#queue.push(job);
    this.#pump();
  }

  #pump(): void {
    while (this.#running.size < MAX_IN_FLIGHT && this.#queue.length > 0 && !this.#closed) {
      const job = this.#queue.shift() as () => Promise<void>;
      const running: Promise<void> = job()
        .catch((e: unknown) => {
          this.#o.log(`board: push: ${e instanceof Error ? e.stack : String(e)}`);
        })
        .finally(() => {
          this.#running.delete(running);
          this.#pump();
        });
      this.#running.add(running);
    }
  }

  /** The private folder, the key pair and the list: made or read once, on first use. */
  #open(): Ready {
    if (this.#ready?.ok) return this.#ready;
    const dir = join(this.#o.dir, "push");
    const folder = ensurePrivateFolder(dir, {
      what: "the board's push folder",
      instead: "choose another with --state-dir",
    });
    let ready: Ready;
    if (!folder.ok) ready = { ok: false, message: folder.problem.message };
    else {
      const vapid = loadOrMakeVapid(dir, this.#o.subject);
      const store = vapid.ok ? SubscriptionStore.open(dir) : null;
      ready = !vapid.ok
        ? vapid
        : store?.ok
          ? { ok: true, vapid: vapid.vapid, store: store.store }
          : { ok: false, message: store && !store.ok ? store.message : dir };
    }
    // A failure is tried again at the next request: the person may have fixed it meanwhile.
    this.#ready = ready;
    return ready;
  }
}

function unavailable(message: string): Reply {
  return boardRefusal("push-unavailable", `Web Push cannot be used on this board: ${message}`);
}
