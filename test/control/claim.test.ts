import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  type Claim,
  type ClaimHolder,
  ClaimStore,
  type ClaimStoreOptions,
  readProcessStart,
  type SeatKey,
} from "../../src/control/claim/claim.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { assertValid } from "../helpers/schema.ts";
import type { ChildArgs, ChildEvent } from "./claim-child.ts";

const CHILD = new URL("./claim-child.ts", import.meta.url).pathname;
const PROOF = createHash("sha256").update("cohort empty").digest("hex");
const SESSION = "3f2a9c1e-0d4b-4c2a-9f1e-5b1c0d2e3f4a";

type Child = {
  proc: ChildProcessWithoutNullStreams;
  next: () => Promise<ChildEvent>;
  send: (line: string) => void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

type Fixture = {
  root: string;
  store: ClaimStore;
  seat: SeatKey;
  storeWith: (options: Omit<ClaimStoreOptions, "root">) => ClaimStore;
  holder: (execution: string, store?: ClaimStore) => Promise<ClaimHolder>;
  spawnChild: (args: Omit<ChildArgs, "root">) => Child;
  /** Files a test corrupts on purpose; the schema check skips them. */
  corrupt: Set<string>;
};

function withDeadline<T>(p: Promise<T>, what: string, ms = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`deadline: ${what} after ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function revisionFiles(root: string): string[] {
  const out: string[] = [];
  for (const kind of ["session", "seat"]) {
    const base = join(root, kind);
    let keys: string[] = [];
    try {
      keys = readdirSync(base);
    } catch {
      // No claim was ever written under this kind: nothing to check.
    }
    for (const key of keys) {
      for (const name of readdirSync(join(base, key))) out.push(join(base, key, name));
    }
  }
  return out;
}

async function fixture(t: TestContext): Promise<Fixture> {
  const base = mkdtempSync(join(tmpdir(), "claim-"));
  const root = join(base, "claims");
  const children: Child[] = [];
  const corrupt = new Set<string>();
  t.after(async () => {
    try {
      for (const c of children) c.proc.kill("SIGKILL");
      await withDeadline(Promise.all(children.map((c) => c.exited)), "children exit");
      for (const file of revisionFiles(root)) {
        if (corrupt.has(file)) continue;
        assert.match(file, /\/r\d{10}\.json$/, "only revision files remain");
        assertValid("claimRevision", JSON.parse(readFileSync(file, "utf8")));
      }
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
  const storeWith = (options: Omit<ClaimStoreOptions, "root">) =>
    new ClaimStore({ root, ...options });
  const store = storeWith({});
  const spawnChild = (args: Omit<ChildArgs, "root">): Child => {
    const proc = spawn(process.execPath, [CHILD, JSON.stringify({ root, ...args })], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    const events: ChildEvent[] = [];
    const waiting: ((e: ChildEvent) => void)[] = [];
    let buffered = "";
    let stderr = "";
    proc.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    proc.stdout.setEncoding("utf8").on("data", (d: string) => {
      buffered += d;
      for (let i = buffered.indexOf("\n"); i >= 0; i = buffered.indexOf("\n")) {
        const event = JSON.parse(buffered.slice(0, i)) as ChildEvent;
        buffered = buffered.slice(i + 1);
        const w = waiting.shift();
        if (w) w(event);
        else events.push(event);
      }
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      proc.on("close", (code, signal) => resolve({ code, signal })),
    );
    const next = () => {
      const ready = events.shift();
      const event = ready
        ? Promise.resolve(ready)
        : new Promise<ChildEvent>((resolve, reject) => {
            waiting.push(resolve);
            void exited.then(({ code, signal }) =>
              reject(new Error(`child exited (${code ?? signal}) with no event: ${stderr}`)),
            );
          });
      return withDeadline(event, `event from child ${proc.pid}`);
    };
    const child: Child = { proc, next, send: (line) => proc.stdin.write(`${line}\n`), exited };
    children.push(child);
    return child;
  };
  return {
    root,
    store,
    seat: { projectRoot: join(base, "project"), seat: "main" },
    storeWith,
    holder: (execution, s = store) => s.holderFor({ execution, incarnation: "i1" }),
    spawnChild,
    corrupt,
  };
}

async function refusal(p: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isControlRefusal(e), `not a ControlRefusal: ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (message) assert.match(e.message, message);
    return true;
  });
}

