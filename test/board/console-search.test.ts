// Search and export in the Console (Chromium): the search box lists hits with the match marked
// and opens the conversation on that branch at that entry; hostile snippets stay text; the
// Export links download each format, and the HTML export opened on its own runs nothing and
// fetches nothing.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import { type BoardSpec, type Reader, rootsFromSpecs } from "../../src/index.ts";
import { createSearch } from "../../src/search/index.ts";
import { tempDir } from "../helpers/reader.ts";
import { ARTIFACTS, type Browser, browserSkip, launchBrowser, openConsole } from "./browser.ts";
import { writeBoardFixture } from "./fixture.ts";
import { writeReadingFixture } from "./reading-fixture.ts";

if (browserSkip) process.stdout.write(`# Console search skipped: ${browserSkip}\n`);

/** A search over `specs` with its index in a fresh cache directory. */
function searchOver(t: TestContext, specs: BoardSpec[], reader: Reader) {
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, []),
    catalogue: () => reader.catalogue(),
    cacheDir: tempDir(t, "console-search-"),
  });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  return opened.search;
}

describe("board Console search and export", { skip: browserSkip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("lists hits and opens the branch at the entry when a hit is chosen", async (t) => {
    const fx = writeReadingFixture(t);
    const reader = fx.reader();
    const specs = [
      { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
    ];
    const { page } = await openConsole(t, browser.context, reader, searchOver(t, specs, reader));
    await page.keyboard.press("/");
    await page.keyboard.type("lexer");
    await page.keyboard.press("Enter");
    const hits = page.locator("#hits button.hit");
    await hits.first().waitFor();
    assert.equal(await hits.count(), 2);
    assert.equal(await page.locator("#search-note").textContent(), "2 matches.");
    assert.deepEqual(
      (await page.locator("#hits mark").allTextContents()).map((s) => s.toLowerCase()),
      ["lexer", "lexer"],
    );
    await hits.filter({ hasText: "Try the lexer approach" }).click();
    const target = page.locator("article.part.target");
    await target.waitFor();
    assert.match((await target.textContent()) ?? "", /Try the lexer approach/);
    assert.match(page.url(), /#c=pi-[0-9a-f]+&b=b\.u9&e=n\.u9$/);

    await page.fill("#search", "nothingmatcheshere");
    await page.press("#search", "Enter");
    await page.locator("#search-note", { hasText: "No match." }).waitFor();
    await page.fill("#search", "***");
    await page.press("#search", "Enter");
    await page.locator("#search-note .refusal .code", { hasText: "bad-query" }).waitFor();
  });

  it("shows hostile text in hits as text when a session carries markup", async (t) => {
    const fx = await writeBoardFixture(t);
    const reader = fx.reader();
    const { page } = await openConsole(t, browser.context, reader, searchOver(t, fx.specs, reader));
    await page.fill("#search", "pwned");
    await page.press("#search", "Enter");
    await page.locator("#hits button.hit").first().waitFor();
    assert.ok((await page.locator("#hits button.hit").count()) >= 3);
    assert.equal(await page.locator("#hits img, #hits script, #hits style, #hits a").count(), 0);
    await page.locator("#hits", { hasText: "<script>window.__pwned=1</script>" }).first().waitFor();
    assert.equal(await page.evaluate("typeof window.__pwned"), "undefined");
    const titles = await page.locator("#hits .hit-title").allTextContents();
    assert.ok(
      titles.some((s) => s.includes("<U+202E>")),
      "bidi shown as a marker in hit titles",
    );
  });

  it("downloads exports, and the HTML export runs nothing and fetches nothing when opened", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, browser.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    await page.locator(".tool-edit").waitFor();
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Export this branch as HTML" }).click(),
    ]);
    assert.equal(download.suggestedFilename(), `conversation-${fx.conversation}-main.html`);
    const file = join(tempDir(t, "download-"), "export.html");
    await download.saveAs(file);
    const html = readFileSync(file, "utf8");
    assert.match(html, /Content-Security-Policy/);

    const view = await browser.context.newPage();
    t.after(() => view.close());
    const requests: string[] = [];
    const errors: string[] = [];
    view.on("request", (r) => requests.push(r.url()));
    view.on("pageerror", (e) => errors.push(e.message));
    await view.goto(pathToFileURL(file).href);
    await view.locator("article.part").first().waitFor();
    assert.deepEqual(requests, [pathToFileURL(file).href], "only the file itself is loaded");
    assert.deepEqual(errors, []);
    assert.equal(await view.evaluate("typeof window.__pwned"), "undefined");
    assert.equal(await view.locator("script").count(), 0);
    assert.equal(await view.locator("pre.diff .del").count(), 1);
    assert.equal(
      await view.evaluate<string>(
        "getComputedStyle(document.querySelector('pre.diff .del')).backgroundColor",
      ),
      "rgb(255, 238, 240)",
      "the inline style sheet applies under the file's CSP",
    );
    await view.screenshot({ path: join(ARTIFACTS, "export-html.png"), fullPage: false });
    for (const [name, ext] of [
      ["Markdown", "md"],
      ["JSON", "json"],
    ] as const) {
      const [d] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("link", { name: `Export this branch as ${name}` }).click(),
      ]);
      assert.equal(d.suggestedFilename(), `conversation-${fx.conversation}-main.${ext}`);
    }
  });
});
