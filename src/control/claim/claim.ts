// The writer claim: one writer per session across processes and crashes (seed: Session key,
// Recovery; issue 5 item 5). Each claim key (seat, session) is a directory of append-only
// revisions `r<10 digits>.json`, each committed by an exclusive link(2), so two writers never
// both win a revision. Never overwrites, renames or deletes a revision; one it cannot parse
// refuses `unsafe-replacement`. docs/claim.md holds the format and the state machine.

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { link, open, readdir, readFile, readlink, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, isAbsolute, join, resolve } from "node:path";
import { checkPrivateFolder, ensurePrivateFolder } from "../../fs/private-folder.ts";
import { ControlRefusal } from "../refusal.ts";
import { controlPlace, ensurePrivateDir, refuseUnless } from "../registry/private-dirs.ts";
import {
  ACQUIRE_ATTEMPTS,
  type Assessment,
  type Claim,
  type ClaimHolder,
  type ClaimInspection,
  type ClaimRevision,
  type ClaimState,
  type ClaimStoreOptions,
  type ClaimVerdict,
  checkKeys,
  DIGEST,
  ENDED,
  errnoOf,
  KEBAB,
  type KeyKind,
  type Liveness,
  MAX_REVISION,
  MAX_REVISION_BYTES,
  type Machine,
  NEXT,
  nameHolder,
  nameOf,
  parseHolder,
  parseRevision,
  REVISION_NAME,
  readProcessStart,
  revisionOf,
  type SeatKey,
  sameHolder,
  seatDigest,
} from "./claim-record.ts";

export * from "./claim-record.ts";

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
      const words = controlPlace(`the ${key} claim folder`);
      const check = create ? ensurePrivateFolder(path, words) : checkPrivateFolder(path, words);
      if (!check.ok && check.problem.code === "missing" && !create) return null;
      refuseUnless(check);
    }
    return dir;
  }

  /** Creates the root 0700 if absent; refuses `configuration` unless it is ours and private. */
  async #checkRoot(): Promise<void> {
    ensurePrivateDir(this.root, controlPlace("the claim root"));
  }
}
