// Exports written as the pages are read (issue 22 item 9): the document goes to its sink in
// chunks while the branch is still being read, no chunk holds more than a part's text, a long
// string is written piece by piece (joined again exactly), and a refusal part-way ends the
// document with a section saying so. The bound itself: a command with a heap smaller than the
// session exports it whole, in each format.
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as commonmark from "commonmark";
import { EXPORT_CHUNK_CHARS, type ExportFormat } from "../../src/export/index.ts";
import { LIMITS } from "../../src/protocol/chat-01.ts";
import type { Reader } from "../../src/reader/reader.ts";
import { startCli } from "../cli/run-cli.ts";
import { tempDir } from "../helpers/reader.ts";
import { exportText, outputOf, replacingReader, writeLongSession } from "./export-fixture.ts";
import { activeContent, RENDERERS } from "./hostile-links.ts";

const FORMATS: ExportFormat[] = ["md", "html", "json"];

/** `reader`, counting its `next` calls. */
function counting(reader: Reader): { reader: Reader; nexts: () => number } {
  let n = 0;
  return {
    reader: {
      ...reader,
      next: (r) => {
        n++;
        return reader.next(r);
      },
    },
    nexts: () => n,
  };
}

/** The output blocks of a Markdown export as CommonMark reads it (not the `$ …` commands). */
function codeBlocks(markdown: string): string[] {
  const walker = new commonmark.Parser().parse(markdown).walker();
  const out: string[] = [];
  for (let e = walker.next(); e !== null; e = walker.next()) {
    const literal = e.node.literal ?? "";
    if (e.entering && e.node.type === "code_block" && !literal.startsWith("$ ")) out.push(literal);
  }
  return out;
}

/** Equal, without printing megabytes when they are not. */
function assertSame(actual: string, expected: string, what: string): void {
  if (actual === expected) return;
  let i = 0;
  while (i < actual.length && actual[i] === expected[i]) i++;
  assert.fail(
    `${what}: differs at ${i} of ${expected.length}: ${JSON.stringify(actual.slice(i, i + 80))} for ${JSON.stringify(expected.slice(i, i + 80))}`,
  );
}

