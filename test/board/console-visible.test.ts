// The Console's visible-text rule in Chromium: every string from a conversation or the wire
// reaches the page with the characters that could hide, reorder or spoof text shown as the
// terminal and the exports show them (`^[`, `<U+202E>`, `<U+D800>`), as marker spans: in the
// history and in the live run's area alike.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { firstForbidden } from "../cli/hostile.ts";
import { type Browser, browserSkip, launchBrowser, openConsole } from "./browser.ts";
import { writeBoardFixture } from "./fixture.ts";

/** What a hostile engine, tool or controller may send: a bidi override, ESC, C1, a separator. */
const EVIL = "abc\u202etxt.exe \u001b[2J\u001b]0;title\u0007 \u009b \u2028end";

if (browserSkip) process.stdout.write(`# Console visible text skipped: ${browserSkip}\n`);

/** `texts` as the Console's text.js shows them: each one's text content and its markers. */
function shownInPage(page: Page, texts: string[]): Promise<{ text: string; markers: string[] }[]> {
  return page.evaluate<{ text: string; markers: string[] }[]>(`(async () => {
    const { textEl } = await import("/text.js");
    return ${JSON.stringify(texts)}.map((s) => {
      const node = textEl("div", "", s);
      return {
        text: node.textContent,
        markers: [...node.querySelectorAll(".ctl")].map((m) => m.textContent),
      };
    });
  })()`);
}

describe("board Console visible text", { skip: browserSkip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("marks a lone surrogate as the terminal does when text carries one", async (t) => {
    const fx = await writeBoardFixture(t);
    const { page } = await openConsole(t, browser.context, fx.reader());
    const shown = await shownInPage(page, ["a\ud800b", "\udfff", "pair 😀 kept", "x\ud83d"]);
    assert.deepEqual(shown, [
      { text: "a<U+D800>b", markers: ["<U+D800>"] },
      { text: "<U+DFFF>", markers: ["<U+DFFF>"] },
      { text: "pair 😀 kept", markers: [] },
      { text: "x<U+D83D>", markers: ["<U+D83D>"] },
    ]);
  });

  it("shows the live run's text as the history shows it when a run streams U+202E and ESC", async (t) => {
    const fx = await writeBoardFixture(t);
    const { page } = await openConsole(t, browser.context, fx.reader());
    // A steering answer with a hostile refusal, as a controller could word one.
    await page.route("**/api/conversations/c/control", (route) =>
      route.fulfill({
        status: 409,
        contentType: "application/json",
        // The board's refusal shape (api.js reads one without `reconcile` as a bad answer).
        body: JSON.stringify({
          ok: false,
          refusal: { code: "controller", message: EVIL, reconcile: false },
        }),
      }),
    );
    const ev = (sequence: number, event: object) => ({
      type: "event",
      streamEpoch: "e1",
      sequence,
      id: `e1:${sequence}`,
      event,
    });
    const events = [
      ev(1, { kind: "run-started" }),
      ev(2, { kind: "message-started", role: "assistant" }),
      ev(3, { kind: "text-delta", delta: `streamed ${EVIL}` }),
      ev(4, { kind: "tool-started", toolCallId: "t1", toolName: `tool ${EVIL}` }),
      ev(5, { kind: "engine-notice", method: "notify", message: `notice ${EVIL}` }),
      ev(6, {
        kind: "receipt",
        receipt: { id: "r1", state: "settled", reason: "interrupted", detail: EVIL },
      }),
    ];
    const textOf = (id: string) =>
      page.evaluate<string>(`(() => {
        const walker = document.createTreeWalker(document.getElementById(${JSON.stringify(id)}), NodeFilter.SHOW_TEXT);
        const parts = [];
        while (walker.nextNode()) parts.push(walker.currentNode.data);
        return parts.join("");
      })()`);
    await page.evaluate(`(async () => {
      const { createLiveRun } = await import("/live-run.js");
      const live = createLiveRun();
      window.liveUnderTest = live;
      live.attach("c");
      live.onController({ running: true });
      for (const e of ${JSON.stringify(events)}) live.onEvent(e);
      live.onDialog({ method: "select", title: ${JSON.stringify(`dialog ${EVIL}`)} });
    })()`);
    const streamed = await textOf("live-activity");
    const markers = await page.locator("#live-activity .ctl, #live-run .ctl").count();
    // A reconnect the controller could not replay ends the preview at a marker in its words.
    await page.evaluate(
      `window.liveUnderTest.onSeam({ message: ${JSON.stringify(`seam ${EVIL}`)} })`,
    );
    const activity = `${streamed}\n${await textOf("live-activity")}`;
    // The panel sits in the (closed) conversation view: the click is dispatched, not aimed.
    await page.locator("#live-takeover").dispatchEvent("click");
    await page
      .locator("#live-refusal")
      .getByText("Press Take control first")
      .waitFor({ state: "attached" });
    const refusal = await textOf("live-refusal");
    // A controller that is gone says so in its own words.
    await page.evaluate(
      `window.liveUnderTest.onController({ running: false, message: ${JSON.stringify(`gone ${EVIL}`)} })`,
    );
    const who = await textOf("live-who");
    for (const [where, text] of [
      ["activity", activity],
      ["refusal", refusal],
      ["who", who],
    ] as const) {
      assert.equal(
        firstForbidden(text),
        null,
        `${where} shows nothing raw: ${JSON.stringify(text)}`,
      );
    }
    // Each piece reads as the history would show the same string.
    const [one] = await shownInPage(page, [EVIL]);
    assert.ok(one);
    for (const piece of [
      "streamed",
      "Running tool",
      "notify: notice",
      "interrupted (",
      "dialog",
      "seam",
    ]) {
      assert.ok(activity.includes(piece), `${piece} in ${activity}`);
    }
    assert.ok(activity.includes(`streamed ${one.text}`), activity);
    assert.ok(activity.includes(`(${one.text})`), activity);
    assert.ok(refusal.includes(one.text), refusal);
    assert.ok(who.includes(`gone ${one.text}`), who);
    assert.ok(markers > 0, "markers are spans, as in the history");
  });
});
