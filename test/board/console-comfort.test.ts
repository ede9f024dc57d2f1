// The Console's reading comfort in Chromium: themes (system, toggle, remembered), a 390 px
// layout with no sideways scroll, the branch tree with labels, times with date and zone, jump
// to the end, copy buttons, keys (j/k [ ] / g G ?), and a catalogue that refreshes itself.
// Screenshots for docs/ are written when missing or with UPDATE_CONSOLE_SCREENSHOT=1.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { assistant, header, idOf, user, writeSession } from "../helpers/reader.ts";
import {
  ARTIFACTS,
  type Browser,
  browserSkip,
  closeSuiteBrowsers,
  launchSuiteBrowsers,
  openConsole,
  ROOT,
} from "./browser.ts";
import { LONG_MESSAGES, writeBoardFixture } from "./fixture.ts";
import { MARKDOWN_TEXT, writeReadingFixture } from "./reading-fixture.ts";

if (browserSkip) process.stdout.write(`# Console comfort skipped: ${browserSkip}\n`);

/** How long the catalogue may take to show a new file (it refreshes about every 5 s alone). */
const REFRESH_DEADLINE_MS = DEADLINE_MS;

const count = (page: Page, selector: string): Promise<number> => page.locator(selector).count();

/** Writes docs/<name> when it is missing or UPDATE_CONSOLE_SCREENSHOT is set; always an artifact. */
async function docShot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, name) });
  const doc = join(ROOT, "docs", name);
  if (process.env.UPDATE_CONSOLE_SCREENSHOT || !existsSync(doc))
    await page.screenshot({ path: doc });
}

const background = (page: Page) =>
  page.evaluate<string>(`getComputedStyle(document.documentElement).backgroundColor`);

