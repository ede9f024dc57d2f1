// Proves the two guarantee helpers can fail: traceOpens sees opens that root is allowed to
// make, and fingerprintTree sees every kind of change a reader could make.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import { assertUnchanged, fingerprintTree, withFingerprint } from "./fingerprint.ts";
import { assertNeverOpened, parseStrace, skipWithoutStrace, traceOpens } from "./open-trace.ts";

const isRoot = process.getuid?.() === 0;

function makeTempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeScript(dir: string, name: string, source: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, source);
  return file;
}

const OPEN_SCRIPT = `import { closeSync, openSync } from "node:fs";
closeSync(openSync(process.argv[2], "r"));
console.log("opened");
`;

const LSTAT_SCRIPT = `import { lstatSync } from "node:fs";
console.log(lstatSync(process.argv[2]).size);
`;

const HANG_SCRIPT = `import { writeFileSync } from "node:fs";
writeFileSync(process.argv[2], String(process.pid));
setInterval(() => {}, 1 << 30);
`;

// Processes still running the script; a zombie's cmdline is empty, so it does not count.
function runningScripts(script: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
    } catch {
      // The process exited between readdir and read: it is not running.
      continue;
    }
    if (cmdline.split("\0").includes(script)) pids.push(Number(entry));
  }
  return pids;
}

describe("open-trace", { skip: skipWithoutStrace() }, () => {
  it("reports the open of a mode-000 file when running as root", async (t) => {
    const dir = makeTempDir(t, "open-trace-");
    const script = writeScript(dir, "open.mjs", OPEN_SCRIPT);
    const secret = path.join(dir, "secret.jsonl");
    writeFileSync(secret, "{}\n");
    chmodSync(secret, 0o000);

    const run = await traceOpens(script, [secret], { cwd: dir });

    if (isRoot) assert.equal(run.code, 0, run.stderr);
    else assert.notEqual(run.code, 0, "a non-root open of a mode-000 file must fail");
    assert.ok(run.opened.includes(secret), `${secret} missing from the trace`);
    assert.throws(() => assertNeverOpened(run.opened, [secret]), {
      name: "AssertionError",
      message: /forbidden path.*\n.*secret\.jsonl/,
    });
  });

  it("reports no open when the script only lstats the file", async (t) => {
    const dir = makeTempDir(t, "open-trace-");
    const script = writeScript(dir, "lstat.mjs", LSTAT_SCRIPT);
    const secret = path.join(dir, "secret.jsonl");
    writeFileSync(secret, "{}\n");
    chmodSync(secret, 0o000);

    const run = await traceOpens(script, [secret], { cwd: dir });

    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "3\n");
    assert.ok(run.opened.includes(script), "the trace must cover the script itself");
    assert.ok(!run.opened.includes(secret));
    assertNeverOpened(run.opened, [secret]);
  });

  it("decodes the path exactly when it has spaces, quotes and non-ASCII", async (t) => {
    const dir = makeTempDir(t, "open-trace-");
    const script = writeScript(dir, "open.mjs", OPEN_SCRIPT);
    const name = 'é ✓ "q" \\ <x>, = 1.jsonl';
    const file = path.join(dir, name);
    writeFileSync(file, "{}\n");

    // Relative to cwd, so the trace must resolve it against AT_FDCWD.
    const run = await traceOpens(script, [name], { cwd: dir });

    assert.equal(run.code, 0, run.stderr);
    const call = run.calls.find((c) => c.path === name);
    assert.ok(call, `no call with path ${JSON.stringify(name)}`);
    assert.equal(call.resolved, file);
    assert.equal(call.target, file);
    assert.ok(call.result !== null && call.result >= 0);
    assert.throws(() => assertNeverOpened(run.opened, [file]), { name: "AssertionError" });
  });

  it("kills the process group and rejects when the script outlives the deadline", async (t) => {
    const dir = makeTempDir(t, "open-trace-");
    const script = writeScript(dir, "hang.mjs", HANG_SCRIPT);
    const pidFile = path.join(dir, "pid");

    await assert.rejects(traceOpens(script, [pidFile], { cwd: dir, timeoutMs: 1_500 }), {
      message: /hang\.mjs did not exit within 1500 ms; killed its process group/,
    });

    // traceOpens settles only after the pipes close, so the child has already exited.
    assert.deepEqual(runningScripts(script), []);
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, "utf8"));
      assert.ok(!runningScripts(script).includes(pid));
    }
  });
});

