// What a newcomer found walking through the Console (issue 14), each checked in Chromium:
// typed text readable in every field in both themes, Markdown tables intact at 390 px, focus
// after G and [ ], the floating buttons covering nothing, a long search heading kept on the
// screen, and a theme toggle whose pressed state shows.
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { after, before, describe, it, type TestContext } from "node:test";
import type { Page } from "playwright-core";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import {
  assistant,
  header,
  idOf,
  project,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";
import {
  type Browser,
  browserSkip,
  closeSuiteBrowsers,
  launchSuiteBrowsers,
  openConsole,
} from "./browser.ts";
import { writeReadingFixture } from "./reading-fixture.ts";

if (browserSkip) process.stdout.write(`# Console walk-through skipped: ${browserSkip}\n`);

/** More messages than one page (100 parts), so the Console pages and "Jump to the end" shows. */
const LONG = 130;

const WIDE_TABLE = [
  "The timings:",
  "",
  "| Benchmark | Before (milliseconds) | After (milliseconds) | Change | Machine | Notes |",
  "| --- | ---: | ---: | ---: | --- | --- |",
  "| cold_index_build_everything | 1234 | 987 | -20% | two_core_shared_runner | incremental_catalogue_refresh |",
  "| query_after_single_append | 48 | 12 | -75% | two_core_shared_runner | appended_bytes_only |",
].join("\n");

/** A project holding a long conversation and one with a wide Markdown table. */
function writeWalkFixture(t: TestContext) {
  const base = tempDir(t, "walk-");
  const p = project(base, "delta", "main");
  const lines: object[] = [header(p.projectRoot, { id: "01a00000-0000-7000-8000-0000000000c1" })];
  let parent: string | null = null;
  for (let i = 0; i < LONG; i++) {
    const id = `m${i}`;
    const text = `walk message ${i}`;
    lines.push(i % 2 === 0 ? user(id, parent, text, i + 1) : assistant(id, parent, text, i + 1));
    parent = id;
  }
  writeSession(p.sessionsDir, "long.jsonl", lines);
  const tableFile = writeSession(p.sessionsDir, "table.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-0000000000c2" }),
    user("t1", null, "Show the timings as a table", 1),
    assistant("t2", "t1", WIDE_TABLE, 2),
  ]);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  const reader = () => createReader({ roots: () => rootsFromSpecs(specs, []) });
  return {
    reader,
    long: idOf(reader(), "long.jsonl"),
    table: idOf(reader(), "table.jsonl"),
    tableFile,
  };
}

/**
 * Every visible field and button whose text is less than 4.5:1 against what is behind it
 * (WCAG 2 contrast; the first opaque background up the tree). Fields are judged on the text
 * typed into them, which axe does not check.
 */
