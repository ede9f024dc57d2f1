// The writer claim: one writer per session across processes and crashes (seed: Session key,
// Recovery; issue 5 item 5). Each claim key (seat, session) is a directory of append-only
// revisions `r<10 digits>.json`, each committed by an exclusive link(2), so two writers never
// both win a revision. Never overwrites, renames or deletes a revision; one it cannot parse
// refuses `unsafe-replacement`. docs/claim.md holds the format and the state machine.

import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { link, lstat, mkdir, open, readdir, readFile, readlink, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, isAbsolute, join, resolve } from "node:path";
import { ID_PATTERN } from "../protocol/chat-01.ts";
import { ControlRefusal } from "./refusal.ts";

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

type Liveness = { status: "alive" | "dead" | "foreign"; why: string };
type Assessment = {
  latest: ClaimRevision | null;
  block: Omit<ClaimInspection, "session" | "seat">;
  /** The reason code an acquire records on this key when the verdict is free. */
  reason: string;
};

const REVISION_NAME = /^r(\d{10})\.json$/;
const MAX_REVISION = 9_999_999_999;
const MAX_REVISION_BYTES = 64 * 1024;
const ACQUIRE_ATTEMPTS = 5;
const KEBAB = /^[a-z][a-z0-9-]{0,63}$/;
const DIGEST = /^[0-9a-f]{64}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const ENDED: readonly ClaimState[] = ["stopped-proven", "released"];
const NEXT: Record<ClaimState, readonly ClaimState[]> = {
  held: ["stopping", "uncertain", "stopped-proven", "released"],
  stopping: ["uncertain", "stopped-proven", "released"],
  uncertain: ["stopping", "uncertain", "stopped-proven"],
  "stopped-proven": [],
  released: [],
};

