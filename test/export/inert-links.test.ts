// Issue 22 item 5: no link in an export runs script, whichever renderer shows it. Each hostile
// link form (hostile-links.ts) is put in a session as a user's message, an assistant's reply
// and its thinking; the Markdown export is rendered by four common renderers at their most
// permissive and the HTML export is read as a browser would: neither may hold a script URL,
// a handler or an active element, and each must still show the words the person wrote.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inertMarkdown } from "../../src/export/markdown.ts";
import { markdownTree } from "../../src/present/markdown.ts";
import {
  assistant,
  header,
  project,
  readerFor,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";
import { exportText } from "./export-fixture.ts";
import {
  activeContent,
  HOSTILE_LINKS,
  RENDERERS,
  SAFE_LINKS,
  visibleText,
} from "./hostile-links.ts";

/** The one image form the HTML export writes itself. */
const OWN_IMAGE =
  /^<img alt="Image from the conversation" src="data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+">$/;

function sessionOf(t: Parameters<typeof tempDir>[0], texts: string[]) {
  const p = project(tempDir(t, "export-links-"));
  const lines: object[] = [header(p.projectRoot)];
  let parent: string | null = null;
  texts.forEach((text, i) => {
    lines.push(user(`u${i}`, parent, text, 3 * i));
    lines.push({
      type: "message",
      id: `a${i}`,
      parentId: `u${i}`,
      timestamp: new Date(Date.parse("2026-01-01T00:00:00Z") + (3 * i + 1) * 1000).toISOString(),
      message: {
        role: "assistant",
        content: [
          { type: "thinking", thinking: text },
          { type: "text", text },
        ],
        stopReason: "stop",
        timestamp: 3 * i + 1,
      },
    });
    parent = `a${i}`;
  });
  lines.push(assistant("end", parent, "Done.", 9_999));
  writeSession(p.sessionsDir, "links.jsonl", lines);
  const reader = readerFor(p).raw;
  const conversation = reader.catalogue().conversations[0]?.conversation ?? "";
  return { reader, conversation };
}

describe("inert-markdown", () => {
  it("leaves no script link in any renderer's HTML when the text holds a hostile link form", () => {
    for (const c of HOSTILE_LINKS) {
      const markdown = inertMarkdown(c.text);
      for (const [name, render] of Object.entries(RENDERERS)) {
        const html = render(markdown);
        assert.deepEqual(
          activeContent(html),
          [],
          `${c.name} in ${name}: ${JSON.stringify(markdown)}`,
        );
        const shown = visibleText(html);
        for (const word of c.shows) {
          assert.ok(shown.includes(word), `${c.name} in ${name} shows ${word}: ${shown}`);
        }
      }
    }
  });

  it("keeps http(s) and mailto links as links in every renderer", () => {
    for (const link of SAFE_LINKS) {
      const markdown = inertMarkdown(link.text);
      for (const [name, render] of Object.entries(RENDERERS)) {
        const html = render(markdown);
        assert.ok(
          html.includes(`href="${link.href.replace(/&/g, "&amp;")}"`),
          `${name}: ${JSON.stringify(markdown)} → ${html}`,
        );
      }
    }
  });

  it("writes the Console's blocks again, so the text reads as the person wrote it", () => {
    const text = [
      "# Plan #",
      "",
      "Some *em*, **strong**, `code` and ~~gone~~; a_b & c < d.",
      "",
      "- one",
      "- two",
      "  - nested",
      "",
      "3. three",
      "4. four",
      "",
      "> quoted",
      "> still",
      "",
      "```js",
      "let a = `x`;",
      "```",
      "",
      "    indented code",
      "",
      "| a | b |",
      "|---|---|",
      "| `x\\|y` | [docs](https://example.test/d) |",
      "",
      "line one",
      "line two",
      "",
      "***",
      "",
      "2024\\. a year, not a list",
    ].join("\n");
    assert.equal(
      inertMarkdown(text),
      [
        "# Plan",
        "",
        "Some *em*, **strong**, `code` and ~~gone~~; a\\_b & c \\< d.",
        "",
        "- one",
        "- two",
        "  - nested",
        "",
        "3. three",
        "4. four",
        "",
        "> quoted\\",
        "> still",
        "",
        "```js",
        "let a = `x`;",
        "```",
        "",
        "```",
        "indented code",
        "```",
        "",
        "| a | b |",
        "| --- | --- |",
        "| `x\\|y` | [docs](<https://example.test/d>) |",
        "",
        "line one\\",
        "line two",
        "",
        "***",
        "",
        "2024\\. a year, not a list",
      ].join("\n"),
    );
  });

  it("numbers an ordered list from its own start, 1 included", () => {
    assert.equal(
      JSON.stringify(markdownTree("1. a\n2. b")),
      '[{"tag":"ol","children":[{"tag":"li","children":["a"]},{"tag":"li","children":["b"]}]}]',
    );
    assert.equal((markdownTree("7. a")[0] as { start?: number }).start, 7);
  });
});

describe("exports of hostile links", () => {
  it("leaves no script link in the Markdown export rendered by each renderer, and shows every word", async (t) => {
    const s = sessionOf(
      t,
      HOSTILE_LINKS.map((c) => c.text),
    );
    const md = (await exportText(s.reader, s.conversation, "md")).text;
    for (const [name, render] of Object.entries(RENDERERS)) {
      const html = render(md);
      assert.deepEqual(activeContent(html), [], name);
      const shown = visibleText(html);
      for (const c of HOSTILE_LINKS) {
        for (const word of c.shows)
          assert.ok(shown.includes(word), `${name}: ${c.name} shows ${word}`);
      }
    }
  });

  it("leaves no script link in the HTML export, and shows every word", async (t) => {
    const s = sessionOf(
      t,
      HOSTILE_LINKS.map((c) => c.text),
    );
    const html = (await exportText(s.reader, s.conversation, "html")).text;
    // The head is the export's own (its CSP meta, its style); the body holds the conversation.
    const body = html.slice(html.indexOf("<body>"));
    assert.deepEqual(activeContent(body, OWN_IMAGE), []);
    // Each case in its own article: the words shown there are the case's.
    const articles = [
      ...html.matchAll(/<article class="part message user">([\s\S]*?)<\/article>/g),
    ];
    assert.equal(articles.length, HOSTILE_LINKS.length);
    HOSTILE_LINKS.forEach((c, i) => {
      const shown = visibleText(articles[i]?.[1] ?? "");
      for (const word of c.shows)
        assert.ok(shown.includes(word), `${c.name} shows ${word}: ${shown}`);
    });
    for (const href of html.matchAll(/href="([^"]*)"/g)) {
      assert.match(href[1] ?? "", /^(https?|mailto):/, "only http(s) and mailto links");
    }
  });

  it("keeps each text exactly, as data, in the JSON export", async (t) => {
    const s = sessionOf(
      t,
      HOSTILE_LINKS.map((c) => c.text),
    );
    const doc = JSON.parse((await exportText(s.reader, s.conversation, "json")).text) as {
      pages: { parts: { entry: string; blocks: { type: string; text?: string }[] }[] }[];
    };
    const users = doc.pages.flatMap((p) => p.parts).filter((p) => p.entry.startsWith("n.u"));
    const texts = users.map((p) => p.blocks.find((b) => b.type === "text")?.text);
    assert.deepEqual(
      texts,
      HOSTILE_LINKS.map((c) => c.text),
    );
  });
});
