// The writer claim's records: revision and holder types, their parsing from untrusted JSON,
// and the revision's field order (docs/claim.md). claim.ts owns the store that writes them.

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { ID_PATTERN } from "../../protocol/chat-01.ts";
import { ControlRefusal } from "../refusal.ts";

export const CLAIM_STATES = [
  "held",
  "stopping",
  "uncertain",
  "stopped-proven",
  "released",
] as const;
export type ClaimState = (typeof CLAIM_STATES)[number];
export type KeyKind = "session" | "seat";

/** A controller seat: the project root (absolute, normalized) and the seat's directory name. */
export type SeatKey = { projectRoot: string; seat: string };

/** Who holds (or wrote) a revision: a process named so that a reused pid is never mistaken. */
export type ClaimHolder = {
  host: string;
  bootId: string;
  pidNamespace: string;
  pid: number;
  /** /proc/<pid>/stat field 22: clock ticks after boot at which the process started. */
  startTime: number;
  execution: string;
  incarnation: string;
};

/** One revision file: CHAT-01 v2 `claimRevision`. */
export type ClaimRevision = {
  version: 2;
  kind: "claim-revision";
  key: KeyKind;
  revision: number;
  previous: number | null;
  seatKey: SeatKey;
  sessionKey: string;
  state: ClaimState;
  holder: ClaimHolder;
  writer: ClaimHolder;
  at: string;
  reason: string;
  proof: string | null;
};

/**
 * A handle on one holder's claim: the latest revision it has on each key, or null where the
 * holder's revision is not the key's latest (it never got that key). Every write returns a new
 * handle; an old one is stale and refuses `already-active`.
 */
export type Claim = {
  readonly seatKey: SeatKey;
  readonly sessionKey: string;
  readonly holder: ClaimHolder;
  readonly state: ClaimState;
  readonly revisions: { readonly session: number | null; readonly seat: number | null };
};

export type ClaimVerdict = "free" | "already-active" | "unsafe-replacement" | "foreign-host";

export type ClaimInspection = {
  verdict: ClaimVerdict;
  why: string;
  session: ClaimRevision | null;
  seat: ClaimRevision | null;
  /** The claim that blocks, so a recovery can record its proven stop; null when free. */
  blocking: Claim | null;
};

/** This machine as the store judges holders: host name, boot id and pid namespace. */
export type Machine = { host: string; bootId: string; pidNamespace: string };

export type ClaimStoreOptions = {
  root: string;
  /** Overrides parts of this machine's identity (tests use it to play another host or boot). */
  machine?: Partial<Machine>;
  /** Test hook, called after each revision is committed; the crash tests die in it. */
  afterWrite?: (revision: ClaimRevision) => void;
};

export type Liveness = { status: "alive" | "dead" | "foreign"; why: string };
export type Assessment = {
  latest: ClaimRevision | null;
  block: Omit<ClaimInspection, "session" | "seat">;
  /** The reason code an acquire records on this key when the verdict is free. */
  reason: string;
};

export const REVISION_NAME = /^r(\d{10})\.json$/;
export const MAX_REVISION = 9_999_999_999;
export const MAX_REVISION_BYTES = 64 * 1024;
export const ACQUIRE_ATTEMPTS = 5;
export const KEBAB = /^[a-z][a-z0-9-]{0,63}$/;
export const DIGEST = /^[0-9a-f]{64}$/;
export const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
export const ENDED: readonly ClaimState[] = ["stopped-proven", "released"];
export const NEXT: Record<ClaimState, readonly ClaimState[]> = {
  held: ["stopping", "uncertain", "stopped-proven", "released"],
  stopping: ["uncertain", "stopped-proven", "released"],
  uncertain: ["stopping", "uncertain", "stopped-proven"],
  "stopped-proven": [],
  released: [],
};

export function errnoOf(e: unknown): string | undefined {
  return e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

export function nameOf(n: number): string {
  return `r${String(n).padStart(10, "0")}.json`;
}

export function sameHolder(a: ClaimHolder, b: ClaimHolder): boolean {
  return (
    a.host === b.host &&
    a.bootId === b.bootId &&
    a.pidNamespace === b.pidNamespace &&
    a.pid === b.pid &&
    a.startTime === b.startTime &&
    a.execution === b.execution &&
    a.incarnation === b.incarnation
  );
}

export function nameHolder(h: ClaimHolder): string {
  return `pid ${h.pid} on ${h.host} (execution ${h.execution})`;
}

/** Field 22 of /proc/<pid>/stat, and whether the process is a zombie; null when it is gone. */
export async function readProcessStart(
  pid: number,
): Promise<{ startTime: number; zombie: boolean } | null> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch (e) {
    if (errnoOf(e) === "ENOENT" || errnoOf(e) === "ESRCH") return null;
    throw e;
  }
  // comm (field 2) is in parentheses and may hold spaces or ')'; fields 3.. follow the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const startTime = Number(fields[19]);
  if (!Number.isSafeInteger(startTime)) throw new Error(`unparsable /proc/${pid}/stat`);
  return { startTime, zombie: fields[0] === "Z" || fields[0] === "X" };
}

/**
 * A record's seat key (already an object) and session key as read from a file, checked as
 * checkKeys checks them; a string says what is wrong.
 */
