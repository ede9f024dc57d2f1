// A fork's link in the Console (issue 24 item 14): a session Pi forked into a seat from its own
// store (SessionManager.forkFrom, what `pi --fork` runs) shows "forked from “Title”" under its
// row and in the conversation's head, and the link opens the parent — at 1400 and 390 px,
// axe-clean.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { createReader, encodeCwd, rootsFromSpecs } from "../../src/index.ts";
import { piMessages } from "../helpers/pi-messages.ts";
import { project, tempDir } from "../helpers/reader.ts";
import {
  type Browser,
  browserSkip,
  closeSuiteBrowsers,
  launchSuiteBrowsers,
  openConsole,
  runAxe,
  seriousOf,
} from "./browser.ts";

const { user, reply } = piMessages(Date.parse("2026-03-03T09:00:00.000Z"));

/** Pi's store with a titled session, and Pi's own fork of it into a project's seat. */
async function forkedIntoSeat(t: TestContext) {
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  const base = tempDir(t);
  const app = join(base, "code", "app");
  mkdirSync(app, { recursive: true });
  const store = join(base, "agent", "sessions");
  const sm = SessionManager.create(app, join(store, encodeCwd(app)));
  sm.appendSessionInfo("Plan the release");
  sm.appendMessage(user("Plan the release."));
  sm.appendMessage(reply("Tag, build, publish."));
  const parent = sm.getSessionFile();
  assert.ok(parent);
  const p = project(base, "app-seat");
  const fork = SessionManager.forkFrom(parent, p.projectRoot, p.sessionsDir).getSessionFile();
  assert.ok(fork);
  const specs = [
    { kind: "pi-agent" as const, sessionsDir: store },
    { kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat },
  ];
  const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
  const rows = reader.catalogue().conversations;
  const idOf = (file: string) => rows.find((r) => r.fileName === basename(file))?.conversation;
  const parentId = idOf(parent);
  const forkId = idOf(fork);
  assert.ok(parentId && forkId);
  return { reader, parentId, forkId };
}

describe("board Console: a fork's link to its parent", { skip: browserSkip }, () => {
  let light: Browser;
  let dark: Browser;
  let phone: Browser;
  before(async () => {
    ({ light, dark, phone } = await launchSuiteBrowsers());
  });
  after(() => closeSuiteBrowsers({ light, dark, phone }));

  for (const [name, pick] of [
    ["1400 px", () => light],
    ["390 px", () => phone],
  ] as const) {
    it(`links a fork to its parent under the row and in the head, and the link opens it (${name})`, async (t) => {
      const fx = await forkedIntoSeat(t);
      const { page, url } = await openConsole(t, pick().context, fx.reader);
      const row = page.locator("tr.row", { has: page.locator("a.forked-from") });
      assert.equal(await row.count(), 1, "only the fork's row has the link");
      const link = row.locator("a.forked-from");
      assert.equal(await link.textContent(), "forked from “Plan the release”");
      assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: the list");

      await page.goto(`${url}#c=${fx.forkId}`);
      const head = page.locator("#conversation a.forked-from");
      await head.waitFor();
      assert.equal(await head.textContent(), "forked from “Plan the release”");
      assert.deepEqual(seriousOf(await runAxe(page)), [], "axe: the fork");
      await head.click();
      await page.waitForURL((u) => u.hash.includes(fx.parentId));
      await page.getByText("Tag, build, publish.").waitFor();
      assert.equal(await page.locator("#conversation a.forked-from").count(), 0);
    });
  }
});
