// The Console's accessibility in Chromium: axe-core (run in the page) finds no serious or
// critical violation on the catalogue, a rich conversation, the reading fixture, hostile text,
// the dark theme, 390 px and the keys dialog; and every control is reached and worked by the
// keyboard alone (Tab, Enter, Space).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import {
  type AxeViolation,
  type Browser,
  browserSkip,
  closeSuiteBrowsers,
  launchSuiteBrowsers,
  openConsole,
  runAxe,
  seriousOf,
} from "./browser.ts";
import { writeBoardFixture } from "./fixture.ts";
import { writeReadingFixture } from "./reading-fixture.ts";

if (browserSkip) process.stdout.write(`# Console accessibility skipped: ${browserSkip}\n`);

function assertNoSerious(where: string, violations: AxeViolation[]): void {
  const serious = seriousOf(violations);
  assert.deepEqual(serious, [], `${where}: ${JSON.stringify(serious, null, 2)}`);
}

/** Controls a person can see: what Tab must reach. */
const VISIBLE_CONTROLS = `[...document.querySelectorAll("button, a[href], input, select, summary, textarea")].filter((e) => e.checkVisibility() && !e.disabled && !e.closest("dialog:not([open])"))`;

async function tabThrough(page: Page, max: number): Promise<string[]> {
  await page.evaluate(`(() => {
    window.__seen = new Set();
    document.addEventListener("focusin", (e) => window.__seen.add(e.target));
  })()`);
  await page.locator("body").focus();
  for (let i = 0; i < max; i++) await page.keyboard.press("Tab");
  return page.evaluate<string[]>(
    `${VISIBLE_CONTROLS}.filter((e) => !window.__seen.has(e)).map((e) => e.tagName + " " + (e.id || e.className) + " " + e.textContent.slice(0, 30))`,
  );
}

describe("board Console accessibility", { skip: browserSkip }, () => {
  let light: Browser;
  let dark: Browser;
  let phone: Browser;
  before(async () => {
    ({ light, dark, phone } = await launchSuiteBrowsers());
  });
  after(() => closeSuiteBrowsers({ light, dark, phone }));

  it("has no serious or critical axe violation on every view when light, dark or 390 px", async (t) => {
    for (const [name, browser] of [
      ["light", light],
      ["dark", dark],
      ["390 px", phone],
    ] as const) {
      const fx = await writeBoardFixture(t);
      const { page } = await openConsole(t, browser.context, fx.reader());
      assertNoSerious(`${name} catalogue`, await runAxe(page));
      await page.getByRole("button", { name: "Rich fixture" }).click();
      await page.locator(".tool-read").waitFor();
      await page.locator("details.thinking summary").first().click();
      assertNoSerious(`${name} rich conversation`, await runAxe(page));
      // A phone shows the list or a conversation (issue 24 item 4): back to the list first.
      if (name === "390 px") await page.getByRole("button", { name: "Back to the list" }).click();
      await page.getByRole("button", { name: /window\.__pwned/ }).click();
      await page.locator("article.part.bash-execution").waitFor();
      assertNoSerious(`${name} hostile conversation`, await runAxe(page));
      await page.locator("#keys-help").click();
      await page.locator("dialog#keys[open]").waitFor();
      assertNoSerious(`${name} keys dialog`, await runAxe(page));
      await page.keyboard.press("Escape");
    }
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    await page.locator(".tool-edit").waitFor();
    for (const d of await page.locator("details").all())
      await d.evaluate((e) => e.setAttribute("open", ""));
    assertNoSerious("reading fixture, everything unfolded", await runAxe(page));
  });

  it("reaches every control with Tab and works them with Enter and Space", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    await page.locator(".tool-edit").waitFor();
    const controls = await page.evaluate<number>(`${VISIBLE_CONTROLS}.length`);
    const missed = await tabThrough(page, controls + 10);
    assert.deepEqual(missed, [], "every visible control takes focus from Tab");

    // Working them: open a conversation from the catalogue, pick a branch, toggle the theme,
    // open and close the keys, unfold raw arguments: each from the keyboard only.
    await page.goto(url);
    await page.locator("tr.row button.open").first().focus();
    await page.keyboard.press("Enter");
    await page.getByText("Lexer version ready.").waitFor();
    await page.locator("#branches .pick", { hasText: "main" }).focus();
    await page.keyboard.press("Enter");
    await page.locator(".tool-edit").waitFor();
    const raw = page.locator(".tool-edit details.raw-args");
    await raw.locator("summary").focus();
    await page.keyboard.press("Enter");
    assert.equal(await raw.getAttribute("open"), "");
    await page.locator("#theme-toggle").focus();
    await page.keyboard.press("Space");
    assert.equal(await page.locator("#theme-toggle").getAttribute("aria-pressed"), "true");
    await page.locator("#keys-help").focus();
    await page.keyboard.press("Enter");
    await page.locator("dialog#keys[open]").waitFor();
    assert.equal(await page.evaluate("document.activeElement.id"), "keys-close", "focus moves in");
    await page.keyboard.press("Enter");
    await page.locator("dialog#keys").waitFor({ state: "hidden" });
    await page.locator("#search").focus();
    await page.keyboard.type("lexer");
    await page.keyboard.press("Enter");
    await page.locator("#search-results:not([hidden])").waitFor();
  });
});
