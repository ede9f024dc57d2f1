// "Show more matches" in the Console's search (Chromium): a search that answers as many hits as
// it asked for offers more; the button asks again with a larger limit (50 → 200 → 1000), keeps
// the hits already listed (same nodes, so the list's scroll position holds), moves focus to the
// first new hit, and says how many are shown; it is gone when every hit is listed or the
// route's maximum was asked. Hostile text in the hits it adds stays text; axe finds nothing
// serious with the button shown.
import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import type { Page } from "playwright-core";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import { createSearch } from "../../src/search/index.ts";
import { header, project, tempDir, user, writeSession } from "../helpers/reader.ts";
import {
  type Browser,
  browserSkip,
  launchBrowser,
  openConsole,
  runAxe,
  seriousOf,
} from "./browser.ts";

if (browserSkip) process.stdout.write(`# Console "Show more matches" skipped: ${browserSkip}\n`);

const WORD = "quokkaberry";
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>';

/**
 * A board over one session of `count` user messages, each holding WORD; message i is written
 * at ts(i), so the newest (highest i) comes first. Every 7th carries hostile markup.
 */
async function boardWithMessages(t: TestContext, browser: Browser, count: number) {
  const base = tempDir(t, "search-more-");
  const p = project(base, "many");
  const lines: object[] = [header(p.projectRoot)];
  let parent: string | null = null;
  for (let i = 1; i <= count; i++) {
    const id = `m${i.toString(16).padStart(7, "0")}`;
    const extra = i % 7 === 0 ? ` ${HOSTILE}` : "";
    lines.push(user(id, parent, `Message ${i} mentions ${WORD}${extra}`, i));
    parent = id;
  }
  writeSession(p.sessionsDir, "2026-01-01T00-00-00-000Z_many.jsonl", lines);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, []),
    catalogue: () => reader.catalogue(),
    cacheDir: tempDir(t, "search-more-cache-"),
  });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  const { page, requests } = await openConsole(t, browser.context, reader, opened.search);
  await page.fill("#search", WORD);
  await page.press("#search", "Enter");
  await page.locator("#hits button.hit").first().waitFor();
  return { page, requests };
}

const hits = (page: Page) => page.locator("#hits button.hit");
const note = (page: Page) => page.locator("#search-note").textContent();
const more = (page: Page) => page.locator("#search-more");

/** Marks every hit on show, so a later check can tell kept nodes from new ones. */
async function markShown(page: Page): Promise<void> {
  await page.evaluate(
    `document.querySelectorAll("#hits button.hit").forEach((b) => { b.dataset.seen = "1"; })`,
  );
}

/** From the last hit, Tab must reach "Show more matches"; Enter presses it. */
async function showMoreByKeyboard(page: Page, expectHits: number): Promise<void> {
  await hits(page).last().focus();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate("document.activeElement.id"), "search-more");
  await page.keyboard.press("Enter");
  // A locator wait, not waitForFunction: the Console's CSP forbids the eval it polls with.
  await hits(page)
    .nth(expectHits - 1)
    .waitFor();
  assert.equal(await hits(page).count(), expectHits);
}

/** The text of the focused element, and whether it is a hit. */
async function focused(page: Page): Promise<{ hit: boolean; text: string; seen: boolean }> {
  return page.evaluate(`(() => {
    const a = document.activeElement;
    return { hit: a.matches("#hits button.hit"), text: a.textContent, seen: a.dataset.seen === "1" };
  })()`);
}

