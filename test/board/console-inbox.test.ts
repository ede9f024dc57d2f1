// The Console's "Needs you" inbox in Chromium (issue 27 items 2, 3 and 5): a board over a real
// Pi's controller; the inbox lists it waiting for input at load, the count in the title and on
// the tab icon; a model error while the page sits in a background tab turns it failed, live,
// and a browser notification is made (permission asked on a click), holding no conversation
// text; its click opens the conversation. At 1400 and 390 px, with screenshots.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startReal } from "../control/real-controller.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { ARTIFACTS, type Browser, browserSkip, launchBrowser } from "./browser.ts";
import { boardOverController } from "./controlled-board.ts";

const T = { timeout: SLOW_TEST_MS };

/** Records each Notification the page makes (and still makes it), before any page script. */
const RECORD_NOTIFICATIONS = `(() => {
  const Real = window.Notification;
  window.__notes = [];
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notes.push({ title, body: options?.body ?? "", tag: options?.tag ?? "", n: this });
    }
  }
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  Recorded.requestPermission = (...a) => Real.requestPermission(...a);
  window.Notification = Recorded;
})();`;

for (const width of [1400, 390]) {
  describe(`the Console's inbox at ${width} px`, { skip: browserSkip }, () => {
    let browser: Browser | undefined;
    before(async () => {
      browser = await launchBrowser({ width, height: width === 390 ? 844 : 900 });
    });
    after(() => browser?.close());

    it(
      "lists a waiting conversation, notifies a failure in a background tab, and its click opens it",
      T,
      async (t) => {
        const run = await startReal(t, {
          replies: [{ kind: "error", status: 400, body: '{"error":{"message":"no such model"}}' }],
        });
        const { board, conversation, unregister } = await boardOverController(
          run.f,
          run.ctrl.socketPath,
        );
        t.after(async () => {
          await board.close();
          unregister();
        });
        assert.ok(browser);
        const context = browser.context;
        const page = await context.newPage();
        t.after(() => page.close());
        page.setDefaultTimeout(DEADLINE_MS);
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(e.message));
        await page.addInitScript(RECORD_NOTIFICATIONS);
        await page.goto(board.url);
        const row = page.locator("#inbox .inbox-item");
        await row.first().waitFor();
        assert.equal(await row.count(), 1);
        assert.match((await row.first().textContent()) ?? "", /Waiting for input/);
        // Named by its title once the catalogue is read (the fixture's first prompt, "hi").
        await page.waitForFunction(
          `document.querySelector("#inbox .inbox-name")?.textContent === "hi"`,
        );
        assert.match(await page.title(), /^\(1\) /, "the count is in the title");
        const icon = await page.evaluate(`document.querySelector('link[rel="icon"]').href`);
        assert.match(
          String(icon),
          /^data:image\/png;base64,/,
          "the tab icon is drawn with the count",
        );
        await page.screenshot({ path: join(ARTIFACTS, `inbox-${width}.png`) });

        // Permission is asked only on the click of "Notify me".
        assert.equal(await page.evaluate("Notification.permission"), "default");
        const notify = page.locator("#inbox-notify");
        assert.ok(await notify.isVisible());
        await context.grantPermissions(["notifications"], { origin: new URL(board.url).origin });
        await notify.click();
        await page.locator("#inbox-notify").waitFor({ state: "hidden" });

        // Another tab in front: the Console's is in the background.
        const other = await context.newPage();
        t.after(() => other.close());
        await other.goto("about:blank");
        await other.bringToFront();

        const { client } = await run.client();
        assert.equal((await client.takeover()).outcome, "admitted");
        assert.equal((await client.prompt("this will fail")).outcome, "admitted");
        await page.locator("#inbox .inbox-item.state-failed").waitFor();
        const notes = async () =>
          (await page.evaluate(
            "window.__notes.map(({ title, body, tag }) => ({ title, body, tag }))",
          )) as {
            title: string;
            body: string;
            tag: string;
          }[];
        const deadline = Date.now() + 20_000;
        while ((await notes()).length === 0) {
          assert.ok(Date.now() < deadline, "a notification was made");
          await page.waitForTimeout(50);
        }
        const [note] = await notes();
        assert.deepEqual(note, {
          title: `Failed: ${run.f.projectRoot.split("/").at(-1)}/main`,
          body: "Open the Console to see it.",
          tag: `${conversation} failed`,
        });
        assert.doesNotMatch(
          JSON.stringify(await notes()),
          /this will fail|no such model/,
          "no conversation text by default",
        );
        await page.bringToFront();
        await page.screenshot({ path: join(ARTIFACTS, `inbox-failed-${width}.png`) });
        await page.evaluate("window.__notes[0].n.dispatchEvent(new Event('click'))");
        await page.waitForURL((u) => u.hash.includes(`c=${conversation}`));
        await page.locator("#conv-title").waitFor();
        await page.screenshot({ path: join(ARTIFACTS, `inbox-opened-${width}.png`) });
        const wide = await page.evaluate("document.documentElement.scrollWidth");
        assert.ok(Number(wide) <= width, `nothing is wider than the screen (${wide})`);
        assert.deepEqual(errors, []);
      },
    );
  });
}
