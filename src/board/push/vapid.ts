// The board's VAPID key pair (RFC 8292), made once by `web-push` and kept in
// `<push dir>/vapid.json` (0600, in the checked private folder): every subscription a browser
// made is bound to this public key, so a new pair would silently orphan them all. The private
// key never leaves the file and the board's memory; the public key is served to the Console.
import { linkSync, rmSync } from "node:fs";
import { join } from "node:path";
import webpush from "web-push";
import { readPrivate, tempBeside, writeNew } from "./files.ts";

export type Vapid = { publicKey: string; privateKey: string; subject: string };

/**
 * The VAPID `sub` claim: a contact the push services may use. A loopback board has no address
 * of its own; `.invalid` is reserved (RFC 2606), so it names no one. Configurable (`subject`).
 */
export const DEFAULT_SUBJECT = "mailto:conversation-board@example.invalid";

const B64URL = /^[A-Za-z0-9_-]+$/;

/** The pair in `dir`, made now if there is none; or why it cannot be used. */
export function loadOrMakeVapid(
  dir: string,
  subject = DEFAULT_SUBJECT,
): { ok: true; vapid: Vapid } | { ok: false; message: string } {
  const path = join(dir, "vapid.json");
  const found = readVapid(path);
  if (found.ok || !("missing" in found)) return found;
  const keys = webpush.generateVAPIDKeys();
  const made: Vapid = { publicKey: keys.publicKey, privateKey: keys.privateKey, subject };
  // Made under a temp name, then linked to its name: a second board making one at the same
  // moment keeps the first one's (link fails on an existing name; rename would replace it).
  const temp = tempBeside(path);
  writeNew(temp, `${JSON.stringify({ ...made, createdAt: new Date().toISOString() })}\n`);
  try {
    linkSync(temp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  } finally {
    rmSync(temp, { force: true });
  }
  const kept = readVapid(path);
  return kept.ok ? kept : { ok: false, message: "message" in kept ? kept.message : path };
}

function readVapid(
  path: string,
): { ok: true; vapid: Vapid } | { ok: false; missing: true } | { ok: false; message: string } {
  const read = readPrivate(path);
  if (!read.ok) return read.missing ? { ok: false, missing: true } : read;
  let v: unknown;
  try {
    v = JSON.parse(read.text);
  } catch {
    return {
      ok: false,
      message: `${path} is not JSON: move it away (pushes then need a new subscription).`,
    };
  }
  if (typeof v !== "object" || v === null) return { ok: false, message: `${path} holds no key.` };
  const { publicKey, privateKey, subject } = v as Record<string, unknown>;
  if (
    typeof publicKey !== "string" ||
    typeof privateKey !== "string" ||
    typeof subject !== "string" ||
    !B64URL.test(publicKey) ||
    !B64URL.test(privateKey) ||
    Buffer.from(publicKey, "base64url").length !== 65 ||
    Buffer.from(privateKey, "base64url").length !== 32
  ) {
    return { ok: false, message: `${path} does not hold a VAPID key pair: move it away.` };
  }
  return { ok: true, vapid: { publicKey, privateKey, subject } };
}
