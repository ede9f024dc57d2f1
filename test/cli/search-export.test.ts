// `conversation search` and `conversation export` as a person runs them (child processes):
// hits as JSON and text, the index in $XDG_CACHE_HOME/mosaic-conversation, exports in the
// three formats with hostile text inert (the Markdown rendered by a renderer that allows raw
// HTML still holds no markup from the session), --out never inside a sessions directory.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import MarkdownIt from "markdown-it";
import { writeBoardFixture } from "../board/fixture.ts";
import { writeReadingFixture } from "../board/reading-fixture.ts";
import { idOf, tempDir } from "../helpers/reader.ts";
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

describe("conversation search and export", () => {
  let cache: string;
  let saved: string | undefined;
  before(() => {
    cache = mkdtempSync(join(tmpdir(), "cli-cache-"));
    saved = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = cache;
  });
  after(() => {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
    rmSync(cache, { recursive: true, force: true });
  });

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
    assert.ok(readdirSync(join(cache, "mosaic-conversation")).includes("search-0-of-2.sqlite"));
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
      ["search", "x", "y", "--project", project],
      ["export", fx.conversation, "--project", project],
      ["export", fx.conversation, "--project", project, "--format", "pdf"],
      ["export", "--project", project, "--format", "md"],
    ]) {
      const r = await runCli(t, args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    }
    const empty = await runCli(t, ["search", "***", "--project", project]);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /^refused: bad-query: /);
    const unknown = await runCli(t, ["export", "pi-0", "--project", project, "--format", "md"]);
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
