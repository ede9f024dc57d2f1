// Test helper: the real Caddy (Debian's 2.6.2) running docs/caddy/Caddyfile in front of a board,
// with its own CA and users in a temp dir. An HTTPS client that trusts only that CA. Caddy is
// stopped and its folder removed in t.after; readiness is awaited with a deadline, never a sleep.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { createServer } from "node:net";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { DEADLINE_MS } from "./deadline.ts";

export const CADDYFILE = new URL("../../docs/caddy/Caddyfile", import.meta.url).pathname;

export type Caddy = {
  /** `https://localhost:<port>`: the board's public origin. */
  origin: string;
  port: number;
  /** Caddy's root certificate (PEM): what a client trusts. */
  ca: string;
};

/** Whether caddy is installed (tests that need it skip with the reason otherwise). */
export function hasCaddy(): boolean {
  try {
    execFileSync("caddy", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A free TCP port on 127.0.0.1 (closed again at once; Caddy binds it next). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const address = server.address();
  await new Promise<void>((ok) => server.close(() => ok()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/**
 * The suites' passwords hashed at bcrypt's lowest cost (4, `$2a$04$`, made with libxcrypt's
 * crypt(3)): Caddy checks any cost, and checks it on every request it authenticates. At
 * `caddy hash-password`'s cost (14) each of those checks cost 0.8 s of CPU here, most of the
 * proxy suite's time; the cost is not what these tests prove. Any other password is hashed by
 * Caddy (once).
 */
const hashes = new Map<string, string>([
  ["pw-of-vera", "$2a$04$B4m0KbJMqtIjrBkHO6Qjg.N1EHwvN5cm/3IKz2pjtkCJzzVcdHZ8S"],
  ["pw-of-olga", "$2a$04$6pTiW/Im1XSuC/bk2h9lXuRjRlXJsv1bJm4xcRcUJuNej2hffdzmK"],
  ["pw-of-otto", "$2a$04$OycoL.G6IulWIelFJvKNHeoRuNR5gaFDxzLiiq7n4mmYyKd4Usojm"],
  ["pw-of-ada", "$2a$04$FZGaeLJfl8OsTn51l1vEZO34EIaUpbP2crIIpRAvIimqRfb72oUxG"],
  ["pw-of-mallory", "$2a$04$o.W9tFhQMyhJ8pdcong5HOfQxlTx3vBkDAJvGdjuAUbDR5XeNyVAS"],
  ["pw-otto", "$2a$04$KGhYSgmrxXCFRcmd/POeS.KI5J.OhMwE6y09xf9qOyU65hAvRoscm"],
  ["pw-olga", "$2a$04$nzuBsVzoWKtGlR21/uDQ..R3tY61NdJBfeU4jHXkQr4zRs6iRgZ8."],
]);
function hashOf(password: string): string {
  let hash = hashes.get(password);
  if (hash === undefined) {
    hash = execFileSync("caddy", ["hash-password", "--plaintext", password], {
      encoding: "utf8",
    }).trim();
    hashes.set(password, hash);
  }
  return hash;
}

/** Starts Caddy for `users` (name → password) in front of the board on `upstreamPort`. */
export async function startCaddy(
  t: Pick<TestContext, "after">,
  upstreamPort: number,
  users: Record<string, string>,
  port?: number,
): Promise<Caddy> {
  const dir = mkdtempSync("/tmp/mc-caddy-");
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lines = Object.entries(users).map(([name, password]) => `${name} ${hashOf(password)}`);
  const usersFile = join(dir, "users.caddy");
  writeFileSync(usersFile, `${lines.join("\n")}\n`, { mode: 0o600 });
  const listen = port ?? (await freePort());
  const origin = `https://localhost:${listen}`;
  const child = spawn("caddy", ["run", "--config", CADDYFILE, "--adapter", "caddyfile"], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      XDG_DATA_HOME: join(dir, "data"),
      XDG_CONFIG_HOME: join(dir, "config"),
      BOARD_SITE: origin,
      BOARD_BIND: "127.0.0.1",
      BOARD_UPSTREAM: `127.0.0.1:${upstreamPort}`,
      BOARD_USERS: usersFile,
      BOARD_CADDY_DATA: join(dir, "caddy"),
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (b: Buffer) => {
    log = (log + b.toString()).slice(-20_000);
  });
  const exited = new Promise<void>((ok) => child.once("exit", () => ok()));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  });
  const caFile = join(dir, "caddy", "pki", "authorities", "local", "root.crt");
  // Ready when Caddy answers an unauthenticated request with its own 401, over TLS that its CA
  // vouches for: each try is awaited, and the whole wait has a deadline.
  const deadline = performance.now() + 30_000;
  let ca = "";
  for (;;) {
    if (child.exitCode !== null) throw new Error(`caddy exited: ${log}`);
    if (performance.now() > deadline)
      throw new Error(`deadline: caddy serving ${origin}: ${log.slice(-800)}`);
    try {
      ca = readFileSync(caFile, "utf8");
      if ((await viaCaddy({ origin, ca }, "/", {})).status === 401) break;
    } catch {
      // Not yet: no CA written, or the port not listening.
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { origin, port: listen, ca };
}

export type ProxiedAnswer = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
};

/** One HTTPS request through Caddy, trusting only its CA; `user` logs in with basic auth. */
export function viaCaddy(
  caddy: Pick<Caddy, "origin" | "ca">,
  path: string,
  o: {
    user?: [string, string];
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  },
): Promise<ProxiedAnswer> {
  const url = new URL(path, caddy.origin);
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.user) headers.authorization = `Basic ${Buffer.from(o.user.join(":")).toString("base64")}`;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: o.method ?? "GET", headers, ca: caddy.ca, timeout: DEADLINE_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timed out: ${path}`)));
    req.on("error", reject);
    req.end(o.body);
  });
}