// Spells a string as `strace -xx` prints it.
function hx(text: string): string {
  return [...Buffer.from(text)].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join("");
}

describe("open-trace parser", () => {
  it("pairs resumed results and resolves dirfds when threads interleave", () => {
    const log = [
      `101  openat(AT_FDCWD<${hx("/w")}>, "${hx("rel")}", O_RDONLY|O_CLOEXEC <unfinished ...>`,
      `102  openat(3<${hx("/data/d")}>, "${hx("f.jsonl")}", O_RDONLY) = -1 ENOENT (No such file or directory)`,
      `101  <... openat resumed>) = 5<${hx("/w/real")}>`,
      `103  open("${hx("/etc/x")}", O_RDONLY) = 3<${hx("/etc/x")}>`,
      `104  openat(7, "${hx("orphan")}", O_RDONLY) = -1 EBADF (Bad file descriptor)`,
      `105  openat2(AT_FDCWD<${hx("/w")}>, "${hx("a")}", {flags=O_RDONLY, resolve=RESOLVE_NO_SYMLINKS}, 24) = 4<${hx("/w/a")}>`,
      "106  creat(NULL, 0644) = -1 EFAULT (Bad address)",
      `107  openat(AT_FDCWD<${hx("/w")}>, "${hx("killed")}", O_RDONLY <unfinished ...>`,
      "107  <... openat resumed>) = ?",
      "",
    ].join("\n");
    const calls = parseStrace(log, "/unused");
    assert.deepEqual(
      calls.map((c) => [c.pid, c.syscall, c.path, c.resolved, c.result, c.target]),
      [
        [101, "openat", "rel", "/w/rel", 5, "/w/real"],
        [102, "openat", "f.jsonl", "/data/d/f.jsonl", -1, null],
        [103, "open", "/etc/x", "/etc/x", 3, "/etc/x"],
        [104, "openat", "orphan", "orphan", -1, null],
        [105, "openat2", "a", "/w/a", 4, "/w/a"],
        [107, "openat", "killed", "/w/killed", null, null],
      ],
    );
  });

  it("throws when strace truncated a path", () => {
    const line = `9  openat(AT_FDCWD<${hx("/w")}>, "${hx("ab")}"..., O_RDONLY) = 3`;
    assert.throws(() => parseStrace(line, "/w"), /truncated/);
  });

  it("matches a forbidden path when an unresolved relative open ends with it", () => {
    assert.throws(() => assertNeverOpened(["orphan"], ["/data/d/orphan"]), {
      name: "AssertionError",
      message: /\/data\/d\/orphan \(as "orphan"\)/,
    });
    assertNeverOpened(["/data/d/other", "orphan2"], ["/data/d/orphan"]);
  });
});

interface Tree {
  readonly root: string;
  readonly outside: string;
}

