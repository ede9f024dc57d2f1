// Web Push in Chromium (issue 27 items 3 and 5): the Console registers its service worker and
// is installable (DevTools' own installability check finds nothing missing); a push delivered
// to the worker through the DevTools protocol (`ServiceWorker.deliverPushMessage`) shows its
// notification (the payload's label, no conversation text), and its click opens the
// conversation in the open Console. "Push to this device" asks permission only on its click,
// needs a login, and sends the subscription with the login key; a stall then reaches the
// subscription's endpoint as a push. Headless Chromium cannot reach a real push service, so
// the page's PushManager.subscribe is replaced by one that answers with a subscription at the
// test's local endpoint (everything after it is the Console's and the board's own code).
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import type { Board } from "../../src/board/index.ts";
import { startController } from "../control/controller-fixture.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { type PushEndpoint, startPushEndpoint } from "../helpers/push-endpoint.ts";
import { ARTIFACTS, type Browser, browserSkip, launchBrowser } from "./browser.ts";
import { boardOverController } from "./controlled-board.ts";

const T = { timeout: SLOW_TEST_MS };

/** Counts permission prompts, before any page script runs. */
const COUNT_PROMPTS = `(() => {
  window.__prompts = 0;
  const real = Notification.requestPermission.bind(Notification);
  Notification.requestPermission = (...a) => { window.__prompts += 1; return real(...a); };
})();`;

/** Records each notification the worker shows (and still shows it), in the worker. */
const RECORD_SHOWN = `(() => {
  self.__shown = [];
  const real = self.registration.showNotification.bind(self.registration);
  self.registration.showNotification = (title, options) => {
    const p = real(title, options);
    return p.then(() => {
      self.__shown.push({ title, body: options.body, tag: options.tag, conversation: options.data.conversation });
    });
  };
})();`;

/** A PushManager.subscribe that answers with `sub` (a subscription at the test's endpoint). */
function fakeSubscribe(sub: { endpoint: string; keys: { p256dh: string; auth: string } }) {
  return `(() => {
    const sub = ${JSON.stringify(sub)};
    let current = null;
    const made = () => ({
      endpoint: sub.endpoint,
      toJSON: () => ({ endpoint: sub.endpoint, expirationTime: null, keys: sub.keys }),
      unsubscribe: async () => { current = null; return true; },
    });
    PushManager.prototype.subscribe = async function (options) {
      window.__subscribeKey = options.applicationServerKey;
      current = made();
      return current;
    };
    PushManager.prototype.getSubscription = async function () { return current; };
  })();`;
}

async function pushBoard(
  t: TestContext,
  e: PushEndpoint,
  extra: { stallMs?: number; script?: object } = {},
) {
  let board: Board | undefined;
  t.after(() => board?.close());
  const { ctl, f } = await startController(t, extra.script ? { script: extra.script } : {});
  const made = await boardOverController(f, ctl.socketPath, {
    push: { dir: join(f.root, "state", "board"), origins: [e.origin] },
    ...(extra.stallMs === undefined ? {} : { stallMs: extra.stallMs }),
  });
  board = made.board;
  t.after(made.unregister);
  return { board, conversation: made.conversation, f, boardDir: join(f.root, "state", "board") };
}

