// `conversation search` and `conversation export` as a person runs them (child processes):
// hits as JSON and text, the index in $XDG_CACHE_HOME/mosaic-conversation, exports in the
// three formats with hostile text inert (the Markdown rendered by a renderer that allows raw
// HTML still holds no markup from the session), --out never inside a sessions directory.
import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import MarkdownIt from "markdown-it";
import { commandPrefix } from "../../src/cli/invocation.ts";
import { hitText } from "../../src/cli/search.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { QUERY_MAX_CHARS } from "../../src/search/query.ts";
import { writeBoardFixture } from "../board/fixture.ts";
import { writeReadingFixture } from "../board/reading-fixture.ts";
import { checkoutEnv, ROOT, runLine } from "../helpers/packed.ts";
import {
  header,
  idOf,
  project as projectOf,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";
import { findProblems } from "../helpers/schema.ts";
import { firstForbidden } from "./hostile.ts";
import { runCli } from "./run-cli.ts";

/** A raw-HTML-allowing renderer: the worst a Markdown viewer could do with an export. */
const permissive = new MarkdownIt({ html: true, linkify: true });

function assertInertHtml(html: string, where: string): void {
  assert.doesNotMatch(html, /<script/i, `${where}: a script element`);
  assert.doesNotMatch(html, /<(style|iframe|object|embed|svg)\b/i, `${where}: markup from content`);
  for (const img of html.match(/<img\b[^>]*>/gi) ?? []) {
    assert.match(
      img,
      /^<img alt="Image from the conversation" src="data:image\/png;base64,[A-Za-z0-9+/=]+">$/,
      `${where}: ${img}`,
    );
  }
  assert.doesNotMatch(html, /<[^>]+\son\w+\s*=/i, `${where}: an event handler attribute`);
  assert.doesNotMatch(
    html,
    /href\s*=\s*"?\s*(javascript|data|vbscript|file):/i,
    `${where}: a script link`,
  );
}

/**
 * A search cache of the suite's own: XDG_CACHE_HOME points into a temp dir while the suite
 * runs (the CLI children inherit it), restored and removed after. `dir()` is that cache.
 */
function scratchCache(prefix: string): { dir(): string } {
  let cache = "";
  let saved: string | undefined;
  before(() => {
    cache = mkdtempSync(join(tmpdir(), prefix));
    saved = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = cache;
  });
  after(() => {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
    rmSync(cache, { recursive: true, force: true });
  });
  return { dir: () => cache };
}

describe("conversation search and export", () => {
  const cache = scratchCache("cli-cache-");

  it("prints hits as JSON and as text with the command that reads them", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const json = await runCli(t, ["search", "zanzibarite", "--project", project, "--json"]);
    assert.equal(json.code, 0, json.stderr);
    const hits = JSON.parse(json.stdout) as Record<string, unknown>[];
    assert.equal(hits.length, 1);
    assert.deepEqual(
      { ...hits[0], timestamp: undefined },
      {
        conversation: fx.conversation,
        branch: "main",
        entry: "n.u1",
        snippet: "Please tidy the parser; mention zanzibarite once.",
        matches: [[32, 43]],
        title: "Reading fixture",
        project: "gamma",
        seat: "main",
        timestamp: undefined,
      },
    );
    assert.ok(
      readdirSync(join(cache.dir(), "mosaic-conversation")).includes("search-0-of-2.sqlite"),
    );
    const text = await runCli(t, ["search", "lexer", "--project", project]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /(^|\n)Reading fixture\n {2}gamma \/ main · branch b\.u9 · entry n\.u9 /,
    );
    assert.match(text.stdout, /\[lexer\] approach/);
    assert.match(
      text.stdout,
      new RegExp(`npm run conversation -- read ${fx.conversation} --branch b\\.u9`),
      "the line runs as printed from the checkout",
    );
    const limited = await runCli(t, [
      "search",
      "line",
      "--project",
      project,
      "--json",
      "--limit",
      "1",
    ]);
    assert.equal(JSON.parse(limited.stdout).length, 1);
    const none = await runCli(t, ["search", "nothingatall", "--project", project]);
    assert.equal(none.stdout, "No match.\n");
  });

  it("refuses bad searches and exports with a usage error or a refusal", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    for (const args of [
      ["search", "--project", project],
      ["search", "x", "--project", project, "--limit", "0"],
      ["export", fx.conversation, "--project", project, "--format", "pdf"],
      ["export", "--project", project, "--format", "md"],
    ]) {
      const r = await runCli(t, args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    }
    const empty = await runCli(t, ["search", "***", "--project", project]);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /^refused: bad-query: /);
    // The bound on what one query may cost says the same here as on the board.
    const many = Array.from({ length: 9 }, (_, i) => `word${i}`);
    const costly = await runCli(t, ["search", ...many, "--project", project]);
    assert.equal(costly.code, 1);
    assert.match(
      costly.stderr,
      /^refused: bad-query: A query matches at most 8 words as beginnings of words; this one has 9\. Put the others in "quotes" to match them whole, or leave some out\.\n$/,
    );
    // A whole id nothing has: "pi-0" was a unique prefix of the fixture's id one run in 16.
    const nobody = `pi-${"0".repeat(40)}`;
    const unknown = await runCli(t, ["export", nobody, "--project", project, "--format", "md"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^refused: unknown-conversation: /);
    const inside = join(fx.sessionsDir, "export.md");
    const refused = await runCli(t, [
      "export",
      fx.conversation,
      "--project",
      project,
      "--format",
      "md",
      "--out",
      inside,
    ]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^refused: unsafe-path: --out .* is inside the sessions directory/,
    );
    assert.ok(!existsSync(inside));
  });

  it("exports Markdown when no --format is given", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const args = ["export", fx.conversation, "--project", project];
    const plain = await runCli(t, args);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^# Reading fixture\n/);
    const asked = await runCli(t, [...args, "--format", "md"]);
    assert.equal(
      plain.stdout.replace(/^.*Exported.*$/gm, ""),
      asked.stdout.replace(/^.*Exported.*$/gm, ""),
    );
  });

  it("exports a branch as Markdown, HTML and JSON when asked", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const out = tempDir(t, "export-");
    for (const format of ["md", "html", "json"]) {
      const file = join(out, `x.${format}`);
      const r = await runCli(t, [
        "export",
        fx.conversation,
        "--project",
        project,
        "--branch",
        "main",
        "--format",
        format,
        "--out",
        file,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^wrote /);
    }
    const md = readFileSync(join(out, "x.md"), "utf8");
    assert.match(md, /^# Reading fixture\n/);
    assert.match(md, /\n```diff\n {2}const a = 1;\n- const b = 2;\n\+ const b = 3;\n```\n/);
    assert.match(md, /\n```python\ndef plan\(\):\n/);
    assert.match(md, /\*Output, 45 lines:\*\n```\nline 1\n/);
    assert.match(
      md,
      /- Usage \(3 replies\): in 2\.0k · out 405 · cache 5\.0k read \/ 200 write · \$0\.0210/,
    );
    assertInertHtml(permissive.render(md), "Markdown export");
    const html = readFileSync(join(out, "x.html"), "utf8");
    assert.match(
      html,
      /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; img-src data:; base-uri 'none'; form-action 'none'">/,
    );
    assert.equal(html.match(/<style>/g)?.length, 1);
    assertInertHtml(html.replace(/<style>[^<]*<\/style>/, ""), "HTML export");
    assert.match(
      html,
      /<a href="https:\/\/example\.com\/docs" rel="noopener noreferrer">safe link<\/a>/,
    );
    assert.match(html, /<details class="fold"><summary>Output: 45 lines<\/summary>/);
    const doc = JSON.parse(readFileSync(join(out, "x.json"), "utf8")) as {
      pages: unknown[];
      view: unknown;
    };
    for (const page of doc.pages) assert.deepEqual(findProblems("page", page), []);
    assert.deepEqual(findProblems("view", doc.view), []);
    const stdout = await runCli(t, [
      "export",
      fx.conversation,
      "--project",
      project,
      "--format",
      "json",
    ]);
    assert.equal(stdout.code, 0);
    assert.equal(JSON.parse(stdout.stdout).conversation, fx.conversation);
  });

  it("keeps hostile sessions inert in all three export formats", async (t) => {
    const fx = await writeBoardFixture(t);
    const id = idOf(fx.reader(), "hostile.jsonl");
    const out = tempDir(t, "hostile-export-");
    const project = fx.alpha.projectRoot;
    for (const format of ["md", "html", "json"]) {
      const file = join(out, `h.${format}`);
      const r = await runCli(t, [
        "export",
        id,
        "--project",
        project,
        "--format",
        format,
        "--out",
        file,
      ]);
      assert.equal(r.code, 0, r.stderr);
    }
    const md = readFileSync(join(out, "h.md"), "utf8");
    assert.equal(firstForbidden(md), null, "no raw control, bidi or invisible character");
    assertInertHtml(permissive.render(md), "hostile Markdown");
    const html = readFileSync(join(out, "h.html"), "utf8");
    assert.equal(firstForbidden(html), null);
    assertInertHtml(html.replace(/<style>[^<]*<\/style>/, ""), "hostile HTML");
    assert.ok(html.includes("&lt;U+202E&gt;"), "the bidi control is shown as a marker");
    assert.equal(html.match(/<img /g)?.length, 1, "only the valid PNG is an image");
    const json = JSON.parse(readFileSync(join(out, "h.json"), "utf8")) as { pages: unknown[] };
    for (const page of json.pages) assert.deepEqual(findProblems("page", page), []);
  });
});

