// Every command line the project prints or documents runs as printed, from the checkout
// (issue 11 §3): the README's shell blocks (placeholders such as DIR and <id> filled in with a
// scratch fixture), each --help's commands, the hints of usage errors and of
// unknown-conversation, `npm start`'s hints and the controller's Attach: line. Each line runs
// in a shell as a contributor types it (npm finds Node 24 itself), with a deadline.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { conversationId } from "../../src/index.ts";
import { encodeClaudeCwd } from "../../src/reader/harness/claude-code/store.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { richClaudeSession } from "../helpers/claude-sessions.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { logIn } from "../helpers/login.ts";
import {
  checkoutEnv,
  interrupt,
  isCleanInterrupt,
  type Proc,
  ROOT,
  runLine,
  startLine,
} from "../helpers/packed.ts";
import { assistant, header, project, user, writeSession } from "../helpers/reader.ts";
import { writeAgentFiles } from "../helpers/real-pi.ts";

const version = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }
).version;

type Documented = { section: string; line: string };

/**
 * The commands in the README's ```sh blocks: `\`-continued lines joined, a heredoc kept whole,
 * comments dropped, each with the `## ` section it is in.
 */
function readmeCommands(): Documented[] {
  const out: Documented[] = [];
  let section = "";
  let inBlock = false;
  let pending = "";
  let heredoc: string | null = null;
  for (const raw of readFileSync(join(ROOT, "README.md"), "utf8").split("\n")) {
    if (!inBlock && raw.startsWith("## ")) section = raw.slice(3);
    if (raw.startsWith("```")) {
      inBlock = !inBlock && raw === "```sh";
      continue;
    }
    if (!inBlock) continue;
    if (heredoc !== null) {
      pending += `\n${raw}`;
      if (raw === heredoc) {
        out.push({ section, line: pending });
        pending = "";
        heredoc = null;
      }
      continue;
    }
    const line = raw.replace(/\s+#\s.*$/, "").trimEnd();
    if (line.trim() === "" || line.trim().startsWith("#")) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const whole = `${pending}${line.trim()}`;
    pending = "";
    const marker = /<<'(\w+)'$/.exec(whole);
    if (marker) {
      heredoc = marker[1] ?? null;
      pending = whole;
      continue;
    }
    out.push({ section, line: whole });
  }
  return out;
}

/** A line of the README with its placeholders filled: optional [groups] left out. */
function fill(line: string, values: Record<string, string>): string {
  let s = line.replace(/ \[--[^\]]+\]/g, "");
  for (const [k, v] of Object.entries(values)) s = s.replaceAll(k, v);
  return s;
}

/** Pi's store for lines with no source (it would be the machine's ~/.pi/agent otherwise). */
const AGENT = mkdtempSync(join(tmpdir(), "pc-agent-"));
// The search index goes under AGENT too, never the machine's own ~/.cache.
const shell = {
  cwd: ROOT,
  // And Claude Code's store under it too, for the README's `--claude` lines.
  env: {
    ...checkoutEnv(),
    PI_CODING_AGENT_DIR: AGENT,
    CLAUDE_CONFIG_DIR: join(AGENT, "claude"),
    XDG_CACHE_HOME: join(AGENT, "cache"),
  },
};

async function ok(t: TestContext, line: string, what = line): Promise<string> {
  const r = await runLine(t, line, { ...shell, ms: 90_000 });
  assert.equal(r.code, 0, `${what}\n${r.stderr}`);
  return r.stdout;
}

/** A long-running line: started, waited for, then interrupted as Ctrl-C does. */
async function runUntil(
  t: TestContext,
  line: string,
  what: string,
  test: (p: Proc) => boolean,
  ms = 60_000,
): Promise<Proc> {
  const p = startLine(t, line, shell);
  await p.waitFor(what, test, ms);
  return p;
}

/** Runs an `attach` line as printed: a first screen, then Ctrl-C quits with status 0. */
async function attachAsPrinted(t: TestContext, line: string): Promise<void> {
  const attach = startLine(t, line, { ...shell, stdin: true });
  await attach.waitFor("a first screen", (p) => p.stdout().includes("=== frame"), 60_000);
  attach.proc.stdin?.end("\x03");
  await attach.waitFor("attach to quit", (p) => p.proc.exitCode !== null, DEADLINE_MS);
  assert.equal(attach.proc.exitCode, 0, attach.stderr());
}

