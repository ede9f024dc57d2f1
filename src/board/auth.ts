// Authentication for anything that acts (issue 15 item 3, issue 22 items 1 and 6). Reading and
// watching need no login; every POST does. `serve` prints an operator link holding a token;
// the page it opens (`/login`, login.js) trades the token, once, for a login key, which the
// Console keeps in sessionStorage and sends in a header of its own (`X-Board-Login`).
//
// Why a key in a header and no cookie: cookies ignore ports, so every other server on this
// host that the browser visits receives a cookie of ours, and any of them can overwrite or
// flood it. Storage is per origin, port included, so no other page can read the key, and a
// cross-origin fetch cannot send a header of its own without a CORS preflight, which the board
// never grants. The Origin and content-type checks stay as a second lock.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { DeviceLinks } from "./device-links.ts";
import type { Who } from "./identity.ts";
import { boardRefusal, jsonReply, type Reply } from "./reply.ts";

/** Logins kept at once; the least recently used one is signed out beyond it. */
export const MAX_LOGINS = 64;
/** The request header that carries a login key (lower case, as node:http gives it). */
export const LOGIN_HEADER = "x-board-login";
/** Used tokens and signed-out keys remembered, to say why a link or a login stopped working. */
const REMEMBERED = 256;

export type PostCheck = { ok: true; login: string } | { ok: false; reply: Reply };

/** A login: its id (the controller connections it holds are keyed by it) and whose it is. */
type Login = { id: string; identity: string };

export type AuthOptions = {
  /** A login was signed out (MAX_LOGINS): close what it held. */
  onSignedOut?: (login: string) => void;
  /** The token was used: a fresh one is drawn; say where the next login is. */
  onTokenUsed?: () => void;
  /** Device login links (`serve --phone`), tried when a token is not the operator link's. */
  devices?: DeviceLinks;
};

export class BoardAuth {
  #token = drawSecret();
  #tokenDigest = digest(this.#token);
  /** Digests of tokens already traded: a second use is told so. */
  readonly #usedTokens = new Set<string>();
  /** Key digest → login, least recently used first (a Map keeps insertion order). */
  readonly #logins = new Map<string, Login>();
  /** Digests of keys signed out to make room, so their page can be told why. */
  readonly #signedOut = new Set<string>();
  readonly #options: AuthOptions;

  constructor(options: AuthOptions = {}) {
    this.#options = options;
  }

  /** The token of the current login link: printed for the operator, never logged. */
  get token(): string {
    return this.#token;
  }

  get logins(): number {
    return this.#logins.size;
  }