function keyDir(root: string, kind: "session" | "seat", seat: SeatKey, session: string): string {
  const digest = createHash("sha256")
    .update(JSON.stringify([seat.projectRoot, seat.seat]))
    .digest("hex");
  return join(root, kind, kind === "session" ? session : digest);
}

function revisionsIn(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return []; // The key was never written.
  }
}

const otherSeat = (seat: SeatKey, name: string): SeatKey => ({ ...seat, seat: name });

describe("claim", () => {
  it("acquires and releases when the keys are free, in numbered private revisions", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("exec-a");
    const claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
    assert.deepEqual(claim.revisions, { session: 1, seat: 1 });
    assert.equal(claim.state, "held");
    const released = await f.store.release(claim, "engine-exited");
    assert.deepEqual(released.revisions, { session: 2, seat: 2 });
    const sessionDir = keyDir(f.root, "session", f.seat, SESSION);
    assert.deepEqual(revisionsIn(sessionDir), ["r0000000001.json", "r0000000002.json"]);
    assert.equal(statSync(f.root).mode & 0o777, 0o700);
    assert.equal(statSync(join(sessionDir, "r0000000002.json")).mode & 0o777, 0o600);
    const second = JSON.parse(readFileSync(join(sessionDir, "r0000000002.json"), "utf8"));
    assert.equal(second.state, "released");
    assert.equal(second.previous, 1);
    assert.equal(second.reason, "engine-exited");
    const b = await f.holder("exec-b");
    const again = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: b });
    assert.deepEqual(again.revisions, { session: 3, seat: 3 });
  });

  it("refuses already-active when a live holder has the claim", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("exec-a");
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
    const b = await f.holder("exec-b");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: b }),
      "already-active",
    );
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a }),
      "already-active",
      /already has/,
    );
    const view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.equal(view.verdict, "already-active");
    assert.equal(view.blocking?.holder.execution, "exec-a");
  });

  it("refuses already-active when the same header id is claimed under another seat (W4)", async (t) => {
    const f = await fixture(t);
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: await f.holder("a") });
    const copy = otherSeat(f.seat, "copy");
    await refusal(
      f.store.acquire({ seatKey: copy, sessionKey: SESSION, holder: await f.holder("b") }),
      "already-active",
      /session claim/,
    );
    assert.deepEqual(revisionsIn(keyDir(f.root, "seat", copy, SESSION)), []);
  });

  it("refuses already-active for another session on a held seat, writing nothing", async (t) => {
    const f = await fixture(t);
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: await f.holder("a") });
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: "other-1", holder: await f.holder("b") }),
      "already-active",
      /seat claim/,
    );
    assert.deepEqual(revisionsIn(keyDir(f.root, "session", f.seat, "other-1")), []);
  });

  it("lets exactly one of 8 claimers in separate processes win when they race", async (t) => {
    const f = await fixture(t);
    const rounds: {
      name: string;
      keys: (i: number) => { seatKey: SeatKey; sessionKey: string };
    }[] = [
      { name: "same keys", keys: () => ({ seatKey: f.seat, sessionKey: "race-1" }) },
      {
        name: "one header id under 8 seats",
        keys: (i) => ({ seatKey: otherSeat(f.seat, `seat-${i}`), sessionKey: "race-2" }),
      },
      {
        name: "8 sessions on one seat",
        keys: (i) => ({ seatKey: otherSeat(f.seat, "shared"), sessionKey: `race-3-${i}` }),
      },
      { name: "same keys again", keys: () => ({ seatKey: f.seat, sessionKey: "race-1" }) },
    ];
    for (const round of rounds) {
      const children = Array.from({ length: 8 }, (_, i) =>
        f.spawnChild({ mode: "race", ...round.keys(i), execution: `race-${i}` }),
      );
      for (const c of children) assert.equal((await c.next()).event, "ready");
      for (const c of children) c.send("go");
      const results = await Promise.all(children.map((c) => c.next()));
      const winners = children.filter((_, i) => results[i]?.event === "acquired");
      assert.equal(winners.length, 1, `${round.name}: ${JSON.stringify(results)}`);
      for (const r of results) {
        if (r.event === "refused") assert.equal(r.code, "already-active", r.message);
        else assert.equal(r.event, "acquired");
      }
      const winner = winners[0]!;
      winner.send("release");
      assert.equal((await winner.next()).event, "released");
      const exits = await withDeadline(Promise.all(children.map((c) => c.exited)), "round exit");
      assert.ok(exits.every((e) => e.code === 0));
      // Every key this round touched ended released: no half claim survives a lost race.
      for (let i = 0; i < 8; i++) {
        const view = await f.store.inspect(round.keys(i));
        assert.equal(view.verdict, "free", `${round.name} ${i}: ${view.why}`);
        for (const latest of [view.session, view.seat]) {
          if (latest) assert.equal(latest.state, "released");
        }
      }
    }
    const lost = revisionFiles(f.root).filter((file) =>
      readFileSync(file, "utf8").includes("acquire-lost"),
    );
    t.diagnostic(`${lost.length} session claims given back after losing the seat race`);
  });

  it("refuses unsafe-replacement after a SIGKILLed holder until a proven stop is recorded", async (t) => {
    const f = await fixture(t);
    const child = f.spawnChild({
      mode: "hold",
      seatKey: f.seat,
      sessionKey: SESSION,
      execution: "x",
    });
    const held = await child.next();
    assert.equal(held.event, "acquired");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: await f.holder("me") }),
      "already-active",
    );
    child.proc.kill("SIGKILL");
    assert.equal((await withDeadline(child.exited, "killed child")).signal, "SIGKILL");
    const me = await f.holder("recovery");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me }),
      "unsafe-replacement",
      new RegExp(`died \\((no process|pid) ${child.proc.pid}`),
    );
    const view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.equal(view.verdict, "unsafe-replacement");
    const blocking = view.blocking;
    assert.ok(blocking);
    assert.equal(blocking.holder.pid, child.proc.pid);
    assert.deepEqual(blocking.revisions, { session: 1, seat: 1 });
    // Nobody speaks for a dead holder but a proof: not a release, not a stopping mark.
    await refusal(f.store.release(blocking, "engine-exited"), "stop-proof", /died/);
    await refusal(f.store.markStopping(blocking), "stop-proof", /died/);
    const stopped = await f.store.recordProvenStop(blocking, PROOF, { writer: me });
    assert.equal(stopped.state, "stopped-proven");
    const latest = (await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION })).session;
    assert.equal(latest?.writer.execution, "recovery");
    assert.equal(latest?.holder.pid, child.proc.pid);
    assert.equal(latest?.proof, PROOF);
    const claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me });
    assert.deepEqual(claim.revisions, { session: 3, seat: 3 });
  });

  it("refuses a proven stop from another writer while the holder lives", async (t) => {
    const f = await fixture(t);
    const claim = await f.store.acquire({
      seatKey: f.seat,
      sessionKey: SESSION,
      holder: await f.holder("a"),
    });
    await refusal(
      f.store.recordProvenStop(claim, PROOF, { writer: await f.holder("b") }),
      "already-active",
      /alive/,
    );
  });

  it("takes over a claim when its holder died before its acquire finished", async (t) => {
    const f = await fixture(t);
    const crash = f.spawnChild({
      mode: "crash",
      crashAfter: "session:held",
      seatKey: f.seat,
      sessionKey: SESSION,
      execution: "x",
    });
    assert.equal((await withDeadline(crash.exited, "crashing child")).signal, "SIGKILL");
    assert.deepEqual(revisionsIn(keyDir(f.root, "seat", f.seat, SESSION)), []);
    const me = await f.holder("me");
    const claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me });
    assert.deepEqual(claim.revisions, { session: 2, seat: 1 });
    const view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.equal(view.session?.reason, "acquired-abandoned");
    assert.equal(view.seat?.reason, "acquired");

    // Dying after both keys were written is a finished acquire: an engine may have started.
    const seat2 = otherSeat(f.seat, "two");
    const late = f.spawnChild({
      mode: "crash",
      crashAfter: "seat:held",
      seatKey: seat2,
      sessionKey: "late-1",
      execution: "y",
    });
    assert.equal((await withDeadline(late.exited, "crashing child")).signal, "SIGKILL");
    await refusal(
      f.store.acquire({ seatKey: seat2, sessionKey: "late-1", holder: me }),
      "unsafe-replacement",
    );
  });

  it("frees the claim when its dead holder's stop was recorded on only one key", async (t) => {
    const f = await fixture(t);
    const me = await f.holder("me");
    // The holder died between its two stopping revisions: the proof goes where it can.
    const child = f.spawnChild({
      mode: "crash",
      crashAfter: "session:stopping",
      seatKey: f.seat,
      sessionKey: SESSION,
      execution: "x",
    });
    assert.equal((await withDeadline(child.exited, "crashing child")).signal, "SIGKILL");
    let view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.equal(view.verdict, "unsafe-replacement");
    assert.deepEqual([view.session?.state, view.seat?.state], ["stopping", "held"]);
    assert.deepEqual(view.blocking?.revisions, { session: 2, seat: null });
    await f.store.recordProvenStop(view.blocking!, PROOF, { writer: me });
    view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.equal(view.verdict, "free", view.why);
    const claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me });
    view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.deepEqual([view.session?.reason, view.seat?.reason], ["acquired", "acquired-ended"]);
    await f.store.release(claim, "engine-exited");

    // The recovery died between its two proof revisions: the seat follows the session's proof.
    const held = f.spawnChild({
      mode: "hold",
      seatKey: f.seat,
      sessionKey: SESSION,
      execution: "y",
    });
    assert.equal((await held.next()).event, "acquired");
    held.proc.kill("SIGKILL");
    await withDeadline(held.exited, "killed child");
    const dying = f.storeWith({
      afterWrite: (r) => {
        if (r.key === "session" && r.state === "stopped-proven") throw new Error("crash");
      },
    });
    view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    await assert.rejects(dying.recordProvenStop(view.blocking!, PROOF, { writer: me }), /crash/);
    view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.deepEqual([view.session?.state, view.seat?.state], ["stopped-proven", "held"]);
    assert.equal(view.verdict, "free", view.why);
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me });
  });

  it("recognises a holder as dead when its pid is alive but was reused", async (t) => {
    const f = await fixture(t);
    const me = await f.holder("me");
    const self = await readProcessStart(process.pid);
    assert.equal(self?.startTime, me.startTime);
    const reused = { ...me, execution: "old", startTime: me.startTime + 1 };
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: reused });
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me }),
      "unsafe-replacement",
      new RegExp(`pid ${process.pid} was reused`),
    );
    // The same pid with its true start time is alive.
    const seat2 = otherSeat(f.seat, "two");
    await f.store.acquire({ seatKey: seat2, sessionKey: "s-2", holder: { ...me, execution: "x" } });
    await refusal(
      f.store.acquire({ seatKey: seat2, sessionKey: "s-2", holder: me }),
      "already-active",
    );
  });

  it("recognises a holder as dead when the machine rebooted since", async (t) => {
    const f = await fixture(t);
    const before = f.storeWith({ machine: { bootId: "0123abcd-0000-4000-8000-000000000000" } });
    const old = await f.holder("old", before);
    await before.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: old });
    const me = await f.holder("me");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me }),
      "unsafe-replacement",
      /rebooted/,
    );
    const view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    await f.store.recordProvenStop(view.blocking!, PROOF, { writer: me, reason: "boot-proof" });
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me });
  });

  it("refuses foreign-host when the holder is on another host or pid namespace", async (t) => {
    const f = await fixture(t);
    const elsewhere = f.storeWith({ machine: { host: "elsewhere" } });
    const remote = await f.holder("remote", elsewhere);
    await elsewhere.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: remote });
    const me = await f.holder("me");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: me }),
      "foreign-host",
      /elsewhere/,
    );
    const view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    assert.equal(view.verdict, "foreign-host");
    await refusal(f.store.recordProvenStop(view.blocking!, PROOF, { writer: me }), "foreign-host");

    const boxed = f.storeWith({ machine: { pidNamespace: "pid:[1]" } });
    const seat2 = otherSeat(f.seat, "two");
    await boxed.acquire({
      seatKey: seat2,
      sessionKey: "s-2",
      holder: await f.holder("box", boxed),
    });
    await refusal(
      f.store.acquire({ seatKey: seat2, sessionKey: "s-2", holder: me }),
      "foreign-host",
      /namespace/,
    );
  });

  it("refuses unsafe-replacement for a corrupt revision and leaves it untouched", async (t) => {
    const variants: [string, (path: string, good: string) => void][] = [
      ["truncated", (p, good) => writeFileSync(p, good.slice(0, 40))],
      ["empty", (p) => writeFileSync(p, "")],
      [
        "wrong number",
        (p, good) => writeFileSync(p, good.replace('"revision": 2', '"revision": 7')),
      ],
      ["unknown field", (p, good) => writeFileSync(p, good.replace("{", '{"extra": 1,'))],
      ["bad state", (p, good) => writeFileSync(p, good.replace('"released"', '"paused"'))],
      ["symlink", (p) => symlinkSync("/etc/hostname", p)],
      ["directory", (p) => mkdirSync(p)],
    ];
    for (const [name, damage] of variants) {
      await t.test(name, async (st) => {
        const f = await fixture(st);
        const a = await f.holder("a");
        const claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
        await f.store.release(claim, "engine-exited");
        const dir = keyDir(f.root, "session", f.seat, SESSION);
        const good = readFileSync(join(dir, "r0000000002.json"), "utf8");
        const bad = join(dir, "r0000000003.json");
        damage(bad, good);
        f.corrupt.add(bad);
        const before = revisionsIn(dir).map((n) => [n, statSync(join(dir, n)).ino]);
        const bytes = name === "directory" ? null : readFileSync(bad, "latin1");
        await refusal(
          f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a }),
          "unsafe-replacement",
          /r0000000003\.json is unusable/,
        );
        await refusal(
          f.store.inspect({ seatKey: f.seat, sessionKey: SESSION }),
          "unsafe-replacement",
        );
        assert.deepEqual(
          revisionsIn(dir).map((n) => [n, statSync(join(dir, n)).ino]),
          before,
        );
        if (bytes !== null) assert.equal(readFileSync(bad, "latin1"), bytes);
      });
    }
  });

  it("refuses configuration when the claim root is not private to this uid", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("a");
    const take = () => f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
    const claim = await take();
    for (const mode of [0o777, 0o750, 0o701]) {
      chmodSync(f.root, mode);
      await refusal(take(), "configuration", new RegExp(`mode ${mode.toString(8)}\\)`));
      await refusal(f.store.release(claim, "engine-exited"), "configuration");
    }
    chmodSync(f.root, 0o700);
    if (process.getuid?.() === 0) {
      chownSync(f.root, 65534, 65534);
      await refusal(take(), "configuration", /belongs to uid 65534/);
      chownSync(f.root, 0, 0);
    } else {
      t.diagnostic("not root: the other-owner case needs chown and is not run");
    }
    const linked = join(f.root, "..", "linked");
    symlinkSync(f.root, linked);
    await refusal(
      new ClaimStore({ root: linked }).inspect({ seatKey: f.seat, sessionKey: SESSION }),
      "configuration",
      /is a symbolic link/,
    );
    assert.throws(() => new ClaimStore({ root: "claims" }), isControlRefusal);
    await f.store.release(claim, "engine-exited");
  });

  it("refuses configuration for keys and holders that are not this machine's", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("a");
    const bad: [SeatKey, string][] = [
      [{ projectRoot: "relative/project", seat: "main" }, SESSION],
      [{ projectRoot: "/p/../q", seat: "main" }, SESSION],
      [otherSeat(f.seat, "a/b"), SESSION],
      [otherSeat(f.seat, ".."), SESSION],
      [f.seat, "../escape"],
      [f.seat, ""],
    ];
    for (const [seatKey, sessionKey] of bad) {
      await refusal(f.store.acquire({ seatKey, sessionKey, holder: a }), "configuration");
    }
    for (const holder of [
      { ...a, host: "elsewhere" },
      { ...a, bootId: "0123abcd-0000-4000-8000-000000000000" },
      { ...a, execution: "not an id" },
    ]) {
      await refusal(
        f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder }),
        "configuration",
      );
    }
    assert.deepEqual(revisionFiles(f.root), []);
  });

  it("refuses already-active when a stale handle writes after the claim moved on", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("a");
    const first = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
    const stopping = await f.store.markStopping(first);
    await refusal(f.store.release(first, "engine-exited"), "already-active", /superseded/);
    await f.store.release(stopping, "engine-exited");
    const b = await f.holder("b");
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: b });
    await refusal(f.store.markUncertain(stopping, "k8-load-check"), "already-active");
    await assert.rejects(f.store.markStopping({ ...stopping, state: "released" }), /cannot become/);
  });

  it("keeps an uncertain claim until a proven stop, and never lets it be released", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("a");
    let claim: Claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
    claim = await f.store.markStopping(claim, "force-stop");
    claim = await f.store.markUncertain(claim, "cohort-unreadable");
    await refusal(f.store.release(claim, "engine-exited"), "stop-proof");
    claim = await f.store.markStopping(claim, "force-stop-retry");
    claim = await f.store.markUncertain(claim, "escalation-uncertain");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: await f.holder("b") }),
      "already-active",
    );
    claim = await f.store.recordProvenStop(claim, PROOF);
    assert.deepEqual(claim.revisions, { session: 6, seat: 6 });
    const seatDir = keyDir(f.root, "seat", f.seat, SESSION);
    const states = revisionsIn(seatDir).map(
      (n) => JSON.parse(readFileSync(join(seatDir, n), "utf8")).state,
    );
    const expected = ["held", "stopping", "uncertain", "stopping", "uncertain", "stopped-proven"];
    assert.deepEqual(states, expected);
    await assert.rejects(f.store.release(claim, "engine-exited"), /cannot become/);
    await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: await f.holder("b") });
  });

  it("refuses eligibility when the claim changed since it was reserved", async (t) => {
    const f = await fixture(t);
    const a = await f.holder("a");
    const claim = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a });
    await f.store.recordProvenStop(claim, PROOF);
    const view = await f.store.inspect({ seatKey: f.seat, sessionKey: SESSION });
    const expect = { session: view.session?.revision ?? null, seat: view.seat?.revision ?? null };
    const b = await f.holder("b");
    await refusal(
      f.store.acquire({
        seatKey: f.seat,
        sessionKey: SESSION,
        holder: b,
        expect: { ...expect, seat: 1 },
      }),
      "eligibility",
    );
    const c = await f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: b, expect });
    await f.store.release(c, "engine-exited");
    await refusal(
      f.store.acquire({ seatKey: f.seat, sessionKey: SESSION, holder: a, expect }),
      "eligibility",
    );
  });
});
