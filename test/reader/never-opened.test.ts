// Proves, under root, that the reader never opens what it must not. Root ignores mode 000, so
// every open is traced with strace (traceOpens): a child process runs the catalogue, opens every
// row, pages every branch and follows it, and tries conversation ids crafted for files outside
// the approved roots. No forbidden path may appear in the trace, failed opens included; the good
// session files must appear, so the trace is known to be real.
import { AssertionError } from "node:assert";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import { type BoardSpec, type SeatRegistration, sessionsDirOf } from "../../src/index.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { assertUnchanged, fingerprintTree } from "../helpers/fingerprint.ts";
import { assertNeverOpened, skipWithoutStrace, traceOpens } from "../helpers/open-trace.ts";
import { assistant, header, project, tempDir, user, writeSession } from "../helpers/reader.ts";

const INDEX_URL = pathToFileURL(join(import.meta.dirname, "..", "..", "src", "index.ts")).href;

/**
 * The child: everything a Console does with the reader, then (self-check only) the opens it is
 * told to make. Plain JavaScript, so it runs as is; it imports the reader by absolute URL.
 */
const SCRIPT = `import { readdirSync, readFileSync } from "node:fs";
import { conversationId, createReader, rootsFromSpecs } from ${JSON.stringify(INDEX_URL)};

const config = JSON.parse(process.argv[2]);
const reader = createReader({ roots: () => rootsFromSpecs(config.specs, config.registrations) });
const catalogue = reader.catalogue();
const report = {
  refusedRoots: catalogue.refusedRoots.map((r) => r.project + "/" + r.seat + ":" + r.code),
  rows: [],
  crafted: {},
};
for (const row of catalogue.conversations) {
  const out = { project: row.project, seat: row.seat, fileName: row.fileName, reason: row.unsupportedReason, branches: {} };
  const first = reader.open({ conversation: row.conversation });
  out.open = first.ok ? "ok" : first.refusal.code;
  if (first.ok) {
    for (const b of first.view.branches) {
      let r = reader.open({ conversation: row.conversation, branch: b.name });
      let pages = 0;
      let parts = 0;
      for (;;) {
        if (!r.ok) throw new Error("a page was refused: " + r.refusal.code);
        pages++;
        parts += r.page.parts.length;
        if (r.cursor === null) break;
        r = reader.next({ cursor: r.cursor.id, conversation: row.conversation, branch: b.name });
      }
      const f = reader.next({ cursor: r.follow.id, conversation: row.conversation, branch: b.name });
      out.branches[b.name] = { pages, parts, follow: f.ok ? f.page.parts.length : f.refusal.code };
    }
  }
  report.rows.push(out);
}
for (const [name, [projectRoot, seat, file]] of Object.entries(config.crafted)) {
  const r = reader.open({ conversation: conversationId(projectRoot, seat, file) });
  report.crafted[name] = r.ok ? "ok" : r.refusal.code;
}
for (const file of config.peekFiles) readFileSync(file);
for (const dir of config.peekDirs) readdirSync(dir);
process.stdout.write(JSON.stringify(report));
`;

type Report = {
  refusedRoots: string[];
  rows: {
    project: string;
    seat: string;
    fileName: string | null;
    reason: string | null;
    open: string;
    branches: Record<string, { pages: number; parts: number; follow: number | string }>;
  }[];
  crafted: Record<string, string>;
};

type Fixture = {
  base: string;
  specs: BoardSpec[];
  registrations: SeatRegistration[];
  crafted: Record<string, [string, string, string]>;
  /** Session files the reader must open. */
  good: string[];
  /** The approved sessions directory, which the reader lists. */
  approvedDir: string;
  forbidden: string[];
  paths: Record<string, string>;
};

/** Every path under `dir`, `dir` included, without following links. */
function allUnder(dir: string): string[] {
  const out = [dir];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...allUnder(p));
    else out.push(p);
  }
  return out;
}