async function lowContrast(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const rgb = (c) => {
      const m = c.match(/rgba?\\(([\\d.]+),? ([\\d.]+),? ([\\d.]+)(?:,? ?\\/? ?([\\d.]+))?\\)/);
      if (!m) throw new Error("unparsed colour " + c);
      return { r: +m[1], g: +m[2], b: +m[3], a: m[4] === undefined ? 1 : +m[4] };
    };
    const lum = ({ r, g, b }) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const behind = (e) => {
      for (let n = e; n; n = n.parentElement) {
        const c = rgb(getComputedStyle(n).backgroundColor);
        if (c.a === 1) return c;
      }
      return rgb(getComputedStyle(document.documentElement).backgroundColor);
    };
    const out = [];
    for (const e of document.querySelectorAll("input, select, textarea, button")) {
      if (!e.checkVisibility() || e.closest("dialog:not([open])")) continue;
      const ink = lum(rgb(getComputedStyle(e).color));
      const bg = lum(behind(e));
      const ratio = (Math.max(ink, bg) + 0.05) / (Math.min(ink, bg) + 0.05);
      if (ratio < 4.5) out.push(e.tagName + "#" + e.id + "." + e.className + " " + ratio.toFixed(2));
    }
    return out;
  })()`);
}

/** What has focus: the text of the message (article) holding it, or the focused tag. */
const focused = (page: Page) =>
  page.evaluate<string>(`(() => {
    const a = document.activeElement;
    if (!a.matches("article.part")) return "not a message: " + a.tagName + "#" + a.id;
    if (!a.classList.contains("current")) return "a message that is not outlined";
    return a.querySelector(".part-body").textContent.trim();
  })()`);

/** Waits (up to 10 s) until `focused` says `want`; the page's CSP forbids waitForFunction. */
async function focusReaches(page: Page, want: string | RegExp): Promise<void> {
  const deadline = Date.now() + 10_000;
  let now = await focused(page);
  while (!(typeof want === "string" ? now === want : want.test(now))) {
    assert.ok(Date.now() < deadline, `focus never reached ${want}; it is on ${now}`);
    await new Promise((r) => setTimeout(r, 50));
    now = await focused(page);
  }
}

const noSidewaysScroll = async (page: Page) => {
  const [scroll, client] = await page.evaluate<[number, number]>(
    "[document.documentElement.scrollWidth, document.documentElement.clientWidth]",
  );
  assert.ok(scroll <= client && scroll <= 390, `no sideways scroll: ${scroll} > ${client}`);
};

describe("board Console walk-through", { skip: browserSkip }, () => {
  let light: Browser;
  let dark: Browser;
  let phone: Browser;
  before(async () => {
    ({ light, dark, phone } = await launchSuiteBrowsers());
  });
  after(() => closeSuiteBrowsers({ light, dark, phone }));

  it("shows typed text readable in every field and button, light and dark, system or toggle", async (t) => {
    const fx = writeReadingFixture(t);
    for (const browser of [light, dark]) {
      const { page, url } = await openConsole(t, browser.context, fx.reader());
      await page.goto(`${url}#c=${fx.conversation}&b=main`);
      await page.locator(".tool-edit").waitFor();
      await page.locator("#search").fill("typed words");
      await page.locator("#f-title").fill("Read");
      assert.deepEqual(await lowContrast(page), [], "as the system chose");
      await page.locator("#theme-toggle").click();
      assert.deepEqual(await lowContrast(page), [], "the other theme, pinned by the toggle");
      await page.locator("#theme-toggle").click();
    }
  });

  it("keeps a message's Markdown table whole at 390 px, scrolling inside its own box", async (t) => {
    const fx = writeWalkFixture(t);
    const { page, url } = await openConsole(t, phone.context, fx.reader());
    await page.goto(`${url}#c=${fx.table}`);
    const table = page.locator(".md table");
    await table.waitFor();
    const shape = await table.evaluate((tbl) => {
      const heads = [...tbl.querySelectorAll("th")].map((th) => {
        const r = th.getBoundingClientRect();
        return { shown: r.width > 0 && r.height > 0, text: th.textContent };
      });
      const row = [...tbl.querySelectorAll("tbody tr")][0];
      const tops = [...(row?.querySelectorAll("td") ?? [])].map((td) =>
        Math.round(td.getBoundingClientRect().top),
      );
      const history = tbl.closest("#history");
      if (!history) throw new Error("the table is not in the history");
      return {
        heads,
        tops,
        scrolls: tbl.scrollWidth > tbl.clientWidth,
        fits: tbl.getBoundingClientRect().right <= history.getBoundingClientRect().right,
      };
    });
    assert.equal(shape.heads.length, 6);
    for (const h of shape.heads) assert.ok(h.shown, `header cell ${h.text} is shown`);
    assert.equal(shape.tops.length, 6);
    assert.equal(new Set(shape.tops).size, 1, `a row's cells on one line: ${shape.tops}`);
    assert.ok(shape.scrolls, "the wide table scrolls sideways inside its box");
    assert.ok(shape.fits, "the table's box stays inside the history");
    await noSidewaysScroll(page);
    // The catalogue still stacks its rows on a phone (the table CSS is its own).
    const catalogueHead = await page
      .locator(".table-wrap thead")
      .evaluate((e) => e.checkVisibility());
    assert.equal(catalogueHead, false, "the catalogue's header row stays hidden at 390 px");
  });

  it("moves focus with G to the last message (every page read) so k steps back from there", async (t) => {
    const fx = writeWalkFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.long}`);
    await page.getByText("walk message 99", { exact: true }).waitFor();
    await page.keyboard.press("g");
    assert.equal(await focused(page), "walk message 0");
    await page.keyboard.press("Shift+G");
    await focusReaches(page, `walk message ${LONG - 1}`);
    assert.equal(await page.locator("article.part").count(), LONG, "every page was read");
    await page.keyboard.press("k");
    assert.equal(await focused(page), `walk message ${LONG - 2}`);
    assert.equal(await page.locator("article.part.current").count(), 1, "one outlined message");
  });

  it("moves focus with ] and [ to the first message of the branch opened, so j goes on from it", async (t) => {
    const fx = writeReadingFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.conversation}&b=main`);
    await page.locator(".tool-edit").waitFor();
    await page.keyboard.press("g");
    await page.keyboard.press("j");
    await page.keyboard.press("]");
    await page.waitForURL((u) => /b=b\./.test(u.hash));
    // The branch's own first message: the one after where it forks from main.
    await focusReaches(page, "Try the lexer approach instead of regular expressions");
    await page.keyboard.press("j");
    assert.equal(await focused(page), "Lexer version ready.");
    await page.keyboard.press("[");
    await page.waitForURL((u) => /b=main/.test(u.hash));
    // main is the root branch: its first message.
    await focusReaches(page, /^Please tidy the parser/);
    await page.keyboard.press("j");
    assert.match(await focused(page), /^Here is bold/);
    // Gone on to the search box before the branch showed: focus is not taken back from it.
    await page.keyboard.press("]");
    await page.keyboard.press("/");
    await page.getByText("Lexer version ready.").waitFor();
    await page.locator("#branches .current .pick", { hasText: "Try the lexer" }).waitFor();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await page.evaluate("document.activeElement.id"), "search");
  });

  it("keeps focus on a branch or export link when a followed append redraws the head", async (t) => {
    const fx = writeWalkFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.table}`);
    await page.locator("#follow-status.live").waitFor();
    const where = () =>
      page.evaluate<string>(
        `document.activeElement.className + " " + document.activeElement.textContent + " " + document.activeElement.isConnected`,
      );
    await page.locator("#branches .pick").first().focus();
    const before = await where();
    assert.match(before, /^pick .* true$/);
    appendFileSync(
      fx.tableFile,
      `${JSON.stringify(user("t3", "t2", "appended while focused", 3))}\n`,
    );
    await page.getByText("appended while focused").waitFor();
    await page.locator("#branches .depth", { hasText: "3 entries" }).waitFor();
    assert.equal(await where(), before.replace("2 entries", "3 entries"));
    await page.locator("#conv-exports a", { hasText: "HTML" }).focus();
    appendFileSync(fx.tableFile, `${JSON.stringify(assistant("t4", "t3", "and answered", 4))}\n`);
    await page.getByText("and answered").waitFor();
    assert.equal(await where(), "export HTML true");
  });

  for (const [name, pick] of [
    ["wide", (b: { light: Browser; phone: Browser }) => b.light],
    ["390 px", (b: { light: Browser; phone: Browser }) => b.phone],
  ] as const) {
    it(`leaves every Copy and ¶ button clickable under the floating buttons (${name})`, async (t) => {
      const fx = writeWalkFixture(t);
      const { page, url } = await openConsole(t, pick({ light, phone }).context, fx.reader());
      await page.goto(`${url}#c=${fx.long}`);
      await page.getByText("walk message 99", { exact: true }).waitFor();
      await page.locator("#jump-end").waitFor();
      /**
       * Scrolls the history to `fromEnd` px above its end, then 0..90 px further up in 3 px
       * steps, and lists every Copy or ¶ button shown in the history whose centre is not
       * the button itself (something lies on it), with the page scrolled to its end.
       */
      const covered = (fromEnd: number) =>
        page.evaluate<string[]>(`(() => {
          window.scrollTo(0, document.documentElement.scrollHeight);
          const h = document.getElementById("history");
          const out = [];
          for (let up = 0; up <= 90; up += 3) {
            h.scrollTop = h.scrollHeight - h.clientHeight - ${fromEnd} - up;
            const s = h.getBoundingClientRect();
            for (const b of h.querySelectorAll("#parts button.copy, #parts button.link")) {
              const r = b.getBoundingClientRect();
              const x = r.left + r.width / 2, y = r.top + r.height / 2;
              // A centre within a pixel of the history's edge is clipped there (hit testing
              // snaps to whole pixels): not a button shown.
              if (y <= s.top + 1 || y >= s.bottom - 1 || y >= innerHeight || y <= 0) continue;
              const hit = document.elementFromPoint(x, y);
              if (hit !== b && !b.contains(hit)) {
                out.push(b.closest("article").querySelector(".part-body").textContent + " under " + (hit?.id || hit?.className || hit?.tagName));
              }
            }
          }
          return [...new Set(out)];
        })()`);
      // The first page read, "Jump to the end" showing at its end and above it.
      assert.deepEqual(await covered(0), [], "at the end of the first page");
      assert.deepEqual(await covered(300), [], "above it");
      const lastCopy = () => page.locator("article.part").last().locator("button.copy");
      await page.locator("#history").evaluate((h) => {
        h.scrollTop = h.scrollHeight;
      });
      await lastCopy().click({ trial: true, timeout: 2000 });
      // Read to the end; scrolled up, following pauses and "Resume following" shows too.
      await page.locator("#jump-end").click();
      await page.getByText(`walk message ${LONG - 1}`, { exact: true }).waitFor();
      await page.locator("#history").evaluate((h) => {
        h.scrollTop = h.scrollHeight - h.clientHeight - 400;
      });
      await page.locator("#resume").waitFor();
      assert.deepEqual(await covered(400), [], "paused, both buttons showing");
      await page.locator("#resume").click();
      await page.locator("#resume").waitFor({ state: "hidden" });
      await lastCopy().click({ trial: true, timeout: 2000 });
      const centreHit = await lastCopy().evaluate((b) => {
        const r = b.getBoundingClientRect();
        const hit = b.ownerDocument.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return hit === b || b.contains(hit);
      });
      assert.ok(centreHit, "the last message's Copy button is what its centre hits");
    });
  }

  it("keeps a 600-character query's heading on a 390 px screen", async (t) => {
    const fx = writeWalkFixture(t);
    const { page } = await openConsole(t, phone.context, fx.reader());
    for (const query of ["x".repeat(600), "word ".repeat(120).trim()]) {
      await page.locator("#search").fill(query);
      await page.locator("#search").press("Enter");
      await page.locator("#search-title").getByText("Search:").waitFor();
      await noSidewaysScroll(page);
      const title = await page.locator("#search-title").evaluate((h) => {
        const r = h.getBoundingClientRect();
        return { right: r.right, height: r.height, overflow: h.scrollWidth > h.clientWidth };
      });
      assert.ok(
        title.right <= 390 && !title.overflow,
        `the heading fits: ${JSON.stringify(title)}`,
      );
      assert.ok(title.height < 100, `the heading stays a few lines tall: ${title.height}`);
      assert.equal(
        await page.locator("#search-title").getAttribute("title"),
        `Search: ${query}`,
        "the whole query is on hover",
      );
    }
  });

  it("shows the theme toggle's state: aria-pressed flips and the button looks pressed", async (t) => {
    const fx = writeWalkFixture(t);
    const { page } = await openConsole(t, light.context, fx.reader());
    const toggle = page.locator("#theme-toggle");
    const look = (id: string) =>
      page.locator(id).evaluate((b) => {
        const view = b.ownerDocument.defaultView;
        if (!view) throw new Error("no window");
        const s = view.getComputedStyle(b);
        return `${s.backgroundColor} ${s.color}`;
      });
    // Unpressed, it looks like the header's other buttons; pressed, it does not.
    assert.equal(await toggle.getAttribute("aria-pressed"), "false");
    assert.equal(await look("#theme-toggle"), await look("#keys-help"));
    await toggle.click();
    assert.equal(await toggle.getAttribute("aria-pressed"), "true");
    assert.notEqual(await look("#theme-toggle"), await look("#keys-help"), "pressed shows");
    const named = page.getByRole("button", { name: "Dark theme", exact: true, pressed: true });
    assert.equal(await named.count(), 1, "its name stays the same; the state is aria-pressed");
    await toggle.press("Enter");
    assert.equal(await toggle.getAttribute("aria-pressed"), "false");
    assert.equal(await look("#theme-toggle"), await look("#keys-help"));
  });
});