function errnoOf(e: unknown): string | undefined {
  return e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

function nameOf(n: number): string {
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

function nameHolder(h: ClaimHolder): string {
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

function checkKeys(seatKey: SeatKey, sessionKey: string): void {
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

function seatDigest(seatKey: SeatKey): string {
  return createHash("sha256")
    .update(JSON.stringify([seatKey.projectRoot, seatKey.seat]))
    .digest("hex");
}

// ---- parsing a revision from unknown ----

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const exactKeys = (o: Obj, keys: string[]): boolean =>
  Object.keys(o).length === keys.length && keys.every((k) => Object.hasOwn(o, k));
const HOLDER_KEYS = "host bootId pidNamespace pid startTime execution incarnation".split(" ");

function parseHolder(v: unknown): ClaimHolder | string {
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

const REVISION_KEYS =
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
  const seatKey = v.seatKey;
  if (!isObj(seatKey) || !exactKeys(seatKey, ["projectRoot", "seat"])) return "bad seatKey";
  const { projectRoot, seat } = seatKey;
  const { sessionKey, state, at, reason, proof } = v;
  if (typeof projectRoot !== "string" || typeof seat !== "string") return "bad seatKey";
  if (typeof sessionKey !== "string") return "bad sessionKey";
  try {
    checkKeys({ projectRoot, seat }, sessionKey);
  } catch (e) {
    return e instanceof Error ? e.message : "bad keys";
  }
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
  const record = { seatKey: { projectRoot, seat }, sessionKey, holder, writer };
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

type ClaimKeys = { seatKey: SeatKey; sessionKey: string; holder: ClaimHolder; writer: ClaimHolder };

/** A revision with its fields in the documented order. */
function revisionOf(
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

// ---- the store ----

/** A directory of writer claims. See docs/claim.md. */
export class ClaimStore {
  readonly root: string;
  readonly #override: Partial<Machine>;
  readonly #afterWrite: ((revision: ClaimRevision) => void) | undefined;
  #machine: Machine | undefined;

  /** Refuses `configuration` when the root is not an absolute, normalized path. */
  constructor(options: ClaimStoreOptions) {
    if (!isAbsolute(options.root) || resolve(options.root) !== options.root) {
      throw new ControlRefusal("configuration", "The claim root must be an absolute path.");
    }
    this.root = options.root;
    this.#override = options.machine ?? {};
    this.#afterWrite = options.afterWrite;
  }

  /** This machine's identity; read once from /proc. */
  async machine(): Promise<Machine> {
    this.#machine ??= {
      host: this.#override.host ?? hostname(),
      bootId:
        this.#override.bootId ?? (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim(),
      pidNamespace: this.#override.pidNamespace ?? (await readlink("/proc/self/ns/pid")),
    };
    return this.#machine;
  }

  /** The holder identity of `pid` (default: this process) on this machine. */
  async holderFor(options: {
    execution: string;
    incarnation: string;
    pid?: number;
  }): Promise<ClaimHolder> {
    const pid = options.pid ?? process.pid;
    const proc = await readProcessStart(pid);
    if (!proc) throw new ControlRefusal("configuration", `No process ${pid} to hold a claim.`);
    const holder = parseHolder({
      ...(await this.machine()),
      pid,
      startTime: proc.startTime,
      execution: options.execution,
      incarnation: options.incarnation,
    });
    if (typeof holder === "string") throw new ControlRefusal("configuration", holder);
    return holder;
  }

  /**
   * Takes the claim on both keys for `holder`, session key first. Refuses `already-active`
   * (a live holder, on either key), `foreign-host` (a holder on another host or pid
   * namespace), `unsafe-replacement` (a dead holder without a recorded stop, or a revision
   * that does not parse), `eligibility` (`expect` given and the latest revisions differ) and
   * `configuration` (bad keys or root, or a holder not of this machine).
   */
  async acquire(request: {
    seatKey: SeatKey;
    sessionKey: string;
    holder: ClaimHolder;
    expect?: { session: number | null; seat: number | null };
  }): Promise<Claim> {
    const { seatKey, sessionKey, holder, expect } = request;
    checkKeys(seatKey, sessionKey);
    const problem = parseHolder(holder);
    if (typeof problem === "string") throw new ControlRefusal("configuration", problem);
    const m = await this.machine();
    if (
      holder.host !== m.host ||
      holder.bootId !== m.bootId ||
      holder.pidNamespace !== m.pidNamespace
    ) {
      throw new ControlRefusal("configuration", "A claim is taken only for this machine's boot.");
    }
    await this.#checkRoot();
    const sessionDir = await this.#createKeyDir("session", sessionKey, seatKey);
    const seatDir = await this.#createKeyDir("seat", sessionKey, seatKey);
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      const session = await this.#assess("session", sessionDir, holder);
      const seat = await this.#assess("seat", seatDir, holder);
      for (const a of [session, seat]) {
        if (a.block.verdict !== "free") throw new ControlRefusal(a.block.verdict, a.block.why);
      }
      const latest = {
        session: session.latest?.revision ?? null,
        seat: seat.latest?.revision ?? null,
      };
      if (expect && (expect.session !== latest.session || expect.seat !== latest.seat)) {
        throw new ControlRefusal("eligibility", "The claim changed since it was reserved.");
      }
      const c = { seatKey, sessionKey, holder, writer: holder };
      const n = (latest.session ?? 0) + 1;
      const s = await this.#write(
        sessionDir,
        revisionOf(c, "session", n, "held", session.reason, null),
      );
      if (s === null) continue;
      const k = (latest.seat ?? 0) + 1;
      const t = await this.#write(seatDir, revisionOf(c, "seat", k, "held", seat.reason, null));
      if (t !== null)
        return { seatKey, sessionKey, holder, state: "held", revisions: { session: s, seat: t } };
      // Lost the seat: give the session key back before anyone judges this half-claim.
      const back = revisionOf(c, "session", s + 1, "released", "acquire-lost", null);
      if ((await this.#write(sessionDir, back)) === null) {
        throw new ControlRefusal("already-active", "The session key moved during acquire.");
      }
    }
    throw new ControlRefusal("already-active", "The claim keeps changing; another writer races.");
  }

  /** What holds the keys now, and whether `acquire` would succeed. Refuses like `acquire`. */
  async inspect(keys: { seatKey: SeatKey; sessionKey: string }): Promise<ClaimInspection> {
    checkKeys(keys.seatKey, keys.sessionKey);
    await this.#checkRoot();
    const session = await this.#assess(
      "session",
      await this.#keyDir("session", keys.sessionKey, keys.seatKey, false),
      null,
    );
    const seat = await this.#assess(
      "seat",
      await this.#keyDir("seat", keys.sessionKey, keys.seatKey, false),
      null,
    );
    const block = session.block.verdict !== "free" ? session.block : seat.block;
    return { ...block, session: session.latest, seat: seat.latest };
  }

  /**
   * The live holder gives the claim up: its engine and everything it started are gone (or never
   * ran). An uncertain claim refuses `stop-proof`: only a proof ends it.
   */
  release(claim: Claim, reason: string): Promise<Claim> {
    return this.#advance(claim, "released", reason, null, claim.holder);
  }

  /**
   * A stop of the holder's engine has begun. This, `markUncertain` and `release` are the live
   * holder's own statements: a dead holder's claim refuses `stop-proof`, a foreign one
   * `foreign-host`, a stale handle `already-active`.
   */
  markStopping(claim: Claim, reason = "stopping"): Promise<Claim> {
    return this.#advance(claim, "stopping", reason, null, claim.holder);
  }

  /** A stop ended without proof: the engine may still run. Only a proven stop ends this. */
  markUncertain(claim: Claim, reason: string): Promise<Claim> {
    return this.#advance(claim, "uncertain", reason, null, claim.holder);
  }

  /**
   * Records that the claim's engine is proven stopped (`proofDigest`: SHA-256 of the proof).
   * `writer` defaults to the holder; another writer (a recovery) may write only while the
   * holder is dead: a live holder refuses `already-active`, one on another host `foreign-host`.
   */
  recordProvenStop(
    claim: Claim,
    proofDigest: string,
    options: { writer?: ClaimHolder; reason?: string } = {},
  ): Promise<Claim> {
    if (!DIGEST.test(proofDigest)) throw new Error("proofDigest must be 64 lowercase hex digits");
    const writer = parseHolder(options.writer ?? claim.holder);
    if (typeof writer === "string") throw new ControlRefusal("configuration", `writer: ${writer}`);
    return this.#advance(
      claim,
      "stopped-proven",
      options.reason ?? "stop-proven",
      proofDigest,
      writer,
    );
  }

  async #advance(
    claim: Claim,
    to: ClaimState,
    reason: string,
    proof: string | null,
    writer: ClaimHolder,
  ): Promise<Claim> {
    if (!KEBAB.test(reason)) throw new Error(`reason must be a kebab-case code: ${reason}`);
    if (!NEXT[claim.state].includes(to)) {
      if (claim.state === "uncertain" && to === "released") {
        throw new ControlRefusal("stop-proof", "An uncertain claim ends only with a proven stop.");
      }
      throw new Error(`claim state ${claim.state} cannot become ${to}`);
    }
    await this.#checkRoot();
    // The holder speaks for itself while it lives; once dead, its claim ends only by a proof
    // that another writer (a recovery) records.
    const life = await this.#liveness(claim.holder);
    if (life.status === "foreign") throw new ControlRefusal("foreign-host", life.why);
    const own = sameHolder(writer, claim.holder);
    if (own && life.status === "dead") {
      throw new ControlRefusal("stop-proof", `The holder died (${life.why}); prove its stop.`);
    }
    if (!own && life.status === "alive") {
      throw new ControlRefusal("already-active", `The holder is alive: ${life.why}.`);
    }
    const keys = (["session", "seat"] as const).filter((k) => claim.revisions[k] !== null);
    const dirs: Partial<Record<KeyKind, string>> = {};
    for (const key of keys) {
      const dir = await this.#keyDir(key, claim.sessionKey, claim.seatKey, false);
      if (dir === null) {
        throw new ControlRefusal("unsafe-replacement", `The ${key} claim's directory is gone.`);
      }
      const mine = claim.revisions[key];
      const latest = await this.#readLatest(key, dir);
      if (latest?.revision !== mine || !sameHolder(latest.holder, claim.holder)) {
        throw new ControlRefusal("already-active", `The ${key} claim was superseded.`);
      }
      if (latest.state !== claim.state) {
        throw new ControlRefusal("already-active", `The ${key} claim is ${latest.state} now.`);
      }
      dirs[key] = dir;
    }
    const next = { ...claim.revisions };
    for (const key of keys) {
      const dir = dirs[key];
      const mine = next[key];
      if (dir === undefined || mine === null) continue;
      const c = {
        seatKey: claim.seatKey,
        sessionKey: claim.sessionKey,
        holder: claim.holder,
        writer,
      };
      const won = await this.#write(dir, revisionOf(c, key, mine + 1, to, reason, proof));
      if (won === null) {
        throw new ControlRefusal("already-active", `The ${key} claim was superseded.`);
      }
      next[key] = won;
    }
    return { ...claim, state: to, revisions: next };
  }

  /** Judges the latest revision of one key for a claimer (null: just looking). */
  async #assess(
    key: KeyKind,
    dir: string | null,
    claimer: ClaimHolder | null,
  ): Promise<Assessment> {
    const latest = dir === null ? null : await this.#readLatest(key, dir);
    const free = (reason: string, why: string): Assessment => ({
      latest,
      block: { verdict: "free", why, blocking: null },
      reason,
    });
    if (latest === null) return free("acquired", `The ${key} key has never been claimed.`);
    if (ENDED.includes(latest.state)) {
      return free(
        "acquired",
        `The ${key} claim was ${latest.state} at revision ${latest.revision}.`,
      );
    }
    const h = latest.holder;
    const other: KeyKind = key === "session" ? "seat" : "session";
    const otherDir = await this.#keyDir(other, latest.sessionKey, latest.seatKey, false);
    const own = otherDir === null ? null : await this.#latestBy(other, otherDir, h);
    const blocking: Claim = {
      seatKey: latest.seatKey,
      sessionKey: latest.sessionKey,
      holder: h,
      state: latest.state,
      revisions: {
        [key]: latest.revision,
        [other]:
          own?.isLatest && own.revision.state === latest.state ? own.revision.revision : null,
      } as Claim["revisions"],
    };
    const refuse = (verdict: ClaimVerdict, why: string): Assessment => ({
      latest,
      block: { verdict, why, blocking },
      reason: verdict,
    });
    if (claimer && sameHolder(claimer, h)) {
      return refuse("already-active", `This holder already has the ${key} claim.`);
    }
    const life = await this.#liveness(h);
    if (life.status === "foreign")
      return refuse("foreign-host", `The ${key} claim is ${life.why}.`);
    if (life.status === "alive") {
      return refuse("already-active", `The ${key} claim is held by ${nameHolder(h)}.`);
    }
    if (own && ENDED.includes(own.revision.state)) {
      const r = own.revision;
      return free("acquired-ended", `Its holder died after its ${other} claim was ${r.state}.`);
    }
    // The acquire writes the session key, then the seat key, and the engine launches only
    // after both: a dead holder that never wrote its other key never launched an engine.
    if (own === null && latest.state === "held") {
      return free("acquired-abandoned", `Its holder died (${life.why}) before its acquire ended.`);
    }
    return refuse(
      "unsafe-replacement",
      `The ${key} claim's holder died (${life.why}) while ${latest.state}, with no proven stop; its engine may still run.`,
    );
  }

  async #liveness(h: ClaimHolder): Promise<Liveness> {
    const m = await this.machine();
    if (h.host !== m.host) return { status: "foreign", why: `held on host ${h.host}` };
    if (h.bootId !== m.bootId) return { status: "dead", why: "the machine rebooted" };
    if (h.pidNamespace !== m.pidNamespace) {
      return { status: "foreign", why: `held in pid namespace ${h.pidNamespace}` };
    }
    let proc: Awaited<ReturnType<typeof readProcessStart>>;
    try {
      proc = await readProcessStart(h.pid);
    } catch (e) {
      throw new ControlRefusal("unsafe-replacement", `Cannot tell if pid ${h.pid} lives: ${e}`);
    }
    if (proc === null) return { status: "dead", why: `no process ${h.pid}` };
    if (proc.startTime !== h.startTime) return { status: "dead", why: `pid ${h.pid} was reused` };
    if (proc.zombie) return { status: "dead", why: `pid ${h.pid} exited` };
    return { status: "alive", why: nameHolder(h) };
  }

  /** The newest revision on a key whose holder is `h`, scanning back; null if none. */
  async #latestBy(
    key: KeyKind,
    dir: string,
    h: ClaimHolder,
  ): Promise<{ revision: ClaimRevision; isLatest: boolean } | null> {
    const top = await this.#latestNumber(dir);
    for (let n = top; n >= 1; n--) {
      const revision = await this.#read(key, dir, n);
      if (sameHolder(revision.holder, h)) return { revision, isLatest: n === top };
    }
    return null;
  }

  async #readLatest(key: KeyKind, dir: string): Promise<ClaimRevision | null> {
    const n = await this.#latestNumber(dir);
    return n === 0 ? null : this.#read(key, dir, n);
  }

  async #latestNumber(dir: string): Promise<number> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (e) {
      if (errnoOf(e) === "ENOENT") return 0;
      throw e;
    }
    let top = 0;
    for (const name of names) {
      const n = Number(REVISION_NAME.exec(name)?.[1] ?? 0);
      if (n > top) top = n;
    }
    return top;
  }

  /** Reads revision n without following a link; anything unreadable refuses. */
  async #read(key: KeyKind, dir: string, n: number): Promise<ClaimRevision> {
    const path = join(dir, nameOf(n));
    const bad = (why: string): ControlRefusal =>
      new ControlRefusal(
        "unsafe-replacement",
        `Claim revision ${path} is unusable (${why}); it is left as is.`,
      );
    let text: string;
    try {
      const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      try {
        const st = await fh.stat();
        if (!st.isFile()) throw bad("not a regular file");
        if (st.size > MAX_REVISION_BYTES) throw bad("too large");
        text = await fh.readFile("utf8");
      } finally {
        await fh.close();
      }
    } catch (e) {
      if (e instanceof ControlRefusal) throw e;
      throw bad(errnoOf(e) ?? String(e));
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw bad("not JSON");
    }
    const revision = parseRevision(value, key, n);
    if (typeof revision === "string") throw bad(revision);
    const dirName = basename(dir);
    const expected = key === "session" ? revision.sessionKey : seatDigest(revision.seatKey);
    if (dirName !== expected) throw bad(`its ${key} key does not name this directory`);
    return revision;
  }

  /** Commits revision n exclusively; returns n, or null when another writer has it. */
  async #write(dir: string, revision: ClaimRevision): Promise<number | null> {
    const n = revision.revision;
    if (n > MAX_REVISION) throw new Error(`claim revisions exhausted in ${dir}`);
    const temp = join(dir, `.tmp-${nameOf(n)}-${process.pid}-${randomBytes(6).toString("hex")}`);
    const fh = await open(temp, "wx", 0o600);
    try {
      await fh.writeFile(`${JSON.stringify(revision, null, 2)}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    let won = true;
    try {
      await link(temp, join(dir, nameOf(n)));
    } catch (e) {
      if (errnoOf(e) !== "EEXIST") throw e;
      won = false;
    } finally {
      await unlink(temp);
    }
    if (!won) return null;
    const dh = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
    this.#afterWrite?.(revision);
    return n;
  }

  async #createKeyDir(key: KeyKind, sessionKey: string, seatKey: SeatKey): Promise<string> {
    const dir = await this.#keyDir(key, sessionKey, seatKey, true);
    if (dir === null) throw new Error(`${key} claim directory vanished while created`);
    return dir;
  }

  /** The directory of one key; created when `create`, else null when absent. */
  async #keyDir(
    key: KeyKind,
    sessionKey: string,
    seatKey: SeatKey,
    create: boolean,
  ): Promise<string | null> {
    const parent = join(this.root, key);
    const dir = join(parent, key === "session" ? sessionKey : seatDigest(seatKey));
    for (const path of [parent, dir]) {
      if (create) {
        try {
          await mkdir(path, { mode: 0o700 });
        } catch (e) {
          if (errnoOf(e) !== "EEXIST") throw e;
        }
      }
      try {
        const st = await lstat(path);
        if (!st.isDirectory()) {
          throw new ControlRefusal("configuration", `${path} is not a directory.`);
        }
      } catch (e) {
        if (errnoOf(e) === "ENOENT" && !create) return null;
        throw e;
      }
    }
    return dir;
  }

  /** Creates the root 0700 if absent; refuses `configuration` unless it is ours and private. */
  async #checkRoot(): Promise<void> {
    try {
      await mkdir(this.root, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw new ControlRefusal(
        "configuration",
        `Cannot create the claim root: ${errnoOf(e) ?? e}.`,
      );
    }
    const st = await lstat(this.root);
    if (!st.isDirectory()) {
      throw new ControlRefusal("configuration", "The claim root is not a directory (or a link).");
    }
    if (st.uid !== process.getuid?.()) {
      throw new ControlRefusal("configuration", `The claim root is owned by uid ${st.uid}.`);
    }
    if ((st.mode & 0o077) !== 0) {
      throw new ControlRefusal(
        "configuration",
        `The claim root's mode is ${(st.mode & 0o777).toString(8)}; it must be 700.`,
      );
    }
  }
}
