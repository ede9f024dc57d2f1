// `serve`'s proxy flags (issue 29 item 1; docs/remote.md): --public-origin, --trusted-proxy,
// --identity-header and --roles, all four or none. Checked here (and the roles file read) before
// the board starts, so a mistake is a usage error that names the flag.
import type { ProxyConfig } from "../board/identity.ts";
import type { Checked } from "./config.ts";

export type ProxyFlagValues = {
  publicOrigin: string;
  trustedProxy: string;
  identityHeader: string;
  rolesFile: string;
};

export const PHONE_OPTIONS = {
  phone: { type: "boolean" },
  "phone-for": { type: "string" },
} as const;

export const PHONE_HELP = `A phone (docs/remote.md, "A phone"):
  --phone            print a device login link and its QR code: it logs in
                     once, within 10 minutes; \`conversation logins\` lists
                     them, --revoke ID revokes one (and signs its login out)
  --phone-for NAME   behind a proxy, the person it is for (in --roles)`;

export const PROXY_OPTIONS = {
  "public-origin": { type: "string" },
  "trusted-proxy": { type: "string" },
  "identity-header": { type: "string" },
  roles: { type: "string" },
} as const;

export const PROXY_HELP = `Behind a TLS-terminating, authenticating proxy (docs/remote.md), all four:
  --public-origin URL  https://HOST[:PORT], the address people open
  --trusted-proxy ADDR the proxy's address (loopback: it runs on this host);
                       only its connections may name who is asking
  --identity-header H  the header the proxy sets to the person (X-Remote-User)
  --roles FILE         JSON: { "identities": { "<person>": "viewer" |
                       "observer" | "operator" | "admin" } }`;

type Values = {
  "public-origin"?: string;
  "trusted-proxy"?: string;
  "identity-header"?: string;
  roles?: string;
};

/** The four flags, or null when none is given; a usage error when only some are. */
export function proxyFlagsOf(v: Values): Checked<ProxyFlagValues | null> {
  const given = (["public-origin", "trusted-proxy", "identity-header", "roles"] as const).filter(
    (k) => v[k] !== undefined,
  );
  if (given.length === 0) return { ok: true, value: null };
  if (given.length < 4) {
    const missing = (["public-origin", "trusted-proxy", "identity-header", "roles"] as const)
      .filter((k) => v[k] === undefined)
      .map((k) => `--${k}`);
    return {
      ok: false,
      error: `behind a proxy the board needs all four of --public-origin, --trusted-proxy, --identity-header and --roles; missing ${missing.join(", ")}`,
    };
  }
  return {
    ok: true,
    value: {
      publicOrigin: v["public-origin"] ?? "",
      trustedProxy: v["trusted-proxy"] ?? "",
      identityHeader: v["identity-header"] ?? "",
      rolesFile: v.roles ?? "",
    },
  };
}

/** Reads the roles file and checks the flags: the board's proxy configuration, or why not. */
export async function proxyConfigOf(f: ProxyFlagValues): Promise<Checked<ProxyConfig>> {
  const { readRolesFile } = await import("../board/roles.ts");
  const { checkProxyFlags } = await import("../board/identity.ts");
  const roles = readRolesFile(f.rolesFile);
  if (!roles.ok) return { ok: false, error: roles.error };
  const checked = checkProxyFlags({ ...f, roles: roles.roles });
  return checked.ok ? { ok: true, value: checked.proxy } : { ok: false, error: checked.error };
}