// What a newcomer met running the installed command (issue 14's walk-through): each fixed, each
// as a person runs it.
describe("conversation search and export, as a newcomer runs them", () => {
  const cache = scratchCache("cli-walk-cache-");

  /** The `read` lines printed under the hits (lines are never wrapped). */
  const readLines = (stdout: string) =>
    [...stdout.matchAll(/^ {2}(npm run conversation -- read .*)$/gm)].map((m) => m[1] ?? "");

  it("prints under each hit a read line with the search's sources, which reads that hit as printed", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    // A seat of another name, a store of Pi's own, and a config file: each source form.
    const review = projectOf(fx.base, "gamma", "review-2");
    writeSession(review.sessionsDir, "r.jsonl", [
      header(project),
      user("u1", null, "zanzibarite in the review seat"),
    ]);
    const store = tempDir(t, "walk-store-");
    mkdirSync(join(store, encodeCwd(project)), { recursive: true });
    writeSession(join(store, encodeCwd(project)), "2026-01-01T00-00-00-000Z_s.jsonl", [
      header(project),
      user("u1", null, "zanzibarite in Pi's own store"),
    ]);
    const config = join(tempDir(t, "walk-config-"), "board.json");
    writeFileSync(
      config,
      JSON.stringify({ specs: [{ kind: "repository", projectRoot: project, seat: "review-2" }] }),
    );
    const env = { ...checkoutEnv(), XDG_CACHE_HOME: cache.dir() };
    for (const [sources, flags, text] of [
      [["--project", project, "--seat", "*"], `--project ${project} --seat '\\*'`, "review seat"],
      [["--pi-sessions", store], `--pi-sessions ${store}`, "Pi's own store"],
      [["--config", config], `--config ${config}`, "review seat"],
    ] as const) {
      const r = await runCli(t, ["search", "zanzibarite", ...sources]);
      assert.equal(r.code, 0, r.stderr);
      const reads = readLines(r.stdout);
      assert.ok(reads.length > 0, r.stdout);
      const read: string[] = [];
      for (const line of reads) {
        assert.match(line, new RegExp(` --branch \\S+ ${flags}$`), "the sources, shell-quoted");
        const x = await runLine(t, line, { cwd: ROOT, env, ms: 60_000 });
        assert.equal(x.code, 0, `${line}\n${x.stderr}`);
        assert.match(x.stdout, /zanzibarite/);
        read.push(x.stdout);
      }
      assert.ok(
        read.some((out) => out.includes(text)),
        `one of them reads the hit in the ${text}`,
      );
    }
  });

  it("wraps hit blocks to the width, the read line whole", () => {
    const snippet = `${"a long snippet of many words ".repeat(6)}with zanzibarite in it`;
    const at = snippet.indexOf("zanzibarite");
    const hit = {
      conversation: "pi-0123456789abcdef0123456789abcdef01234567",
      branch: "main",
      entry: "n.u1",
      snippet,
      matches: [[at, at + "zanzibarite".length]] as [number, number][],
      title: "A title long enough that forty columns cannot hold it on one line",
      project: "gamma",
      seat: "main",
      timestamp: "2026-01-01T00:00:01.000Z",
    };
    const text = hitText(hit, ["--project", "/a dir/gamma"], 40);
    const lines = text.split("\n");
    const read = lines.filter((l) => l.includes(" read "));
    assert.deepEqual(read, [
      `  ${commandPrefix()} read ${hit.conversation} --branch main --project '/a dir/gamma'`,
    ]);
    for (const l of lines.filter((x) => !x.includes(" read "))) {
      assert.ok(l.length <= 40, `wider than 40: ${JSON.stringify(l)}`);
    }
    assert.match(text, /\[zanzibarite\]/);
    assert.ok(lines.length > 6, "the title and the snippet took more lines");
  });

  it("keeps text search lines within 80 columns but the read line", async (t) => {
    const fx = writeReadingFixture(t);
    const r = await runCli(t, ["search", "line", "--project", join(fx.base, "gamma")]);
    assert.equal(r.code, 0, r.stderr);
    const wide = r.stdout.split("\n").filter((l) => l.length > 80 && !l.includes(" read "));
    assert.deepEqual(wide, []);
  });

  it("names refused roots as catalogue does, and still prints the good roots' hits", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const gone = await runCli(t, ["search", "zanzibarite", "--project", "/nonexistent"]);
    assert.equal(gone.code, 1);
    assert.equal(gone.stdout, "No match.\n");
    assert.match(gone.stderr, /^refused: unavailable: root nonexistent\/main: /m);
    const json = await runCli(t, ["search", "zanzibarite", "--project", "/nonexistent", "--json"]);
    assert.equal(json.code, 1);
    assert.equal(json.stdout, "[]\n");
    const mixed = await runCli(t, [
      ...["search", "zanzibarite", "--project", project, "--seat", "nope", "--seat", "main"],
    ]);
    assert.equal(mixed.code, 1);
    assert.match(mixed.stdout, /\[zanzibarite\]/, "the good root's hit");
    assert.equal(
      mixed.stderr,
      "refused: unavailable: root gamma/nope: The session root does not exist.\n",
    );
    // No source and no Pi store yet: a note, as catalogue's, and 0.
    const agent = tempDir(t, "walk-agent-");
    const env = { PI_CODING_AGENT_DIR: agent };
    const none = await runCli(t, ["search", "zanzibarite"], { env });
    const cat = await runCli(t, ["catalogue"], { env });
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, "No match.\n");
    assert.equal(none.stderr, cat.stderr, "the same note as catalogue's");
    assert.match(none.stderr, /Pi's session store does not exist yet/);
  });

  it("joins the query's words, all of which must match, and takes words after --", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const both = await runCli(t, ["search", "tidy", "zanzibarite", "--project", project, "--json"]);
    assert.equal(both.code, 0, both.stderr);
    assert.deepEqual(
      (JSON.parse(both.stdout) as { entry: string }[]).map((h) => h.entry),
      ["n.u1"],
    );
    const notAll = await runCli(t, ["search", "zanzibarite", "nothingatall", "--project", project]);
    assert.equal(notAll.stdout, "No match.\n");
    const dashed = await runCli(t, ["search", "--project", project, "--json", "--", "zanzibarite"]);
    assert.equal(dashed.code, 0, dashed.stderr);
    assert.equal((JSON.parse(dashed.stdout) as unknown[]).length, 1);
    const nothing = await runCli(t, ["search", "--project", project, "--"]);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /missing the <query>/);
  });

  it("says a usage error over real lines, and search --help gives the query's limit", async (t) => {
    const r = await runCli(t, ["search", "x", "--limit", "-1", "--project", "/p"]);
    assert.equal(r.code, 2);
    assert.doesNotMatch(r.stderr, /\^J/);
    assert.match(
      r.stderr,
      /^conversation: Option '--limit' argument is ambiguous\.\nDid you forget .*\nTo specify .*'--limit=-XYZ'\.\nRun "/,
    );
    const typed = await runCli(t, ["search", "x", "--a\nb"]);
    assert.match(
      typed.stderr,
      /^conversation: Unknown option '--a\^Jb'\n/,
      "a typed LF stays visible",
    );
    const help = await runCli(t, ["search", "--help"]);
    assert.match(
      help.stdout.replace(/\s+/g, " "),
      new RegExp(`at most ${QUERY_MAX_CHARS} characters`),
    );
  });

  it("refuses an --out it cannot write in words, with what to do, and no stack", async (t) => {
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const dir = tempDir(t, "walk-out-");
    const exportTo = (out: string) =>
      runCli(t, ["export", fx.conversation, "--project", project, "--format", "md", "--out", out]);
    const missing = await exportTo(join(dir, "nonexistent-dir", "x.md"));
    assert.equal(missing.code, 1);
    assert.equal(
      missing.stderr,
      `refused: cannot-write: --out ${join(dir, "nonexistent-dir", "x.md")}: the folder ${join(dir, "nonexistent-dir")} does not exist; create it first (mkdir -p ${join(dir, "nonexistent-dir")}) or name a file in a folder that exists.\n`,
    );
    const folder = await exportTo(dir);
    assert.equal(folder.code, 1);
    assert.equal(
      folder.stderr,
      `refused: cannot-write: --out ${dir} is a folder; name a file in it, for example --out ${join(dir, `${fx.conversation}.md`)}\n`,
    );
    writeFileSync(join(dir, "file"), "");
    const under = await exportTo(join(dir, "file", "x.md"));
    assert.equal(under.code, 1);
    assert.match(under.stderr, /^refused: cannot-write: .* is not a folder; [^\n]*\n$/);
    assert.deepEqual(readdirSync(dir), ["file"], "nothing was written");
  });

  it("refuses search with a cache it cannot make as search-unavailable, in words", async (t) => {
    const fx = writeReadingFixture(t);
    const file = join(tempDir(t, "walk-xdg-"), "a-file");
    writeFileSync(file, "");
    const r = await runCli(t, ["search", "zanzibarite", "--project", join(fx.base, "gamma")], {
      env: { XDG_CACHE_HOME: file },
    });
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `refused: search-unavailable: the search cache ${file}/mosaic-conversation cannot be made: a part of the path is a file, not a folder (ENOTDIR); set XDG_CACHE_HOME to a folder of your own (the cache is $XDG_CACHE_HOME/mosaic-conversation, else ~/.cache/mosaic-conversation).\n`,
    );
    assert.equal(r.stdout, "");
  });

  it("says where export looked for an unknown conversation, with the lines that look further", async (t) => {
    // A whole id no fixture has: a short one would be a prefix a random fixture id may match.
    const UNKNOWN = `pi-${"0".repeat(40)}`;
    const fx = writeReadingFixture(t);
    const project = join(fx.base, "gamma");
    const r = await runCli(t, ["export", UNKNOWN, "--project", project, "--format", "md"]);
    const read = await runCli(t, ["read", UNKNOWN, "--project", project]);
    assert.equal(r.code, 1);
    const sessions = join(project, ".pi", "state", "main", "sessions");
    assert.equal(
      r.stderr,
      [
        `refused: unknown-conversation: no conversation ${UNKNOWN} in ${sessions}.`,
        `Only seat main of ${project} was searched (--seat, default main).`,
        `Search every seat: npm run conversation -- export ${UNKNOWN} --project ${project} --seat '*' --format md`,
        `List them: npm run conversation -- catalogue --project ${project} --seat '*'`,
        "",
      ].join("\n"),
    );
    assert.equal(
      r.stderr.replace(` export ${UNKNOWN} `, ` read ${UNKNOWN} `).replace(" --format md", ""),
      read.stderr,
      "read's message, this export's line",
    );
    assert.doesNotMatch(r.stderr, /reload/);
  });
});
