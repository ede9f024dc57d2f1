// A local push service for the board's Web Push tests: it hands out subscriptions (a P-256 key
// pair and a 16-byte auth secret per endpoint, as a browser makes them) and receives the
// board's pushes at them. Each push is checked as a push service and the browser would:
// the VAPID JWT (RFC 8292) verified with node:crypto (ES256 with the key in `k`, aud the
// endpoint's origin, exp within 24 h, sub a mailto: or https: contact), and the aes128gcm body
// (RFC 8291) decrypted with the subscription's private key and auth secret by `http_ece`, the
// library web-push itself encrypts with. Over http on loopback, or https with a certificate made
// here by openssl (`tls: true`), trusted by the agent it hands out.
import { execFileSync } from "node:child_process";
import { createECDH, createPublicKey, type ECDH, randomBytes, verify } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttp, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent, createServer as createHttps } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ece from "http_ece";
import { DEADLINE_MS, within } from "./deadline.ts";

export type Jwt = { header: Record<string, unknown>; claims: Record<string, unknown> };

export type Received = {
  /** The subscription the push came to. */
  id: string;
  headers: IncomingMessage["headers"];
  /** The JWT, verified; null with `problem` set when it is not a valid VAPID token. */
  jwt: Jwt | null;
  /** The `k` the Authorization header named (the board's public key). */
  k: string | null;
  /** The decrypted payload; null with `problem` set when it cannot be decrypted. */
  payload: string | null;
  problem: string | null;
};

export type TestSubscription = {
  id: string;
  endpoint: string;
  keys: { p256dh: string; auth: string };
};

export type PushEndpoint = {
  origin: string;
  /** For `tls`: an agent that trusts this endpoint's certificate (and only it). */
  agent: Agent | undefined;
  /** A new subscription; `status` is what its pushes are answered (201 unless told). */
  subscribe(status?: number): TestSubscription;
  received: Received[];
  /** The next push to arrive (or one already here and not yet taken), within `ms`. */
  next(ms?: number): Promise<Received>;
  close(): Promise<void>;
};

type Held = { ecdh: ECDH; auth: Buffer; status: number };

export async function startPushEndpoint(options: { tls?: boolean } = {}): Promise<PushEndpoint> {
  const held = new Map<string, Held>();
  const received: Received[] = [];
  let taken = 0;
  const waiters: (() => void)[] = [];
  let origin = "";

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const id = (req.url ?? "").replace(/^\/push\//, "");
      const sub = held.get(id);
      if (req.method !== "POST" || sub === undefined) {
        res.writeHead(404).end();
        return;
      }
      received.push(check(id, req.headers, Buffer.concat(chunks), sub, origin));
      res.writeHead(sub.status).end();
      for (const w of waiters.splice(0)) w();
    });
  };

  let agent: Agent | undefined;
  let dir: string | undefined;
  let server: ReturnType<typeof createHttp>;
  if (options.tls) {
    dir = mkdtempSync(join(tmpdir(), "push-endpoint-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    const cert = readFileSync(join(dir, "cert.pem"));
    server = createHttps({ key: readFileSync(join(dir, "key.pem")), cert }, handle);
    agent = new Agent({ ca: cert });
  } else {
    server = createHttp(handle);
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  origin = `${options.tls ? "https" : "http"}://127.0.0.1:${port}`;

  return {
    origin,
    agent,
    received,
    subscribe(status = 201) {
      const ecdh = createECDH("prime256v1");
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const id = randomBytes(8).toString("hex");
      held.set(id, { ecdh, auth, status });
      return {
        id,
        endpoint: `${origin}/push/${id}`,
        keys: {
          p256dh: ecdh.getPublicKey().toString("base64url"),
          auth: auth.toString("base64url"),
        },
      };
    },
    async next(ms = DEADLINE_MS) {
      await within(
        new Promise<void>((resolve) => {
          const look = () => {
            if (received.length > taken) resolve();
            else waiters.push(look);
          };
          look();
        }),
        "a push reached the test endpoint",
        ms,
      );
      const r = received[taken] as Received;
      taken += 1;
      return r;
    },
    async close() {
      agent?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function check(
  id: string,
  headers: IncomingMessage["headers"],
  body: Buffer,
  sub: Held,
  origin: string,
): Received {
  const out: Received = { id, headers, jwt: null, k: null, payload: null, problem: null };
  const auth = headers.authorization ?? "";
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(auth);
  if (m === null) return { ...out, problem: `Authorization is not a VAPID header: ${auth}` };
  const [, token, k] = m as unknown as [string, string, string];
  out.k = k;
  const jwt = verifyJwt(token, k, origin);
  if (typeof jwt === "string") return { ...out, problem: jwt };
  out.jwt = jwt;
  if (headers["content-encoding"] !== "aes128gcm") {
    return { ...out, problem: `Content-Encoding ${headers["content-encoding"]}` };
  }
  try {
    const plain = ece.decrypt(body, {
      version: "aes128gcm",
      privateKey: sub.ecdh,
      authSecret: sub.auth.toString("base64url"),
    });
    out.payload = plain.toString("utf8");
  } catch (e) {
    out.problem = `the body does not decrypt: ${(e as Error).message}`;
  }
  return out;
}

/** The JWT's header and claims when RFC 8292 holds, else what is wrong. */
function verifyJwt(token: string, k: string, origin: string): Jwt | string {
  const parts = token.split(".");
  if (parts.length !== 3) return "the token is not a JWS";
  const [h, c, s] = parts as [string, string, string];
  const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8")) as Record<
    string,
    unknown
  >;
  const claims = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as Record<
    string,
    unknown
  >;
  if (header.alg !== "ES256") return `alg ${String(header.alg)}, not ES256`;
  const point = Buffer.from(k, "base64url");
  if (point.length !== 65 || point[0] !== 4) return "k is not an uncompressed P-256 point";
  const key = createPublicKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33).toString("base64url"),
    },
    format: "jwk",
  });
  const signed = verify(
    "sha256",
    Buffer.from(`${h}.${c}`),
    { key, dsaEncoding: "ieee-p1363" },
    Buffer.from(s, "base64url"),
  );
  if (!signed) return "the ES256 signature does not verify with k";
  if (claims.aud !== origin)
    return `aud ${String(claims.aud)}, not the endpoint's origin ${origin}`;
  const now = Date.now() / 1000;
  const exp = claims.exp;
  if (typeof exp !== "number" || exp <= now || exp > now + 24 * 3600) {
    return `exp ${String(exp)} is not within the next 24 h`;
  }
  if (typeof claims.sub !== "string" || !/^(mailto:|https:)/.test(claims.sub)) {
    return `sub ${String(claims.sub)} is not a mailto: or https: contact`;
  }
  return { header, claims };
}