export function parseKeys(
  seatKey: Record<string, unknown>,
  sessionKey: unknown,
): { seatKey: SeatKey; sessionKey: string } | string {
  const { projectRoot, seat } = seatKey;
  if (typeof projectRoot !== "string" || typeof seat !== "string") return "bad seatKey";
  if (typeof sessionKey !== "string") return "bad sessionKey";
  try {
    checkKeys({ projectRoot, seat }, sessionKey);
  } catch (e) {
    return e instanceof Error ? e.message : "bad keys";
  }
  return { seatKey: { projectRoot, seat }, sessionKey };
}

export function checkKeys(seatKey: SeatKey, sessionKey: string): void {
  const { projectRoot, seat } = seatKey;
  if (!isAbsolute(projectRoot) || resolve(projectRoot) !== projectRoot) {
    throw new ControlRefusal("configuration", "The seat key's project root must be absolute.");
  }
  if (!/^[^/\0]{1,255}$/.test(seat) || seat === "." || seat === "..") {
    throw new ControlRefusal("configuration", "The seat key's seat must be one directory name.");
  }
  if (!ID_PATTERN.test(sessionKey)) {
    throw new ControlRefusal("configuration", "The session key (header id) is not a CHAT-01 id.");
  }
}

export function seatDigest(seatKey: SeatKey): string {
  return createHash("sha256")
    .update(JSON.stringify([seatKey.projectRoot, seatKey.seat]))
    .digest("hex");
}

// ---- parsing a revision from unknown ----

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj =>
  typeof v === "object" && v !== null && !Array.isArray(v);
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
export const exactKeys = (o: Obj, keys: string[]): boolean =>
  Object.keys(o).length === keys.length && keys.every((k) => Object.hasOwn(o, k));
export const HOLDER_KEYS = "host bootId pidNamespace pid startTime execution incarnation".split(
  " ",
);

export function parseHolder(v: unknown): ClaimHolder | string {
  if (!isObj(v) || !exactKeys(v, HOLDER_KEYS)) return "not a holder object";
  const { host, bootId, pidNamespace, pid, startTime, execution, incarnation } = v;
  if (typeof host !== "string" || host.length === 0 || host.length > 255) return "bad host";
  if (typeof bootId !== "string" || !/^[0-9a-f-]{1,64}$/.test(bootId)) return "bad bootId";
  if (typeof pidNamespace !== "string" || pidNamespace.length === 0 || pidNamespace.length > 64) {
    return "bad pidNamespace";
  }
  if (!isCount(pid) || pid === 0 || !isCount(startTime)) return "bad pid or startTime";
  if (typeof execution !== "string" || !ID_PATTERN.test(execution)) return "bad execution";
  if (typeof incarnation !== "string" || !ID_PATTERN.test(incarnation)) return "bad incarnation";
  return { host, bootId, pidNamespace, pid, startTime, execution, incarnation };
}

export const REVISION_KEYS =
  "version kind key revision previous seatKey sessionKey state holder writer at reason proof".split(
    " ",
  );

/** Parses revision `n` of a `key` directory; a string says what is wrong with it. */
export function parseRevision(v: unknown, key: KeyKind, n: number): ClaimRevision | string {
  if (!isObj(v) || !exactKeys(v, REVISION_KEYS)) return "not a claim revision object";
  if (v.version !== 2 || v.kind !== "claim-revision") return "not a version 2 claim revision";
  if (v.key !== key) return `key is ${String(v.key)} in a ${key} directory`;
  if (v.revision !== n) return `revision ${String(v.revision)} in file ${nameOf(n)}`;
  if (v.previous !== (n > 1 ? n - 1 : null)) return "previous is not the revision before";
  if (!isObj(v.seatKey) || !exactKeys(v.seatKey, ["projectRoot", "seat"])) return "bad seatKey";
  const keys = parseKeys(v.seatKey, v.sessionKey);
  if (typeof keys === "string") return keys;
  const { state, at, reason, proof } = v;
  const known = CLAIM_STATES as readonly unknown[];
  if (!known.includes(state)) return "bad state";
  const holder = parseHolder(v.holder);
  if (typeof holder === "string") return `holder: ${holder}`;
  const writer = parseHolder(v.writer);
  if (typeof writer === "string") return `writer: ${writer}`;
  if (typeof at !== "string" || !DATE_TIME.test(at)) return "bad at";
  if (typeof reason !== "string" || !KEBAB.test(reason)) return "bad reason";
  const proven = state === "stopped-proven";
  if (proven ? typeof proof !== "string" || !DIGEST.test(proof) : proof !== null) {
    return "proof must be a SHA-256 exactly when the state is stopped-proven";
  }
  const record = { ...keys, holder, writer };
  return revisionOf(
    record,
    key,
    n,
    state as ClaimState,
    reason,
    proven ? (proof as string) : null,
    at,
  );
}

export type ClaimKeys = {
  seatKey: SeatKey;
  sessionKey: string;
  holder: ClaimHolder;
  writer: ClaimHolder;
};

/** A revision with its fields in the documented order. */
export function revisionOf(
  c: ClaimKeys,
  key: KeyKind,
  n: number,
  state: ClaimState,
  reason: string,
  proof: string | null,
  at = new Date().toISOString(),
): ClaimRevision {
  const { seatKey, sessionKey, holder, writer } = c;
  const previous = n > 1 ? n - 1 : null;
  return {
    version: 2,
    kind: "claim-revision",
    key,
    revision: n,
    previous,
    seatKey,
    sessionKey,
    state,
    holder,
    writer,
    at,
    reason,
    proof,
  };
}