describe("printed commands run as printed", { concurrency: 3, timeout: 4 * SLOW_TEST_MS }, () => {
  let base = "";
  let app = "";
  let mainId = "";
  let reviewId = "";
  before(async () => {
    // Short: the README's control line puts a socket under it (sun_path is 108 bytes).
    base = mkdtempSync("/tmp/pc-");
    const main = project(join(base, "data"), "app", "main");
    const review = project(join(base, "data"), "app", "review");
    app = main.projectRoot;
    writeSession(main.sessionsDir, "s.jsonl", [
      header(app),
      // The README's search line (`search parser crash`) finds it.
      user("u1", null, "printed main: the parser crash"),
      assistant("a1", "u1", "ok"),
    ]);
    writeSession(review.sessionsDir, "r.jsonl", [
      header(app),
      user("u1", null, "printed review"),
      assistant("a1", "u1", "ok"),
    ]);
    mainId = conversationId(app, "main", "s.jsonl");
    reviewId = conversationId(app, "review", "r.jsonl");
    const store = join(AGENT, "sessions", encodeCwd(app));
    mkdirSync(store, { recursive: true });
    writeSession(store, "2026-01-01T00-00-00-000Z_x.jsonl", [
      header(app),
      user("u1", null, "printed store"),
      assistant("a1", "u1", "ok"),
    ]);
    const claude = richClaudeSession(app);
    claude.write(
      join(AGENT, "claude", "projects", encodeClaudeCwd(app), `${claude.sessionId}.jsonl`),
    );
    const { createReader, rootsFromSpecs } = await import("../../src/index.ts");
    const reader = createReader({
      roots: () => rootsFromSpecs([{ kind: "pi-agent", sessionsDir: join(AGENT, "sessions") }], []),
    });
    storeId = reader.catalogue().conversations[0]?.conversation ?? "";
    const claudeReader = createReader({
      roots: () =>
        rootsFromSpecs(
          [{ kind: "claude-code", projectsDir: join(AGENT, "claude", "projects") }],
          [],
        ),
    });
    claudeId = claudeReader.catalogue().conversations[0]?.conversation ?? "";
    assert.ok(claudeId !== "", "the Claude store's conversation");
    assert.ok(storeId !== "", "the store's conversation");
  });
  let storeId = "";
  let claudeId = "";
  after(() => {
    rmSync(base, { recursive: true, force: true });
    rmSync(AGENT, { recursive: true, force: true });
  });

  it("documents the contributor's three commands first, then runs them elsewhere", () => {
    const work = readmeCommands().filter((c) => c.section === "Work on it");
    assert.deepEqual(
      work.slice(0, 3).map((c) => c.line),
      ["npm install", "npm start", "npm test"],
    );
  });

  it("documents in Install the lines the package test runs, for this version", () => {
    const install = readmeCommands().filter((c) => c.section === "Install");
    assert.deepEqual(
      install.map((c) => c.line),
      [
        "npm pack",
        `npm install ./mosaic-conversation-${version}.tgz`,
        "npx conversation --help",
        "npx conversation catalogue --project ~/code/app --seat '*'",
      ],
      "test/package.test.ts packs, installs this tarball by name and runs these lines",
    );
  });

  it("runs the README's commands for your own projects", { timeout: SLOW_TEST_MS }, async (t) => {
    const values = { "~/code/app": app };
    // Not run here: `npm install` would change the tree this suite runs in, `npm test` is this
    // suite, and bare `npm start` has its own test below; control and attach too.
    const elsewhere = new Set(["npm install", "npm test", "npm start"]);
    const lines = readmeCommands().filter(
      (c) =>
        c.section !== "Install" &&
        !elsewhere.has(c.line) &&
        !/ (control|attach|controllers)( |$)/.test(c.line) &&
        !c.line.startsWith("cat >"),
    );
    assert.ok(lines.length >= 4, lines.map((l) => l.line).join("\n"));
    for (const { line: written } of lines) {
      // The installed form (`npx conversation …`, the command section's) runs here as the
      // checkout's: the same words after the prefix (test/package.test.ts runs npx itself).
      const line = written.replace(/^npx conversation /, "npm run conversation -- ");
      // <id>: the project's conversation where the line names the project, else the store's.
      const id = line.includes("--claude")
        ? claudeId
        : line.includes("--project")
          ? mainId
          : storeId;
      const filled = fill(line, { ...values, "<id>": id, "<id or a unique prefix>": id });
      if (line.startsWith("npm start") || line.includes(" serve ")) {
        const p = await runUntil(t, filled, "the board", (x) =>
          x.stdout().includes("The board is serving on"),
        );
        assert.ok(isCleanInterrupt(await interrupt(p)), p.stderr());
      } else if (line.includes(" follow ")) {
        const p = await runUntil(t, filled, "following", (x) => x.stderr().includes("following "));
        assert.ok(isCleanInterrupt(await interrupt(p)), p.stderr());
      } else {
        const out = await ok(t, filled, line);
        if (line.includes(" catalogue --claude")) assert.match(out, /Rich session/);
        else if (line.includes(" catalogue")) assert.match(out, /printed (main|review|store)/);
        if (filled.includes(" search ") && !filled.includes("--json")) {
          // A hit, and the line printed under it reads the hit's conversation as printed.
          const read = /\n {2}(npm run conversation -- read .*)\n/.exec(out)?.[1] ?? "";
          assert.match(read, new RegExp(` read ${mainId} --branch main --project `), out);
          assert.match(await ok(t, read), /the parser crash/);
        }
      }
    }
  });

  it("runs the README's control line on a project under ~, and every attach line it prints", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    // A person's home of its own: the README's ~/code/app and ~/.pi/agent are read as typed,
    // and the default state and runtime places (no XDG variables) fall under it.
    const home = join(base, "h");
    const app = join(home, "code", "app");
    mkdirSync(app, { recursive: true });
    const model = await startFakeModel({ replies: [{ kind: "text", text: "hello" }] });
    t.after(() => model.close());
    const agent = join(home, ".pi", "agent");
    writeAgentFiles(agent, model.baseUrl);
    // The user's default model, which Pi uses when the line names none.
    writeFileSync(
      join(agent, "settings.json"),
      JSON.stringify({ defaultProvider: "loopback", defaultModel: "fake-1" }),
    );
    const env: NodeJS.ProcessEnv = { ...checkoutEnv(), HOME: home };
    for (const k of ["XDG_STATE_HOME", "XDG_RUNTIME_DIR", "PI_CODING_AGENT_DIR"]) delete env[k];
    const here = { cwd: ROOT, env };

    const docs = readmeCommands().filter((c) => c.section === "Steer a Pi from a terminal");
    const controls = docs.filter((c) => c.line.includes(" control "));
    assert.equal(controls.length, 1, "one control line");
    const [control] = controls;
    assert.match(control?.line ?? "", / --project ~\/code\/app --seat main --new /);
    const ctl = startLine(t, control?.line ?? "", here);
    await ctl.waitFor("the Attach: line", (p) => /\nAttach: .*\n/.test(p.stdout()), 120_000);
    const out = ctl.stdout();
    const id = /^Controlling (pi-[0-9a-f]+)$/m.exec(out)?.[1] ?? "";
    assert.ok(id !== "", out);
    const printed = /\nAttach: (.*)\n/.exec(out)?.[1] ?? "";
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const said = /# it prints: Attach: (.*)/.exec(readme)?.[1] ?? "";
    assert.equal(printed, fill(said, { "<conversation-id>": id }), "the README shows it");

    // `controllers`, as the README has it, lists the controller with the same attach line.
    const listing = docs.find((c) => c.line.endsWith(" controllers"));
    assert.ok(listing, "the README lists the running controllers");
    const listed = await runLine(t, listing.line, { ...here, ms: 60_000 });
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(listed.stdout.includes(`\n  ${printed}\n`), listed.stdout);

    // Every grant's line the controller printed, and the README's attach line, run as printed.
    const grantLines = out
      .split("\n")
      .filter((l) => l.startsWith("    npm run conversation -- attach "))
      .map((l) => l.trim());
    assert.deepEqual(
      grantLines.map((l) => l.replace(/.* --grant /, "")),
      ["operator", "observer"],
    );
    const attach = docs.find((c) => c.line.includes(" attach "));
    assert.ok(attach);
    const readmeAttach = fill(attach.line, { "<conversation-id>": id });
    assert.ok(grantLines.includes(readmeAttach), readmeAttach);
    for (const line of grantLines) {
      const a = startLine(t, line, { ...here, stdin: true });
      await a.waitFor("a first screen", (p) => p.stdout().includes("=== frame"), 60_000);
      a.proc.stdin?.end("\x03");
      await a.waitFor("attach to quit", (p) => p.proc.exitCode !== null, DEADLINE_MS);
      assert.equal(a.proc.exitCode, 0, a.stderr());
    }
    assert.ok(isCleanInterrupt(await interrupt(ctl, DEADLINE_MS)), ctl.stderr());
    const none = await runLine(t, listing.line, { ...here, ms: 60_000 });
    assert.match(none.stdout, /^No controller is running \(registry: /m);
  });

  it("resolves control's relative paths from where npm run was typed (INIT_CWD)", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const home = join(base, "rel");
    mkdirSync(join(home, "code", "app"), { recursive: true });
    mkdirSync(join(home, "empty"));
    const npm = `npm --prefix ${ROOT} run conversation -- control --project code/app --seat main`;
    const opts = { cwd: home, env: checkoutEnv(), ms: 60_000 };
    const stray = await runLine(t, `${npm} --session s.jsonl --state-dir st`, opts);
    assert.equal(stray.code, 1, stray.stderr);
    const sessions = join(home, "code", "app", ".pi", "state", "main", "sessions");
    assert.ok(
      stray.stderr.includes(`${join(home, "s.jsonl")} is not in ${sessions}`),
      stray.stderr,
    );
    const agent = await runLine(t, `${npm} --new --agent-from empty --state-dir st`, opts);
    assert.equal(agent.code, 1, agent.stderr);
    assert.ok(
      agent.stderr.includes(`--agent-from ${join(home, "empty")} has none of`),
      agent.stderr,
    );
    assert.ok(existsSync(join(home, "st", "controllers")), "the state dir is the typed one");
  });

  it("runs each command every --help names, as it names it", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const helps = [
      ...["", "catalogue", "read", "follow", "search", "export", "serve", "control", "attach"],
      "controllers",
    ];
    const named = new Set<string>();
    // Each run as a help names it (`npm run conversation -- X --help`, npm's banner and all),
    // so a command a help names is already proven to run as named when it is one of these.
    for (const cmd of helps) {
      const out = await ok(t, `npm run conversation -- ${cmd} --help`);
      for (const m of out.matchAll(
        /npm run conversation -- (catalogue|read|follow|search|export|serve|control|attach|controllers)\b/g,
      )) {
        named.add(m[1] ?? "");
      }
      assert.doesNotMatch(
        out,
        /(^|[\s`"(])conversation (catalogue|read|follow|search|export|serve|control|attach|controllers|<command>)/m,
        `${cmd} --help names the bare bin`,
      );
    }
    assert.ok(named.size >= 5, [...named].join(" "));
    for (const cmd of named) {
      if (!helps.includes(cmd)) await ok(t, `npm run conversation -- ${cmd} --help`);
    }
  });

  it("runs search --help's example, and the read line it prints under each hit", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const help = await ok(t, "npm run --silent conversation -- search --help");
    const example = /\n {2}(npm run conversation -- search .*)\n/.exec(help)?.[1] ?? "";
    assert.match(example, / --project ~\/code\/app$/, help);
    const hits = await ok(t, fill(example, { "~/code/app": app }));
    const reads = [...hits.matchAll(/\n {2}(npm run conversation -- read .*)\n/g)].map(
      (m) => m[1] ?? "",
    );
    assert.ok(reads.length > 0, hits);
    const shown = /\n {2}(npm run conversation -- read .*)\n/.exec(help)?.[1] ?? "";
    for (const read of reads) {
      assert.equal(
        read.replace(/ read \S+ --branch \S+ /, " read <id> --branch <branch> "),
        fill(shown, { "~/code/app": app }),
      );
      const out = await ok(t, read);
      assert.match(out, /the parser crash/);
      assert.match(out, /\(end of branch main: /);
    }
  });

  it("runs the line a usage error points at, and npm start's", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const bad = await runLine(t, "npm run conversation -- read", { ...shell, ms: 60_000 });
    assert.equal(bad.code, 2);
    const hint = /Run "(.+)" for usage\./.exec(bad.stderr)?.[1] ?? "";
    assert.equal(hint, "npm run conversation -- read --help");
    await ok(t, hint);
    const start = await runLine(t, "npm start -- --bogus", { ...shell, ms: 60_000 });
    const startHint = /Run "(.+)" for usage\./.exec(start.stderr)?.[1] ?? "";
    assert.equal(startHint, "npm start -- --help");
    await ok(t, startHint);
  });

  it("runs the lines unknown-conversation suggests, and they find the other seat's conversation", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const r = await runLine(t, `npm run conversation -- read ${reviewId} --project ${app}`, {
      ...shell,
      ms: 60_000,
    });
    assert.equal(r.code, 1);
    const search = /\nSearch every seat: (.*)\n/.exec(r.stderr)?.[1] ?? "";
    const list = /\nList them: (.*)\n/.exec(r.stderr)?.[1] ?? "";
    assert.ok(search && list, r.stderr);
    assert.match(await ok(t, search), /printed review/);
    assert.match(await ok(t, list), /printed main[\s\S]*|printed review/);
  });

  it("runs npm start's hints and its demo controller's Attach: line", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const start = await runUntil(
      t,
      "npm start",
      "the hints and the Attach: line",
      (p) =>
        (p.stdout().includes("In a terminal") && /\nAttach: .*\n/.test(p.stdout())) ||
        p.stderr().includes("not started"),
      180_000,
    );
    assert.doesNotMatch(start.stderr(), /not started/);
    const hints = start
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith("  npm run conversation -- "))
      .map((l) => l.trim());
    assert.equal(hints.length, 2, start.stdout());
    for (const hint of hints) {
      if (hint.includes(" follow ")) {
        const p = await runUntil(t, hint, "following", (x) => x.stderr().includes("following "));
        assert.ok(isCleanInterrupt(await interrupt(p)), p.stderr());
      } else assert.match(await ok(t, hint), /conversations/);
    }
    // The operator link, as `serve` prints it: it logs in, and the board it belongs to marks
    // the demo controller's conversation live (the Console can watch and steer it).
    const link =
      /\nTo act \(steer a run\) from the Console, log in with: (http:\/\/127\.0\.0\.1:\d+)(\/login\?token=[A-Za-z0-9_-]{43})\n/.exec(
        start.stdout(),
      );
    assert.ok(link, start.stdout());
    const [, origin = "", login = ""] = link;
    await logIn(`${origin}${login}`);
    // Each link logs in once: npm start prints the next one, and that one works as printed.
    const next =
      /\nA login link was used \(each logs in once\)\. For another login, open: (http:\S+)\n/;
    await start.waitFor("the next login link", (c) => next.test(c.stdout()));
    await logIn(next.exec(start.stdout())?.[1] ?? "");
    const rows = (await (await fetch(`${origin}/api/conversations`)).json()) as {
      conversations: { title?: string; live: boolean }[];
    };
    const controlled = rows.conversations.filter((r) => r.live);
    assert.deepEqual(
      controlled.map((r) => r.title),
      ["Controlled: steer a real Pi through the socket"],
    );
    const attach = /\nAttach: (.*)\n/.exec(start.stdout())?.[1] ?? "";
    assert.match(attach, /^npm run conversation -- attach --socket \S+ --grant demo-op$/);
    await attachAsPrinted(t, attach);
    assert.ok(isCleanInterrupt(await interrupt(start, 60_000)), start.stderr());
    assert.match(start.stdout(), /\nStopped\.\n/);
  });
});
