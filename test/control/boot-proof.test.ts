import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { BOOT_ID_FILE, proveByReboot } from "../../src/control/claim/boot-proof.ts";
import {
  type ClaimHolder,
  type ClaimRevision,
  ClaimStore,
  type ClaimStoreOptions,
  nameOf,
  type SeatKey,
  seatDigest,
} from "../../src/control/claim/claim.ts";
import { digestOf } from "../../src/control/controller/records.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { assertValid, isValid } from "../helpers/schema.ts";

const SESSION = "3f2a9c1e-0d4b-4c2a-9f1e-5b1c0d2e3f4a";
const OLD_BOOT = "0123abcd-0000-4000-8000-000000000000";
const BOOT = readFileSync(BOOT_ID_FILE, "utf8").trim();

type Fixture = {
  root: string;
  store: ClaimStore;
  keys: { seatKey: SeatKey; sessionKey: string };
  storeWith: (options: Omit<ClaimStoreOptions, "root">) => ClaimStore;
  holder: (execution: string, store?: ClaimStore) => Promise<ClaimHolder>;
  revision: (kind: "session" | "seat", n: number) => ClaimRevision;
};

function fixture(t: TestContext): Fixture {
  const base = mkdtempSync(join(tmpdir(), "boot-proof-"));
  const root = join(base, "claims");
  const seatKey = { projectRoot: join(base, "project"), seat: "main" };
  t.after(() => {
    try {
      for (const kind of ["session", "seat"]) {
        let dirs: string[] = [];
        try {
          dirs = readdirSync(join(root, kind));
        } catch {
          // Nothing was ever claimed under this kind.
        }
        for (const d of dirs) {
          for (const name of readdirSync(join(root, kind, d))) {
            assertValid(
              "claimRevision",
              JSON.parse(readFileSync(join(root, kind, d, name), "utf8")),
            );
          }
        }
      }
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
  const storeWith = (options: Omit<ClaimStoreOptions, "root">) =>
    new ClaimStore({ root, ...options });
  const store = storeWith({});
  return {
    root,
    store,
    keys: { seatKey, sessionKey: SESSION },
    storeWith,
    holder: (execution, s = store) => s.holderFor({ execution, incarnation: "i1" }),
    revision: (kind, n) => {
      const dir = kind === "session" ? SESSION : seatDigest(seatKey);
      return JSON.parse(readFileSync(join(root, kind, dir, nameOf(n)), "utf8")) as ClaimRevision;
    },
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

/** A claim held in a previous boot of this host (the store plays the old boot). */
async function heldBeforeReboot(f: Fixture, execution = "old"): Promise<ClaimHolder> {
  const before = f.storeWith({ machine: { bootId: OLD_BOOT } });
  const old = await f.holder(execution, before);
  await before.acquire({ ...f.keys, holder: old });
  return old;
}

describe("proveByReboot", () => {
  it("proves a holder of a previous boot stopped and frees its keys", async (t) => {
    const f = fixture(t);
    const old = await heldBeforeReboot(f);
    const me = await f.holder("me");
    await refusal(f.store.acquire({ ...f.keys, holder: me }), "unsafe-replacement", /rebooted/);

    const { proof, claim } = await proveByReboot(f.store, f.keys, me);
    assertValid("bootProof", proof);
    assert.ok(!isValid("bootProof", { ...proof, machine: proof.holder }), "same boot is no proof");
    assert.deepEqual(proof.holder, { host: hostname(), bootId: OLD_BOOT });
    assert.deepEqual(proof.machine, { host: hostname(), bootId: BOOT });
    assert.deepEqual(proof.claim, { ...f.keys, revisions: { session: 1, seat: 1 } });
    assert.equal(claim.state, "stopped-proven");
    assert.deepEqual(claim.holder, old);
    assert.deepEqual(claim.revisions, { session: 2, seat: 2 });
    for (const kind of ["session", "seat"] as const) {
      const r = f.revision(kind, 2);
      assert.equal(r.state, "stopped-proven");
      assert.equal(r.reason, "boot-proof");
      assert.equal(r.proof, digestOf(proof));
      assert.deepEqual(r.holder, old);
      assert.deepEqual(r.writer, me);
    }

    const view = await f.store.inspect(f.keys);
    assert.equal(view.verdict, "free");
    assert.equal(view.blocking, null);
    const next = await f.store.acquire({ ...f.keys, holder: me });
    assert.deepEqual(next.revisions, { session: 3, seat: 3 });
  });

  it("proves an uncertain claim of a previous boot", async (t) => {
    const f = fixture(t);
    const before = f.storeWith({ machine: { bootId: OLD_BOOT } });
    const old = await f.holder("old", before);
    let held = await before.acquire({ ...f.keys, holder: old });
    held = await before.markStopping(held);
    await before.markUncertain(held, "stop-unproven");
    const me = await f.holder("me");
    const { proof, claim } = await proveByReboot(f.store, f.keys, me);
    assertValid("bootProof", proof);
    assert.deepEqual(proof.claim.revisions, { session: 3, seat: 3 });
    assert.deepEqual(claim.revisions, { session: 4, seat: 4 });
    assert.equal(f.revision("seat", 4).proof, digestOf(proof));
    await f.store.acquire({ ...f.keys, holder: me });
  });

  it("refuses stop-proof for a live holder of the current boot", async (t) => {
    const f = fixture(t);
    const live = await f.holder("live");
    await f.store.acquire({ ...f.keys, holder: live });
    assert.equal((await f.store.inspect(f.keys)).verdict, "already-active");
    await refusal(
      proveByReboot(f.store, f.keys, await f.holder("me")),
      "stop-proof",
      /current boot/,
    );
    assert.equal(f.revision("session", 1).state, "held");
    assert.throws(() => f.revision("session", 2), /ENOENT/);
  });

  it("refuses stop-proof for a dead holder of the current boot: it needs a cohort proof", async (t) => {
    const f = fixture(t);
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      stdio: "ignore",
    });
    const closed = once(child, "close");
    t.after(() => child.kill("SIGKILL"));
    assert.ok(child.pid);
    const dead = await f.store.holderFor({ execution: "dead", incarnation: "i1", pid: child.pid });
    await f.store.acquire({ ...f.keys, holder: dead });
    child.kill("SIGKILL");
    await closed;
    const view = await f.store.inspect(f.keys);
    assert.equal(view.verdict, "unsafe-replacement", view.why);
    await refusal(proveByReboot(f.store, f.keys, await f.holder("me")), "stop-proof", /cohort/);
    assert.throws(() => f.revision("session", 2), /ENOENT/);
  });

  it("refuses stop-proof for a holder on another host, whatever its boot", async (t) => {
    const f = fixture(t);
    const elsewhere = f.storeWith({ machine: { host: "elsewhere", bootId: OLD_BOOT } });
    await elsewhere.acquire({ ...f.keys, holder: await f.holder("remote", elsewhere) });
    assert.equal((await f.store.inspect(f.keys)).verdict, "foreign-host");
    await refusal(proveByReboot(f.store, f.keys, await f.holder("me")), "stop-proof", /elsewhere/);
    assert.throws(() => f.revision("session", 2), /ENOENT/);
  });

  it("refuses stop-proof when nothing blocks the keys", async (t) => {
    const f = fixture(t);
    const me = await f.holder("me");
    await refusal(proveByReboot(f.store, f.keys, me), "stop-proof", /never been claimed/);
    const mine = await f.store.acquire({ ...f.keys, holder: await f.holder("owner") });
    await f.store.release(mine, "done");
    await refusal(proveByReboot(f.store, f.keys, me), "stop-proof", /released/);
    await refusal(proveByReboot(f.store, f.keys, me), "stop-proof", /Nothing blocks/);
  });

  it("refuses configuration for a store or writer that is not of this boot", async (t) => {
    const f = fixture(t);
    await heldBeforeReboot(f);
    const me = await f.holder("me");
    const playing = f.storeWith({ machine: { bootId: "4567abcd-0000-4000-8000-000000000000" } });
    await refusal(proveByReboot(playing, f.keys, me), "configuration", /another host or boot/);
    await refusal(
      proveByReboot(f.store, f.keys, { ...me, bootId: OLD_BOOT }),
      "configuration",
      /writer/,
    );
    assert.equal((await f.store.inspect(f.keys)).verdict, "unsafe-replacement");
  });
});
