// Device login links (issue 29 item 4): a link for one more device (a phone), minted by `serve
// --phone`, that logs in once, within minutes, for one person, and can be revoked
// (`conversation logins --revoke ID`), which also signs out the login it made. Tokens are kept as
// digests only. The list (no tokens) is written to `<board-dir>/logins.json` for `conversation
// logins`; a revocation is a file `<board-dir>/revoked/<ID>` that the board looks for at each use.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensurePrivateFolder } from "../fs/private-folder.ts";

/** How long a device link logs in (it is on a screen, and may be photographed). */
export const DEVICE_LINK_TTL_MS = 10 * 60 * 1000;

export type DeviceState = "unused" | "used" | "expired" | "revoked";

export type DeviceRecord = {
  id: string;
  /** The person the login will be (behind a proxy, the proxy must name the same one). */
  identity: string;
  createdAt: string;
  expiresAt: string;
  state: DeviceState;
};

type Held = DeviceRecord & { digest: Buffer; login: string | null };

export type DeviceUse =
  | { ok: true; id: string; identity: string }
  | { ok: false; message: string }
  | { ok: false; notDevice: true };

export class DeviceLinks {
  readonly #dir: string | null;
  readonly #links = new Map<string, Held>();

  /** `dir`: where the list and revocations live (null: kept in memory only). */
  constructor(dir: string | null) {
    this.#dir = dir;
    if (dir !== null) {
      const made = ensurePrivateFolder(join(dir, "revoked"), {
        what: "the board's login folder",
        instead: "choose another with --state-dir",
      });
      if (!made.ok) throw new Error(made.problem.message);
    }
  }

  /** A new link's id and token for `identity`, valid DEVICE_LINK_TTL_MS from now. */
  mint(identity: string, now = Date.now()): { id: string; token: string; expiresAt: string } {
    const id = `dl-${randomBytes(6).toString("hex")}`;
    const token = randomBytes(32).toString("base64url");
    const expiresAt = new Date(now + DEVICE_LINK_TTL_MS).toISOString();
    this.#links.set(id, {
      id,
      identity,
      createdAt: new Date(now).toISOString(),
      expiresAt,
      state: "unused",
      digest: digest(token),
      login: null,
    });
    this.#save();
    return { id, token, expiresAt };
  }

  /** Uses `token` once: the link's person, or why not; `notDevice` when it is no device link. */
  use(token: string, now = Date.now()): DeviceUse {
    const given = digest(token);
    for (const link of this.#links.values()) {
      if (!timingSafeEqual(given, link.digest)) continue;
      this.#refresh(link, now);
      if (link.state !== "unused") {
        return {
          ok: false,
          message: `This device link was ${link.state === "used" ? "used already: each logs in once" : link.state}. Ask for a new one (\`conversation serve --phone\`).`,
        };
      }
      link.state = "used";
      this.#save();
      return { ok: true, id: link.id, identity: link.identity };
    }
    return { ok: false, notDevice: true };
  }

  /** Records which login (its id) a link made, so revoking the link signs it out. */
  bind(id: string, login: string): void {
    const link = this.#links.get(id);
    if (link) link.login = login;
  }

  /** Whether the login made by a device link was revoked since (so it must be signed out). */
  isRevokedLogin(login: string): boolean {
    for (const link of this.#links.values()) {
      if (link.login !== login) continue;
      this.#refresh(link, Date.now());
      return link.state === "revoked";
    }
    return false;
  }

  /** The device link a login came from (`dl-…`), or null: the operator link's, or unknown. */
  linkOfLogin(login: string): string | null {
    for (const link of this.#links.values()) if (link.login === login) return link.id;
    return null;
  }

  list(): DeviceRecord[] {
    return [...this.#links.values()].map((l) => {
      this.#refresh(l, Date.now());
      const { id, identity, createdAt, expiresAt, state } = l;
      return { id, identity, createdAt, expiresAt, state };
    });
  }

  #refresh(link: Held, now: number): void {
    const before = link.state;
    if (link.state !== "revoked" && this.#dir !== null && isRevokedLink(this.#dir, link.id)) {
      link.state = "revoked";
    } else if (link.state === "unused" && Date.parse(link.expiresAt) <= now) {
      link.state = "expired";
    }
    if (link.state !== before) this.#save();
  }

  #save(): void {
    if (this.#dir === null) return;
    const file = join(this.#dir, "logins.json");
    const temp = `${file}.${process.pid}.tmp`;
    const links = [...this.#links.values()].map(
      ({ id, identity, createdAt, expiresAt, state }) => ({
        id,
        identity,
        createdAt,
        expiresAt,
        state,
      }),
    );
    writeFileSync(temp, `${JSON.stringify({ pid: process.pid, links })}\n`, { mode: 0o600 });
    renameSync(temp, file);
  }
}

/**
 * Whether `conversation logins --revoke ID` revoked the link: its file in `<board dir>/revoked`.
 * Read from the disk each time, so a board started after the revocation knows it too.
 */
export function isRevokedLink(boardDir: string, id: string): boolean {
  return existsSync(join(boardDir, "revoked", id));
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
