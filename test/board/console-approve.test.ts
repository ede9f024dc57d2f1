// Answering Claude Code's approvals from the Console in Chromium (issue 26 item 4), with the real
// pinned Claude Code 2.1.328 under a controller and the loopback Anthropic stand-in: the live
// panel shows the tool and its input (hostile text inert, drawn as text), Allow and Deny for the
// logged-in page that controls; a page that watches sees the question and who answered; Deny's
// message reaches the model; a page that lost control since the approval opened is refused in
// plain words; an interrupt's deny is said so. At 1400 px and at 390 px, axe clean.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { DEADLINE_MS, SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import {
  ARTIFACTS,
  type Browser,
  browserSkip,
  consoleState,
  launchBrowser,
  runAxe,
  seriousOf,
} from "./browser.ts";
import { bashCall, DONE, startClaudeBoard, terminalOn } from "./claude-board.ts";

const T = { timeout: SLOW_TEST_MS };
const WAIT = 60_000;

/** A Bash call whose command and description carry HTML, a bidi override and an escape. */
const touch = (path: string, id: string) =>
  bashCall(
    id,
    `touch ${path} # <img src=x onerror=alert(1)>`,
    "make <b>the</b> marker \u202eevil\u001b[31m",
  );
const done = DONE;

describe("approvals in the Console's live panel, with the real Claude Code", {
  skip: browserSkip,
}, () => {
  let browser: Browser;
  let watching: Browser;
  before(async () => {
    browser = await launchBrowser();
    watching = await launchBrowser({ width: 390, height: 844 });
  });
  after(async () => {
    await browser?.close();
    await watching?.close();
  });

  it("allows and denies from the page that controls; others see who answered", T, async (t) => {
    const { run, board, conversation } = await startClaudeBoard(t, {
      replies: [{ kind: "message", content: [{ type: "text", text: "Hello from Claude." }] }],
    });
    // A first turn from a terminal, so the session file exists for the Console to open.
    const { terminal, settled } = await terminalOn(t, run);
    assert.equal((await terminal.takeover()).outcome, "admitted");
    assert.equal((await terminal.prompt("say hello")).outcome, "admitted");
    await until(() => settled() === 1, "the first turn settled", WAIT);
    assert.equal((await terminal.release()).outcome, "admitted");

    const errors: string[] = [];
    const open = async (context: Browser["context"], login: boolean): Promise<Page> => {
      const page = await context.newPage();
      t.after(() => page.close());
      page.setDefaultTimeout(DEADLINE_MS);
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("dialog", (d) => {
        errors.push(`dialog: ${d.message()}`);
        void d.dismiss();
      });
      if (login) {
        await page.goto(board.loginUrl);
        await page.waitForURL(board.url);
      }
      await page.goto(`${board.url}#c=${conversation}`);
      await page.locator("#live-run").waitFor();
      return page;
    };
    const operator = await open(browser.context, true);
    const watcher = await open(watching.context, false);
    await operator.locator("#live-who").getByText("Nobody controls this run.").waitFor();

    // The page takes control and asks for the marker: Claude asks before Bash runs.
    const marker = join(run.projectRoot, "allowed.txt");
    run.fake.enqueue(touch(marker, "toolu_allow"), done);
    await operator.getByRole("button", { name: "Take control" }).click();
    await operator
      .locator("#live-who")
      .getByText(/^You control this run\./)
      .waitFor();
    const box = operator.getByRole("textbox", { name: "Message" });
    await box.fill("make the marker");
    await box.press("Enter");
    const approval = (page: Page) => page.locator("#live-approvals .approval").last();
    await approval(operator).locator(".approval-allow").waitFor();
    const region = operator.getByRole("region", { name: "Approval: Bash" });
    await region.waitFor();
    // The tool and its input, as text: the HTML is characters, the controls are markers.
    assert.equal(await approval(operator).locator(".approval-tool").textContent(), "Bash");
    const command = await approval(operator).locator("pre.command").textContent();
    assert.equal(command, `$ touch ${marker} # <img src=x onerror=alert(1)>`);
    assert.equal(await operator.locator("#live-approvals img, #live-approvals b").count(), 0);
    const title = approval(operator).locator(".approval-title");
    assert.equal(await title.locator(".ctl").count(), 2, "the bidi override and ESC are markers");
    assert.match((await title.textContent()) ?? "", /^make <b>the<\/b> marker /);
    assert.equal(existsSync(marker), false, "nothing runs before the click");
    // The watcher, not logged in, sees the question and no button.
    await approval(watcher)
      .getByText(/Take control to allow or deny this/)
      .waitFor();
    assert.equal(await approval(watcher).locator("button").count(), 0);
    assert.deepEqual(seriousOf(await runAxe(operator)), [], "axe: an approval open, 1400 px");
    assert.deepEqual(seriousOf(await runAxe(watcher)), [], "axe: an approval open, 390 px");
    await operator.locator("#live-run").screenshot({ path: join(ARTIFACTS, "approve-1400.png") });

    await approval(operator).getByRole("button", { name: "Allow" }).click();
    await approval(operator).getByText("Allowed by local-operator").waitFor();
    await approval(watcher).getByText("Allowed by local-operator").waitFor();
    await until(() => existsSync(marker), "the allowed tool ran", WAIT);
    await operator.locator("#parts").getByText("done").first().waitFor();
    // The reply shows before Claude Code's `result` ends the run; a message sent in between is
    // refused `busy` (no queue): the next one waits for the run's end (Interrupt gone).
    const runOver = () =>
      operator
        .getByRole("button", { name: "Interrupt" })
        .waitFor({ state: "hidden", timeout: WAIT });
    await runOver();

    // At 390 px: Deny with a message; the message reaches the model, the tool never runs.
    await operator.setViewportSize({ width: 390, height: 844 });
    const denied = join(run.projectRoot, "denied.txt");
    run.fake.enqueue(touch(denied, "toolu_deny"), done);
    await box.fill("make another");
    await box.press("Enter");
    await approval(operator).locator(".approval-allow").waitFor();
    const width = Number(await operator.evaluate("document.documentElement.scrollWidth"));
    assert.ok(width <= 390, `no sideways scroll at 390 px (${width})`);
    assert.deepEqual(seriousOf(await runAxe(operator)), [], "axe: an approval open, 390 px");
    await operator.screenshot({ path: join(ARTIFACTS, "approve-390.png"), fullPage: false });
    await approval(operator)
      .getByRole("textbox", { name: /Message with a deny/ })
      .fill("not in this repository");
    await approval(operator).getByRole("button", { name: "Deny" }).click();
    await approval(operator).getByText("Denied by local-operator").waitFor();
    await approval(operator)
      .locator(".approval-message")
      .getByText("not in this repository")
      .waitFor();
    await approval(watcher).getByText("Denied by local-operator").waitFor();
    await until(
      () =>
        run.fake.messages().some((m) => JSON.stringify(m.body).includes("not in this repository")),
      "the deny's message reached the model",
      WAIT,
    );
    assert.equal(existsSync(denied), false, "the denied tool did not run");

    // Control changes hands while an approval is open: the page is refused in words even
    // after it takes control back, and its interrupt denies the approval.
    const lost = join(run.projectRoot, "lost.txt");
    run.fake.enqueue(touch(lost, "toolu_lost"), done);
    await operator.locator("#live-activity .streaming").waitFor({ state: "detached" });
    await runOver();
    await box.fill("once more");
    await box.press("Enter");
    await approval(operator).locator(".approval-allow").waitFor();
    assert.equal((await terminal.takeover()).outcome, "admitted");
    await approval(operator)
      .getByText(/Take control to allow or deny this/)
      .waitFor()
      .catch(async (e: unknown) => {
        // Red once with two full suites at once (load 20), green 14 times alone at load 11-21:
        // say what the page held, so the next red tells a lost state from a stale panel.
        throw new Error(`${e}; the page: ${JSON.stringify(await consoleState(operator))}`);
      });
    await operator.getByRole("button", { name: "Take control" }).click();
    await approval(operator).getByRole("button", { name: "Allow" }).click();
    await approval(operator)
      .locator(".approval-refusal")
      .getByText(/\(controller: /)
      .waitFor();
    assert.equal(existsSync(lost), false, "a refused answer approves nothing");
    await operator.getByRole("button", { name: "Interrupt" }).click();
    await approval(operator).getByText("Denied by an interrupt").waitFor();
    await approval(watcher).getByText("Denied by an interrupt").waitFor();
    assert.equal(existsSync(lost), false);
    // Who did what, in the live transcript of both pages (the controller's act events).
    for (const page of [operator, watcher]) {
      // The interrupt's act follows its reply, after the approval's end.
      await page
        .locator("#live-activity .act")
        .getByText("local-operator interrupted the run")
        .waitFor();
      const acts = (await page.locator("#live-activity .act").allTextContents()).join("\n");
      for (const line of [
        "local-operator took control",
        "local-operator sent a message",
        "local-operator allowed an approval",
        "local-operator denied an approval",
        "local-operator interrupted the run",
      ]) {
        assert.ok(acts.includes(line), `${line} in:\n${acts}`);
      }
    }
    assert.deepEqual(errors, [], "no page error, no alert");
  });
});
