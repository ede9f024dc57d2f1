// Logging in to a board over HTTP exactly as its login page does (src/board/console/login.js):
// the printed link's token, POSTed once to /login from the board's own origin as JSON, traded
// for a login key that every action then sends in its own header. No cookie is involved.
import assert from "node:assert/strict";
import { send } from "../board/http-client.ts";
import { DEADLINE_MS } from "./deadline.ts";

export type Login = {
  key: string;
  /** The headers a steering POST from the Console carries: Origin, JSON, the key. */
  headers: Record<string, string>;
};

/** The answer of one request: status, headers and the body as JSON (undefined when not). */
export type LoginAnswer = { status: number; setCookie: string[] | undefined; json: unknown };

/** Trades a login link's token (`link` as printed) for a login key; asserts it worked. */
export async function logIn(link: string): Promise<Login> {
  const page = await fetch(link);
  assert.equal(page.status, 200, "the login link opens the login page");
  assert.match(await page.text(), /<script type="module" src="\/login\.js">/);
  const answer = await postLogin(link);
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(answer.setCookie, undefined, "a login sets no cookie");
  const { key } = answer.json as { key: string };
  assert.match(key, /^[A-Za-z0-9_-]{43}$/);
  const origin = new URL(link).origin;
  return {
    key,
    headers: { origin, "content-type": "application/json", "x-board-login": key },
  };
}

/** The login page's POST of `link`'s token, as it sends it (or with `headers` changed). */
export async function postLogin(
  link: string,
  headers: Record<string, string> = {},
  token = new URL(link).searchParams.get("token") ?? "",
): Promise<LoginAnswer> {
  const url = new URL(link);
  const answer = await send(Number(url.port), "/login", {
    method: "POST",
    headers: { origin: url.origin, "content-type": "application/json", ...headers },
    body: JSON.stringify({ token }),
    timeoutMs: DEADLINE_MS,
  });
  const setCookie = answer.headers["set-cookie"];
  return { status: answer.status, setCookie, json: answer.json ?? answer.text };
}