for (const width of [1400, 390]) {
  describe(`the Console's Web Push at ${width} px`, { skip: browserSkip }, () => {
    let browser: Browser | undefined;
    let e: PushEndpoint | undefined;
    before(async () => {
      browser = await launchBrowser({ width, height: width === 390 ? 844 : 900 });
      e = await startPushEndpoint();
    });
    after(async () => {
      await browser?.close();
      await e?.close();
    });

    it(
      "is installable, shows a push delivered to its worker, and the click opens the conversation",
      T,
      async (t) => {
        assert.ok(browser && e);
        const { board, conversation, f } = await pushBoard(t, e);
        const context = browser.context;
        const origin = new URL(board.url).origin;
        await context.grantPermissions(["notifications"], { origin });
        const page = await context.newPage();
        t.after(() => page.close());
        page.setDefaultTimeout(DEADLINE_MS);
        const errors: string[] = [];
        page.on("pageerror", (err) => errors.push(err.message));
        page.on("console", (m) => {
          if (m.type() === "error") errors.push(m.text());
        });
        const cdp = await context.newCDPSession(page);
        await cdp.send("ServiceWorker.enable");
        cdp.on("ServiceWorker.workerErrorReported", ({ errorMessage }) =>
          errors.push(`service worker: ${errorMessage.errorMessage}`),
        );
        const registration = new Promise<string>((resolve) => {
          cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
            const r = registrations.find((x) => x.scopeURL === `${origin}/` && !x.isDeleted);
            if (r) resolve(r.registrationId);
          });
        });
        await page.goto(board.url);
        await page.locator("#inbox").waitFor();
        // Polled with evaluate: waitForFunction compiles its string in the page, which the CSP refuses.
        const deadline0 = Date.now() + 20_000;
        while (!(await page.evaluate("navigator.serviceWorker.controller !== null"))) {
          assert.ok(Date.now() < deadline0, "the service worker controls the page");
          await page.waitForTimeout(50);
        }
        const manifest = await cdp.send("Page.getAppManifest");
        assert.deepEqual(manifest.errors, [], "the manifest parses");
        const installable = await cdp.send("Page.getInstallabilityErrors");
        assert.deepEqual(
          installable.installabilityErrors,
          [],
          "Chromium finds the Console installable",
        );

        const payload = {
          v: 1,
          state: "waiting-approval",
          conversation,
          label: `Waiting for approval: ${f.projectRoot.split("/").at(-1)}/main`,
          since: new Date().toISOString(),
        };
        // What the worker shows is recorded as it calls showNotification (and still shown).
        const [worker] = context.serviceWorkers();
        assert.ok(worker, "the service worker runs");
        await worker.evaluate(RECORD_SHOWN);
        const shown = async () =>
          (await page.evaluate(`(async () => {
          const reg = await navigator.serviceWorker.ready;
          return (await reg.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag }));
        })()`)) as { title: string; body: string; tag: string }[];
        // Headless Chromium at times drops a shown notification from getNotifications() at once
        // (the worker's call resolved; nothing was closed): the push is delivered again then.
        let notes: { title: string; body: string; tag: string }[] = [];
        for (let attempt = 0; attempt < 5 && notes.length === 0; attempt += 1) {
          const before = Number(await worker.evaluate("self.__shown.length"));
          await cdp.send("ServiceWorker.deliverPushMessage", {
            origin,
            registrationId: await registration,
            data: JSON.stringify(payload),
          });
          const deadline = Date.now() + 20_000;
          while (Number(await worker.evaluate("self.__shown.length")) === before) {
            assert.ok(
              Date.now() < deadline,
              `the push showed a notification (${errors.join("; ")})`,
            );
            await page.waitForTimeout(50);
          }
          notes = await shown();
        }
        const recorded = await worker.evaluate("self.__shown");
        assert.deepEqual((recorded as unknown[])[0], {
          title: payload.label,
          body: "Open the Console to see it.",
          tag: `${conversation} waiting-approval`,
          conversation,
        });
        assert.deepEqual(notes, [
          {
            title: payload.label,
            body: "Open the Console to see it.",
            tag: `${conversation} waiting-approval`,
          },
        ]);
        await page.screenshot({ path: join(ARTIFACTS, `push-${width}.png`) });

        // The click, as the browser dispatches it to the worker.
        await worker.evaluate(`(async () => {
        const [n] = await self.registration.getNotifications();
        self.dispatchEvent(new NotificationEvent("notificationclick", { notification: n }));
      })()`);
        await page.waitForURL((u) => u.hash.includes(`c=${conversation}`));
        await page.locator("#conv-title").waitFor();
        assert.equal((await shown()).length, 0, "the clicked notification is closed");
        assert.deepEqual(errors, []);
      },
    );

    it(
      "asks permission only on the click, and a stall reaches the subscription as a push",
      T,
      async (t) => {
        assert.ok(browser && e);
        const { board, conversation, boardDir, f } = await pushBoard(t, e, {
          stallMs: 1500,
          script: { holds: ["assistant-start"] },
        });
        const context = browser.context;
        const origin = new URL(board.url).origin;
        const sub = e.subscribe();
        const page = await context.newPage();
        t.after(() => page.close());
        page.setDefaultTimeout(DEADLINE_MS);
        const errors: string[] = [];
        page.on("pageerror", (err) => errors.push(err.message));
        await page.addInitScript(COUNT_PROMPTS);
        await page.addInitScript(fakeSubscribe(sub));
        await page.goto(board.url);
        const toggle = page.locator("#push-toggle");
        await toggle.waitFor();
        assert.equal(await page.evaluate("window.__prompts"), 0, "no permission asked on load");

        // Not logged in: told so, and nothing is asked.
        await toggle.click();
        await page.locator("#push-note", { hasText: "Log in first" }).waitFor();
        assert.equal(await page.evaluate("window.__prompts"), 0);

        await page.goto(board.loginUrl);
        await page.waitForURL(`${origin}/`);
        await context.grantPermissions(["notifications"], { origin });
        await page.locator("#push-toggle").click();
        await page.locator("#push-note", { hasText: "Pushes come to this device now" }).waitFor();
        assert.equal(await page.evaluate("window.__prompts"), 1, "asked once, on the click");
        assert.equal(await page.locator("#push-toggle").getAttribute("aria-pressed"), "true");
        const key = (await (await fetch(`${origin}/api/push/key`)).json()) as { publicKey: string };
        assert.equal(await page.evaluate("window.__subscribeKey"), key.publicKey);
        const file = join(boardDir, "push", "subscriptions.json");
        assert.match(readFileSync(file, "utf8"), new RegExp(sub.id));
        await page.screenshot({ path: join(ARTIFACTS, `push-on-${width}.png`) });

        // A run that stalls: its push reaches the endpoint the page subscribed.
        const steer = (body: object) =>
          page.evaluate(
            `(async () => (await fetch("/api/conversations/${conversation}/control", {
            method: "POST",
            headers: { "Content-Type": "application/json", "X-Board-Login": sessionStorage.getItem("board-login") },
            body: ${JSON.stringify(JSON.stringify(body))},
          })).status)()`,
          );
        assert.equal(await steer({ op: "takeover" }), 200);
        assert.equal(await steer({ op: "prompt", text: "secret words" }), 200);
        const got = await e.next(30_000);
        assert.equal(got.id, sub.id);
        assert.equal(got.problem, null);
        assert.equal((JSON.parse(got.payload ?? "{}") as { state: string }).state, "stalled");
        assert.doesNotMatch(got.payload ?? "", /secret words/);
        writeFileSync(join(f.holdDir, "assistant-start.1.release"), "");

        // Off again: the board forgets it.
        await page.locator("#push-toggle").click();
        await page.locator("#push-note", { hasText: "Push is off for this device" }).waitFor();
        assert.doesNotMatch(readFileSync(file, "utf8"), new RegExp(sub.id));
        const wide = await page.evaluate("document.documentElement.scrollWidth");
        assert.ok(Number(wide) <= width, `nothing is wider than the screen (${wide})`);
        assert.deepEqual(errors, []);
      },
    );
  });
}
