// Steering from the Console as a person does it (issue 24 items 2 and 15), in Chromium with the
// real Controller over fake-pi, on a controlled conversation longer than one page: it opens at
// its end with the live panel under it; what the person sends and the reply streaming to it
// stay in view at the end of the history unless the person scrolls away, and a send from a
// paused view goes back to the end; the panel shows only the controls that apply now and says
// why the others are not there; all of it at 1400 and 390 px, light and dark, axe-clean.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it, type TestContext } from "node:test";
import type { Page } from "playwright-core";
import { ConversationClient } from "../../src/control/client/client.ts";
import { stableSession, startController } from "../control/controller-fixture.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import {
  type Browser,
  browserSkip,
  consoleState,
  launchBrowser,
  runAxe,
  seriousOf,
} from "./browser.ts";
import { boardOverController } from "./controlled-board.ts";

/** More messages than one page (100 parts): the Console must read on to reach the end. */
const MESSAGES = 130;

/** Waits for the Console to show what a test expects (testing.md: DEADLINE_MS). */
const WAIT_MS = DEADLINE_MS;

/** The fake-pi session, then MESSAGES alternating user and assistant messages. */
function longSession(cwd: string): Record<string, unknown>[] {
  const lines = stableSession(cwd);
  let parent = "aaaa0003";
  for (let i = 0; i < MESSAGES; i++) {
    const id = `bbbb${String(i).padStart(4, "0")}`;
    const role = i % 2 === 0 ? "user" : "assistant";
    lines.push({
      type: "message",
      id,
      parentId: parent,
      timestamp: "2026-01-01T00:00:02.000Z",
      message: { role, content: [{ type: "text", text: `${role} line ${i}` }], timestamp: 2 },
    });
    parent = id;
  }
  return lines;
}

/** The last lines of a file, cut short, for a timeout's message (never throws). */
function lastLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .slice(-3)
      .map((l) => l.slice(0, 300));
  } catch (e) {
    return [String(e)];
  }
}

async function startLongControlledBoard(t: TestContext) {
  const { ctl, f } = await startController(t, { session: longSession });
  const { board, conversation, unregister } = await boardOverController(f, ctl.socketPath);
  t.after(unregister);
  t.after(() => board.close());
  return { board, conversation, ctl, sessionFile: f.sessionFile };
}

/**
 * Where `selector`'s last match is against the history's visible box: its bottom's distance
 * below the box's bottom (≤ 0: fully above it), and whether any of it shows.
 */
function placeOf(page: Page, selector: string) {
  return page.evaluate<{ below: number; shows: boolean; inHistory: boolean } | null>(`(() => {
    const all = document.querySelectorAll(${JSON.stringify(selector)});
    const e = all[all.length - 1];
    if (!e) return null;
    const h = document.getElementById("history");
    const r = e.getBoundingClientRect(), s = h.getBoundingClientRect();
    return { below: r.bottom - s.bottom, shows: r.bottom > s.top && r.top < s.bottom, inHistory: h.contains(e) };
  })()`);
}

/** Waits until `selector`'s last match ends in view (within `slack` px of the history's bottom). */
async function endsInView(page: Page, selector: string, slack = 2): Promise<void> {
  const until = Date.now() + WAIT_MS;
  let place = await placeOf(page, selector);
  while (!place?.inHistory || !place.shows || place.below > slack) {
    assert.ok(Date.now() < until, `${selector} never ended in view: ${JSON.stringify(place)}`);
    await new Promise((r) => setTimeout(r, 50));
    place = await placeOf(page, selector);
  }
}

/** The names of the steering buttons shown now, in order. */
const actionsShown = (page: Page) =>
  page.evaluate<string[]>(
    `[...document.querySelectorAll("#live-run .live-actions button")].filter((b) => b.checkVisibility()).map((b) => b.textContent)`,
  );

