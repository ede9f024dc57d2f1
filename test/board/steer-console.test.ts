// Watching and steering a controlled run from the Console in Chromium (issue 15 item 4), with
// the real Controller over fake-pi: a prompt from a terminal client streams into an open page
// without reload; a logged-in page takes control, sends (Enter), sees the answer, interrupts a
// slow reply and force-stops through the confirming dialog; a page that is not logged in
// watches, and every action it tries is refused in words.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Browser, chromium, type Page } from "playwright-core";
import { ConversationClient } from "../../src/control/client/client.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { startControlledBoard } from "./controlled-board.ts";

const CHROMIUM = "/usr/bin/chromium";
const skip = !existsSync(CHROMIUM) && !process.env.CI ? `${CHROMIUM} is missing` : false;

describe("steering from the Console in Chromium", { skip }, () => {
  let browser: Browser;
  let profile: string;
  before(async () => {
    profile = mkdtempSync(join(tmpdir(), "board-steer-chromium-"));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      timeout: DEADLINE_MS,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
  });
  after(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("watches a terminal's prompt, then takes control, sends, interrupts, force-stops", async (t) => {
    const { board, conversation, ctl } = await startControlledBoard(t);

    const errors: string[] = [];
    const pageIn = async (loggedIn: boolean): Promise<Page> => {
      const context = await browser.newContext();
      t.after(() => context.close());
      const page = await context.newPage();
      page.setDefaultTimeout(DEADLINE_MS);
      page.on("pageerror", (e) => errors.push(e.message));
      if (loggedIn) {
        await page.goto(board.loginUrl);
        await page.waitForURL(board.url);
      }
      await page.goto(`${board.url}#c=${conversation}`);
      await page.locator("#live-run").waitFor();
      return page;
    };
    const operator = await pageIn(true);
    const watcher = await pageIn(false);
    const who = (page: Page) => page.locator("#live-who");
    await who(operator).getByText("Nobody controls this run.").waitFor();
    // The catalogue marks the conversation a controller runs: its row, and only its row.
    const badges = watcher.locator("#catalogue .badge.live");
    await badges.first().waitFor();
    assert.equal(await badges.count(), 1);
    assert.equal(
      await badges.first().getAttribute("title"),
      "A controller is running this conversation",
    );

    // A terminal client prompts: the open pages show it without reload.
    const terminal = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-op" });
    t.after(() => terminal.close());
    await terminal.connect();
    assert.equal((await terminal.takeover()).outcome, "admitted");
    await who(operator).getByText("local-operator controls this run.").waitFor();
    assert.equal((await terminal.prompt("from the terminal")).outcome, "admitted");
    for (const page of [operator, watcher]) {
      await page.locator("#parts").getByText("echo: from the terminal").waitFor();
    }

    // The page that is not logged in watches; each action is refused in words, text kept.
    await watcher.getByRole("button", { name: "Take control" }).click();
    await watcher.locator("#live-refusal").getByText("not-logged-in").waitFor();
    await watcher.getByRole("textbox", { name: "Message" }).fill("let me in");
    await watcher.getByRole("textbox", { name: "Message" }).press("Enter");
    await watcher
      .locator("#live-refusal")
      .getByText(/Log in first/)
      .waitFor();
    assert.equal(await watcher.getByRole("textbox", { name: "Message" }).inputValue(), "let me in");

    // Logged in but not in control: a send is refused, and the page says what to press.
    await operator.getByRole("textbox", { name: "Message" }).fill("too early");
    await operator.getByRole("button", { name: "Send" }).click();
    await operator
      .locator("#live-refusal")
      .getByText("Press Take control first, then try again.")
      .waitFor();
    // Plain words first; the code and the controller's own words after them, in parentheses.
    assert.equal(
      await operator.locator("#live-refusal").textContent(),
      "This page does not control the run. Press Take control first, then try again. (controller: this connection is not the controller)",
    );

    // The operator takes control and sends with Enter; Shift+Enter is a newline.
    await operator.getByRole("button", { name: "Take control" }).click();
    await who(operator)
      .getByText(/^You control this run\./)
      .waitFor();
    const box = operator.getByRole("textbox", { name: "Message" });
    await box.fill("hello");
    await box.press("Shift+Enter");
    assert.equal(await box.inputValue(), "hello\n", "Shift+Enter adds a newline");
    await box.fill("hello from the page");
    await box.press("Enter");
    await operator.locator("#parts").getByText("echo: hello from the page").waitFor();
    // The reply shows before the run ends; a message sent in between is refused `busy` (no
    // queue), so the next one waits for Interrupt to go, as a person would see the run end.
    const interrupt = operator.getByRole("button", { name: "Interrupt" });
    await interrupt.waitFor({ state: "hidden" });
    assert.equal(await box.inputValue(), "", "a sent message leaves the box");
    assert.equal(await operator.locator("#live-refusal").isHidden(), true);

    // A slow reply streams into the live area; Interrupt stops it.
    await box.fill("be slow please");
    await operator.getByRole("button", { name: "Send" }).click();
    await operator.locator("#live-activity .streaming").waitFor();
    await interrupt.click();
    await operator.locator("#live-activity .streaming").waitFor({ state: "detached" });
    assert.equal(await operator.locator("#live-refusal").isHidden(), true);
    await interrupt.waitFor({ state: "hidden" });
    // The run can end before its stop has; the line says when messages are taken again.
    await operator
      .locator("#live-why")
      .getByText(/^Send a message to start a run\./)
      .waitFor();

    // Force stop asks first, in a dialog; Cancel does nothing, Force stop stops. It shows
    // while a run is in progress.
    await box.fill("be slow again");
    await box.press("Enter");
    await operator.locator("#live-activity .streaming").waitFor();
    await operator.getByRole("button", { name: "Force stop" }).click();
    const dialog = operator.getByRole("dialog", { name: "Force stop" });
    await dialog.waitFor();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    await operator.getByRole("button", { name: "Force stop" }).click();
    await dialog.getByRole("button", { name: "Force stop" }).click();
    await dialog.waitFor({ state: "hidden" });
    await operator.waitForTimeout(500);
    assert.equal(
      await operator.locator("#live-refusal").isHidden(),
      true,
      (await operator.locator("#live-refusal").textContent()) ?? "",
    );
    assert.deepEqual(errors, []);
  });
});
