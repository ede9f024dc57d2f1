// The budget dialog answered from the Console in Chromium (issue 28 item 4), with the real
// pinned Pi under a controller with a token budget and the loopback model (every reply reports
// 12 input and 5 output tokens: 17). The live panel's meter shows what was spent of the limit
// as the run goes; when a reply reaches the budget the run stops and the dialog shows the
// figures, a box for the new limit, Raise and Stop. An empty or too small amount is refused on
// the page and nothing is sent; a raise lets the next prompt run; a stop leaves the next prompt
// refused `budget`. At 1400 px and 390 px, light and dark, axe clean.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Page } from "playwright-core";
import type { LedgerAction } from "../../src/audit/ledger-line.ts";
import { PgroupLauncher } from "../../src/control/cohort/launcher.ts";
import { Controller } from "../../src/control/controller/controller.ts";
import { controllerOptions, makeFixture } from "../control/controller-fixture.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { type FakeModel, startFakeModel } from "../helpers/fake-model.ts";
import { MODEL, settledSession, writeAgentFiles } from "../helpers/real-pi.ts";
import { ARTIFACTS, browserSkip, launchBrowser, runAxe, seriousOf } from "./browser.ts";
import { boardOverController } from "./controlled-board.ts";

const WAIT = 60_000;

