// The registry of running controllers (src/control/registry/): default places, private
// directories, liveness by pid + start time + boot, dead entries ignored then removed,
// untrusted files left alone, and the catalogue's `live` join. Each test has its own temp dir.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
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
import { isControlRefusal } from "../../src/control/refusal.ts";
import { makeAgentCopyDir, makeSocketDir } from "../../src/control/registry/leftovers.ts";
import { markLive } from "../../src/control/registry/live-catalogue.ts";
import { placesFor } from "../../src/control/registry/places.ts";
import {
  bootId,
  ensurePrivateDir,
  findController,
  listControllers,
  parseEntry,
  processStart,
  type RegistryEntry,
  register,
} from "../../src/control/registry/registry.ts";
import { until } from "../helpers/deadline.ts";
import { listenOn } from "../helpers/listener.ts";
import { assertValid } from "../helpers/schema.ts";

function temp(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "registry-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A socket this process listens on in `dir`, as a controller's: register() records it. */
async function listening(t: TestContext, dir: string): Promise<string> {
  const path = join(dir, "s.sock");
  await listenOn(t, path);
  return path;
}

const ENTRY = {
  conversation: "pi-0123456789abcdef0123456789abcdef01234567",
  project: "/p",
  seat: "main",
  sessionFile: "/p/.pi/state/main/sessions/s.jsonl",
  socket: "/run/s/control.sock",
  execution: "ex-1",
  grants: ["operator", "observer"],
  startedAt: "2026-01-01T00:00:00.000Z",
};

/** An entry for a process that ran and was killed: a real pid and start time, now dead. */
async function deadEntry(): Promise<RegistryEntry> {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  const pid = child.pid as number;
  const pidStart = processStart(pid);
  assert.ok(pidStart);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
  return { version: 1, ...ENTRY, pid, pidStart, boot: bootId() };
}

describe("registry places", () => {
  it("puts claims under XDG_STATE_HOME and the registry and sockets under XDG_RUNTIME_DIR", () => {
    const p = placesFor(undefined, { XDG_STATE_HOME: "/s", XDG_RUNTIME_DIR: "/r" }, "/h");
    assert.deepEqual(p, {
      claims: "/s/mosaic-conversation/claims",
      registry: "/r/mosaic-conversation/controllers",
      sockets: "/r/mosaic-conversation/sockets",
      agents: "/r/mosaic-conversation/agents",
      // What must outlive a reboot (the ledger, the board's device links) is state, not runtime.
      audit: "/s/mosaic-conversation/audit",
      board: "/s/mosaic-conversation/board",
    });
  });

  it("falls back to ~/.local/state for everything when neither is set (or one is relative)", () => {
    const p = placesFor(undefined, { XDG_STATE_HOME: "rel", XDG_RUNTIME_DIR: "" }, "/h");
    const base = "/h/.local/state/mosaic-conversation";
    assert.deepEqual(p, {
      claims: `${base}/claims`,
      registry: `${base}/controllers`,
      sockets: `${base}/sockets`,
      agents: `${base}/agents`,
      audit: `${base}/audit`,
      board: `${base}/board`,
    });
  });

  it("moves all of it under --state-dir", () => {
    const p = placesFor("/x/st", { XDG_STATE_HOME: "/s", XDG_RUNTIME_DIR: "/r" }, "/h");
    assert.deepEqual(Object.values(p), [
      "/x/st/claims",
      "/x/st/controllers",
      "/x/st/sockets",
      "/x/st/agents",
      "/x/st/audit",
      "/x/st/board",
    ]);
  });

  it("creates private directories 0700 and refuses one others can enter", (t) => {
    const dir = temp(t);
    const made = join(dir, "a", "b");
    ensurePrivateDir(made);
    for (const d of [join(dir, "a"), made]) assert.equal(statSync(d).mode & 0o777, 0o700, d);
    const loose = join(dir, "loose");
    mkdirSync(loose);
    chmodSync(loose, 0o755);
    assert.throws(
      () => ensurePrivateDir(loose),
      (e) => isControlRefusal(e) && e.code === "configuration" && /chmod 700/.test(e.message),
    );
  });
});

describe("registry entries", () => {
  it("registers this process, finds it by conversation, updates it and removes it", async (t) => {
    const base = temp(t);
    const dir = join(base, "controllers");
    const socket = await listening(t, base);
    const reg = await register(dir, { ...ENTRY, socket });
    assert.match(reg.file, new RegExp(`/${ENTRY.conversation}\\.${process.pid}\\.\\d+\\.json$`));
    const found = findController(dir, ENTRY.conversation);
    assert.equal(found?.pid, process.pid);
    assert.equal(found?.socket, socket);
    const st = statSync(socket, { bigint: true });
    assert.equal(found?.socketId, `${st.dev}:${st.ino}`, "the socket's identity at register");
    await reg.update({ execution: "ex-2" });
    assert.equal(findController(dir, ENTRY.conversation)?.execution, "ex-2");
    assert.equal(findController(dir, "pi-other"), null);
    reg.remove();
    reg.remove();
    assert.deepEqual(readdirSync(dir), []);
  });

  it("ignores and removes the entry of a killed process, keeps the live ones", async (t) => {
    const base = temp(t);
    const dir = join(base, "controllers");
    const live = await register(dir, {
      ...ENTRY,
      conversation: "pi-live",
      socket: await listening(t, base),
    });
    t.after(() => live.remove());
    const dead = await deadEntry();
    const deadFile = join(dir, `${dead.conversation}.${dead.pid}.${dead.pidStart}.json`);
    writeFileSync(deadFile, JSON.stringify(dead));
    // Same live pid, another start time: a recycled pid is not the controller.
    const recycled = { ...dead, pid: process.pid, conversation: "pi-recycled" };
    writeFileSync(join(dir, "pi-recycled.json"), JSON.stringify(recycled));
    // Another boot: its start time means nothing now.
    const start = processStart(process.pid) as string;
    const reboot = { ...recycled, pidStart: start, boot: "other-boot", conversation: "pi-reboot" };
    writeFileSync(join(dir, "pi-reboot.json"), JSON.stringify(reboot));

    const listing = listControllers(dir);
    assert.deepEqual(
      listing.live.map((e) => e.conversation),
      ["pi-live"],
    );
    assert.deepEqual(listing.removed.map((e) => e.conversation).sort(), [
      ENTRY.conversation,
      "pi-reboot",
      "pi-recycled",
    ]);
    assert.deepEqual(readdirSync(dir), [live.file.split("/").at(-1)]);
    assert.equal(findController(dir, ENTRY.conversation), null);
  });

  it("leaves files that are not entries alone and says why", async (t) => {
    const dir = join(temp(t), "controllers");
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, "junk.json"), "{not json");
    writeFileSync(join(dir, "shape.json"), JSON.stringify({ version: 1, pid: "1" }));
    writeFileSync(join(dir, ".tmp.json"), "{}");
    writeFileSync(join(dir, "notes.txt"), "x");
    const listing = listControllers(dir);
    assert.deepEqual(listing.live, []);
    assert.deepEqual(
      listing.unreadable.map((u) => [u.file.split("/").at(-1), u.why]),
      [
        ["junk.json", "not JSON"],
        ["shape.json", "not a registry entry"],
      ],
    );
    assert.equal(readdirSync(dir).length, 4);
    assert.deepEqual(listControllers(join(dir, "absent")).live, []);
  });

  it("trusts no entry in a registry directory others can write to", async (t) => {
    const base = temp(t);
    const dir = join(base, "controllers");
    const reg = await register(dir, { ...ENTRY, socket: await listening(t, base) });
    t.after(() => reg.remove());
    chmodSync(dir, 0o777);
    assert.throws(
      () => listControllers(dir),
      (e) => isControlRefusal(e) && e.code === "configuration" && /mode 777/.test(e.message),
    );
    assert.throws(() => findController(dir, ENTRY.conversation), /mode 777/);
  });

  it("trusts no entry when a folder above the registry lets others replace it", async (t) => {
    const base = temp(t);
    const state = join(base, "state");
    const dir = join(state, "controllers");
    const reg = await register(dir, { ...ENTRY, socket: await listening(t, base) });
    t.after(() => reg.remove());
    for (const [folder, mode] of [
      [state, 0o777],
      [state, 0o775],
      [base, 0o757],
    ] as const) {
      chmodSync(folder, mode);
      assert.throws(
        () => listControllers(dir),
        (e) =>
          isControlRefusal(e) &&
          e.code === "configuration" &&
          e.message.startsWith(`${folder}, above the registry of running controllers ${dir},`) &&
          e.message.includes(`(mode ${mode.toString(8)})`) &&
          e.message.includes(`chmod go-w ${folder}`) &&
          e.message.endsWith("or choose another with --state-dir"),
        `${folder} ${mode.toString(8)}`,
      );
      chmodSync(folder, 0o700);
    }
    // A sticky folder (as /tmp) is fine when what is in it is this user's.
    chmodSync(base, 0o1777);
    assert.equal(listControllers(dir).live.length, 1);
  });

  it("removes a dead controller's agent copy (its credentials) and socket folder", async (t) => {
    const base = temp(t);
    const dir = join(base, "controllers");
    mkdirSync(dir, { mode: 0o700 });
    const copy = makeAgentCopyDir(join(base, "agents"));
    writeFileSync(join(copy, "auth.json"), '{"p":{"type":"api_key","key":"sk-secret"}}');
    const sockets = makeSocketDir(join(base, "sockets"));
    const dead = {
      ...(await deadEntry()),
      socket: join(sockets, "control.sock"),
      agentCopy: copy,
    };
    writeFileSync(join(dir, "dead.json"), JSON.stringify(dead), { mode: 0o600 });
    // Folders no controller made are never removed, whatever an entry names.
    const mine = join(base, "mine");
    mkdirSync(join(mine, "a-keepme"), { recursive: true });
    mkdirSync(join(base, "agents", "kept"));
    const stray = {
      ...dead,
      conversation: "pi-stray",
      socket: join(mine, "a-keepme", "control.sock"),
      agentCopy: join(base, "agents", "kept"),
    };
    writeFileSync(join(dir, "stray.json"), JSON.stringify(stray), { mode: 0o600 });
    const stray2 = { ...stray, conversation: "pi-stray2", agentCopy: join(mine, "a-keepme") };
    writeFileSync(join(dir, "stray2.json"), JSON.stringify(stray2), { mode: 0o600 });

    const listing = listControllers(dir);
    assert.deepEqual(listing.removed.map((e) => e.conversation).sort(), [
      ENTRY.conversation,
      "pi-stray",
      "pi-stray2",
    ]);
    assert.equal(existsSync(copy), false, "the credentials copy is gone");
    assert.equal(existsSync(sockets), false, "the socket folder is gone");
    assert.ok(existsSync(join(mine, "a-keepme")));
    assert.ok(existsSync(join(base, "agents", "kept")));
    assert.deepEqual(readdirSync(dir), []);
  });

  it("parses only whole, well-typed entries", async () => {
    const good = await deadEntry();
    assert.deepEqual(parseEntry(good), good);
    // The engine's version is optional (entries written before --pi-version have none).
    assert.deepEqual(parseEntry({ ...good, piVersion: "1.6.0" }), { ...good, piVersion: "1.6.0" });
    const named = { ...good, socketId: "2049:1234", agentCopy: "/s/agents/a-abcdef" };
    assert.deepEqual(parseEntry(named), named);
    for (const bad of [
      { ...good, piVersion: 1.6 },
      { ...good, piVersion: "1.6.0\u001b[2J" },
      { ...good, version: 2 },
      { ...good, pid: -1 },
      { ...good, pid: 1.5 },
      { ...good, pidStart: "12a" },
      { ...good, conversation: "no spaces allowed" },
      { ...good, grants: [1] },
      { ...good, socket: "" },
      { ...good, socketId: "12:x" },
      { ...good, agentCopy: "relative/a-123456" },
      [good],
      null,
    ]) {
      assert.equal(parseEntry(bad), null, JSON.stringify(bad));
    }
  });

  it("reads a start time even when the command name has spaces and parentheses", async (t) => {
    const dir = temp(t);
    const odd = join(dir, "a) 9 9 (b");
    symlinkSync("/bin/sleep", odd);
    const child = spawn(odd, ["30"], { stdio: "ignore" });
    t.after(() => child.kill("SIGKILL"));
    await new Promise((resolve) => child.once("spawn", resolve));
    const pid = child.pid as number;
    await until(() => readFileSync(`/proc/${pid}/stat`, "utf8").includes("(a) 9 9 (b)"), "exec");
    const mine = Number(processStart(process.pid));
    const its = Number(processStart(pid));
    // Field 22 after the last ')': a later start than this test's process, in clock ticks.
    assert.ok(its >= mine && its - mine < 100 * 3600, `${its} vs ${mine}`);
    assert.equal(processStart(2 ** 30), null);
  });
});

describe("the catalogue's live join", () => {
  it("marks the rows of running controllers live, every other row not, and stays CHAT-01", () => {
    const row = {
      conversation: "pi-a",
      project: "p",
      seat: "main",
      fileName: "a.jsonl",
      sessionId: "s",
      createdAt: null,
      size: 1,
      modifiedAt: null,
      engineStartedAt: null,
      title: null,
      preview: null,
      messageCount: null,
      model: null,
      unsupportedReason: null,
      harness: "pi",
      forkedFrom: null,
    };
    const catalogue = {
      ok: true as const,
      conversations: [row, { ...row, conversation: "pi-b" }],
      refusedRoots: [],
      generatedAt: "2026-01-01T00:00:00.000Z",
    };
    const marked = markLive(catalogue, new Set(["pi-b"]));
    assert.deepEqual(
      marked.conversations.map((r) => [r.conversation, r.live]),
      [
        ["pi-a", false],
        ["pi-b", true],
      ],
    );
    assertValid("catalogue", marked);
  });
});
