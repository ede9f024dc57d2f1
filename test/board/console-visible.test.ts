// The Console's visible-text rule in Chromium: every string from a conversation or the wire
// reaches the page with the characters that could hide, reorder or spoof text shown as the
// terminal and the exports show them (`^[`, `<U+202E>`, `<U+D800>`), as marker spans.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { type Browser, browserSkip, launchBrowser, openConsole } from "./browser.ts";
import { writeBoardFixture } from "./fixture.ts";

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
});
