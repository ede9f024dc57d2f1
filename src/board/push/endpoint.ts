// Which push endpoints the board will POST to (issue 27, docs/push.md "Endpoints"). An endpoint
// URL comes from a browser, so without a rule a logged-in page (or a stolen login key) could
// make the board send requests anywhere it can reach: a loopback service, the local network,
// a cloud metadata address. So an endpoint is accepted only when it is
// - https on the default port, no user name or password, no fragment, at most 1,024 bytes, and
//   its host one of the browsers' push services (Chromium's FCM, Firefox's autopush, Safari's
//   Apple push, Edge's WNS), the only hosts a real subscription names; and, when sending, the
//   address its name resolves to is a public one (checked on the connection itself, so a DNS
//   answer that changes in between cannot point it inward);
// - or its origin is one the board was started with (`push.origins`, exact match: the tests'
//   local endpoint, a self-hosted push service), sent to as named, loopback included.

import { lookup as dnsLookup } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** Longest endpoint URL accepted (real ones are 150 to 500 bytes). */
export const MAX_ENDPOINT_BYTES = 1024;

/** The browsers' push services: an exact host, or a suffix starting with a dot. */
export const PUSH_SERVICE_HOSTS: readonly string[] = [
  "fcm.googleapis.com",
  "updates.push.services.mozilla.com",
  "web.push.apple.com",
  ".notify.windows.com",
];

export type EndpointPolicy = {
  /** Origins accepted besides the push services (`http://127.0.0.1:9999`), exact. */
  origins: ReadonlySet<string>;
};

export type Endpoint =
  | {
      ok: true;
      url: URL /** Whether the push services' rule applies (public address). */;
      service: boolean;
    }
  | { ok: false; message: string };

/** Whether the board may send to `endpoint`, and why not. */
export function checkEndpoint(endpoint: string, policy: EndpointPolicy): Endpoint {
  if (Buffer.byteLength(endpoint, "utf8") > MAX_ENDPOINT_BYTES) {
    return refused(`A push endpoint is at most ${MAX_ENDPOINT_BYTES} bytes long.`);
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return refused("The push endpoint is not a URL.");
  }
  if (url.username !== "" || url.password !== "" || url.hash !== "") {
    return refused("A push endpoint carries no user name, password or fragment.");
  }
  if (policy.origins.has(url.origin)) return { ok: true, url, service: false };
  if (url.protocol !== "https:") {
    return refused(
      `The board sends pushes over https only, not ${url.protocol.replace(/:$/, "")}; a browser's push service is always https.`,
    );
  }
  if (url.port !== "") return refused("A push service's endpoint uses https's own port (443).");
  const host = url.hostname.toLowerCase();
  if (isIP(host.replace(/^\[|\]$/g, "")) !== 0 || !isPushService(host)) {
    return refused(
      `${host} is not one of the browsers' push services (${PUSH_SERVICE_HOSTS.join(", ")}); the board sends to those only.`,
    );
  }
  return { ok: true, url, service: true };
}

function isPushService(host: string): boolean {
  return PUSH_SERVICE_HOSTS.some((h) => (h.startsWith(".") ? host.endsWith(h) : host === h));
}

function refused(message: string): Endpoint {
  return { ok: false, message };
}

/** Addresses a push service's name must never resolve to. */
const INWARD = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 3],
] as const) {
  INWARD.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  // (IPv4-mapped addresses are checked as the IPv4 address they carry: isInwardAddress.)
  ["::", 127],
  ["64:ff9b::", 96],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  INWARD.addSubnet(net, prefix, "ipv6");
}

/** Whether `address` is loopback, private, link-local, shared, multicast or unspecified. */
export function isInwardAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 6 && address.toLowerCase().startsWith("::ffff:")) {
    const v4 = address.slice(7);
    if (isIP(v4) === 4) return INWARD.check(v4, "ipv4");
  }
  return INWARD.check(address, family === 4 ? "ipv4" : "ipv6");
}

/**
 * A `lookup` for the connection to a push service: the name is resolved as usual, and an
 * inward address fails the connection (so it is the address connected to that was checked).
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0);
    const list = addresses as { address: string; family: number }[];
    const inward = list.find((a) => isInwardAddress(a.address));
    if (inward !== undefined || list.length === 0) {
      const e = Object.assign(
        new Error(`${hostname} resolves to ${inward?.address ?? "nothing"}, not a public address`),
        { code: "EPUSHINWARD" },
      );
      return callback(e, "", 0);
    }
    if (options.all) return callback(null, list);
    const first = list[0] as { address: string; family: number };
    return callback(null, first.address, first.family);
  });
};
