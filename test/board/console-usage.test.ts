// The Console's Usage view in Chromium: cost and tokens per day as stacked bar charts (uPlot,
// served from the board), each with the table of its figures beside it, stacked by project or
// by model; the most expensive conversations, each a link that opens it; no serious axe
// violation light, dark or at 390 px, where nothing is wider than the screen.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import type { BoardUsage } from "../../src/board/usage-route.ts";
import { createReader, type Reader, rootsFromSpecs } from "../../src/index.ts";
import type { BoardSpec } from "../../src/reader/sources.ts";
import { openUsage } from "../../src/usage/index.ts";
import { tempDir } from "../helpers/reader.ts";
import { writeClaudeStore, writePiStore } from "../usage/stores.ts";
import {
  ARTIFACTS,
  type Browser,
  browserSkip,
  closeSuiteBrowsers,
  launchSuiteBrowsers,
  openConsole,
  runAxe,
  seriousOf,
} from "./browser.ts";

if (browserSkip) process.stdout.write(`# Console usage skipped: ${browserSkip}\n`);

const PROJECTS = { a: "/work/app", b: "/work/lib" };

function fixture(t: TestContext): { reader: Reader; usage: BoardUsage } {
  const dir = tempDir(t, "console-usage-");
  writePiStore(join(dir, "pi"), PROJECTS);
  writeClaudeStore(join(dir, "claude"), PROJECTS);
  const specs: BoardSpec[] = [
    { kind: "pi-agent", sessionsDir: join(dir, "pi") },
    { kind: "claude-code", projectsDir: join(dir, "claude") },
  ];
  const roots = () => rootsFromSpecs(specs, []);
  const reader = createReader({ roots });
  const opened = openUsage({
    roots,
    catalogue: () => reader.catalogue(),
    cacheDir: join(dir, "cache"),
  });
  if (!opened.ok) throw new Error(opened.reason);
  t.after(() => opened.usage.close());
  const usage = opened.usage;
  return { reader, usage: { report: (q) => ({ ok: true, report: usage.report(q) }) } };
}

describe("board Console usage", { skip: browserSkip }, () => {
  let browsers: Awaited<ReturnType<typeof launchSuiteBrowsers>>;
  before(async () => {
    browsers = await launchSuiteBrowsers();
  });
  after(() => closeSuiteBrowsers(browsers));

  it("draws cost and tokens per day with their tables, and opens a costly conversation", async (t) => {
    const fx = fixture(t);
    const { page, url } = await openConsole(
      t,
      browsers.light.context,
      fx.reader,
      undefined,
      fx.usage,
    );
    await page.getByRole("link", { name: "Usage" }).click();
    await page.locator("#usage-total").waitFor();
    // The store's days are fixed (late November 2026): every day, whatever today is.
    await page.selectOption("#u-range", "all");
    await page.locator("#u-cost tbody tr").first().waitFor();
    // Three days in UTC; in another zone the replies near midnight may make four.
    const days = await page.locator("#u-cost tbody tr").count();
    assert.ok(days >= 3 && days <= 4, String(days));
    assert.equal(await page.locator("#u-cost .usage-chart canvas").count(), 1);
    assert.equal(await page.locator("#u-tokens .usage-chart canvas").count(), 1);
    const heads = await page.locator("#u-cost thead th").allTextContents();
    assert.deepEqual(heads, ["Day", "Total", "By project"]);
    // The costliest project first, in the legend and in each day's figures.
    const legend = await page.locator("#u-cost .usage-legend li").allTextContents();
    assert.deepEqual(legend, ["/work/app", "/work/lib"]);
    await page.selectOption("#u-stack", "model");
    await page.locator("#u-cost h3", { hasText: "by model" }).waitFor();
    // Ten models: the six costliest drawn on their own, the rest as Other.
    const models = await page.locator("#u-cost .usage-legend li").allTextContents();
    assert.equal(models.length, 7);
    assert.equal(models.at(-1), "Other");
    assert.deepEqual(
      await page.locator("#u-tokens .usage-legend li").allTextContents(),
      models,
      "the same keys in the same order in both charts",
    );
    assert.match(
      (await page.locator("#usage-total").textContent()) ?? "",
      /no price for claude-fake-9/,
    );
    await page.screenshot({ path: join(ARTIFACTS, "console-usage.png"), fullPage: true });

    const first = page.locator("#u-top tbody tr").first().locator("a");
    const title = await first.textContent();
    await first.click();
    await page.locator("#conv:not([hidden])").waitFor();
    assert.equal(await page.locator("#usage").isHidden(), true);
    assert.ok(title && title.length > 0);
    assert.match(page.url(), new RegExp(`^${url.replace(/[/.]/g, "\\$&")}#c=`));
  });

  it("has no serious axe violation light, dark or at 390 px, and fits the phone's width", async (t) => {
    for (const [name, browser] of [
      ["light", browsers.light],
      ["dark", browsers.dark],
      ["390 px", browsers.phone],
    ] as [string, Browser][]) {
      const fx = fixture(t);
      const { page, url } = await openConsole(t, browser.context, fx.reader, undefined, fx.usage);
      await page.goto(`${url}#v=usage`);
      await page.selectOption("#u-range", "all");
      await page.locator("#u-top tbody tr a").first().waitFor();
      await page.locator("#u-cost canvas").waitFor();
      const serious = seriousOf(await runAxe(page));
      assert.deepEqual(serious, [], `${name}: ${JSON.stringify(serious, null, 2)}`);
      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - window.innerWidth",
      );
      assert.ok(overflow <= 0, `${name}: the page is ${overflow} px wider than the screen`);
      const file = name === "390 px" ? "console-usage-390.png" : `console-usage-${name}.png`;
      await page.screenshot({ path: join(ARTIFACTS, file), fullPage: true });
    }
  });
});