function buildFixture(t: TestContext): Fixture {
  const base = tempDir(t, "never-opened-");
  const a = project(base, "alpha", "main");
  const sessions = a.sessionsDir;
  const outside = join(base, "outside");
  const elsewhere = join(base, "elsewhere");
  mkdirSync(outside);
  mkdirSync(join(elsewhere, ".pi"), { recursive: true });
  const secret = join(outside, "secret.jsonl");
  const parent = join(outside, "parent.jsonl");
  writeSession(outside, "secret.jsonl", [header(a.projectRoot), user("s1", null, "secret")]);
  writeSession(outside, "parent.jsonl", [header(a.projectRoot), user("p1", null, "parent")]);
  writeFileSync(join(elsewhere, "AGENTS.md"), "# not this project\n");
  writeFileSync(join(elsewhere, ".pi", "settings.json"), "{}\n");
  writeSession(elsewhere, "local.jsonl", [header(elsewhere), user("e1", null, "elsewhere")]);

  // Good sessions: a long one with a fork (more than one page), and one forked from a parent.
  const long: object[] = [header(a.projectRoot)];
  let prev: string | null = null;
  for (let i = 0; i < 70; i++) {
    long.push(user(`u${i}`, prev, `question ${i}`), assistant(`a${i}`, `u${i}`, `answer ${i}`));
    prev = `a${i}`;
  }
  long.push(user("fork", "a10", "a fork"));
  const good = writeSession(sessions, "good.jsonl", long);
  const forked = writeSession(sessions, "forked.jsonl", [
    header(a.projectRoot, { parentSession: parent }),
    user("f1", null, "forked"),
    assistant("f2", "f1", "yes"),
  ]);
  // Foreign cwds: outside the project, and a link inside the project that points outside.
  const escapeLink = join(a.projectRoot, "escape");
  symlinkSync(elsewhere, escapeLink);
  const foreign = writeSession(sessions, "foreign.jsonl", [
    header(elsewhere),
    user("x", null, "x"),
  ]);
  const escaped = writeSession(sessions, "escaped.jsonl", [
    header(escapeLink),
    user("y", null, "y"),
  ]);

  // What sits in the approved directory but is no session: a link out, notes, a subdirectory,
  // a directory and a FIFO with session names.
  const link = join(sessions, "link.jsonl");
  symlinkSync(secret, link);
  const notes = join(sessions, "notes.txt");
  writeFileSync(notes, "not a session\n");
  mkdirSync(join(sessions, "sub"));
  const subX = writeSession(join(sessions, "sub"), "x.jsonl", [header(a.projectRoot)]);
  mkdirSync(join(sessions, "trap.jsonl"));
  const trapInner = writeSession(join(sessions, "trap.jsonl"), "inner.jsonl", [
    header(a.projectRoot),
  ]);
  const fifo = join(sessions, "fifo.jsonl");
  const mkfifo = spawnSync("mkfifo", [fifo], { timeout: 5000 });
  assert.equal(mkfifo.status, 0, `mkfifo: ${mkfifo.stderr}`);

  // Seats on another harness: claude (registration only, a placeholder row) and rocko (a spec,
  // made unsupported by its registration). Their directories hold Pi-looking sessions.
  const claudeDir = sessionsDirOf(a.projectRoot, "claude");
  const rockoDir = sessionsDirOf(a.projectRoot, "rocko");
  mkdirSync(claudeDir, { recursive: true });
  mkdirSync(rockoDir, { recursive: true });
  const claudeFile = writeSession(claudeDir, "c.jsonl", [
    header(a.projectRoot),
    user("c", null, "c"),
  ]);
  const rockoFile = writeSession(rockoDir, "r.jsonl", [
    header(a.projectRoot),
    user("r", null, "r"),
  ]);

  // Project beta is not in the specs; a Pi registration for it adds no root.
  const b = project(base, "beta", "main");
  const betaFile = writeSession(b.sessionsDir, "b.jsonl", [
    header(b.projectRoot),
    user("b", null, "b"),
  ]);

  const startedAt = "2025-12-01T00:00:00.000Z";
  const registration = (projectRoot: string, seat: string, harness: string): SeatRegistration => ({
    seat,
    layout: "repo",
    project: projectRoot,
    sessionsDir: sessionsDirOf(projectRoot, seat),
    harness,
    startedAt,
  });
  return {
    base,
    specs: [
      { kind: "repository", projectRoot: a.projectRoot, seat: "main" },
      { kind: "repository", projectRoot: a.projectRoot, seat: "rocko" },
      { kind: "fleet", root: outside },
    ],
    registrations: [
      registration(a.projectRoot, "main", "pi"),
      registration(a.projectRoot, "claude", "codex"),
      registration(a.projectRoot, "rocko", "codex"),
      registration(b.projectRoot, "main", "pi"),
    ],
    crafted: {
      beta: [b.projectRoot, "main", "b.jsonl"],
      claude: [a.projectRoot, "claude", "c.jsonl"],
      rocko: [a.projectRoot, "rocko", "r.jsonl"],
      sub: [a.projectRoot, "main", "sub/x.jsonl"],
      climb: [a.projectRoot, "main", "../../claude/sessions/c.jsonl"],
      secret: [outside, "main", "secret.jsonl"],
    },
    good: [good, forked, foreign, escaped],
    approvedDir: sessions,
    forbidden: [
      link,
      secret,
      parent,
      outside,
      notes,
      join(sessions, "sub"),
      subX,
      join(sessions, "trap.jsonl"),
      trapInner,
      fifo,
      claudeDir,
      claudeFile,
      rockoDir,
      rockoFile,
      b.projectRoot,
      b.sessionsDir,
      betaFile,
      ...allUnder(elsewhere),
      escapeLink,
      // No scan: no directory above the approved one is ever listed.
      base,
      a.projectRoot,
      join(a.projectRoot, ".pi"),
      join(a.projectRoot, ".pi", "state"),
    ],
    paths: { link, secret, claudeDir, parent },
  };
}