/** Waits until exactly `want` steering buttons show. */
async function actionsAre(page: Page, want: string[]): Promise<void> {
  const until = Date.now() + WAIT_MS;
  let now = await actionsShown(page);
  while (JSON.stringify(now) !== JSON.stringify(want)) {
    assert.ok(Date.now() < until, `the buttons shown stayed ${JSON.stringify(now)}, not ${want}`);
    await new Promise((r) => setTimeout(r, 50));
    now = await actionsShown(page);
  }
}

const historyTop = (page: Page) => page.locator("#history").evaluate((h) => h.scrollTop);

/** Two animation frames: whatever the page does about a change of size has been done. */
const settle = (page: Page) =>
  page.evaluate(
    "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r))))",
  );

describe("steering from the Console: the view and the controls follow the run", {
  skip: browserSkip,
}, () => {
  const browsers: Record<string, Browser> = {};
  before(async () => {
    // One after another: Chromiums starting at once on two cores can miss their deadline.
    browsers.wide = await launchBrowser({ width: 1400, height: 900 });
    browsers.phone = await launchBrowser({ width: 390, height: 844 }, "dark");
  });
  after(async () => {
    for (const b of Object.values(browsers)) await b.close();
  });

  for (const [name, key] of [
    ["1400 px, light", "wide"],
    ["390 px, dark", "phone"],
  ] as const) {
    it(`opens at the end and keeps a send and its reply in view (${name})`, async (t) => {
      const { board, conversation, sessionFile } = await startLongControlledBoard(t);
      const browser = browsers[key];
      assert.ok(browser);
      const page = await browser.context.newPage();
      t.after(() => page.close());
      page.setDefaultTimeout(WAIT_MS);
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      t.after(() => assert.deepEqual(errors, []));
      await page.goto(board.loginUrl);
      await page.waitForURL(board.url);
      await page.goto(`${board.url}#c=${conversation}`);

      // Every page read, the end in view, under it the live panel.
      await page.locator("#live-run").waitFor();
      await page.getByText(`assistant line ${MESSAGES - 1}`, { exact: true }).waitFor();
      await endsInView(page, "#parts article.part");
      assert.equal(await page.locator("#load-more").isHidden(), true, "no page left to read");
      assert.equal(await page.locator("#jump-end").isHidden(), true, "already at the end");

      await page.getByRole("button", { name: "Take control" }).click();
      await page
        .locator("#live-who")
        .getByText(/^You control this run\./)
        .waitFor();
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("now be slow please");
      await box.press("Enter");

      // What was sent lands at the end of the history, in view; the reply streams under it,
      // inside the history (where the finished message will be), and stays in view as it grows.
      await page.locator("#parts article.part.user", { hasText: "now be slow please" }).waitFor();
      await endsInView(page, "#parts article.part.user");
      for (const tick of [10, 40, 80]) {
        await page.locator("#live-activity .streaming", { hasText: `tick ${tick}` }).waitFor();
        // A tick's line may land between two frames: allow one line of growth.
        await endsInView(page, "#live-activity .streaming", 40);
      }

      // The person scrolls away: following pauses and the view stays where they put it.
      await page.locator("#history").hover();
      await page.mouse.wheel(0, -600);
      await page.locator("#follow-status", { hasText: "Following paused." }).waitFor();
      await settle(page);
      const left = await historyTop(page);
      await settle(page);
      assert.equal(await historyTop(page), left, "a paused view is not moved");
      assert.equal(await page.locator("#resume").isVisible(), true);

      // Back at the end, the run is interrupted; scrolled away again, a send brings the view
      // back to the end, with the message and its reply.
      await page.locator("#resume").click();
      await page.getByRole("button", { name: "Interrupt" }).click();
      await page.locator("#live-activity .streaming").waitFor({ state: "detached" });
      await actionsAre(page, ["Release"]);
      // The run can end before its stop has: until the controller takes messages again the
      // line says to wait (a send then was refused `fenced` at load 20).
      await page
        .locator("#live-why")
        .getByText(/^Send a message to start a run\./)
        .waitFor();
      await page.locator("#history").hover();
      await page.mouse.wheel(0, -600);
      await page.locator("#follow-status", { hasText: "Following paused." }).waitFor();
      await box.fill("and once more");
      await box.press("Enter");
      // A refusal (not a slow echo) shows in #live-refusal: say it if the echo never comes.
      await page
        .locator("#parts")
        .getByText("echo: and once more")
        .waitFor({ timeout: DEADLINE_MS })
        .catch(async (e: unknown) => {
          // Red a few times with two full suites at once (load ~19) and no refusal shown: say
          // what the page held, so the next red tells a send never answered (the text still in
          // the box) from a reply that never reached the history.
          const state = {
            ...(await consoleState(page)),
            // Looked up briefly: the box went once.
            box: await box.inputValue({ timeout: 1000 }).catch(() => "(absent)"),
            // Whether the engine wrote the reply at all: the session file's last lines.
            file: lastLines(sessionFile),
          };
          throw new Error(`${e}; the page: ${JSON.stringify(state)}`);
        });
      await endsInView(page, "#parts article.part");
      await page.locator("#follow-status", { hasText: "Following:" }).waitFor();
    });
  }

  it("shows only the controls that apply now and says why the others are not there", async (t) => {
    const { board, conversation, ctl } = await startLongControlledBoard(t);
    const open = async (key: string, loggedIn: boolean): Promise<Page> => {
      const browser = browsers[key];
      assert.ok(browser);
      // Each suite browser is its own profile: the phone's holds no login.
      const page = await browser.context.newPage();
      t.after(() => page.close());
      page.setDefaultTimeout(WAIT_MS);
      if (loggedIn) {
        await page.goto(board.loginUrl);
        await page.waitForURL(board.url);
      }
      await page.goto(`${board.url}#c=${conversation}`);
      await page
        .locator("#live-who")
        .getByText(/controls this run\./)
        .waitFor();
      return page;
    };
    const operator = await open("wide", true);
    const why = (page: Page) => page.locator("#live-why").textContent();

    // Nobody controls: Take control, and the line says what it is for.
    await actionsAre(operator, ["Take control"]);
    assert.equal(await why(operator), "Take control to send messages, interrupt or stop the run.");
    assert.deepEqual(seriousOf(await runAxe(operator)), [], "axe: nobody controls");

    // In control, idle: Release only; Interrupt and Force stop are said to come with a run.
    await operator.getByRole("button", { name: "Take control" }).click();
    await actionsAre(operator, ["Release"]);
    assert.equal(
      await operator.evaluate("document.activeElement.id"),
      "live-message",
      "the pressed button went: focus moves on to the message box",
    );
    assert.equal(
      await why(operator),
      "Send a message to start a run. Interrupt and Force stop show while one runs.",
    );

    // A run in progress: Interrupt and Force stop too.
    await operator.getByRole("textbox", { name: "Message" }).fill("be slow please");
    await operator.getByRole("textbox", { name: "Message" }).press("Enter");
    await operator.locator("#live-activity .streaming").waitFor();
    await actionsAre(operator, ["Release", "Interrupt", "Force stop"]);
    assert.equal(
      await why(operator),
      "Interrupt stops the reply; Force stop kills the engine if it does not stop.",
    );
    assert.deepEqual(seriousOf(await runAxe(operator)), [], "axe: in control, running");
    await operator.getByRole("button", { name: "Interrupt" }).click();
    await actionsAre(operator, ["Release"]);

    // Another client takes control: this page may only take it back.
    const terminal = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-op" });
    t.after(() => terminal.close());
    await terminal.connect();
    assert.equal((await terminal.takeover()).outcome, "admitted");
    await operator.locator("#live-who").getByText("local-operator controls this run.").waitFor();
    await actionsAre(operator, ["Take control"]);
    assert.equal(
      await why(operator),
      "Take control to send from this page; the other client then only watches.",
    );

    // A phone, dark, watching: the same rules, and the panel passes axe there too.
    const phone = await open("phone", false);
    // It joined after the takeover, so no act named the controller to it: the state does.
    await phone.locator("#live-who").getByText("local-operator controls this run.").waitFor();
    await actionsAre(phone, ["Take control"]);
    assert.deepEqual(seriousOf(await runAxe(phone)), [], "axe: 390 px, dark");
  });
});