describe('board Console search: "Show more matches"', { skip: browserSkip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("offers more when 50 came back, adds the rest below and focuses the first new hit", async (t) => {
    const { page, requests } = await boardWithMessages(t, browser, 120);
    assert.equal(await hits(page).count(), 50);
    assert.equal(await note(page), "First 50 matches.");
    assert.ok(await more(page).isVisible(), "the button shows when 50 of 50 asked came back");
    assert.match((await hits(page).first().textContent()) ?? "", /Message 120 mentions/);

    const axe = seriousOf(await runAxe(page));
    assert.deepEqual(axe, [], JSON.stringify(axe, null, 2));

    // Scrolled part way down the list: adding hits below must not move it.
    const scrolled = await page.evaluate<number>(`(() => {
      const box = document.getElementById("search-results");
      box.scrollTop = 200;
      return box.scrollTop;
    })()`);
    assert.ok(scrolled > 0, "the results box scrolls");
    await markShown(page);
    await more(page).click();
    await page.locator("#search-note", { hasText: "All 120 matches." }).waitFor();
    assert.equal(await hits(page).count(), 120);
    assert.equal(await page.locator("#hits button.hit[data-seen]").count(), 50, "old hits kept");
    assert.ok(await more(page).isHidden(), "no button once every hit is listed");
    const f = await focused(page);
    assert.ok(f.hit && !f.seen, "focus is on a new hit");
    assert.match(f.text, /Message 70 mentions/, "the first new hit, newest first");
    assert.ok(
      requests.some((u) => /\/api\/search\?q=quokkaberry&limit=200$/.test(u)),
      "more is the same words with limit=200",
    );

    // The list was not reset to its top; the first new hit is in view, below the last old one.
    const view = await page.evaluate<{
      scrollTop: number;
      boxTop: number;
      boxBottom: number;
      focusTop: number;
      lastOldBottom: number;
    }>(`(() => {
      const box = document.getElementById("search-results");
      const r = box.getBoundingClientRect();
      const f = document.activeElement.getBoundingClientRect();
      const old = [...document.querySelectorAll("#hits button.hit[data-seen]")].at(-1);
      return { scrollTop: box.scrollTop, boxTop: r.top, boxBottom: r.bottom, focusTop: f.top,
        lastOldBottom: old.getBoundingClientRect().bottom };
    })()`);
    assert.ok(view.scrollTop >= scrolled, `scroll kept (${view.scrollTop} >= ${scrolled})`);
    assert.ok(
      view.focusTop >= view.boxTop && view.focusTop < view.boxBottom,
      "focused hit in view",
    );
    assert.ok(view.lastOldBottom <= view.focusTop, "the old hits stay above the new ones");

    // Hostile text in the hits added stays text.
    assert.equal(await page.locator("#hits img, #hits script").count(), 0);
    await page.locator("#hits .hit-snippet", { hasText: "<img src=x onerror" }).first().waitFor();
    assert.equal(await page.evaluate("typeof window.__pwned"), "undefined");

    // A new search starts again at 50.
    await page.fill("#search", `"message 3 mentions"`);
    await page.press("#search", "Enter");
    await page.locator("#search-note", { hasText: /^1 match\.$/ }).waitFor();
    assert.ok(await more(page).isHidden());
  });

  it("keeps the hits and the button when asking for more is refused, and asks for more again", async (t) => {
    const { page } = await boardWithMessages(t, browser, 120);
    await markShown(page);
    // The board refuses the first larger request, as a busy index does (search-unavailable).
    let refused = 0;
    await page.route(/\/api\/search\?q=quokkaberry&limit=200$/, async (route) => {
      if (refused++ > 0) return route.continue();
      await route.fulfill({
        status: 503,
        contentType: "application/json",
        body: JSON.stringify({
          ok: false,
          refusal: {
            code: "search-unavailable",
            reconcile: false,
            message:
              "Another process is updating the search index right now; search again shortly.",
          },
        }),
      });
    });
    await more(page).click();
    await page.locator("#search-note .refusal", { hasText: "search-unavailable" }).waitFor();
    assert.equal(await page.locator("#hits button.hit[data-seen]").count(), 50, "hits kept");
    assert.ok(await more(page).isVisible(), "the button stays, to ask again");
    await more(page).click();
    await page.locator("#search-note", { hasText: "All 120 matches." }).waitFor();
    assert.equal(await hits(page).count(), 120);
    assert.equal(await page.locator("#hits button.hit[data-seen]").count(), 50, "kept, not reset");
    assert.equal(refused, 2);
  });

  it("shows no button when fewer hits than asked came back", async (t) => {
    const { page } = await boardWithMessages(t, browser, 30);
    assert.equal(await hits(page).count(), 30);
    assert.equal(await note(page), "30 matches.");
    assert.ok(await more(page).isHidden());
  });

  it("goes 50 → 200 → 1000 from the keyboard and stops at the route's maximum", async (t) => {
    const { page } = await boardWithMessages(t, browser, 1010);
    assert.equal(await note(page), "First 50 matches.");
    await showMoreByKeyboard(page, 200);
    assert.equal(await note(page), "First 200 matches.");
    assert.ok(await more(page).isVisible());
    let f = await focused(page);
    assert.ok(f.hit);
    assert.match(f.text, /Message 960 mentions/);
    await markShown(page);
    await showMoreByKeyboard(page, 1000);
    assert.equal(await note(page), "The first 1000 matches; refine the words to see others.");
    assert.ok(await more(page).isHidden(), "no button at the route's maximum");
    f = await focused(page);
    assert.ok(f.hit && !f.seen);
    assert.match(f.text, /Message 810 mentions/);
    assert.equal(await page.locator("#hits button.hit[data-seen]").count(), 200);
    const axe = seriousOf(await runAxe(page));
    assert.deepEqual(axe, [], JSON.stringify(axe, null, 2));
  });
});
