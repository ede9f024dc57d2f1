import assert from "node:assert/strict";
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { conversationId, type Part, sessionsDirOf } from "../../src/index.ts";
import { logIn, postLogin } from "../helpers/login.ts";
import { assistant, header, project, tempDir, user, writeSession } from "../helpers/reader.ts";
import { assertValid } from "../helpers/schema.ts";
import { firstForbidden } from "./hostile.ts";
import { runCli, startCli } from "./run-cli.ts";

type Fixture = { root: string; file: string; id: string; sources: string[] };

function fixture(t: TestContext, lines: (object | string)[] = []): Fixture {
  const p = project(tempDir(t, "cli-"));
  const body = lines.length > 0 ? lines : [user("u1", null, "hello"), assistant("a1", "u1", "hi")];
  const file = writeSession(p.sessionsDir, "s.jsonl", [
    header(p.projectRoot, { name: "ignored" }),
    ...body,
  ]);
  return {
    root: p.projectRoot,
    file,
    id: conversationId(p.projectRoot, p.seat, "s.jsonl"),
    sources: ["--project", p.projectRoot, "--seat", p.seat],
  };
}

/** `n` messages, user and assistant in turn, each the child of the one before. */
function chain(n: number, text = (i: number) => `message ${i}`): object[] {
  return Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? user(`e${i}`, i === 0 ? null : `e${i - 1}`, text(i), i + 1)
      : assistant(`e${i}`, `e${i - 1}`, text(i), i + 1),
  );
}

