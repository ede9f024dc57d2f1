// Who is asking (issue 29 item 1, the seed's CHAT-04R). Behind a TLS-terminating, authenticating
// reverse proxy (`serve --public-origin --trusted-proxy --identity-header --roles`), the person is
// the identity the proxy puts in its header, honoured only on a connection from the trusted
// proxy's address (and, that address being loopback, only from a process of the board's own user
// or root: /proc/net/tcp, peer-owner.ts); the header from anyone else is refused, never ignored,
// so a forgery shows. Without a proxy, or on a connection that is not the proxy's and names no
// one, the asker is the local operator of the loopback board, as before.
import type { IncomingMessage } from "node:http";
import { isIPv4, isIPv6 } from "node:net";
import { isActorName } from "../control/protocol.ts";
import { isTrustedPeer, peerOwner } from "./peer-owner.ts";
import { boardRefusal, type Reply } from "./reply.ts";
import { type Role, type Roles, roleAllows } from "./roles.ts";

/** The board's own person: the loopback board's user, who may do everything (as before). */
export const LOCAL_IDENTITY = "local-operator";

export type Who = {
  /** The proxy's identity, or LOCAL_IDENTITY. */
  identity: string;
  role: Role;
  /** True when the trusted proxy named this person (the request came through HTTPS). */
  proxied: boolean;
};

export const LOCAL_WHO: Who = { identity: LOCAL_IDENTITY, role: "admin", proxied: false };

export type ProxyConfig = {
  /** `https://host[:port]`, as the browser names the board (the Origin of its pages). */
  origin: string;
  /** `host[:port]` of the origin, lower case: the Host the proxy passes on. */
  host: string;
  /** The proxy's address, normalised (an IPv4-mapped IPv6 address as IPv4). */
  proxyAddress: string;
  /** The identity header's name, lower case (as node:http gives headers). */
  header: string;
  roles: Roles;
  /** Where the roles came from, for messages. */
  rolesFile: string;
};

export type ProxyFlags = {
  publicOrigin: string;
  trustedProxy: string;
  identityHeader: string;
  roles: Roles;
  rolesFile: string;
};

/** Checks the proxy flags: an https origin with no path, a loopback proxy address, a header name. */
export function checkProxyFlags(
  f: ProxyFlags,
): { ok: true; proxy: ProxyConfig } | { ok: false; error: string } {
  let url: URL;
  try {
    url = new URL(f.publicOrigin);
  } catch {
    return {
      ok: false,
      error: `--public-origin ${JSON.stringify(f.publicOrigin)} is not a URL: give https://HOST[:PORT]`,
    };
  }
  if (url.protocol !== "https:") {
    return {
      ok: false,
      error:
        "--public-origin must be https://…: the proxy terminates TLS, so the login key only ever travels encrypted",
    };
  }
  if (
    url.username !== "" ||
    url.password !== "" ||
    url.search !== "" ||
    url.hash !== "" ||
    (url.pathname !== "/" && url.pathname !== "")
  ) {
    return {
      ok: false,
      error: "--public-origin is an origin only: https://HOST[:PORT], no path, query or user",
    };
  }
  if (f.publicOrigin.replace(/\/$/, "").toLowerCase() !== url.origin) {
    return { ok: false, error: `--public-origin: write it as ${url.origin}` };
  }
  const proxyAddress = normaliseAddress(f.trustedProxy);
  if (proxyAddress === null || !isLoopback(proxyAddress)) {
    return {
      ok: false,
      error: `--trusted-proxy ${JSON.stringify(f.trustedProxy)} must be a loopback address (127.0.0.1, another 127.x.y.z, or ::1): the board listens on loopback only, so its proxy runs on this machine`,
    };
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(f.identityHeader)) {
    return {
      ok: false,
      error: `--identity-header ${JSON.stringify(f.identityHeader)} is not a header name (letters, digits, '-')`,
    };
  }
  const header = f.identityHeader.toLowerCase();
  if (
    [
      "host",
      "origin",
      "cookie",
      "authorization",
      "x-board-login",
      "sec-fetch-site",
      "content-type",
    ].includes(header)
  ) {
    return {
      ok: false,
      error: `--identity-header ${f.identityHeader} is a header the board or the browser uses for something else; name one of its own, such as X-Remote-User`,
    };
  }
  return {
    ok: true,
    proxy: {
      origin: url.origin,
      host: url.host,
      proxyAddress,
      header,
      roles: f.roles,
      rolesFile: f.rolesFile,
    },
  };
}