function unescapeHtml(s: string): string {
  return s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

describe("export streaming", () => {
  it("hands the document to its sink in chunks while the branch is still being read", async (t) => {
    const long = writeLongSession(t, 400, 30_000);
    for (const format of FORMATS) {
      const { reader, nexts } = counting(long.reader);
      const readsAtChunk: number[] = [];
      const out = await exportText(reader, long.conversation, format, () =>
        readsAtChunk.push(nexts()),
      );
      assert.equal(out.end.ok, true, format);
      const pages = nexts() + 1;
      assert.ok(pages >= 10, `${format}: ${pages} pages`);
      assert.ok(out.text.length > 12_000_000, `${format}: ${out.text.length} characters`);
      // Written as read: the first chunk before the second page was read, and chunks all along.
      assert.equal(readsAtChunk[0], 0, `${format}: the first chunk waited for no other page`);
      assert.ok(new Set(readsAtChunk).size >= pages - 1, `${format}: chunks after every page`);
      // No chunk holds more than a chunk's worth and one part's text (a 30 kB output here), or
      // for JSON one page (an 8 MiB limit; about 1 MiB here).
      const bound = format === "json" ? 2_000_000 : EXPORT_CHUNK_CHARS + 100_000;
      assert.ok(out.largestChunk <= bound, `${format}: ${out.largestChunk}`);
    }
  });

  it("joins a string cut into a few fragments, and writes a longer one piece by piece, exactly", async (t) => {
    const short = outputOf(1, 600_000); // 3 fragments: joined and read as a whole
    const long = `${outputOf(2, 3_000_000)}\n`; // 12 or more: written as it comes
    const s = writeLongSession(t, 0, 0, [resultTurn("x1", short), resultTurn("x2", long)].flat());
    const md = await exportText(s.reader, s.conversation, "md");
    const blocks = codeBlocks(md.text);
    assert.equal(blocks.length, 2, "each output in one fence");
    assertSame(blocks[0] ?? "", `${short}\n`, "the short output");
    assertSame(blocks[1] ?? "", long, "the long output");
    assert.match(md.text, /\n\*Output, long \(read in \d+ pieces\):\*\n\n```\nturn 2 line 0:/);
    assert.match(md.text, new RegExp(`\n\\*${long.split("\n").length - 1} lines\\.\\*\n`));
    assert.ok(md.largestChunk <= LIMITS.partBytes, `largest chunk ${md.largestChunk}`);
    const html = await exportText(s.reader, s.conversation, "html");
    const pres = [...html.text.matchAll(/<pre class="code"><code>([\s\S]*?)<\/code><\/pre>/g)].map(
      (m) => unescapeHtml((m[1] ?? "").replace(/<[^>]+>/g, "")),
    );
    assert.ok(pres.includes(short), "the short output whole in HTML");
    assert.ok(pres.includes(long), "the long output whole in HTML");
    const json = JSON.parse((await exportText(s.reader, s.conversation, "json")).text) as {
      pages: { parts: { blocks: { type: string; text?: string }[] }[] }[];
    };
    const texts = json.pages.flatMap((p) => p.parts.flatMap((part) => part.blocks));
    const joined = texts.map((b) => b.text ?? "").join("");
    assert.ok(joined.includes(short) && joined.includes(long), "the JSON pages hold both");
  });

  it("writes long text, thinking, arguments and images piece by piece, each where it belongs", async (t) => {
    const text = `${outputOf(4, 1_200_000)}\n[click](javascript:alert(1)) <b>x</b>`;
    const thinking = outputOf(5, 1_200_000);
    const content = outputOf(6, 1_500_000);
    const png = "iVBORw0KGgo".padEnd(2_000_000, "A");
    const bad = `${"A".repeat(1_100_000)}<script>${"A".repeat(400_000)}`;
    const s = writeLongSession(t, 0, 0, [
      {
        type: "message",
        id: "big-user",
        timestamp: "2026-01-01T00:10:00.000Z",
        message: {
          role: "user",
          content: [
            { type: "image", mimeType: "image/png", data: png },
            { type: "image", mimeType: "image/png", data: bad },
          ],
          timestamp: 1,
        },
      },
      {
        type: "message",
        id: "big-reply",
        timestamp: "2026-01-01T00:10:01.000Z",
        message: {
          role: "assistant",
          content: [
            { type: "thinking", thinking },
            { type: "text", text },
            { type: "toolCall", id: "w1", name: "write", arguments: { path: "a.txt", content } },
          ],
          stopReason: "toolUse",
          timestamp: 2,
        },
      },
    ]);
    const md = (await exportText(s.reader, s.conversation, "md")).text;
    const doc = new commonmark.Parser().parse(md);
    const walker = doc.walker();
    const found: { literal: string; quoted: boolean }[] = [];
    for (let e = walker.next(); e !== null; e = walker.next()) {
      if (!e.entering || e.node.type !== "code_block") continue;
      found.push({ literal: e.node.literal ?? "", quoted: e.node.parent?.type === "block_quote" });
    }
    assert.deepEqual(
      found.map((f) => [f.quoted, f.literal.length]),
      [
        [true, thinking.length + 1],
        [false, text.length + 1],
        [false, JSON.stringify({ path: "a.txt", content }).length + 1],
      ],
      "thinking quoted, text and arguments fenced, each whole",
    );
    assertSame(found[1]?.literal ?? "", `${text}\n`, "the long text as written");
    assert.match(md, new RegExp(`\\[image: image/png, ${png.length} characters of base64`));
    for (const render of Object.values(RENDERERS)) assert.deepEqual(activeContent(render(md)), []);
    const html = (await exportText(s.reader, s.conversation, "html")).text;
    const images = [
      ...html.matchAll(
        /<img alt="Image from the conversation" src="data:image\/png;base64,([A-Za-z0-9+/=]*)">/g,
      ),
    ];
    assert.equal(images.length, 2);
    assert.equal(images[0]?.[1], png, "the whole image, written piece by piece");
    const cut = images[1]?.[1] ?? "";
    assert.ok(
      bad.startsWith(cut) && cut.length < bad.indexOf("<"),
      "the bad one cut before its bad piece",
    );
    assert.match(
      html,
      /the image data stops being base64 after \d+ characters; the image is cut there/,
    );
    assert.deepEqual(
      activeContent(
        html.slice(html.indexOf("<body>")),
        /^<img alt="Image from the conversation" src="data:image\/png;base64,[A-Za-z0-9+/=]*">$/,
      ),
      [],
    );
    assert.ok(
      html.includes("[click](javascript:alert(1)) &lt;b&gt;x&lt;/b&gt;"),
      "long text escaped, as written",
    );
  });

  it("opens a longer fence when a long output holds a line that would close it", async (t) => {
    const base = outputOf(3, 1_500_000).split("\n");
    // Lines a fence of three, four or many backticks would end at, spread over the fragments.
    base.splice(10, 0, "```");
    base.splice(8_000, 0, "   `````` ");
    base.splice(16_000, 0, "``````````````````````````````");
    base.splice(20_000, 0, "`` not a fence ``");
    const text = base.join("\n");
    const s = writeLongSession(t, 0, 0, resultTurn("x", text));
    const md = await exportText(s.reader, s.conversation, "md");
    assertSame(
      codeBlocks(md.text).join(""),
      `${text}\n`,
      "every line inside a code block, in order",
    );
    assert.ok(codeBlocks(md.text).length >= 3, "the fence grew at each closing line");
  });

  it("ends the document with a section saying it is incomplete when the file is replaced part-way", async (t) => {
    for (const format of FORMATS) {
      const long = writeLongSession(t, 400, 30_000);
      const reader = replacingReader(long.reader, long.file, 3);
      const out = await exportText(reader, long.conversation, format);
      assert.equal(out.end.ok, false, format);
      assert.ok(!out.end.ok && out.end.stopped === "refused");
      assert.equal(
        out.end.ok || out.end.stopped !== "refused" ? "" : out.end.refusal.code,
        "source-replaced",
      );
      if (format === "md") {
        assert.match(
          out.text,
          /\n## Export stopped\n\n> \*\*This export is incomplete\.\*\* source-replaced: .* export the branch again\.\n$/,
        );
        assert.ok(!out.text.includes("## End of the branch"));
      } else if (format === "html") {
        assert.match(
          out.text,
          /<footer class="notice stopped" role="alert"><h2>Export stopped<\/h2><p><strong>This export is incomplete\.<\/strong> source-replaced: /,
        );
        assert.match(out.text, /<\/footer>\n<\/body>\n<\/html>\n$/);
        assert.doesNotMatch(
          out.text,
          /<article[^>]*>(?:(?!<\/article>)[\s\S])*<\/main>/,
          "every article closed",
        );
      } else {
        const doc = JSON.parse(out.text) as { pages: unknown[]; stopped: { code: string } };
        assert.equal(doc.stopped.code, "source-replaced");
        assert.equal(doc.pages.length, 3, "the pages read before the refusal");
      }
    }
  });

  it("exports a session larger than the command's heap, in every format", async (t) => {
    const long = writeLongSession(t, 340, 50_000);
    const size = statSync(long.file).size;
    assert.ok(size > 16 * 1024 * 1024, `${size} bytes`);
    const dir = tempDir(t, "export-heap-");
    for (const format of FORMATS) {
      const out = join(dir, `x.${format}`);
      const child = startCli(
        t,
        [
          "export",
          long.conversation,
          "--project",
          long.projectRoot,
          "--format",
          format,
          "--out",
          out,
        ],
        // A heap of 32 MB for a 16 MB session: holding its pages, or the document, cannot fit.
        { env: { NODE_OPTIONS: "--max-old-space-size=32" } },
      );
      await child.waitFor(
        "the export to end",
        (c) => c.proc.exitCode !== null || c.proc.signalCode !== null,
        180_000,
      );
      const exit = await child.exited;
      assert.deepEqual(exit, { code: 0, signal: null }, `${format}: ${child.stderr().slice(-400)}`);
      assert.ok(statSync(out).size > size * 0.8, `${format}: the whole branch`);
      if (format === "md")
        assert.match(readFileSync(out, "utf8"), /## End of the branch\n\n- Entries: 1021\n/);
    }
  });
});

/** A tool call and its result whose output is `text`. */
function resultTurn(id: string, text: string): object[] {
  return [
    {
      type: "message",
      id: `${id}-call`,
      timestamp: "2026-01-01T00:10:00.000Z",
      message: {
        role: "assistant",
        content: [{ type: "toolCall", id: `${id}_c`, name: "bash", arguments: { command: "cat" } }],
        stopReason: "toolUse",
        timestamp: 1,
      },
    },
    {
      type: "message",
      id: `${id}-result`,
      timestamp: "2026-01-01T00:10:01.000Z",
      message: {
        role: "toolResult",
        toolCallId: `${id}_c`,
        toolName: "bash",
        isError: false,
        content: [{ type: "text", text }],
        timestamp: 2,
      },
    },
  ];
}
