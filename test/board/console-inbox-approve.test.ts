// Allow and Deny inline in the Console's "Needs you" inbox (issue 27 item 2), in Chromium, with
// the real pinned Claude Code under a controller and the loopback Anthropic stand-in: a terminal
// controls the run and Claude asks before Bash runs; the logged-in page's inbox row has Allow
// and Deny, says answering takes control, and its click takes control and answers that one
// approval; a page with no login has no button. Deny leaves the tool unrun.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import {
  ARTIFACTS,
  type Browser,
  browserSkip,
  launchBrowser,
  runAxe,
  seriousOf,
} from "./browser.ts";
import { bashCall, DONE, startClaudeBoard, terminalOn } from "./claude-board.ts";

const T = { timeout: SLOW_TEST_MS };
const WAIT = 60_000;

const touch = (path: string, id: string) => bashCall(id, `touch ${path}`, "create the marker file");
const done = DONE;

describe("Allow and Deny in the Console's inbox, with the real Claude Code", {
  skip: browserSkip,
}, () => {
  let wide: Browser;
  let phone: Browser;
  before(async () => {
    wide = await launchBrowser();
    phone = await launchBrowser({ width: 390, height: 844 });
  });
  after(async () => {
    await wide?.close();
    await phone?.close();
  });

  it("answers a waiting approval from its row, taking control first", T, async (t) => {
    const { run, board } = await startClaudeBoard(t, {
      replies: [{ kind: "message", content: [{ type: "text", text: "Hello." }] }],
    });
    const { terminal, dialogs, settled } = await terminalOn(t, run);
    assert.equal((await terminal.takeover()).outcome, "admitted");
    assert.equal((await terminal.prompt("say hello")).outcome, "admitted");
    await until(() => settled() === 1, "the first turn settled", WAIT);

    const errors: string[] = [];
    const open = async (b: Browser, login: boolean, width: number): Promise<Page> => {
      const page = await b.context.newPage();
      t.after(() => page.close());
      page.setDefaultTimeout(WAIT);
      page.on("pageerror", (e) => errors.push(e.message));
      if (login) {
        await page.goto(board.loginUrl);
        await page.waitForURL(board.url);
      }
      await page.goto(board.url);
      await page.locator("#inbox").waitFor();
      assert.equal(page.viewportSize()?.width, width);
      return page;
    };
    const operator = await open(phone, true, 390);
    const guest = await open(wide, false, 1400);
    // A page on the conversation before the approval: the board's watch of it is open.
    const early = await wide.context.newPage();
    t.after(() => early.close());
    early.setDefaultTimeout(WAIT);
    await early.goto(`${board.url}#c=${run.ctrl.conversation}`);
    await early
      .locator("#live-who")
      .getByText(/controls this run/)
      .waitFor();

    // The terminal controls; Claude asks to run Bash: the row waits for approval.
    const marker = join(run.projectRoot, "allowed.txt");
    run.fake.enqueue(touch(marker, "toolu_a"), done);
    assert.equal((await terminal.prompt("make the marker")).outcome, "admitted");
    const row = (page: Page) => page.locator("#inbox .inbox-item.state-waiting-approval");
    await row(operator)
      .getByRole("button", { name: /^Allow/ })
      .waitFor();
    await row(operator).getByText("Answering takes control of this run.").waitFor();
    assert.match((await row(operator).textContent()) ?? "", /asks to run Bash/);
    await row(guest).getByText("Log in with the board's link to answer here.").waitFor();
    assert.equal(await row(guest).locator("button.inbox-allow").count(), 0);
    assert.deepEqual(seriousOf(await runAxe(operator)), [], "axe: the row's buttons, 390 px");
    assert.deepEqual(seriousOf(await runAxe(guest)), [], "axe: the row without login, 1400 px");
    const width = Number(await operator.evaluate("document.documentElement.scrollWidth"));
    assert.ok(width <= 390, `no sideways scroll at 390 px (${width})`);
    await operator.screenshot({ path: join(ARTIFACTS, "inbox-approve-390.png") });
    assert.equal(existsSync(marker), false, "nothing runs before the click");
    // A page that opens the conversation now joins that watch and is sent the open approval.
    const late = await wide.context.newPage();
    t.after(() => late.close());
    late.setDefaultTimeout(WAIT);
    await late.goto(`${board.url}#c=${run.ctrl.conversation}`);
    await late
      .locator("#live-approvals .approval.open")
      .getByText(/Take control to allow/)
      .waitFor();
    await early.locator("#live-approvals .approval.open").waitFor();

    // Allow: the page takes control (the terminal becomes an observer), then answers.
    await row(operator)
      .getByRole("button", { name: /^Allow/ })
      .click();
    await until(() => existsSync(marker), "the allowed tool ran", WAIT);
    await until(() => dialogs.some((d) => d.state === "allowed"), "the end pushed", WAIT);
    const allowed = [...dialogs].reverse().find((d) => d.state === "allowed");
    assert.equal(allowed?.answeredBy?.actor, "local-operator");
    assert.notEqual(allowed?.answeredBy?.connection, terminal.welcome?.connection);
    assert.notEqual(terminal.state?.controllerConnection, terminal.welcome?.connection);
    await until(() => settled() === 2, "the turn settled", WAIT);
    await row(operator).waitFor({ state: "detached" });

    // Deny from the row, the page in control now: the tool never runs.
    const denied = join(run.projectRoot, "denied.txt");
    run.fake.enqueue(touch(denied, "toolu_d"), done);
    assert.equal((await terminal.takeover()).outcome, "admitted");
    assert.equal((await terminal.prompt("make another")).outcome, "admitted");
    await row(operator).getByRole("button", { name: /^Deny/ }).click();
    await until(
      () => dialogs.some((d) => d.state === "denied" && d.answeredBy?.actor === "local-operator"),
      "denied by the page",
      WAIT,
    );
    await until(() => settled() === 3, "the turn settled", WAIT);
    assert.equal(existsSync(denied), false, "the denied tool did not run");
    assert.deepEqual(errors, []);
  });
});