// A small tree with one of each kind the walker must handle without blocking or following.
function makeTree(t: TestContext): Tree {
  const dir = makeTempDir(t, "fingerprint-");
  const root = path.join(dir, "root");
  const outside = path.join(dir, "outside");
  mkdirSync(path.join(root, "sub", "deeper"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(outside, "x.jsonl"), "outside\n");
  writeFileSync(path.join(root, "a.jsonl"), "one\n", { mode: 0o644 });
  writeFileSync(path.join(root, "sub", "b.jsonl"), "two\n");
  chmodSync(path.join(root, "sub", "b.jsonl"), 0o644);
  writeFileSync(path.join(root, "locked.jsonl"), "secret\n");
  chmodSync(path.join(root, "locked.jsonl"), 0o000);
  symlinkSync("../outside/x.jsonl", path.join(root, "link"));
  const fifo = spawnSync("mkfifo", [path.join(root, "fifo")], { encoding: "utf8" });
  assert.equal(fifo.status, 0, `mkfifo: ${fifo.stderr}`);
  return { root, outside };
}

const MUTATIONS: readonly {
  readonly name: string;
  readonly mutate: (root: string) => void;
  readonly report: RegExp;
}[] = [
  {
    name: "an append when a file grows",
    mutate: (root) => appendFileSync(path.join(root, "a.jsonl"), "more\n"),
    report: /~ a\.jsonl: .*size 4 → 9.*sha256/,
  },
  {
    name: "a chmod when only the mode changes",
    mutate: (root) => chmodSync(path.join(root, "sub", "b.jsonl"), 0o600),
    report: /~ sub\/b\.jsonl: mode 0o644 → 0o600/,
  },
  {
    name: "a touch when only the times change",
    mutate: (root) => {
      const when = new Date(1_000_000_000_000);
      utimesSync(path.join(root, "a.jsonl"), when, when);
    },
    report: /~ a\.jsonl: mtimeNs \d+ → 1000000000000000000/,
  },
  {
    name: "a rename when a file moves within its directory",
    mutate: (root) =>
      renameSync(path.join(root, "sub", "b.jsonl"), path.join(root, "sub", "c.jsonl")),
    report: /- sub\/b\.jsonl \(file removed\).*\+ sub\/c\.jsonl \(file added\)/s,
  },
  {
    name: "a new file when it appears in a subdirectory",
    mutate: (root) => writeFileSync(path.join(root, "sub", "deeper", "new.jsonl"), ""),
    report:
      /~ sub\/deeper: [^\n]*listing \+"new\.jsonl".*\+ sub\/deeper\/new\.jsonl \(file added\)/s,
  },
];

describe("fingerprint", () => {
  for (const { name, mutate, report } of MUTATIONS) {
    it(`detects ${name}`, (t) => {
      const { root } = makeTree(t);
      const before = fingerprintTree(root);
      mutate(root);
      assert.throws(() => assertUnchanged(before, fingerprintTree(root)), {
        name: "AssertionError",
        message: report,
      });
    });
  }

  it("reports no change when the tree is only read", async (t) => {
    const { root } = makeTree(t);
    const read = () => {
      const texts = ["a.jsonl", "sub/b.jsonl", "link"].map((f) =>
        readFileSync(path.join(root, f), "utf8"),
      );
      if (isRoot) texts.push(readFileSync(path.join(root, "locked.jsonl"), "utf8"));
      readdirSync(path.join(root, "sub", "deeper"));
      lstatSync(path.join(root, "fifo"));
      readlinkSync(path.join(root, "link"));
      return texts;
    };
    const before = fingerprintTree(root);
    read();
    assertUnchanged(before, fingerprintTree(root));
    assert.equal((await withFingerprint(root, read))[0], "one\n");
  });

  it("records special files without reading or following them when present", (t) => {
    const { root } = makeTree(t);
    const { entries } = fingerprintTree(root);
    assert.equal(entries.get("fifo")?.kind, "fifo");
    assert.equal(entries.get("fifo")?.sha256, null);
    assert.equal(entries.get("link")?.kind, "symlink");
    assert.equal(entries.get("link")?.target, "../outside/x.jsonl");
    assert.equal(entries.get("locked.jsonl")?.mode, 0o000);
    assert.deepEqual(entries.get(".")?.listing, ["a.jsonl", "fifo", "link", "locked.jsonl", "sub"]);
  });

  it("ignores a change behind a symlink when its target is outside the tree", (t) => {
    const { root, outside } = makeTree(t);
    const before = fingerprintTree(root);
    appendFileSync(path.join(outside, "x.jsonl"), "changed\n");
    assertUnchanged(before, fingerprintTree(root));
  });

  it("rejects when the callback changes the tree", async (t) => {
    const { root } = makeTree(t);
    await assert.rejects(
      withFingerprint(root, () => appendFileSync(path.join(root, "a.jsonl"), "x")),
      { name: "AssertionError", message: /~ a\.jsonl/ },
    );
  });
});
