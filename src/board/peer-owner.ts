// Which user opened a loopback TCP connection (issue 22 item 1). A loopback peer is a process
// of this machine, and the kernel lists the owner of every TCP socket in /proc/net/tcp and
// /proc/net/tcp6: the client's end is the line whose local address is the peer's and whose
// remote address is the board's. Linux only; elsewhere the owner is unknown and the caller says
// what that means. Read once per connection (a keep-alive socket keeps its peer).
import { readFile } from "node:fs/promises";
import { isIPv4, isIPv6, type Socket } from "node:net";
import { endianness } from "node:os";

export type PeerOwner =
  | { found: true; uid: number }
  /** `no-proc`: the tables cannot be read (not Linux); `not-listed`: no socket has that peer. */
  | { found: false; reason: "no-proc" | "not-listed" };

const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"] as const;
const owners = new WeakMap<Socket, Promise<PeerOwner>>();

/** The owner of the other end of `socket`, an accepted loopback TCP connection. */
export function peerOwner(socket: Socket): Promise<PeerOwner> {
  let known = owners.get(socket);
  if (known === undefined) {
    known = lookUp(socket);
    owners.set(socket, known);
  }
  return known;
}

async function lookUp(socket: Socket): Promise<PeerOwner> {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (!remoteAddress || !remotePort || !localAddress || !localPort) {
    return { found: false, reason: "not-listed" };
  }
  // The client's socket may be IPv4, or IPv6 holding a mapped IPv4 address: both are looked for.
  const peers = procForms(remoteAddress).map((a) => `${a}:${hexPort(remotePort)}`);
  const boards = procForms(localAddress).map((a) => `${a}:${hexPort(localPort)}`);
  let readAny = false;
  for (const table of TABLES) {
    let text: string;
    try {
      text = await readFile(table, "latin1");
    } catch {
      // No such table here (no IPv6, not Linux): the other one may still list the peer.
      continue;
    }
    readAny = true;
    for (const line of text.split("\n")) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid …
      const f = line.trim().split(/\s+/);
      if (f.length < 8 || !peers.includes(f[1] ?? "") || !boards.includes(f[2] ?? "")) continue;
      const uid = Number(f[7]);
      if (Number.isSafeInteger(uid) && uid >= 0) return { found: true, uid };
    }
  }
  return { found: false, reason: readAny ? "not-listed" : "no-proc" };
}

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, "0");
}

/**
 * How the kernel prints `address` in its tables: each 32-bit word of the address as the host
 * stores it, in hex. An IPv4 address has two forms (itself in tcp, mapped into IPv6 in tcp6).
 */
export function procForms(address: string): string[] {
  if (isIPv4(address)) {
    const v4 = ipv4Bytes(address);
    return [words(v4), words([...new Array<number>(10).fill(0), 0xff, 0xff, ...v4])];
  }
  const bytes = ipv6Bytes(address);
  return bytes === null ? [] : [words(bytes)];
}

function ipv4Bytes(address: string): number[] {
  return address.split(".").map(Number);
}

/** The 16 bytes of an IPv6 address (`::` and a trailing dotted IPv4 part allowed), or null. */
function ipv6Bytes(address: string): number[] | null {
  const bare = address.split("%", 1)[0] ?? "";
  if (!isIPv6(bare)) return null;
  const [head = "", tail] = bare.split("::");
  const groups = (part: string): number[] => {
    const out: number[] = [];
    for (const piece of part === "" ? [] : part.split(":")) {
      if (isIPv4(piece)) {
        const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(piece);
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(Number.parseInt(piece, 16));
    }
    return out;
  };
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

function words(bytes: number[]): string {
  const little = endianness() === "LE";
  let out = "";
  for (let i = 0; i < bytes.length; i += 4) {
    const word = bytes.slice(i, i + 4);
    for (const b of little ? word.reverse() : word)
      out += b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

/**
 * Whether a peer may log in or act: one of this process's user, or root (who can read that
 * user's browser profile anyway). Where no table can be read (not Linux) nothing is known, and
 * the login key alone decides; on Linux a peer no table lists is refused.
 */
export function isTrustedPeer(owner: PeerOwner): boolean {
  if (!owner.found) return owner.reason === "no-proc";
  return owner.uid === 0 || owner.uid === process.getuid?.();
}
