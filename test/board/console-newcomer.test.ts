// What a newcomer hit reading in the Console (issue 24), each checked in Chromium: task lists
// as boxes (☐ ☑) in the Console and both exports; an assistant's head keeps Copy and ¶ on its
// first line at 1400 px; the branch's usage total grows as replies are followed; on a phone the
// list and a conversation are two screens, with a Back control (and the browser's Back) that
// returns to the list where it was; light and dark, 1400, 1024 and 390 px, axe-clean.
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { after, before, describe, it, type TestContext } from "node:test";
import type { Page } from "playwright-core";
import { startBoard } from "../../src/board/index.ts";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { header, idOf, project, tempDir, user, writeSession } from "../helpers/reader.ts";
import {
  type Browser,
  browserSkip,
  closeSuiteBrowsers,
  launchBrowser,
  launchSuiteBrowsers,
  openConsole,
  runAxe,
  seriousOf,
} from "./browser.ts";
import { send } from "./http-client.ts";
import { assistantMessage } from "./reading-fixture.ts";

if (browserSkip) process.stdout.write(`# Console newcomer suite skipped: ${browserSkip}\n`);

/** Enough conversations that the list is longer than a phone's screen. */
const LISTED = 24;

const TASKS = ["Steps:", "", "- [ ] write the test", "- [x] read the issue", "- [X] plan"].join(
  "\n",
);

/** An assistant reply with everything its head can show: a long model, cache, cost, a stop. */
function reply(id: string, parentId: string, n: number, text: string, cost = 0.1234): object {
  return assistantMessage(
    id,
    parentId,
    n,
    [{ type: "text", text }],
    { input: 12_345, output: 1_234, cacheRead: 40_123, cacheWrite: 2_048, cost },
    { model: "claude-sonnet-4-5-20250929-with-a-long-deployment-name", stopReason: "length" },
  );
}

function writeNewcomerFixture(t: TestContext) {
  const base = tempDir(t, "newcomer-");
  const p = project(base, "alpha", "main");
  for (let i = 0; i < LISTED; i++) {
    writeSession(p.sessionsDir, `s${String(i).padStart(2, "0")}.jsonl`, [
      header(p.projectRoot, {
        id: `01a00000-0000-7000-8000-0000000001${String(i).padStart(2, "0")}`,
      }),
      user("u1", null, `Listed conversation ${i}`, 1),
      reply("a1", "u1", 2, `Answer ${i}`),
    ]);
  }
  writeSession(p.sessionsDir, "tasks.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-000000000201" }),
    user("u1", null, "What is left to do?", 1),
    reply("a1", "u1", 2, TASKS),
  ]);
  const grow = writeSession(p.sessionsDir, "grow.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-000000000202" }),
    user("u1", null, "A growing conversation", 1),
    reply("a1", "u1", 2, "The first answer", 0.5),
  ]);
  writeSession(p.sessionsDir, "words.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-000000000203" }),
    user("u1", null, LONG_WORDS, 1),
  ]);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  const reader = () => createReader({ roots: () => rootsFromSpecs(specs, []) });
  return {
    reader,
    specs,
    grow,
    tasks: idOf(reader(), "tasks.jsonl"),
    growId: idOf(reader(), "grow.jsonl"),
    listed: (i: number) => idOf(reader(), `s${String(i).padStart(2, "0")}.jsonl`),
  };
}

/** A title of long words, the kind a table squeezing its column breaks mid-word. */
const LONG_WORDS =
  "Internationalization reconciliation: documentation, configuration, authentication";

const portOf = (url: string) => Number(new URL(url).port);

/** What has focus, as a short description. */
const focusedText = (page: Page) =>
  page.evaluate<string>(
    `document.activeElement.tagName + " " + document.activeElement.textContent`,
  );

/** The rectangle of `selector` (its first match), or null when it is not rendered. */
const boxOf = (page: Page, selector: string) =>
  page.evaluate<{ top: number; bottom: number; height: number; width: number } | null>(`(() => {
    const e = document.querySelector(${JSON.stringify(selector)});
    if (!e || !e.checkVisibility()) return null;
    const r = e.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: r.height, width: r.width };
  })()`);