export type Identified = { ok: true; who: Who } | { ok: false; reply: Reply };

/**
 * Who sent `req`: the proxy's person (refused `identity-required`, `unknown-identity`), the
 * local operator, or `identity-refused` for an identity header on any other connection.
 */
export async function identify(
  req: IncomingMessage,
  proxy: ProxyConfig | null,
): Promise<Identified> {
  if (proxy === null) return { ok: true, who: LOCAL_WHO };
  const values = req.headersDistinct[proxy.header] ?? [];
  const fromProxy = normaliseAddress(req.socket.remoteAddress ?? "") === proxy.proxyAddress;
  if (!fromProxy) {
    if (values.length === 0) return { ok: true, who: LOCAL_WHO };
    return refuse(
      "identity-refused",
      `This connection is not the trusted proxy's (${proxy.proxyAddress}), so it may not name who is asking (${proxy.header}); go through the proxy at ${proxy.origin}.`,
    );
  }
  // The proxy's address is loopback: any local process can connect from it. Only the board's
  // own user (or root) is vouched for as the proxy; another user's forgery is refused.
  const owner = await peerOwner(req.socket);
  if (!isTrustedPeer(owner)) {
    return refuse(
      "identity-refused",
      owner.found
        ? `This connection comes from the proxy's address but was opened by another user of this machine (uid ${owner.uid}); only the proxy run by the board's user may name who is asking.`
        : "The board cannot tell which user opened this connection, so it may not name who is asking.",
    );
  }
  if (values.length > 1) {
    return refuse(
      "identity-refused",
      `The request carries ${proxy.header} more than once; the proxy must set it exactly once.`,
    );
  }
  const identity = values[0]?.trim() ?? "";
  if (identity === "") {
    return refuse(
      "identity-required",
      `The proxy sent no ${proxy.header}: configure it to authenticate every request and set the header to the person's name (docs/remote.md).`,
    );
  }
  if (!isActorName(identity)) {
    return refuse(
      "identity-refused",
      `The proxy's ${proxy.header} is not a name (1 to 200 characters, no control character).`,
    );
  }
  const role = proxy.roles.get(identity);
  if (role === undefined) {
    return refuse(
      "unknown-identity",
      `${identity} has no role on this board: ask its operator to add them to the roles file (${proxy.rolesFile}) as viewer, observer, operator or admin.`,
    );
  }
  return { ok: true, who: { identity, role, proxied: true } };
}

/** The refusal for `who` doing `op`, or null when their role allows it. */
export function refuseRole(who: Who, op: string, what: string): Reply | null {
  if (roleAllows(who.role, op)) return null;
  return boardRefusal(
    "role-refused",
    `${who.identity} is ${article(who.role)} ${who.role} on this board, and ${who.role}s may not ${what}; ask its operator for a role that may.`,
  );
}

function article(role: Role): string {
  return role === "observer" || role === "operator" || role === "admin" ? "an" : "a";
}

function refuse(
  code: "identity-refused" | "identity-required" | "unknown-identity",
  message: string,
): Identified {
  return { ok: false, reply: boardRefusal(code, message) };
}

/** An address as the board compares it: IPv4-mapped IPv6 as IPv4, IPv6 lower case; else null. */
export function normaliseAddress(address: string): string | null {
  const a = address.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped?.[1] !== undefined && isIPv4(mapped[1])) return mapped[1];
  if (isIPv4(a)) return a;
  const bare = a.replace(/^\[|\]$/g, "");
  return isIPv6(bare) ? bare : null;
}

function isLoopback(address: string): boolean {
  return address.startsWith("127.") || address === "::1";
}
