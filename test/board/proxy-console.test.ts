// The Console in Chromium through the real Caddy over HTTPS (issue 29 item 5), at a phone's
// width: an operator logs in at /login (the proxy vouches; no token), watches the run, takes
// control and steers it; an observer watches the same run and is refused in words when she
// tries to act. Both pages show who took control and sent the message (the controller's `act`
// events). Answering an approval through Caddy: proxy.test.ts, with the real Claude Code.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { describe, it, type TestContext } from "node:test";
import { chromium, type Page } from "playwright-core";
import { checkProxyFlags } from "../../src/board/identity.ts";
import { parseRoles } from "../../src/board/roles.ts";
import { type Grant, OPERATIONS } from "../../src/control/protocol.ts";
import { startController } from "../control/controller-fixture.ts";
import { freePort, hasCaddy, startCaddy } from "../helpers/caddy.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { boardOverController } from "./controlled-board.ts";

const CHROMIUM = "/usr/bin/chromium";
const skip = !hasCaddy()
  ? "caddy is not installed (apt-get install caddy)"
  : !existsSync(CHROMIUM) && !process.env.CI
    ? `${CHROMIUM} is missing`
    : false;

const GRANTS: Grant[] = [
  { id: "g-op", actor: "the-board", capabilities: [...OPERATIONS], delegate: true },
  { id: "g-ro", actor: "the-board-watching", capabilities: ["observe"] },
];

async function setUp(t: TestContext) {
  const { ctl, f } = await startController(t, {
    grants: GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
  });
  const roles = parseRoles({ identities: { otto: "operator", olga: "observer" } });
  assert.ok(roles.ok);
  const port = await freePort();
  const checked = checkProxyFlags({
    publicOrigin: `https://localhost:${port}`,
    trustedProxy: "127.0.0.1",
    identityHeader: "X-Remote-User",
    roles: roles.roles,
    rolesFile: "roles.json",
  });
  if (!checked.ok) assert.fail(checked.error);
  const { board, conversation, unregister } = await boardOverController(f, ctl.socketPath, {
    proxy: checked.proxy,
  });
  t.after(unregister);
  t.after(() => board.close());
  const caddy = await startCaddy(t, board.port, { otto: "pw-otto", olga: "pw-olga" }, port);
  return { caddy, conversation };
}

describe("the Console through caddy", { skip }, () => {
  it("logs an operator in over HTTPS, who watches and steers; an observer only watches", {
    timeout: 180_000,
  }, async (t) => {
    const { caddy, conversation } = await setUp(t);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      timeout: DEADLINE_MS,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
    t.after(() => browser.close());
    const errors: string[] = [];
    const phone = async (username: string, password: string): Promise<Page> => {
      // Caddy's own CA is not in Chromium's store; the node test (proxy.test.ts) checks the
      // certificate against it. The connection is still TLS, so the page is a secure context.
      const context = await browser.newContext({
        ignoreHTTPSErrors: true,
        httpCredentials: { username, password },
        viewport: { width: 390, height: 844 },
      });
      t.after(() => context.close());
      const page = await context.newPage();
      page.setDefaultTimeout(DEADLINE_MS);
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${caddy.origin}/login`);
      await page.waitForURL(`${caddy.origin}/`);
      assert.equal(
        await page.evaluate(() => (globalThis as { isSecureContext?: boolean }).isSecureContext),
        true,
      );
      await page.goto(`${caddy.origin}/#c=${conversation}`);
      await page.locator("#live-run").waitFor();
      return page;
    };
    const otto = await phone("otto", "pw-otto");
    const olga = await phone("olga", "pw-olga");
    const who = (page: Page) => page.locator("#live-who");
    await who(otto).getByText("Nobody controls this run.").waitFor();

    await otto.getByRole("button", { name: "Take control" }).click();
    await who(otto)
      .getByText(/^You control this run\./)
      .waitFor();
    const box = otto.getByRole("textbox", { name: "Message" });
    await box.fill("hello from the phone");
    await box.press("Enter");
    for (const page of [otto, olga]) {
      await page.locator("#parts").getByText("echo: hello from the phone").waitFor();
    }

    // Who did what, in the live transcript of every page: the controller names the person.
    for (const page of [otto, olga]) {
      await page.locator("#live-activity .act").getByText("otto took control").waitFor();
      await page.locator("#live-activity .act").getByText("otto sent a message").waitFor();
    }
    await who(olga).getByText("otto controls this run.").waitFor();

    await olga.getByRole("button", { name: "Take control" }).click();
    await olga.locator("#live-refusal").getByText("role-refused").waitFor();
    assert.match(
      (await olga.locator("#live-refusal").textContent()) ?? "",
      /olga is an observer on this board/,
    );
    assert.deepEqual(errors, []);
  });
});