describe("board Console: what a newcomer hit", { skip: browserSkip }, () => {
  let light: Browser;
  let dark: Browser;
  let phone: Browser;
  let phoneDark: Browser;
  before(async () => {
    ({ light, dark, phone } = await launchSuiteBrowsers());
    phoneDark = await launchBrowser({ width: 390, height: 844 }, "dark");
  });
  after(async () => {
    await closeSuiteBrowsers({ light, dark, phone });
    await phoneDark?.close();
  });

  it("shows a task list as boxes, not [ ] and [x], in the Console and both exports", async (t) => {
    const fx = writeNewcomerFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.goto(`${url}#c=${fx.tasks}`);
    const list = page.locator("article.part.assistant .md ul");
    await list.waitFor();
    assert.deepEqual(await list.locator("li").allTextContents(), [
      "☐ write the test",
      "☑ read the issue",
      "☑ plan",
    ]);
    assert.deepEqual(
      await list.locator("li > span").evaluateAll((spans) => spans.map((s) => s.className)),
      ["task-open", "task-done", "task-done"],
    );
    const bullets = await page.evaluate<string[]>(
      `[...document.querySelectorAll("article.part.assistant .md ul li")].map((li) => getComputedStyle(li).listStyleType)`,
    );
    assert.deepEqual(bullets, ["none", "none", "none"], "the box stands in the bullet's place");
    const port = portOf(url);
    const md = await send(port, `/api/conversations/${fx.tasks}/export?format=md&branch=main`);
    assert.equal(md.status, 200);
    assert.match(md.text, /- ☐ write the test\n- ☑ read the issue\n- ☑ plan/);
    const html = await send(port, `/api/conversations/${fx.tasks}/export?format=html&branch=main`);
    assert.equal(html.status, 200);
    assert.match(html.text, /<li>(<span>)?☐(<\/span>)? write the test<\/li>/);
    for (const text of [md.text, html.text]) {
      assert.ok(!/\[[ xX]\] /.test(text), "no literal task marker is left");
      assert.ok(!text.includes("<input"), "no form control in an export");
    }
  });

  for (const [width, which] of [
    [1400, "light"],
    [1400, "dark"],
    [1024, "light"],
  ] as const) {
    it(`keeps Copy and ¶ on the first line of a long assistant head at ${width} px (${which})`, async (t) => {
      const fx = writeNewcomerFixture(t);
      const browser = which === "dark" ? dark : light;
      const { page, url } = await openConsole(t, browser.context, fx.reader());
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${url}#c=${fx.tasks}`);
      const head = page.locator("article.part.assistant .part-head");
      await head.waitFor();
      const lines = await head.evaluate((h) => {
        const top = (sel: string) => {
          const e = h.querySelector(sel);
          if (!e) throw new Error(`no ${sel}`);
          return Math.round(e.getBoundingClientRect().top);
        };
        return {
          who: top(".who"),
          copy: top("button.copy"),
          link: top("button.link"),
          when: top("time"),
          right: Math.round(h.getBoundingClientRect().right),
          tools: Math.round(h.querySelector(".part-tools")?.getBoundingClientRect().right ?? 0),
        };
      });
      // The head is long enough to wrap (its time goes under), yet Copy and ¶ stay up top.
      assert.ok(lines.when > lines.who, `the head wraps here: ${JSON.stringify(lines)}`);
      assert.ok(
        Math.abs(lines.copy - lines.who) <= 6,
        `Copy on the first line: ${JSON.stringify(lines)}`,
      );
      assert.ok(
        Math.abs(lines.link - lines.who) <= 6,
        `¶ on the first line: ${JSON.stringify(lines)}`,
      );
      assert.ok(lines.right - lines.tools <= 2, "at the head's end");
    });
  }

  it("grows the branch's usage total as followed replies arrive on the live stream", async (t) => {
    const fx = writeNewcomerFixture(t);
    // A board on sources pushes appends (the live route); a reader-only one is polled instead.
    const board = await startBoard({ sources: { specs: fx.specs, registrations: [] }, lanes: 1 });
    t.after(() => board.close());
    const page = await light.context.newPage();
    t.after(() => page.close());
    page.setDefaultTimeout(DEADLINE_MS);
    const pushed: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/live?")) pushed.push(r.url());
    });
    // The catalogue, read again every few seconds, is held at its first answer: the total
    // must grow with the replies the follow appends, not wait for a catalogue that changed.
    let firstCatalogue: { status: number; body: Buffer } | null = null;
    await page.route(
      (u) => u.pathname === "/api/conversations",
      async (route) => {
        if (firstCatalogue === null) {
          const res = await route.fetch();
          firstCatalogue = { status: res.status(), body: await res.body() };
        }
        await route.fulfill({
          status: firstCatalogue.status,
          contentType: "application/json",
          body: firstCatalogue.body,
        });
      },
    );
    await page.goto(`${board.url}#c=${fx.growId}`);
    await page.locator("#follow-status.live").waitFor();
    const totals = page.locator("#conv-totals");
    assert.match(
      (await totals.textContent()) ?? "",
      /^Branch usage \(1 reply read\): .*\$0\.5000$/,
    );
    appendFileSync(fx.grow, `${JSON.stringify(user("u2", "a1", "And then?", 3))}\n`);
    appendFileSync(fx.grow, `${JSON.stringify(reply("a2", "u2", 4, "The second answer", 0.25))}\n`);
    await page.getByText("The second answer").waitFor();
    await totals
      .getByText(/^Branch usage \(2 replies read\): in 25k · out 2\.5k · .*\$0\.7500$/)
      .waitFor();
  });

  for (const [name, pick] of [
    ["light", () => phone],
    ["dark", () => phoneDark],
  ] as const) {
    it(`shows a phone the list, then a conversation full screen with Back to the list (${name})`, async (t) => {
      const fx = writeNewcomerFixture(t);
      const { page, url } = await openConsole(t, pick().context, fx.reader());
      // The list is the page: no box of its own scrolls, the page does; no conversation yet.
      const wrap = await page.evaluate<{ inner: number; page: number }>(`(() => {
        const w = document.querySelector(".table-wrap");
        const d = document.documentElement;
        return { inner: w.scrollHeight - w.clientHeight, page: d.scrollHeight - d.clientHeight };
      })()`);
      assert.ok(wrap.inner <= 1, `the list has no scroller of its own: ${JSON.stringify(wrap)}`);
      assert.ok(wrap.page > 400, `the page scrolls the list: ${JSON.stringify(wrap)}`);
      assert.equal(await boxOf(page, "#conversation"), null, "no conversation under the list");
      assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: the list");

      // Down the list, a row in the middle of the screen.
      await page.evaluate("window.scrollTo(0, 300)");
      const listY = await page.evaluate<number>("window.scrollY");
      assert.equal(listY, 300, "the list scrolls as a page");
      const picked = await page.evaluate<string>(`(() => {
        const b = [...document.querySelectorAll("#catalogue button.open")].find((e) => e.getBoundingClientRect().top > 300 && /^Listed conversation \\d+$/.test(e.textContent));
        return b.textContent;
      })()`);
      const n = Number(/^Listed conversation (\d+)$/.exec(picked)?.[1]);
      assert.ok(Number.isInteger(n), picked);
      const other = n === 5 ? 6 : 5;
      const row = page.getByRole("button", { name: picked, exact: true });
      await row.click();

      // The conversation fills the screen: no list, the history takes most of the height.
      await page.getByText(`Answer ${n}`, { exact: true }).waitFor();
      assert.equal(await boxOf(page, "#catalogue"), null, "the list is not shown under it");
      const history = await boxOf(page, "#history");
      assert.ok(history && history.height >= 844 * 0.5, `history ${JSON.stringify(history)}`);
      assert.equal(
        await page.evaluate<number>("document.documentElement.scrollHeight - innerHeight"),
        0,
        "the screen itself does not scroll: the history does",
      );
      const back = page.getByRole("button", { name: "Back to the list" });
      assert.ok((await boxOf(page, "#back-to-list"))!.top < 200, "Back is at the top");
      assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: the conversation");

      // Back returns to the list where it was, focus on the row that was opened.
      await back.click();
      await row.waitFor();
      assert.equal(await page.evaluate<number>("window.scrollY"), listY);
      assert.equal(await focusedText(page), `BUTTON ${picked}`);
      assert.equal(new URL(page.url()).hash, "", "back on the list's own entry");

      // The browser's Back does the same.
      const otherRow = page.getByRole("button", {
        name: `Listed conversation ${other}`,
        exact: true,
      });
      await otherRow.scrollIntoViewIfNeeded();
      const otherY = await page.evaluate<number>("window.scrollY");
      await otherRow.click();
      await page.getByText(`Answer ${other}`, { exact: true }).waitFor();
      await page.goBack();
      await otherRow.waitFor();
      assert.equal(await page.evaluate<number>("window.scrollY"), otherY);
      assert.equal(await focusedText(page), `BUTTON Listed conversation ${other}`);

      // After a branch step inside the conversation, Back still goes to the list, not one step.
      await row.scrollIntoViewIfNeeded();
      const rowY = await page.evaluate<number>("window.scrollY");
      await row.click();
      await page.getByText(`Answer ${n}`, { exact: true }).waitFor();
      await page.locator("#branches .pick").first().click();
      await page.waitForURL((u) => /b=main/.test(u.hash));
      await back.click();
      await row.waitFor();
      assert.equal(new URL(page.url()).hash, "");
      assert.equal(await page.evaluate<number>("window.scrollY"), rowY);

      // A conversation opened from a link (no list behind it): Back shows the list all the same.
      const linked = await pick().context.newPage();
      t.after(() => linked.close());
      await linked.goto(`${url}#c=${fx.listed(7)}`);
      await linked.getByText("Answer 7", { exact: true }).waitFor();
      await linked.getByRole("button", { name: "Back to the list" }).click();
      await linked.getByRole("button", { name: "Listed conversation 7", exact: true }).waitFor();
      assert.equal(await focusedText(linked), "BUTTON Listed conversation 7");
    });
  }

  it("names the project once and breaks no title mid-word when the catalogue is a list at 1024 px", async (t) => {
    const fx = writeNewcomerFixture(t);
    const { page, url } = await openConsole(t, light.context, fx.reader());
    await page.setViewportSize({ width: 1024, height: 900 });
    await page.goto(url);
    await page.getByRole("button", { name: LONG_WORDS }).waitFor();
    // The group heading names the project; no row repeats it, nor the one seat every row has.
    assert.deepEqual(await page.locator("tr.group th").allTextContents(), ["alpha (27)"]);
    assert.equal(await page.locator("tr.row td.project").count(), 0, "no project column");
    assert.equal(await page.locator("tr.row td.seat").count(), 0, "no seat column for one seat");
    assert.equal(await page.locator("#seat-column").isVisible(), false);
    // Each word of the title on one line: a line may end between words, never inside one.
    const broken = await page.evaluate<string[]>(`(() => {
      const b = [...document.querySelectorAll("#catalogue button.open")].find((e) => e.textContent === ${JSON.stringify(LONG_WORDS)});
      const text = b.querySelector("span").firstChild;
      const out = [];
      for (const m of text.data.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(text, m.index);
        r.setEnd(text, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0]);
      }
      return out;
    })()`);
    assert.deepEqual(broken, [], "no word of the title is broken across lines");
  });

  it("shows a named row's first prompt under its title, and its message count and model as facts", async (t) => {
    const p = project(tempDir(t, "row-facts-"), "beta", "main");
    writeSession(p.sessionsDir, "named.jsonl", [
      header(p.projectRoot),
      {
        type: "session_info",
        id: "n1",
        parentId: null,
        timestamp: "2026-01-01T00:00:00.500Z",
        name: "Parser work",
      },
      user("u1", "n1", "Fix the parser \u202e so lists start at 1", 1),
      reply("a1", "u1", 2, "Done"),
    ]);
    const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
    const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
    const { page, url } = await openConsole(t, light.context, reader);
    await page.setViewportSize({ width: 1024, height: 900 });
    await page.goto(url);
    await page.getByRole("button", { name: "Parser work" }).waitFor();
    // The bidi override is a marker, never an override of the row's text.
    assert.equal(
      await page.locator("tr.row td.title .preview").textContent(),
      "Fix the parser <U+202E> so lists start at 1",
    );
    assert.equal(await page.locator("tr.row td.count").textContent(), "2 messages");
    assert.equal(
      await page.locator("tr.row td.model").textContent(),
      "claude-sonnet-4-5-20250929-with-a-long-deployment-name",
    );
  });

  it("shows both the list and the conversation on wide screens, with no Back control", async (t) => {
    const fx = writeNewcomerFixture(t);
    for (const width of [1400, 1024]) {
      const { page, url } = await openConsole(t, light.context, fx.reader());
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${url}#c=${fx.listed(2)}`);
      await page.getByText("Answer 2", { exact: true }).waitFor();
      assert.ok(await boxOf(page, "#catalogue"), `${width}: the list shows`);
      assert.ok(await boxOf(page, "#history"), `${width}: the conversation shows`);
      assert.equal(await boxOf(page, "#back-to-list"), null, `${width}: no Back control`);
    }
  });
});
