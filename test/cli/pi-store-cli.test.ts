// The command over Pi's own store (issue 12 §3): with no source at all it reads Pi's store at
// its default place (~/.pi/agent/sessions under a scratch HOME, or $PI_CODING_AGENT_DIR/sessions)
// and says so in one line on stderr; --pi and --pi-sessions name it; a config file combines it
// with repository specs; serve serves it. Under strace, the catalogue opens nothing in the
// store but the store, its --…-- directories and their session files.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { encodeCwd } from "../../src/index.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { skipWithoutStrace, traceOpens } from "../helpers/open-trace.ts";
import { assistant, header, project, tempDir, user, writeSession } from "../helpers/reader.ts";
import { MAIN, runCli, startCli } from "./run-cli.ts";

const DEMO = join(import.meta.dirname, "..", "..", "src", "cli", "demo.ts");

type Fixture = { base: string; home: string; store: string; app: string; lib: string };

/** A scratch HOME whose Pi store holds two projects: app (2 sessions) and lib (1). */
function fixture(t: TestContext): Fixture {
  const base = tempDir(t, "pi-store-cli-");
  const home = join(base, "home");
  const store = join(home, ".pi", "agent", "sessions");
  const app = join(base, "code", "app");
  const lib = join(base, "code", "lib");
  const write = (cwd: string, name: string, text: string, n: number) => {
    const dir = join(store, encodeCwd(cwd));
    mkdirSync(dir, { recursive: true });
    writeSession(dir, name, [header(cwd), user("u1", null, text, n), assistant("a1", "u1", "ok")]);
  };
  write(app, "2026-01-01T00-00-00-000Z_a.jsonl", "first in app", 1);
  write(app, "2026-01-02T00-00-00-000Z_b.jsonl", "second in app", 2);
  write(lib, "2026-01-03T00-00-00-000Z_c.jsonl", "only in lib", 3);
  return { base, home, store, app, lib };
}

/** The environment of a Pi user with this HOME and no PI_CODING_AGENT_DIR. */
const userEnv = (f: Fixture) => ({ HOME: f.home, PI_CODING_AGENT_DIR: undefined });

function catalogueIds(stdout: string): string[] {
  return [...stdout.matchAll(/\b(pi-[0-9a-f]{40})\b/g)].map((m) => m[1] ?? "");
}

