// Authentication for anything that acts (issue 15 item 3). Reading and watching need no login;
// every POST does. `serve` prints an operator link holding a token drawn fresh at each start;
// opening it sets an HttpOnly, SameSite=Strict session cookie and redirects to the Console.
// A POST passes only with that cookie, an Origin equal to the board's own and a JSON content
// type; anything else is refused 403 before its body is read, so it reaches no controller.
//
// Why all three: SameSite counts 127.0.0.1:OTHER as the same site, so a page on another port
// of this machine sends the cookie along — the Origin check refuses it. A form cannot send
// `application/json`, and a cross-origin fetch that does needs a CORS preflight, which the
// board never grants (it sends no CORS header at all).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { boardRefusal, type Reply, SECURITY_HEADERS } from "./reply.ts";

/** Logged-in browser sessions kept at once; the oldest goes first beyond it. */
export const MAX_SESSIONS = 64;

export type PostCheck = { ok: true; session: string } | { ok: false; reply: Reply };

export class BoardAuth {
  /** The login token; printed once, in the operator link, and never logged. */
  readonly token = randomBytes(32).toString("base64url");
  readonly #tokenDigest = digest(this.token);
  /** Session id → when it logged in. A Map keeps insertion order, for the eviction. */
  readonly #sessions = new Map<string, number>();
  /** Cookies are per host, not per port: the port in the name keeps two boards apart. */
  readonly cookieName: string;

  constructor(port: number) {
    this.cookieName = `board_session_${port}`;
  }

  /** `GET /login?token=…`: a session cookie and a redirect to the Console, or 403. */
  login(query: string): Reply {
    const params = new URLSearchParams(query);
    const given = params.getAll("token");
    if (given.length !== 1 || !timingSafeEqual(digest(given[0] ?? ""), this.#tokenDigest)) {
      return boardRefusal(
        "login-refused",
        "This is not the board's current login link: use the one `serve` printed when it started (a new one is drawn at every start).",
      );
    }
    const session = randomBytes(32).toString("base64url");
    this.#sessions.set(session, Date.now());
    while (this.#sessions.size > MAX_SESSIONS) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined) break;
      this.#sessions.delete(oldest);
    }
    return {
      status: 303,
      headers: {
        ...SECURITY_HEADERS,
        "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
        // Off the URL bar and out of history: the token's URL is replaced at once.
        Location: "/",
        "Set-Cookie": `${this.cookieName}=${session}; Path=/; HttpOnly; SameSite=Strict`,
        "Content-Length": "0",
      },
      body: Buffer.alloc(0),
    };
  }

  /** The logged-in session a request's cookie names, or null. */
  sessionOf(headers: IncomingHttpHeaders): string | null {
    const header = headers.cookie;
    if (header === undefined) return null;
    for (const pair of header.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim() !== this.cookieName) continue;
      const value = pair.slice(eq + 1).trim();
      if (this.#sessions.has(value)) return value;
    }
    return null;
  }

  /**
   * The three checks of a POST, in the order a person fixes them. `host` has passed the Host
   * check, so `http://<host>` is the board's own origin as this browser reached it.
   */
  checkPost(headers: IncomingHttpHeaders, host: string): PostCheck {
    const origin = headers.origin;
    if (origin !== `http://${host.toLowerCase()}`) {
      return refuse(
        "origin-refused",
        origin === undefined
          ? "A POST must carry an Origin header naming this board."
          : "This request comes from another origin; only the board's own pages may act.",
      );
    }
    const type = (headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      return refuse(
        "content-type-refused",
        "A POST must be sent as Content-Type: application/json.",
      );
    }
    const session = this.sessionOf(headers);
    if (session === null) {
      return refuse(
        "not-logged-in",
        "Log in first: open the operator link `serve` printed (reading needs no login; acting does).",
      );
    }
    return { ok: true, session };
  }
}

function refuse(
  code: "origin-refused" | "content-type-refused" | "not-logged-in",
  message: string,
): PostCheck {
  return { ok: false, reply: boardRefusal(code, message) };
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
