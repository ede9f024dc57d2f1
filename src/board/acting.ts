// The requests that act, answered on the loop (auth.ts): a login's POST and the steering and
// push POSTs. Host, who opened the connection, Origin and content type, then the login key are
// checked before a body is read; only then is a controller (or the push hub) asked.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { BoardAuth } from "./auth.ts";
import type { ControlRoute } from "./control-route.ts";
import { requestOf, writeReply } from "./http-answer.ts";
import type { ProxyConfig, Who } from "./identity.ts";
import { isTrustedPeer, peerOwner } from "./peer-owner.ts";
import { PUSH_ACT_ROUTE, type PushHub } from "./push/hub.ts";
import { boardRefusal, type Reply } from "./reply.ts";
import { checkRequest } from "./routes.ts";

/** Largest POST body read; a steering call is a prompt and a few fields. */
export const MAX_POST_BYTES = 64 * 1024;

const CONTROL_ROUTE = /^\/api\/conversations\/([^/?]+)\/control$/;

/**
 * The requests answered on the loop by auth.ts: a POST to `/login` (the login page's trade of
 * its token for a key), and any request to the control route (the only one that acts). The
 * login page itself, `GET /login`, is one of the Console's files; other routes have no POST:
 * the handler refuses it 405, as before.
 */
export function acts(req: IncomingMessage): boolean {
  const path = (req.url ?? "").split("?", 1)[0] ?? "";
  return (
    CONTROL_ROUTE.test(path) ||
    PUSH_ACT_ROUTE.test(path) ||
    (path === "/login" && req.method === "POST")
  );
}

/**
 * A login or a steering call: Host first (as every route), then who opened the connection,
 * then Origin and content type, then (steering) the login key; the body is read only after
 * they pass, and only then is a controller asked.
 */
export type Acting = {
  auth: BoardAuth;
  hosts: ReadonlySet<string>;
  control: ControlRoute | undefined;
  /** Who asks (identity.ts): the proxy's person, or the local operator. */
  who: Who;
  proxy: ProxyConfig | null;
  push: PushHub | null;
};

export async function act(
  req: IncomingMessage,
  res: ServerResponse,
  { auth, hosts, control, who, proxy, push }: Acting,
): Promise<void> {
  const request = requestOf(req);
  const refused = checkRequest(hosts, { ...request, method: "GET" });
  const finish = (out: Reply) => {
    if (req.method === "POST") req.resume();
    // A refused POST's body is not read; the connection closes rather than drain it.
    if (out.status >= 400 && req.method === "POST") res.shouldKeepAlive = false;
    return writeReply(req, res, out);
  };
  if (refused !== null) return finish(refused);
  const path = request.target.split("?", 1)[0] ?? "";
  if (req.method !== "POST") {
    return finish(
      boardRefusal("method-not-allowed", "The control route takes POST only.", { Allow: "POST" }),
    );
  }
  // Another user of this machine never logs in or acts, whatever it holds (a token seen over
  // a shoulder, a key): the socket's owner is checked before anything else is.
  const owner = await peerOwner(req.socket);
  if (!isTrustedPeer(owner)) {
    return finish(
      boardRefusal(
        "peer-refused",
        owner.found
          ? `This connection was opened by another user of this machine (uid ${owner.uid}); only the user who runs the board may log in or act.`
          : "The board cannot tell which user opened this connection, so it may not log in or act.",
      ),
    );
  }
  // A person the proxy named acts from the board's public (https) origin only.
  const own = who.proxied && proxy !== null ? proxy.origin : undefined;
  const sender = auth.checkSender(req.headers, request.host ?? "", own);
  if (sender !== null) return finish(sender);
  if (path === "/login") {
    const body = await readJsonObject(req);
    if (!body.ok) return finish(body.reply);
    return finish(auth.exchange(body.value, who));
  }
  const check = auth.checkLogin(req.headers, who);
  if (!check.ok) return finish(check.reply);
  if (PUSH_ACT_ROUTE.test(path)) {
    if (push === null) return finish(boardRefusal("not-found", "This board sends no pushes."));
    const body = await readJsonObject(req);
    if (!body.ok) return finish(body.reply);
    const device = auth.deviceOf(check.login);
    return finish(push.act(path, body.value, { login: check.login, who, device }));
  }
  const match = CONTROL_ROUTE.exec(path);
  if (match?.[1] === undefined || control === undefined) {
    return finish(boardRefusal("not-found", "No such route on this board."));
  }
  let conversation: string;
  try {
    conversation = decodeURIComponent(match[1]);
  } catch {
    return finish(
      boardRefusal("bad-request", "The conversation id is not valid percent-encoding."),
    );
  }
  const body = await readJsonObject(req);
  if (!body.ok) return finish(body.reply);
  if (res.destroyed) return;
  return finish(await control({ session: check.login, conversation, body: body.value, who }));
}

/** A POST's body as a JSON object, or the refusal: too large, not JSON, not an object. */
async function readJsonObject(
  req: IncomingMessage,
): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; reply: Reply }> {
  const body = await readBody(req);
  if (body === "too-large") {
    const reply = boardRefusal(
      "payload-too-large",
      `A POST body is limited to ${MAX_POST_BYTES} bytes.`,
    );
    return { ok: false, reply };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, reply: boardRefusal("bad-request", "The body is not JSON.") };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    const reply = boardRefusal("bad-request", "The body must be a JSON object.");
    return { ok: false, reply };
  }
  return { ok: true, value: parsed as Record<string, unknown> };
}

function readBody(req: IncomingMessage): Promise<string | "too-large"> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_POST_BYTES) {
        req.pause();
        resolve("too-large");
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