describe("conversation over Pi's store", () => {
  it("reads Pi's default store and says so on stderr when no source is named", async (t) => {
    const f = fixture(t);
    const r = await runCli(t, ["catalogue"], { env: userEnv(f) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stderr,
      `No source named: reading Pi's sessions in ${f.store} (--pi; see --help for others).\n`,
    );
    const lines = r.stdout.split("\n");
    assert.equal(lines[0], "3 conversations in 2 projects");
    // Grouped by project: the cwd as a path, the group with the newest activity first.
    const groups = lines.filter((l) => /^\S/.test(l)).slice(1);
    assert.equal(groups.length, 2);
    assert.ok(groups.includes(`${f.app} (2)`), groups.join("|"));
    assert.ok(groups.includes(`${f.lib} (1)`), groups.join("|"));
    const appAt = lines.indexOf(`${f.app} (2)`);
    const libAt = lines.indexOf(`${f.lib} (1)`);
    const inApp = lines.slice(appAt, libAt > appAt ? libAt : undefined).join("\n");
    assert.match(inApp, /first in app/);
    assert.match(inApp, /second in app/);
    assert.doesNotMatch(inApp, /only in lib/);
    assert.equal(catalogueIds(r.stdout).length, 3);
  });

  it("reads $PI_CODING_AGENT_DIR/sessions with --pi, and another folder with --pi-sessions", async (t) => {
    const f = fixture(t);
    const elsewhere = join(f.base, "empty-home");
    mkdirSync(elsewhere);
    const viaEnv = await runCli(t, ["catalogue", "--pi"], {
      env: { HOME: elsewhere, PI_CODING_AGENT_DIR: join(f.home, ".pi", "agent") },
    });
    assert.equal(viaEnv.code, 0, viaEnv.stderr);
    assert.equal(viaEnv.stderr, "", "a named source needs no notice");
    assert.match(viaEnv.stdout, /^3 conversations in 2 projects\n/);
    const viaFlag = await runCli(t, ["catalogue", "--pi-sessions", f.store], {
      env: { HOME: elsewhere },
    });
    assert.equal(viaFlag.stderr, "");
    assert.deepEqual(catalogueIds(viaFlag.stdout).sort(), catalogueIds(viaEnv.stdout).sort());
  });

  it("says the store does not exist when a new user has none yet, and exits 0", async (t) => {
    const base = tempDir(t, "pi-store-cli-");
    const r = await runCli(t, ["catalogue"], {
      env: { HOME: base, PI_CODING_AGENT_DIR: undefined },
    });
    assert.equal(r.code, 0, r.stderr);
    const store = join(base, ".pi", "agent", "sessions");
    // Named sources with a refused root exit 1 (docs/package.md); the default store that
    // doesn't exist yet is no refusal: a note on stderr, after the notice of which store.
    assert.equal(r.stdout, "0 conversations\n");
    assert.ok(
      r.stderr.endsWith(
        `\n${store}: Pi's session store does not exist yet (Pi writes it when it saves a session); name a source: --project DIR, --config FILE or --pi-sessions DIR\n`,
      ),
      r.stderr,
    );
  });

  it("reads and follows a conversation of the default store by its id", async (t) => {
    const f = fixture(t);
    const list = await runCli(t, ["catalogue", "--json"], { env: userEnv(f) });
    const catalogue = JSON.parse(list.stdout) as {
      conversations: { conversation: string; title: string; fileName: string; project: string }[];
    };
    const row = catalogue.conversations.find((c) => c.title === "only in lib");
    assert.ok(row);
    const read = await runCli(t, ["read", row.conversation], { env: userEnv(f) });
    assert.equal(read.code, 0, read.stderr);
    assert.match(read.stderr, /^No source named: reading Pi's sessions in /);
    assert.ok(
      read.stdout.replace(/\s+/g, " ").includes(`${row.conversation} ${f.lib} · seat pi-agent`),
      read.stdout,
    );
    assert.match(read.stdout, /only in lib/);

    const child = startCli(t, ["follow", row.conversation], { env: userEnv(f) });
    await child.waitFor("the follow status", (c) => /following /.test(c.stderr()));
    const file = join(f.store, encodeCwd(f.lib), row.fileName);
    appendFileSync(file, `${JSON.stringify(user("u2", "a1", "appended while following", 9))}\n`);
    await child.waitFor("the appended entry", (c) => /appended while following/.test(c.stdout()));
    child.proc.kill("SIGINT");
    assert.equal((await child.exited).code, 0);
  });

  it("combines repository specs and Pi's store in one config file", async (t) => {
    const f = fixture(t);
    const p = project(f.base, "repo");
    writeSession(p.sessionsDir, "r.jsonl", [header(p.projectRoot), user("u1", null, "in repo")]);
    const config = join(f.base, "board.json");
    writeFileSync(
      config,
      JSON.stringify({
        specs: [
          { kind: "repository", projectRoot: "repo", seat: "main" },
          { kind: "pi-agent", sessionsDir: "home/.pi/agent/sessions" },
        ],
      }),
    );
    const r = await runCli(t, ["catalogue", "--config", config], { env: userEnv(f) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    assert.match(r.stdout, /^4 conversations in 3 projects\n/);
    assert.match(r.stdout, /^repo \(1\)$/m);
    assert.match(r.stdout, new RegExp(`^${f.app} \\(2\\)$`, "m"));
    const both = await runCli(t, ["catalogue", "--project", p.projectRoot, "--pi"], {
      env: userEnv(f),
    });
    assert.match(both.stdout, /^4 conversations in 3 projects\n/);
  });

  it("serves Pi's default store when serve names no source", async (t) => {
    const f = fixture(t);
    const child = startCli(t, ["serve", "--port", "0"], { env: userEnv(f) });
    await child.waitFor("the URL", (c) => /http:\/\/127\.0\.0\.1:\d+\//.test(c.stdout()));
    assert.match(child.stderr(), /^No source named: reading Pi's sessions in .*\n$/);
    const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(child.stdout())?.[0] ?? "";
    const res = await fetch(`${url}api/conversations`);
    const body = (await res.json()) as { conversations: { project: string }[] };
    assert.deepEqual(body.conversations.map((c) => c.project).sort(), [f.app, f.app, f.lib]);
    child.proc.kill("SIGINT");
    assert.equal((await child.exited).code, 0);
  });

  it("serves Pi's store in the Console when npm start is given --pi", async (t) => {
    const f = fixture(t);
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: f.home };
    delete env.PI_CODING_AGENT_DIR;
    const proc = spawn(process.execPath, [DEMO, "--pi", "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
      env,
    });
    t.after(() => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    });
    const exited = new Promise<number | null>((resolve) => proc.on("close", resolve));
    let out = "";
    proc.stdout.setEncoding("utf8");
    const url = await new Promise<string>((resolve, reject) => {
      // The suite's deadline, not 10 s: npm start builds nothing here, but a loaded machine
      // (CI, four files at once) took longer than 10 s to print the URL.
      const timer = setTimeout(
        () => reject(new Error(`no URL within ${DEADLINE_MS} ms: ${out}`)),
        DEADLINE_MS,
      );
      proc.stdout.on("data", (d: string) => {
        out += d;
        const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[0]);
        }
      });
    });
    assert.doesNotMatch(out, /demo/i, "no demo is written or served");
    const body = (await (await fetch(`${url}api/conversations`)).json()) as {
      conversations: { project: string }[];
    };
    assert.deepEqual(body.conversations.map((c) => c.project).sort(), [f.app, f.app, f.lib]);
    const page = await (await fetch(url)).text();
    assert.match(page, /<table/, "the Console is served at /");
    proc.kill("SIGINT");
    assert.equal(await exited, 0);
  });

  it("opens only the store, its --…-- directories and their files when it lists them", {
    skip: skipWithoutStrace(),
  }, async (t) => {
    const f = fixture(t);
    // Things that must never be opened: a folder not named by Pi, a folder one level down,
    // a linked --…-- folder's target, a file beside the store.
    const other = join(f.store, "other");
    mkdirSync(other);
    writeSession(other, "o.jsonl", [header(f.app)]);
    const nested = join(f.store, encodeCwd(f.app), "nested");
    mkdirSync(nested);
    writeSession(nested, "n.jsonl", [header(f.app)]);
    const target = join(f.base, "target");
    mkdirSync(target);
    writeSession(target, "t.jsonl", [header(join(f.base, "x"))]);
    symlinkSync(target, join(f.store, encodeCwd(join(f.base, "x"))));
    const trace = await traceOpens(MAIN, ["catalogue", "--pi-sessions", f.store], {
      env: { HOME: f.home },
    });
    // The linked --…-- folder is a refused root: named on stderr, and the status is 1.
    assert.equal(trace.code, 1, trace.stderr);
    assert.match(
      trace.stderr,
      /^refused: unsafe-path: root --\S+--\/pi-agent: .+ is a symbolic link\.$/m,
    );
    const mine = trace.opened.filter((p) => p.startsWith(`${f.base}/`));
    const allowed = (p: string): boolean => {
      if (p === f.store) return true;
      const rel = p.slice(f.store.length + 1).split("/");
      if (!p.startsWith(`${f.store}/`) || rel.length > 2) return false;
      const [dir, file] = rel;
      return /^--.+--$/.test(dir ?? "") && (file === undefined || file.endsWith(".jsonl"));
    };
    assert.deepEqual(
      mine.filter((p) => !allowed(p)),
      [],
    );
    for (const never of [other, nested, target]) {
      assert.ok(!mine.some((p) => p.startsWith(never)), `${never} was opened`);
    }
    // The trace is real: the session files were opened.
    assert.equal(mine.filter((p) => p.endsWith(".jsonl")).length, 3);
  });
});