  /**
   * `POST /login` with `{ "token": … }`, once Origin and content type passed: the token's
   * one login key, `{ ok: true, key }`, and a fresh token for the next login; else 403. A
   * person the trusted proxy named (`who.proxied`) needs no token: the proxy authenticated
   * them, and the key only keeps other sites' pages from acting with the proxy's credentials.
   */
  exchange(body: unknown, who: Who): Reply {
    const token =
      typeof body === "object" && body !== null && "token" in body ? body.token : undefined;
    if (token === undefined || token === "") {
      if (who.proxied) return this.#logIn(who).reply;
      return boardRefusal(
        "login-refused",
        "This address holds no login token: open the login link the board printed (`serve`, `npm start`).",
      );
    }
    const given = digest(typeof token === "string" ? token : "");
    const device = typeof token === "string" ? this.#options.devices?.use(token) : undefined;
    if (device !== undefined && !("notDevice" in device)) {
      if (!device.ok) return boardRefusal("login-refused", device.message);
      if (device.identity !== who.identity) {
        return boardRefusal(
          "login-refused",
          `This device link is for ${device.identity}, not for ${who.identity}; it is used up now. Ask for a link of your own.`,
        );
      }
      const made = this.#logIn(who);
      this.#options.devices?.bind(device.id, made.login);
      return made.reply;
    }
    if (!timingSafeEqual(given, this.#tokenDigest)) {
      const used = this.#usedTokens.has(given.toString("hex"));
      return boardRefusal(
        "login-refused",
        used
          ? "This login link was used already: each link logs in once. The board printed a new one when it was used (where `serve` or `npm start` runs); open that."
          : "This is not the board's current login link: open the newest one the board printed (a new one is drawn at every start and after every login).",
      );
    }
    remember(this.#usedTokens, given.toString("hex"));
    this.#token = drawSecret();
    this.#tokenDigest = digest(this.#token);
    const { reply } = this.#logIn(who);
    this.#options.onTokenUsed?.();
    return reply;
  }

  /** A new login key for `who`; the least recently used login beyond MAX_LOGINS is signed out. */
  #logIn(who: Who): { reply: Reply; login: string } {
    const key = drawSecret();
    const login = drawSecret();
    this.#logins.set(digest(key).toString("hex"), { id: login, identity: who.identity });
    while (this.#logins.size > MAX_LOGINS) {
      const [oldest, old] = this.#logins.entries().next().value ?? [];
      if (oldest === undefined || old === undefined) break;
      this.#logins.delete(oldest);
      remember(this.#signedOut, oldest);
      this.#options.onSignedOut?.(old.id);
    }
    return {
      reply: jsonReply(200, { ok: true, key, identity: who.identity, role: who.role }),
      login,
    };
  }

  /** The device link (`dl-…`) a login came from, or null (the operator link's, a proxy's). */
  deviceOf(login: string): string | null {
    return this.#options.devices?.linkOfLogin(login) ?? null;
  }

  /**
   * The checks of a POST, in the order a person fixes them: an Origin equal to the board's
   * own (`host` has passed the Host check) and a JSON body. The login comes after: `/login`
   * itself has none yet.
   */
  checkSender(headers: IncomingHttpHeaders, host: string, own?: string): Reply | null {
    const origin = headers.origin;
    if (origin !== (own ?? `http://${host.toLowerCase()}`)) {
      return boardRefusal(
        "origin-refused",
        origin === undefined
          ? "A POST must carry an Origin header naming this board."
          : "This request comes from another origin; only the board's own pages may act.",
      );
    }
    const type = (headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      return boardRefusal(
        "content-type-refused",
        "A POST must be sent as Content-Type: application/json.",
      );
    }
    return null;
  }

  /**
   * The login a request's key names (and it becomes the most recently used), or why not. A
   * key is its person's: one sent by someone else (another identity from the proxy, or the
   * local operator with a proxied person's key) is refused.
   */
  checkLogin(headers: IncomingHttpHeaders, who: Who): PostCheck {
    const key = headers[LOGIN_HEADER];
    if (typeof key !== "string" || key === "") {
      return notLoggedIn(
        "Log in first: open the newest login link the board printed (`serve`, `npm start`; reading needs no login, acting does).",
      );
    }
    const d = digest(key).toString("hex");
    const login = this.#logins.get(d);
    if (login === undefined) {
      return notLoggedIn(
        this.#signedOut.has(d)
          ? `This login was signed out to make room: the board keeps ${MAX_LOGINS} logins. Log in again with the newest link the board printed.`
          : "This login is not one of this board's (it restarted, or the key is wrong): log in with the newest link the board printed.",
      );
    }
    if (this.#options.devices?.isRevokedLogin(login.id)) {
      this.#logins.delete(d);
      this.#options.onSignedOut?.(login.id);
      return notLoggedIn(
        "The device link this login came from was revoked (`conversation logins --revoke`): log in again with a new link.",
      );
    }
    if (login.identity !== who.identity) {
      return notLoggedIn(
        `This login is another person's, not ${who.identity}'s: log in yourself (open the board's address and log in).`,
      );
    }
    this.#logins.delete(d);
    this.#logins.set(d, login);
    return { ok: true, login: login.id };
  }
}

function notLoggedIn(message: string): PostCheck {
  return { ok: false, reply: boardRefusal("not-logged-in", message) };
}

/** 32 random bytes, base64url: tokens, keys and login ids alike. */
function drawSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** Secrets are kept and compared as digests: a lookup's timing says nothing about a key. */
function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function remember(set: Set<string>, value: string): void {
  set.add(value);
  for (const old of set) {
    if (set.size <= REMEMBERED) break;
    set.delete(old);
  }
}