function line(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

/** Display columns of a line of ASCII and box-drawing characters (one column each). */
function columns(s: string): number {
  return [...s].length;
}

describe("conversation cli", { concurrency: 4 }, () => {
  it("prints help for the command and every subcommand when --help is given", async (t) => {
    const all = [
      ["--help"],
      ["-h"],
      ["help", "read"],
      ["catalogue", "--help"],
      ["read", "--help"],
      ["follow", "--help"],
      ["serve", "-h"],
    ];
    const results = await Promise.all(all.map((args) => runCli(t, args)));
    for (const [i, r] of results.entries()) {
      assert.equal(r.code, 0, all[i]?.join(" "));
      // From the checkout the command is run through npm (invocation.ts).
      assert.match(r.stdout, /^Usage: npm run conversation -- /);
      assert.equal(r.stderr, "");
      for (const l of r.stdout.split("\n")) assert.ok(columns(l) <= 80, `too wide: ${l}`);
    }
  });

  it("exits 2 with a usage error when flags or arguments are wrong", async (t) => {
    const { sources, id, root } = fixture(t);
    const cases: [string[], RegExp][] = [
      [[], /name a command/],
      [["list"], /unknown command "list"/],
      [["catalogue", "--bogus", ...sources], /Unknown option '--bogus'/],
      [["read", ...sources], /missing the conversation <id>/],
      [["read", id, "extra", ...sources], /unexpected argument "extra"/],
      [["read", id, "--from-start", ...sources], /Unknown option '--from-start'/],
      [["read", id, "--branch", ...sources], /argument missing|--branch/],
      [["catalogue", "--pi", "--pi-sessions", root], /give one/],
      [["catalogue", "--config", "x.json", "--project", root], /cannot be used together/],
      [["catalogue", "--project", root, "--seat", "../up"], /not a seat name/],
      [["serve", "--port", "70000", ...sources], /not a port/],
      [["serve", "--host", "0.0.0.0", "--port", "0", ...sources], /loopback only/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(t, args)));
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i]!;
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /Run "npm run conversation --( \w+)? --help" for usage/);
      assert.equal(r.stdout, "");
    }
  });

  it("lists the catalogue for people when no --json is given", async (t) => {
    const f = fixture(t);
    const r = await runCli(t, ["catalogue", ...f.sources]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    assert.equal(lines[0], "1 conversation in 1 project");
    assert.equal(lines[2], "demo (1)", "the project's group");
    assert.equal(lines[4], "  hello", "the title is the first user message");
    assert.equal(lines[5], `    ${f.id}  seat main`);
    assert.match(lines[6] ?? "", /^ {4}last activity \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · \d+ B$/);
  });

  it("exits 1 naming a refused root on stderr when the project does not exist", async (t) => {
    const missing = join(tempDir(t, "cli-"), "gone");
    const r = await runCli(t, ["catalogue", "--project", missing]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, "0 conversations\n");
    assert.match(r.stderr, /^refused: unavailable: root gone\/main: .+\n$/);
  });

  it("lists the good roots' rows and exits 1 when another root is refused", async (t) => {
    const f = fixture(t);
    const args = ["--project", f.root, "--seat", "main", "--seat", "gone"];
    const text = await runCli(t, ["catalogue", ...args]);
    assert.equal(text.code, 1, text.stderr);
    assert.match(text.stdout, /^1 conversation in 1 project\n/);
    assert.ok(text.stdout.includes(f.id));
    assert.match(text.stderr, /^refused: unavailable: root demo\/gone: .+\n$/);
    const json = await runCli(t, ["catalogue", "--json", ...args]);
    assert.equal(json.code, 1);
    const catalogue = JSON.parse(json.stdout) as { refusedRoots: { seat: string }[] };
    assert.deepEqual(
      catalogue.refusedRoots.map((r) => r.seat),
      ["gone"],
    );
  });

  it("prints the catalogue as one schema-valid document when --json is given", async (t) => {
    const f = fixture(t);
    const r = await runCli(t, ["catalogue", "--json", ...f.sources]);
    assert.equal(r.code, 0, r.stderr);
    const catalogue: unknown = JSON.parse(r.stdout);
    assertValid("catalogue", catalogue);
    assert.deepEqual(
      catalogue.conversations.map((c) => c.conversation),
      [f.id],
    );
  });

  it("reads every page in order as text when a branch spans several pages", async (t) => {
    const f = fixture(t, chain(250));
    const r = await runCli(t, ["read", f.id, ...f.sources]);
    assert.equal(r.code, 0, r.stderr);
    const seen = [...r.stdout.matchAll(/^ {2}message (\d+)$/gm)].map((m) => Number(m[1]));
    assert.deepEqual(
      seen,
      Array.from({ length: 250 }, (_, i) => i),
    );
    assert.match(r.stdout, /\(end of branch main: 250 parts, 3 pages\)\n$/);
    assert.match(r.stdout, /^message 0\n/, "the title first");
  });

  it("reads every page as one JSON document when --json is given", async (t) => {
    const f = fixture(t, chain(250));
    const r = await runCli(t, ["read", f.id, "--json", ...f.sources]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as {
      conversation: string;
      branch: string;
      view: unknown;
      pages: unknown[];
    };
    assert.deepEqual(Object.keys(doc), ["conversation", "branch", "view", "pages"]);
    assert.equal(doc.conversation, f.id);
    assert.equal(doc.branch, "main");
    assertValid("view", doc.view);
    const pages = doc.pages.map((p) => {
      assertValid("page", p);
      return p;
    });
    assert.equal(pages.length, 3);
    assert.deepEqual(
      pages.map((p) => p.nextCursor === null),
      [false, false, true],
    );
    const entries = pages.flatMap((p) => p.parts.map((part) => part.entry));
    assert.deepEqual(
      entries,
      Array.from({ length: 250 }, (_, i) => `n.e${i}`),
    );
  });

  it("reads the named branch when --branch is given and refuses one that does not exist", async (t) => {
    const f = fixture(t, [
      user("u1", null, "q"),
      assistant("a1", "u1", "first answer"),
      assistant("a2", "u1", "second answer"),
    ]);
    const other = await runCli(t, ["read", f.id, "--branch", "main", ...f.sources]);
    assert.equal(other.code, 0, other.stderr);
    assert.match(other.stdout, /first answer/);
    assert.doesNotMatch(other.stdout, /second answer/);
    assert.match(
      other.stdout,
      /^2 branches \(\* the one shown\):\n\* main {2}2 entries\n {2}b\.a2 {2}default/m,
    );
    const fork = await runCli(t, ["read", f.id, "--branch", "b.a2", ...f.sources]);
    assert.equal(fork.code, 0, fork.stderr);
    assert.match(fork.stdout, /second answer/);
    assert.match(fork.stdout, /^\* b\.a2 {2}default · forks from n\.u1 on main · 2 entries$/m);
    const none = await runCli(t, ["read", f.id, "--branch", "b.nope", ...f.sources]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^refused: unknown-branch: /);
    assert.equal(none.stdout, "");
  });

  it("exits 1 with the refusal on stderr when the conversation is unknown", async (t) => {
    const f = fixture(t);
    for (const args of [
      ["read", "pi-0000000000000000000000000000000000000000", ...f.sources],
      ["read", "pi-0000000000000000000000000000000000000000", "--json", ...f.sources],
      ["follow", "no-such-id", ...f.sources],
    ]) {
      const r = await runCli(t, args);
      assert.equal(r.code, 1, args.join(" "));
      // Where it looked, and how to look further: the seats (--seat, '*') and the catalogue.
      const sessions = join(f.root, ".pi", "state", "main", "sessions");
      assert.ok(
        r.stderr.startsWith(
          `refused: unknown-conversation: no conversation ${args[1]} in ${sessions}.\n`,
        ),
        r.stderr,
      );
      assert.match(r.stderr, /--seat, default main/);
      assert.match(
        r.stderr,
        /\nList them: npm run conversation -- catalogue --project \S+ --seat '\*'\n$/,
      );
      assert.equal(r.stdout, "");
    }
  });

  it("shows hostile characters visibly when a session carries escapes and bidi controls", async (t) => {
    const hostile =
      "osc52 \u001b]52;c;cm0gLXJm\u0007 title \u001b]0;pwned\u0007 move \u001b[2J\u001b[H " +
      "c1 \u009b1A bidi invoice\u202etxt.exe sep \u2028 tag \u{e0041} lone \ud800 del \u007f";
    const f = fixture(t, [
      {
        type: "session_info",
        id: "i1",
        parentId: null,
        timestamp: "x",
        name: `Title\u001b]0;x\u0007\nnext`,
      },
      user("u1", "i1", hostile),
      assistant("a1", "u1", hostile),
    ]);
    const cat = await runCli(t, ["catalogue", ...f.sources]);
    const read = await runCli(t, ["read", f.id, ...f.sources]);
    for (const r of [cat, read]) {
      assert.equal(r.code, 0, r.stderr);
      assert.equal(firstForbidden(r.stdout), null, "a raw hostile character in the output");
    }
    assert.match(cat.stdout, /^ {2}Title\^\[\]0;x\^G next$/m, "the reader folds the title's LF");
    assert.match(read.stdout, /\^\[\]52;c;cm0gLXJm\^G/);
    assert.match(read.stdout, /invoice<U\+202E>txt\.exe/);
    assert.match(read.stdout, /<U\+009B>1A/);
    assert.match(read.stdout, /<U\+2028>/);
    assert.match(read.stdout, /<U\+E0041>/);
    assert.match(read.stdout, /<U\+D800>/);
    assert.match(read.stdout, /del \^\?/);
  });

  it("wraps text to 80 columns when messages are long", async (t) => {
    const long = `${"lorem ipsum dolor sit amet ".repeat(40)}${"x".repeat(300)} end`;
    const f = fixture(t, [user("u1", null, long), assistant("a1", "u1", `${long}\n\tindented`)]);
    const r = await runCli(t, ["read", f.id, ...f.sources]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    for (const l of lines) assert.ok(columns(l) <= 80, `${columns(l)} columns: ${l}`);
    const body = lines.filter((l) => l.startsWith("  ") && !l.startsWith("  pi-"));
    assert.ok(body.length > 20);
    assert.match(r.stdout, /^ {2}x{78}$/m, "a long word is cut at the edge");
    assert.match(r.stdout, /^ {10}indented$/m, "TAB expands to the next stop");
  });

  it("rejoins a string split into fragments when a message is longer than a fragment", async (t) => {
    const long = "fragmented ".repeat(60_000).trimEnd();
    const f = fixture(t, [user("u1", null, "q"), assistant("a1", "u1", long)]);
    const json = await runCli(t, ["read", f.id, "--json", ...f.sources]);
    const doc = JSON.parse(json.stdout) as { pages: { parts: Part[] }[] };
    const blocks = doc.pages.flatMap((p) => p.parts.flatMap((part) => part.blocks));
    assert.ok(blocks.filter((b) => "fragment" in b).length >= 3, "the reader split it");
    const text = await runCli(t, ["read", f.id, ...f.sources]);
    assert.equal(text.code, 0, text.stderr);
    const body = text.stdout.split("── assistant")[1]?.split("\n").slice(1, -3) ?? [];
    assert.equal(body.map((l) => l.trim()).join(" "), long);
    assert.doesNotMatch(text.stdout, /fragments\]/);
  });

  it("prints an appended entry and exits 0 on SIGINT when following", async (t) => {
    const f = fixture(t);
    const child = startCli(t, ["follow", f.id, ...f.sources]);
    await child.waitFor("the follow to start", (c) => c.stderr().includes("following"));
    assert.equal(child.stdout(), "", "follow prints only what is appended");
    appendFileSync(f.file, line(user("u2", "a1", "appended \u001b[31mlater")));
    await child.waitFor("the appended entry", (c) => c.stdout().includes("appended"));
    assert.match(child.stdout(), /── user · .* n\.u2\n {2}appended \^\[\[31mlater\n/);
    child.proc.kill("SIGINT");
    assert.deepEqual(await child.exited, { code: 0, signal: null });
  });

  it("prints JSON lines of pages from the start when following with --json --from-start", async (t) => {
    const f = fixture(t);
    const child = startCli(t, ["follow", f.id, "--json", "--from-start", ...f.sources]);
    await child.waitFor("the history", (c) => c.stdout().includes("\n"));
    appendFileSync(f.file, line(assistant("a2", "a1", "more")));
    await child.waitFor("a second line", (c) => c.stdout().split("\n").length > 2);
    child.proc.kill("SIGTERM");
    assert.equal((await child.exited).code, 0);
    const pages = child
      .stdout()
      .trimEnd()
      .split("\n")
      .map((l) => {
        const page: unknown = JSON.parse(l);
        assertValid("page", page);
        return page;
      });
    assert.deepEqual(
      pages.map((p) => p.parts.map((part) => part.entry)),
      [["n.u1", "n.a1"], ["n.a2"]],
    );
  });

  it("reads specs and registrations from --config when a JSON file names them", async (t) => {
    const f = fixture(t);
    const dir = join(f.root, "..");
    const config = join(dir, "board.json");
    writeFileSync(
      config,
      JSON.stringify({
        specs: [
          { kind: "repository", projectRoot: "demo", seat: "main" },
          { kind: "fleet", name: "ignored" },
        ],
        registrations: [
          {
            seat: "other",
            layout: "repo",
            project: f.root,
            sessionsDir: sessionsDirOf(f.root, "other"),
            // No adapter for it: one unsupported row (claude-code seats are read: claude-code.test.ts).
            harness: "codex",
            startedAt: "2026-01-01T00:00:00Z",
          },
        ],
      }),
    );
    const r = await runCli(t, ["catalogue", "--json", "--config", config]);
    assert.equal(r.code, 0, r.stderr);
    const catalogue: unknown = JSON.parse(r.stdout);
    assertValid("catalogue", catalogue);
    const rows = catalogue.conversations;
    assert.deepEqual(
      rows.map((row) => [row.conversation === f.id, row.seat, row.unsupportedReason]),
      [
        [true, "main", null],
        [false, "other", "unsupported-harness"],
      ],
    );
    writeFileSync(config, JSON.stringify({ specs: [{ kind: "repository", projectRoot: "." }] }));
    const bad = await runCli(t, ["catalogue", "--config", config]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /board\.json: specs\[0\]\.seat: expected a seat name/);
  });

  it("serves the board and answers /api/conversations when serve --port 0 runs", async (t) => {
    const f = fixture(t);
    // A state directory of its own: no controller runs there, so this board is read-only now.
    const state = tempDir(t, "cli-state-");
    const child = startCli(t, ["serve", "--port", "0", "--state-dir", state, ...f.sources]);
    await child.waitFor("the URL", (c) => /http:\/\/127\.0\.0\.1:\d+\//.test(c.stdout()));
    const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(child.stdout())?.[0] ?? "";
    await child.waitFor("the login link", (c) => /\/login\?token=/.test(c.stdout()));
    const link = /(http:\/\/127\.0\.0\.1:\d+\/login\?token=[A-Za-z0-9_-]{43})\n/.exec(
      child.stdout(),
    );
    assert.ok(link?.[1]?.startsWith(url), "serve prints the operator link for its own port");
    // Nothing to act on yet: a read-only user reads first that no login is needed.
    assert.match(
      child.stdout(),
      /\nReading needs no login\. No controller runs now \(see "npm run conversation -- control --help"\);\nonce one does, log in to steer it from the Console: http:\/\/127\.0\.0\.1:\d+\/login\?token=[A-Za-z0-9_-]{43}\n$/,
    );
    assert.doesNotMatch(child.stdout(), /To act/);
    // The link logs in once, as the login page does it; serve then prints the next one.
    await logIn(link?.[1] ?? "");
    const next =
      /\nA login link was used \(each logs in once\)\. For another login, open: (http:\/\/127\.0\.0\.1:\d+\/login\?token=[A-Za-z0-9_-]{43})\n/;
    await child.waitFor("the next login link", (c) => next.test(c.stdout()));
    const second = next.exec(child.stdout())?.[1] ?? "";
    assert.notEqual(second, link?.[1]);
    assert.equal((await postLogin(link?.[1] ?? "")).status, 403, "the used link is refused");
    await logIn(second);
    assert.ok(!child.stderr().includes("token"), "the token is not logged");
    const res = await fetch(`${url}api/conversations`);
    assert.equal(res.status, 200);
    const body: unknown = await res.json();
    assertValid("catalogue", body);
    assert.deepEqual(
      body.conversations.map((c) => c.conversation),
      [f.id],
    );
    child.proc.kill("SIGINT");
    assert.deepEqual(await child.exited, { code: 0, signal: null });
  });
});
