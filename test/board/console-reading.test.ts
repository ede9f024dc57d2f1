// The Console's reading features in Chromium: Markdown rendered safely (no raw HTML, links
// only http(s)/mailto with rel=noopener noreferrer, images as links never fetched, highlighted
// code), usage per reply and per branch, and tool calls by tool with their raw arguments.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { type Browser, browserSkip, launchBrowser, openConsole } from "./browser.ts";
import { LONG_OUTPUT_LINES, writeReadingFixture } from "./reading-fixture.ts";

if (browserSkip) process.stdout.write(`# Console reading skipped: ${browserSkip}\n`);

const count = (page: Page, selector: string): Promise<number> => page.locator(selector).count();
const text = async (page: Page, selector: string): Promise<string> =>
  (await page.locator(selector).first().textContent()) ?? "";

describe("board Console reading", { skip: browserSkip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  async function openReading(t: Parameters<typeof writeReadingFixture>[0], branch: string) {
    const fx = writeReadingFixture(t);
    const { page, url, requests } = await openConsole(t, browser.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=${branch}`);
    await page.locator("article.part").first().waitFor();
    return { fx, page, requests };
  }

  it("renders Markdown and highlighted code when a reply is Markdown", async (t) => {
    const { page } = await openReading(t, "main");
    const md = page.locator("article.part.assistant .block.text.md").first();
    await md.locator("strong", { hasText: "bold" }).waitFor();
    assert.equal(await md.locator("em").textContent(), "slanted");
    assert.equal(await md.locator(":not(pre) > code").first().textContent(), "inline code");
    assert.equal(await md.locator("li").count(), 2);
    assert.equal(await md.locator("pre.code .hl-keyword").first().textContent(), "const");
    assert.equal(await md.locator("pre.code .hl-comment").textContent(), "// the answer");
    const links = await md
      .locator("a")
      .evaluateAll((as) =>
        as.map((a) => [a.getAttribute("href"), a.getAttribute("rel"), a.getAttribute("target")]),
      );
    assert.deepEqual(links, [
      ["https://example.com/docs", "noopener noreferrer", "_blank"],
      ["mailto:ops@example.com", "noopener noreferrer", "_blank"],
    ]);
  });

  it("keeps hostile Markdown inert when a message carries HTML, scripts and odd links", async (t) => {
    const { page, requests } = await openReading(t, "main");
    const hostile = page.locator("article.part.user").nth(1);
    await hostile.getByText("<script>window.__pwned=1</script>").waitFor();
    assert.equal(await page.evaluate("typeof window.__pwned"), "undefined");
    // Only http(s)/mailto links exist, each with rel="noopener noreferrer".
    const hrefs = await page
      .locator("#parts a")
      .evaluateAll((as) => as.map((a) => `${a.getAttribute("href")} ${a.getAttribute("rel")}`));
    for (const h of hrefs) assert.match(h, /^(https?:|mailto:)\S* noopener noreferrer$/, h);
    assert.ok(
      hrefs.includes("https://tracker.example/pixel.png noopener noreferrer"),
      "image as a link",
    );
    assert.equal(await hostile.locator("img, script, style, iframe").count(), 0);
    assert.equal(
      await hostile.locator("a").count(),
      1,
      "the raw <a> stays text; only the image became a link",
    );
    await hostile.getByText("(file:///etc/passwd)").waitFor();
    await hostile.getByText('<img src=x onerror="window.__pwned=1">').first().waitFor();
    const handlers = await page.evaluate<string[]>(
      `[...document.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => e.tagName + " " + a.name))`,
    );
    assert.deepEqual(handlers, []);
    assert.ok(!requests.some((r) => r.includes("tracker.example")), "the image was never fetched");
    assert.ok(
      requests.every((r) => r.startsWith("http://127.0.0.1:")),
      requests.join("\n"),
    );
  });

  it("shows model, usage and cost per reply and totals for the branch", async (t) => {
    const { page } = await openReading(t, "main");
    const head = page.locator("article.part.assistant .part-head").first();
    assert.equal(await head.locator(".model").textContent(), "claude-sonnet-4-5 · anthropic");
    assert.equal(
      await head.locator(".usage").textContent(),
      "in 1.2k · out 300 · cache 5.0k read / 200 write · $0.0123",
    );
    await page.locator("#conv-totals", { hasText: "3 replies" }).waitFor();
    assert.equal(
      await text(page, "#conv-totals"),
      "Branch usage (3 replies read): in 2.0k · out 405 · cache 5.0k read / 200 write · $0.0210",
    );
  });

  it("leaves an ordinary end out of a reply's head when it stopped to call a tool, as the exports do", async (t) => {
    const { page } = await openReading(t, "main");
    const calling = page.locator("article.part.assistant", { has: page.locator(".tool-edit") });
    await calling.waitFor();
    // Pi records stopReason "toolUse" on every reply that calls a tool: the call below says it.
    assert.deepEqual(await calling.locator(".part-head .meta").allTextContents(), []);
  });

  it("shows tool calls as people read them when a reply edits, writes, runs and reads", async (t) => {
    const { page } = await openReading(t, "main");
    await page.locator(".tool-edit").waitFor();
    assert.equal(await text(page, ".tool-edit .tool-path"), "src/parser.ts");
    assert.deepEqual(await page.locator(".tool-edit pre.diff span").allTextContents(), [
      "  const a = 1;\n",
      "- const b = 2;\n",
      "+ const b = 3;\n",
    ]);
    assert.equal(await count(page, ".tool-edit pre.diff .del"), 1);
    assert.equal(await count(page, ".tool-edit pre.diff .add"), 1);
    assert.equal(await text(page, ".tool-write .tool-path"), "notes/plan.py");
    assert.equal(await text(page, ".tool-write pre.code .hl-keyword"), "def");
    assert.equal(await text(page, ".tool-bash pre.command"), "$ seq 1 45");
    assert.equal(await text(page, ".tool-read .tool-path"), "src/index.ts lines 10–29");
    assert.equal(await text(page, ".tool-json pre.code"), '{\n  "pattern": "x\\ny"\n}');
    // Raw arguments one click away, as recorded.
    const raw = page.locator(".tool-edit details.raw-args");
    assert.equal(await raw.getAttribute("open"), null);
    await raw.locator("summary").click();
    assert.match((await raw.locator(".args").textContent()) ?? "", /^\{"path":"src\/parser.ts"/);
    // Long output folds with its line count; short output does not.
    const fold = page.locator("details.fold", { hasText: `Output: ${LONG_OUTPUT_LINES} lines` });
    await fold.waitFor();
    assert.equal(await fold.getAttribute("open"), null);
    await fold.locator("summary").press("Enter");
    assert.equal(await fold.getAttribute("open"), "");
    // The read's result is highlighted by the file's extension.
    await page.locator(".tool-result-part pre.code .hl-keyword", { hasText: "export" }).waitFor();
  });
});