describe("board Console comfort", { skip: browserSkip }, () => {
  let light: Browser;
  let dark: Browser;
  let phone: Browser;
  before(async () => {
    ({ light, dark, phone } = await launchSuiteBrowsers());
  });
  after(() => closeSuiteBrowsers({ light, dark, phone }));

  it("follows the system's dark theme and remembers the toggle when reloaded", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, dark.context, fx.reader());
    assert.equal(await background(page), "rgb(18, 22, 28)", "dark by prefers-color-scheme");
    assert.equal(await page.locator("#theme-toggle").getAttribute("aria-pressed"), "true");
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    await page.locator(".tool-edit").waitFor();
    await page.mouse.move(0, 0);
    await docShot(page, "console-dark.png");
    await page.locator("#theme-toggle").press("Enter");
    assert.equal(await background(page), "rgb(246, 247, 249)");
    await page.reload();
    await page.locator("tr.row").first().waitFor();
    assert.equal(await background(page), "rgb(246, 247, 249)", "the choice is remembered");
    assert.equal(await page.locator("#theme-toggle").getAttribute("aria-pressed"), "false");
    await page.locator("#theme-toggle").click();
    assert.equal(await background(page), "rgb(18, 22, 28)");
  });

  it("fits 390 px with no sideways scroll when a phone opens a rich conversation", async (t) => {
    const fx = await writeBoardFixture(t);
    const { page } = await openConsole(t, phone.context, fx.reader());
    const titleWidth = await page
      .locator("tr.row td.title")
      .first()
      .evaluate((e) => e.getBoundingClientRect().width);
    assert.ok(titleWidth > 200, `a title has room for words (${titleWidth} px)`);
    await page.getByRole("button", { name: "Rich fixture" }).click();
    await page.locator(".tool-read").waitFor();
    const widths = await page.evaluate<number[]>(
      `[document.documentElement.scrollWidth, document.documentElement.clientWidth, document.getElementById("history").scrollWidth, document.getElementById("history").clientWidth]`,
    );
    assert.ok(widths[0]! <= widths[1]!, `the page does not scroll sideways: ${widths}`);
    assert.ok(widths[2]! <= widths[3]!, `the history does not scroll sideways: ${widths}`);
    await page.locator("#conversation").scrollIntoViewIfNeeded();
    await docShot(page, "console-390.png");
  });

  it("keeps the catalogue's project, seat and size on one line each on a wide screen", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    // Just above the width where rows stack: the columns are at their narrowest.
    await page.setViewportSize({ width: 800, height: 800 });
    await page.goto(url);
    await page.locator("#catalogue td.size").first().waitFor();
    // One line box per cell's text: "283 B" never breaks before its unit, "main" never inside.
    const broken = await page.evaluate<string[]>(`[...document.querySelectorAll(
      "#catalogue td.size, #catalogue td.seat, #catalogue td.project")].filter((td) => {
        const r = document.createRange();
        r.selectNodeContents(td);
        const tops = new Set([...r.getClientRects()].map((b) => Math.round(b.top)));
        return tops.size > 1;
      }).map((td) => td.className + ": " + td.textContent)`);
    assert.deepEqual(broken, []);
  });

  it("shows the branch tree with labels and times with date and zone", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}`);
    await page.locator("#branches .pick").first().waitFor();
    const labels = await page.locator("#branches .branch-label").allTextContents();
    assert.ok(
      labels.includes("Try the lexer approach instead of regular expressions"),
      `labels: ${labels}`,
    );
    assert.equal(await count(page, "#branches > li"), 1, "one root");
    assert.equal(await count(page, "#branches > li > ul > li"), 1, "one branch under it");
    const time = page.locator("article.part time").first();
    assert.match(
      (await time.textContent()) ?? "",
      /^\d{4}-\d\d-\d\d \d\d:\d\d UTC([+-]\d+(:\d\d)?)? · \d+ days ago$/,
    );
    assert.match(
      (await time.getAttribute("title")) ?? "",
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/,
    );
    assert.match((await time.getAttribute("datetime")) ?? "", /Z$/);
    await page.locator("#branches .pick", { hasText: "Try the lexer" }).click();
    await page.getByText("Lexer version ready.").waitFor();
  });

  it("jumps to the end, reading every page, when the button or G is pressed", async (t) => {
    const fx = await writeBoardFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    const id = idOf(fx.reader(), "long.jsonl");
    await page.goto(`${url}#c=${id}`);
    await page.getByText("long message 99", { exact: true }).waitFor();
    await page.locator("#jump-end").click();
    await page.getByText(`long message ${LONG_MESSAGES - 1}`, { exact: true }).waitFor();
    assert.equal(await count(page, "article.part"), LONG_MESSAGES);
    await page.locator("#follow-status.live").waitFor();
    await page.locator("#jump-end").waitFor({ state: "hidden" });
    await page.keyboard.press("g");
    await page.locator("#jump-end").waitFor();
    await page.keyboard.press("Shift+G");
    await page.locator("#jump-end").waitFor({ state: "hidden" });
  });

  it("copies a message and a tool output when their buttons are pressed", async (t) => {
    await light.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    const reply = page.locator("article.part.assistant").first();
    await reply.locator("button.copy").click();
    await reply.locator("button.copy", { hasText: "Copied" }).waitFor();
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), MARKDOWN_TEXT);
    const output = page.locator(".output-wrap", { hasText: "Output: 45 lines" });
    await output.locator("button.copy").press("Enter");
    const copied = await page.evaluate<string>("navigator.clipboard.readText()");
    assert.equal(copied.split("\n").length, 45);
    assert.ok(copied.startsWith("line 1\nline 2\n"));
  });

  it("moves by message, branch, start and end with j k [ ] g G, / searches and ? lists keys", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    await page.locator(".tool-edit").waitFor();
    await page.keyboard.press("g");
    const current = () =>
      page.evaluate<string>(
        `document.activeElement.matches("article.part.current") ? document.activeElement.querySelector(".who").textContent : "none"`,
      );
    assert.equal(await current(), "User");
    await page.keyboard.press("j");
    assert.equal(await current(), "Assistant");
    await page.keyboard.press("j");
    await page.keyboard.press("k");
    assert.equal(await current(), "Assistant");
    const before = new URL(page.url()).hash;
    await page.keyboard.press("]");
    await page.waitForURL((u) => u.hash !== before);
    assert.match(page.url(), /b=b\./);
    await page.getByText("Lexer version ready.").waitFor();
    await page.keyboard.press("[");
    await page.waitForURL((u) => u.hash === before);
    await page.keyboard.press("/");
    assert.equal(await page.evaluate("document.activeElement.id"), "search");
    await page.keyboard.press("Escape");
    await page.keyboard.press("?");
    await page.locator("dialog#keys[open]").waitFor();
    await page.keyboard.press("Escape");
    await page.locator("dialog#keys").waitFor({ state: "hidden" });
  });

  it("refreshes the catalogue by itself when a new conversation is written", async (t) => {
    const fx = await writeBoardFixture(t);
    const { page } = await openConsole(t, light.context, fx.reader());
    await page.locator("#f-title").fill("");
    const before = await count(page, "tr.row");
    writeSession(fx.alpha.sessionsDir, "late.jsonl", [
      header(fx.alpha.projectRoot, { id: "01a00000-0000-7000-8000-0000000000b1" }),
      user("l1", null, "A conversation written after the page opened", 1),
      assistant("l2", "l1", "late answer", 2),
    ]);
    await page
      .getByRole("button", { name: "A conversation written after the page opened" })
      .waitFor({ timeout: REFRESH_DEADLINE_MS });
    assert.equal(await count(page, "tr.row"), before + 1);
  });
});