async function run(
  t: TestContext,
  fx: Fixture,
  peek: { files: string[]; dirs: string[] } = { files: [], dirs: [] },
): Promise<{ opened: string[]; reached: string[]; report: Report }> {
  const dir = tempDir(t, "never-opened-run-");
  const script = join(dir, "reader-run.mjs");
  writeFileSync(script, SCRIPT);
  const config = {
    specs: fx.specs,
    registrations: fx.registrations,
    crafted: fx.crafted,
    peekFiles: peek.files,
    peekDirs: peek.dirs,
  };
  const before = fingerprintTree(fx.base);
  const result = await traceOpens(script, [JSON.stringify(config)], {
    cwd: dir,
    timeoutMs: DEADLINE_MS,
  });
  assertUnchanged(before, fingerprintTree(fx.base));
  assert.equal(result.code, 0, `the child failed: ${result.stderr}`);
  return {
    opened: result.opened,
    reached: result.reached,
    report: JSON.parse(result.stdout) as Report,
  };
}

describe("the reader never opens what it must not (strace)", { skip: skipWithoutStrace() }, () => {
  it("opens only approved session files while it lists, opens, pages and follows everything", async (t) => {
    const fx = buildFixture(t);
    const { opened, reached, report } = await run(t, fx);

    assertNeverOpened(opened, fx.forbidden);
    // O_PATH opens read and list nothing: they are the walk from the project root down to the
    // approved directory, and the names directly in it (a link there is reached as the link).
    const projectRoot = join(fx.approvedDir, "..", "..", "..", "..");
    const walk = [".pi", ".pi/state", ".pi/state/main", ".pi/state/main/sessions"].map((p) =>
      join(projectRoot, p),
    );
    const strays = reached.filter(
      (p) => p !== projectRoot && !walk.includes(p) && join(p, "..") !== fx.approvedDir,
    );
    assert.deepEqual(strays, [], "O_PATH opens outside the walk and the approved directory");
    assert.ok(reached.includes(fx.approvedDir), "the walk reached the approved directory");
    // The trace is real: the approved directory was listed and every good file opened.
    for (const file of [fx.approvedDir, ...fx.good]) {
      assert.ok(opened.includes(file), `the trace shows ${file} opened`);
    }

    const row = (seat: string, fileName: string | null) =>
      report.rows.find((r) => r.seat === seat && r.fileName === fileName);
    const good = row("main", "good.jsonl");
    assert.equal(good?.open, "ok");
    assert.deepEqual(Object.keys(good?.branches ?? {}).sort(), ["b.fork", "main"]);
    assert.ok((good?.branches.main?.pages ?? 0) >= 2, "the long branch spans pages");
    assert.equal(good?.branches.main?.follow, 0);
    assert.equal(row("main", "forked.jsonl")?.open, "ok");
    for (const name of ["foreign.jsonl", "escaped.jsonl"]) {
      assert.equal(row("main", name)?.reason, "foreign-project", name);
      assert.equal(row("main", name)?.open, "foreign-project", name);
    }
    for (const name of ["link.jsonl", "trap.jsonl", "fifo.jsonl"]) {
      assert.equal(row("main", name)?.reason, "unsafe-path", name);
      assert.equal(row("main", name)?.open, "unsafe-path", name);
    }
    for (const seat of ["claude", "rocko"]) {
      assert.equal(row(seat, null)?.reason, "unsupported-harness", seat);
      assert.equal(row(seat, null)?.open, "unsupported-harness", seat);
    }
    assert.deepEqual(report.rows.map((r) => `${r.project}/${r.seat}/${r.fileName}`).sort(), [
      "alpha/claude/null",
      "alpha/main/escaped.jsonl",
      "alpha/main/fifo.jsonl",
      "alpha/main/foreign.jsonl",
      "alpha/main/forked.jsonl",
      "alpha/main/good.jsonl",
      "alpha/main/link.jsonl",
      "alpha/main/trap.jsonl",
      "alpha/rocko/null",
    ]);
    assert.deepEqual(report.refusedRoots, []);
    for (const [name, code] of Object.entries(report.crafted)) {
      assert.equal(code, "unknown-conversation", `crafted id for ${name}`);
    }
  });

  it("self-check: the same harness catches a forbidden open", async (t) => {
    const fx = buildFixture(t);
    const { opened } = await run(t, fx, { files: [fx.paths.link!], dirs: [fx.paths.claudeDir!] });
    let message = "";
    assert.throws(
      () => assertNeverOpened(opened, fx.forbidden),
      (e: unknown) => {
        assert.ok(e instanceof AssertionError);
        message = e.message;
        return true;
      },
    );
    // The link, its target (through the link) and the listed directory, and nothing else.
    const { link, secret, claudeDir, parent } = fx.paths;
    for (const p of [link, secret, claudeDir])
      assert.ok(message.includes(`${p} (as`), `${p}: ${message}`);
    assert.ok(!message.includes(`${parent}`), message);
    assert.match(message, /opened 3 forbidden path\(s\)/);
  });
});
