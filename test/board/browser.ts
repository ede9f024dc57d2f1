// Headless Debian Chromium for the Console suites (playwright-core): one persistent context
// per suite, a page per test with page errors and dialogs collected and asserted empty, and
// axe-core run in the page. Browser-side checks are string expressions (no DOM library here).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, type TestContext } from "node:test";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { startBoard } from "../../src/board/index.ts";
import type { BoardSearch } from "../../src/board/search-route.ts";
import type { BoardUsage } from "../../src/board/usage-route.ts";
import type { Reader } from "../../src/index.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";

export const CHROMIUM = "/usr/bin/chromium";
export const ROOT = join(import.meta.dirname, "..", "..");
export const ARTIFACTS = join(ROOT, "test-artifacts");

export const browserSkip: string | false =
  !existsSync(CHROMIUM) && !process.env.CI
    ? `${CHROMIUM} is missing (apt-get install chromium); CI runs this suite`
    : false;

export type Browser = { context: BrowserContext; close: () => Promise<void> };

export async function launchBrowser(
  viewport = { width: 1400, height: 900 },
  colorScheme: "light" | "dark" = "light",
): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), "board-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    colorScheme,
    timeout: DEADLINE_MS,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * One browser for the describe block it is called in: launched before its tests, closed after
 * them. The returned function gives its context (inside a test).
 */
export function suiteBrowser(): () => BrowserContext {
  let browser: Browser | undefined;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());
  return () => {
    assert.ok(browser, "the suite's browser was launched");
    return browser.context;
  };
}

export type SuiteBrowsers = { light: Browser; dark: Browser; phone: Browser };

/** The three browsers the Console suites look through: light and dark at 1400×900, light at 390 px. */
export async function launchSuiteBrowsers(): Promise<SuiteBrowsers> {
  // One after another: three Chromiums starting at once on two cores can miss the deadline.
  const light = await launchBrowser();
  const dark = await launchBrowser({ width: 1400, height: 900 }, "dark");
  const phone = await launchBrowser({ width: 390, height: 844 });
  return { light, dark, phone };
}

/** Closes what launchSuiteBrowsers started (any it did not get to start are skipped). */
export async function closeSuiteBrowsers(b: Partial<SuiteBrowsers>): Promise<void> {
  for (const browser of [b.light, b.dark, b.phone]) await browser?.close();
}

/** A fresh board on `reader` and a page on it; every request the page makes is recorded. */
export async function openConsole(
  t: TestContext,
  context: BrowserContext,
  reader: Reader,
  search?: BoardSearch,
  usage?: BoardUsage,
): Promise<{ page: Page; url: string; requests: string[] }> {
  const board = await startBoard({
    reader,
    ...(search ? { search } : {}),
    ...(usage ? { usage } : {}),
  });
  t.after(() => board.close());
  const page = await context.newPage();
  t.after(() => page.close());
  page.setDefaultTimeout(DEADLINE_MS);
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("request", (r) => requests.push(r.url()));
  page.on("dialog", (d) => {
    errors.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  t.after(() => assert.deepEqual(errors, [], "the page raised no error and no dialog"));
  await page.goto(board.url);
  await page.locator("tr.row").first().waitFor();
  return { page, url: board.url, requests };
}

const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
  "utf8",
);

export type AxeViolation = { id: string; impact: string | null; help: string; targets: string[] };

/**
 * Runs axe-core in the page. The Console's CSP allows only its own scripts, so axe is injected
 * through the DevTools protocol (Page.addScriptToEvaluateOnNewDocument is not needed: evaluate
 * runs in the page's main world without a script element), and returns its violations.
 */
export async function runAxe(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate<AxeViolation[]>(`(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => String(n.target)),
    }));
  })()`);
}

/** Serious and critical violations only: what the issue requires to be absent. */
export function seriousOf(violations: AxeViolation[]): AxeViolation[] {
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/**
 * What a Console page shows now, in short, for a wait's timeout message: the live panel's
 * lines, the follow's status, any refusal and the history's last part (each looked up briefly; "(absent)" if missing).
 * A red that comes only with the machine loaded then says what the page held.
 */
export async function consoleState(page: Page): Promise<Record<string, string>> {
  const brief = { timeout: 1000 };
  const out: Record<string, string> = {};
  for (const id of [
    "live-who",
    "live-why",
    "live-refusal",
    "live-approvals",
    "live-activity",
    "follow-status",
    "conv-refusal",
  ]) {
    const text = await page
      .locator(`#${id}`)
      .textContent(brief)
      .catch(() => "(absent)");
    out[id] = (text ?? "").slice(0, 300);
  }
  const last = await page
    .locator("#parts article.part")
    .last()
    .textContent(brief)
    .catch(() => "(absent)");
  out.lastPart = (last ?? "").slice(0, 200);
  out.url = page.url();
  return out;
}
