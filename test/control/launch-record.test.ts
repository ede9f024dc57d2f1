// The launch record and the recovery's refusals that need no controller (docs/claim.md,
// Recovery after a crash): a record written once and read back; a corrupt or foreign one
// refuses `unsafe-replacement`; a record whose scope is not named for its execution, or whose
// cgroup hierarchy can't be read, proves nothing. A dead holder is a claim taken for a `sleep`
// that is then killed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ClaimStore } from "../../src/control/claim/claim.ts";
import {
  type LaunchRecord,
  launchRecordPath,
  readLaunchRecord,
  removeLaunchRecord,
  writeLaunchRecord,
} from "../../src/control/claim/launch-record.ts";
import { recoverDeadHolder } from "../../src/control/claim/recovery.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { within } from "../helpers/deadline.ts";
import { assertValid } from "../helpers/schema.ts";

const KEYS = {
  seatKey: { projectRoot: "/tmp/proj-x", seat: "main" },
  sessionKey: "01a00000-0000-7000-8000-0000000000aa",
};

function fixture(t: TestContext) {
  const root = mkdtempSync("/tmp/lr-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const claimRoot = join(root, "claims");
  return { root, claimRoot, store: new ClaimStore({ root: claimRoot }) };
}

async function record(store: ClaimStore, execution: string, scope: string | null) {
  // The store makes and checks its root (0700, ours) on any look; the controller looks first.
  await store.inspect(KEYS);
  const m = await store.machine();
  const r: LaunchRecord = {
    version: 2,
    kind: "launch-record",
    execution,
    incarnation: `in-${execution}`,
    ...KEYS,
    host: m.host,
    bootId: m.bootId,
    launcher: "cgroup",
    scope,
    at: new Date().toISOString(),
  };
  return r;
}

/** A claim on KEYS whose holder (a `sleep`) is then killed: the crash barrier stands. */
async function deadHolder(store: ClaimStore, execution: string): Promise<void> {
  const sleeper = spawn("/bin/sleep", ["30"]);
  const holder = await store.holderFor({
    execution,
    incarnation: `in-${execution}`,
    pid: sleeper.pid ?? 0,
  });
  await store.acquire({ ...KEYS, holder });
  const exited = new Promise((ok) => sleeper.once("exit", ok));
  sleeper.kill("SIGKILL");
  await within(exited, "the holder's exit");
}

async function refused(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isControlRefusal(e), String(e));
    assert.equal(e.code, "unsafe-replacement");
    assert.match(e.message, pattern);
    return true;
  });
}

describe("launch records", () => {
  it("writes once (0600, in a 0700 directory), reads back, and removes", async (t) => {
    const { claimRoot, store } = fixture(t);
    const r = await record(store, "ex-1", "/sys/fs/cgroup/x/mosaic-ex-1");
    assertValid("launchRecord", r);
    await writeLaunchRecord(claimRoot, r);
    assert.equal(statSync(launchRecordPath(claimRoot, "ex-1")).mode & 0o777, 0o600);
    assert.equal(statSync(join(claimRoot, "launch")).mode & 0o777, 0o700);
    assert.deepEqual(await readLaunchRecord(claimRoot, "ex-1"), r);
    await assert.rejects(writeLaunchRecord(claimRoot, r), /EEXIST/, "never rewritten");
    await removeLaunchRecord(claimRoot, "ex-1");
    assert.equal(await readLaunchRecord(claimRoot, "ex-1"), null);
    await removeLaunchRecord(claimRoot, "ex-1");
  });

  it("refuses unsafe-replacement for a corrupt record or one naming another execution", async (t) => {
    const { claimRoot, store } = fixture(t);
    await writeLaunchRecord(claimRoot, await record(store, "ex-2", null));
    writeFileSync(launchRecordPath(claimRoot, "ex-2"), "{not json");
    await refused(readLaunchRecord(claimRoot, "ex-2"), /not JSON/);
    const other = await record(store, "ex-3", null);
    writeFileSync(launchRecordPath(claimRoot, "ex-2"), JSON.stringify(other));
    await refused(readLaunchRecord(claimRoot, "ex-2"), /names execution ex-3/);
    writeFileSync(launchRecordPath(claimRoot, "ex-2"), JSON.stringify({ ...other, extra: 1 }));
    await refused(readLaunchRecord(claimRoot, "ex-2"), /not a launch record/);
  });
});

describe("recoverDeadHolder's refusals", () => {
  it("returns null when no dead holder blocks", async (t) => {
    const { store } = fixture(t);
    const me = await store.holderFor({ execution: "ex-me", incarnation: "in-me" });
    assert.equal(await recoverDeadHolder(store, KEYS, me), null);
  });

  it("refuses a record whose scope is not named for its execution", async (t) => {
    const { claimRoot, store } = fixture(t);
    await deadHolder(store, "ex-dead");
    await writeLaunchRecord(
      claimRoot,
      await record(store, "ex-dead", "/sys/fs/cgroup/mosaic-ex-other"),
    );
    const me = await store.holderFor({ execution: "ex-me", incarnation: "in-me" });
    await refused(recoverDeadHolder(store, KEYS, me), /not one of execution ex-dead/);
    assert.equal((await store.inspect(KEYS)).verdict, "unsafe-replacement", "nothing recorded");
  });

  it("refuses when the scope's cgroup hierarchy can't be read: absent is never empty", async (t) => {
    const { root, claimRoot, store } = fixture(t);
    await deadHolder(store, "ex-dead");
    const scope = join(root, "no-such-hierarchy", "mosaic-ex-dead");
    await writeLaunchRecord(claimRoot, await record(store, "ex-dead", scope));
    const me = await store.holderFor({ execution: "ex-me", incarnation: "in-me" });
    await refused(recoverDeadHolder(store, KEYS, me), /can't be observed.*not readable/);
    assert.equal((await store.inspect(KEYS)).verdict, "unsafe-replacement", "nothing recorded");
  });

  it("refuses a record for another session", async (t) => {
    const { claimRoot, store } = fixture(t);
    await deadHolder(store, "ex-dead");
    const r = await record(store, "ex-dead", null);
    await writeLaunchRecord(claimRoot, {
      ...r,
      sessionKey: "01a00000-0000-7000-8000-0000000000bb",
    });
    const me = await store.holderFor({ execution: "ex-me", incarnation: "in-me" });
    await refused(recoverDeadHolder(store, KEYS, me), /another session or incarnation/);
  });
});