describe("the budget dialog in the Console's live panel, with the real Pi", {
  skip: browserSkip,
}, () => {
  it("refuses a bad amount on the page, raises so the next prompt runs, and stops", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    // Cleanups in order: browser, board, controller (ends the engine), model, temp dir.
    const removals: (() => void)[] = [];
    let ctrl: Controller | null = null;
    let model: FakeModel | null = null;
    let stopBoard = async () => {};
    let closeBrowser = async () => {};
    t.after(async () => {
      await closeBrowser();
      await stopBoard();
      await ctrl?.stop();
      await model?.close();
      for (const rm of removals) rm();
    });
    const f = makeFixture(
      { after: (fn) => removals.push(fn as () => void) },
      (cwd) => settledSession(cwd) as Record<string, unknown>[],
    );
    model = await startFakeModel({
      replies: [
        { kind: "text", text: "reply one" },
        { kind: "text", text: "reply two" },
        { kind: "text", text: "reply three" },
      ],
    });
    const agentDir = join(f.root, "agent");
    writeAgentFiles(agentDir, model.baseUrl);
    const actions: LedgerAction[] = [];
    const { engine: _fake, ...rest } = controllerOptions(f, { actions: (a) => actions.push(a) });
    ctrl = new Controller({
      ...rest,
      launcher: new PgroupLauncher({ termGraceMs: 2000, killGraceMs: 2000 }),
      engine: { extraArgs: ["--model", MODEL] },
      agentDir,
      budget: { tokens: 10 },
    });
    await ctrl.start();
    const { board, conversation, unregister } = await boardOverController(f, ctrl.socketPath);
    removals.unshift(unregister);
    stopBoard = () => board.close();

    const browser = await launchBrowser();
    closeBrowser = () => browser.close();
    const errors: string[] = [];
    const page: Page = await browser.context.newPage();
    page.setDefaultTimeout(DEADLINE_MS);
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("dialog", (d) => {
      errors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(board.loginUrl);
    await page.waitForURL(board.url);
    await page.goto(`${board.url}#c=${conversation}`);
    await page.locator("#live-run").waitFor();
    const meter = page.locator("#live-budget");
    // The meter before anything was spent.
    await meter.getByText("budget 0 of 10 tokens").waitFor();
    const shot = async (name: string) => {
      for (const scheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        await page
          .locator("#live-run")
          .screenshot({ path: join(ARTIFACTS, `budget-${name}-${scheme}.png`) });
      }
      await page.emulateMedia({ colorScheme: "light" });
    };

    await page.getByRole("button", { name: "Take control" }).click();
    await page
      .locator("#live-who")
      .getByText(/^You control this run\./)
      .waitFor();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("say one");
    await box.press("Enter");
    // The reply's 17 tokens reach the budget of 10: the run stops, the dialog opens.
    const dialog = page.locator("#live-budget-dialogs .budget-dialog").last();
    const region = page.getByRole("region", { name: "Budget reached" });
    await region.waitFor();
    await meter.getByText("budget 17 of 10 tokens (reached)").waitFor();
    await dialog.locator(".budget-figures").getByText("budget 17 of 10 tokens (reached)").waitFor();
    const limit = dialog.getByRole("textbox", { name: /New token limit/ });
    await limit.waitFor();
    assert.equal(await limit.getAttribute("inputmode"), "numeric");
    assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: a budget dialog open, 1400 px");
    await page.emulateMedia({ colorScheme: "dark" });
    assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: a budget dialog open, dark");
    await page.emulateMedia({ colorScheme: "light" });
    await shot("open-1400");

    // Refused on the page, nothing sent: empty, unreadable, not above the 17 spent.
    const refusal = dialog.locator(".budget-refusal");
    const raise = dialog.getByRole("button", { name: "Raise" });
    for (const [typed, words] of [
      [
        "",
        /nothing raised: type a new token limit in the box \(e\.g\. "50000 tokens"\), then Raise/,
      ],
      ["lots", /"lots" is not a whole number of tokens/],
      ["17", /17 tokens is not above the 17 spent; type a larger number/],
    ] as const) {
      await limit.fill(typed);
      await raise.click();
      await refusal.getByText(words).waitFor();
    }
    assert.equal(
      actions.filter((a) => a.op === "answer").length,
      0,
      "no answer reached the controller",
    );
    await shot("refused-1400");

    // Raise to 30: the dialog ends saying who, and the next prompt runs.
    await limit.fill("30");
    await raise.click();
    await dialog.getByText("Raised to 30 tokens by local-operator; the next prompt runs").waitFor();
    await dialog.locator(".budget-figures").getByText("budget 17 of 30 tokens").waitFor();
    assert.equal(await refusal.isHidden(), true);
    await meter.getByText("budget 17 of 30 tokens").waitFor();
    await box.fill("say two");
    await box.press("Enter");
    await page.locator("#parts").getByText("reply two").first().waitFor({ timeout: WAIT });
    // Its 17 tokens reach 30: a second dialog.
    await meter.getByText("budget 34 of 30 tokens (reached)").waitFor();
    // "a second budget dialog opened": one open at a time.
    await page.locator("#live-budget-dialogs .budget-dialog.open").waitFor({ timeout: WAIT });

    // "Needs you" lists it, and sends the person to the live panel to raise or stop.
    await page.goto(board.url);
    const row = page.locator("#inbox .inbox-item.state-waiting-approval");
    await row
      .locator(".inbox-reason")
      .getByText(/34 of 30 tokens spent/)
      .waitFor({ timeout: WAIT });
    assert.equal(await row.locator("button.inbox-allow").count(), 0, "no Allow without an amount");
    await row.getByRole("button", { name: "Raise or stop in the live panel" }).click();
    await page.locator("#live-budget-dialogs .budget-dialog.open").waitFor({ timeout: WAIT });
    await page.getByRole("button", { name: "Take control" }).click();
    await page
      .locator("#live-who")
      .getByText(/^You control this run\./)
      .waitFor();

    // At 390 px: Stop. The next prompt is refused, saying how much was spent.
    await page.setViewportSize({ width: 390, height: 844 });
    const width = Number(await page.evaluate("document.documentElement.scrollWidth"));
    assert.ok(width <= 390, `no sideways scroll at 390 px (${width})`);
    assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: a budget dialog open, 390 px");
    await shot("open-390");
    await dialog.getByRole("button", { name: "Stop" }).click();
    await dialog.getByText(/^Stopped by local-operator; the next prompt asks again/).waitFor();
    assert.deepEqual(
      actions.filter((a) => a.op === "answer").map((a) => [a.input.decision, a.outcome]),
      [
        ["allow", "admitted"],
        ["deny", "admitted"],
      ],
    );
    await box.fill("say three");
    await box.press("Enter");
    await page
      .locator("#live-refusal")
      .getByText(/34 of 30 tokens spent; nothing was sent/)
      .waitFor();
    assert.equal(await box.inputValue(), "say three", "the refused text stays in the box");
    // The refused prompt opens the dialog again, so a raise always has one to answer.
    // "the dialog opened again": one open at a time.
    await page.locator("#live-budget-dialogs .budget-dialog.open").waitFor({ timeout: WAIT });
    await shot("stopped-390");
    assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: stopped, 390 px");
    assert.deepEqual(errors, [], "no page error, no alert");
  });
});
