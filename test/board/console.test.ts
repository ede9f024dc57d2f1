// The Console in headless Debian Chromium, driven by playwright-core: catalogue → conversation
// → another branch → load more, deep links, live follow, a swapped file, and hostile text.
// Browser-side checks are string expressions: this suite compiles without the DOM library.
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { startBoard } from "../../src/board/index.ts";
import { rootsFromSpecs } from "../../src/reader/sources.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { assistant, header, idOf, user } from "../helpers/reader.ts";
import {
  type BoardFixture,
  FRAGMENTED_LENGTH,
  HOSTILE,
  LONG_MESSAGES,
  swapFile,
  writeBoardFixture,
} from "./fixture.ts";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = join(import.meta.dirname, "..", "..");
const ARTIFACTS = join(ROOT, "test-artifacts");
/** How long a follow may take to show an appended part (a poll is about every second alone). */
const FOLLOW_DEADLINE_MS = DEADLINE_MS;

const skip =
  !existsSync(CHROMIUM) && !process.env.CI
    ? `${CHROMIUM} is missing (apt-get install chromium); CI runs this suite`
    : false;
if (skip) process.stdout.write(`# board Console skipped: ${skip}\n`);

function line(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

describe("board Console", { skip }, () => {
  let context: BrowserContext;
  let profile: string;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    profile = mkdtempSync(join(tmpdir(), "board-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 900 },
      timeout: DEADLINE_MS,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    });
  });

  after(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  /**
   * The fixture served by a fresh board, and a fresh page on it with errors collected. `pushes`:
   * the board is given the roots, so it pushes appends on its live route (else the page polls).
   */
  async function open(
    t: TestContext,
    pushes = false,
  ): Promise<{ fx: BoardFixture; page: Page; url: string; requests: string[] }> {
    const fx = await writeBoardFixture(t);
    const reader = fx.reader();
    const roots = () => rootsFromSpecs(fx.specs, fx.registrations);
    const board = await startBoard(pushes ? { reader, roots } : { reader });
    t.after(() => board.close());
    const page = await context.newPage();
    t.after(() => page.close());
    page.setDefaultTimeout(DEADLINE_MS);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("dialog", (d) => {
      errors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    t.after(() => assert.deepEqual(errors, [], "the page raised no error and no dialog"));
    const requests: string[] = [];
    page.on("request", (r) => requests.push(new URL(r.url()).pathname));
    await page.goto(board.url);
    await page.locator("tr.row").first().waitFor();
    return { fx, page, url: board.url, requests };
  }

  /** Scrolls the history up as a person would; the function runs in the page. */
  const scrollToTop = (page: Page) =>
    page.locator("#history").evaluate((el: { scrollTop: number }) => {
      el.scrollTop = 0;
    });
  const count = (page: Page, selector: string): Promise<number> => page.locator(selector).count();
  const shot = (page: Page, name: string) =>
    // caret: "initial": hiding the caret leaves `style=""` on text fields (the composer),
    // which the hostile-text check would count as a style attribute.
    page.screenshot({ path: join(ARTIFACTS, `console-${name}.png`), caret: "initial" });

  it("browses catalogue → conversation → another branch → load more when a person clicks", async (t) => {
    const { fx, page } = await open(t);
    assert.equal(await count(page, "tr.row"), 9);
    const groups = async () => (await page.locator("tr.group th").allTextContents()).sort();
    assert.deepEqual(await groups(), ["alpha (7)", "beta (2)"], "rows grouped by project");
    await shot(page, "catalogue");

    await page.selectOption("#f-project", { label: "beta" });
    assert.equal(await count(page, "tr.row"), 2);
    assert.deepEqual(await groups(), ["beta (2)"]);
    await page.selectOption("#f-seat", { label: "rocko" });
    assert.equal(await count(page, "tr.row"), 1);
    await page.locator("tr.row .reason", { hasText: "unsupported-harness" }).waitFor();
    await page.locator("tr.row button.open").click();
    await page
      .locator("#conv-refusal .refusal .code", { hasText: "unsupported-harness" })
      .waitFor();
    await page.selectOption("#f-project", { index: 0 });
    await page.selectOption("#f-seat", { index: 0 });
    await page.fill("#f-title", "rich");
    assert.equal(await count(page, "tr.row"), 1);

    await page.getByRole("button", { name: "Rich fixture" }).click();
    await page.locator("article.part").first().waitFor();
    await page.locator("#follow-status.live").waitFor();
    assert.equal(await count(page, "#branches li"), 4);
    assert.equal(await count(page, "#branches li .badge.default"), 1);
    assert.equal(await count(page, "#branches li .forks"), 2);
    assert.equal(await count(page, "details.thinking:not([open])"), 1, "thinking is collapsed");
    assert.equal(await page.locator(".tool-read .tool-path").first().textContent(), "a.txt");
    const args = await page.locator(".tool-call .raw-args .args").first().textContent();
    assert.equal(args, '{"path":"a.txt"}', "the raw arguments are one click away");
    assert.equal(await page.locator(".tool-bash pre.command").textContent(), "$ ls -la");
    assert.equal(await count(page, ".block.tool-result"), 2);
    assert.equal(await count(page, 'figure.image img[src^="data:image/png;base64,"]'), 1);
    for (const kind of ["compaction", "custom-message", "bash-execution"]) {
      assert.equal(await count(page, `article.part.${kind}`), 1, kind);
    }
    assert.equal(await count(page, ".notice.n-stopped"), 1);
    assert.equal(await count(page, ".block.unavailable"), 1);
    await scrollToTop(page);
    await page.locator("#resume").waitFor();
    await page.fill("#f-title", "");
    await page.locator("#f-title").blur();
    await page.mouse.move(700, 10);
    await shot(page, "rich");
    // docs/console.png is committed: written when missing or asked for, not on every run.
    const docShot = join(ROOT, "docs", "console.png");
    if (process.env.UPDATE_CONSOLE_SCREENSHOT || !existsSync(docShot)) {
      await page.screenshot({ path: docShot });
    }

    const summaryBranch = `b.${fx.richIds.branchSummary}`;
    await page.locator("#branches .pick", { hasText: summaryBranch }).click();
    await page.locator("article.part.branch-summary").waitFor();
    await page.getByText("Describe the picture in more detail.").waitFor();
    assert.match(page.url(), new RegExp(`b=${summaryBranch.replace(".", "\\.")}`));
    await page.locator("#branches .pick", { hasText: `b.${fx.richIds.forkUser}` }).click();
    await page.getByText("a.txt dit : bonjour.").waitFor();
    await shot(page, "branch");

    await page.getByRole("button", { name: "Long hand-written" }).click();
    await page.getByText("long message 99", { exact: true }).waitFor();
    assert.equal(await count(page, "article.part"), 100);
    assert.equal(
      await page.locator("#follow-status").textContent(),
      "More history: load it to reach the end and follow.",
    );
    await page.locator("#load-more").click();
    await page.getByText(`long message ${LONG_MESSAGES - 1}`, { exact: true }).waitFor();
    assert.equal(await count(page, "article.part"), LONG_MESSAGES);
    await page.locator("#load-more").waitFor({ state: "hidden" });
    await page.locator("#follow-status.live").waitFor();
    await shot(page, "load-more");
  });

  it("loads in one script and one stylesheet, so a distant phone waits no round trip per module", async (t) => {
    const { requests } = await open(t);
    const files = requests.filter((path) => !path.startsWith("/api/")).sort();
    assert.deepEqual(files, ["/", "/console.css", "/console.js", "/manifest.webmanifest"]);
  });

  it("opens the entry a deep link names when the page is reloaded", async (t) => {
    const { fx, page, url } = await open(t);
    const id = idOf(fx.reader(), "long.jsonl");
    await page.goto(`${url}#c=${id}&b=main&e=n.m120`);
    await page.reload();
    const target = page.locator("article.part.target");
    await target.waitFor();
    assert.equal(await target.locator(".text").textContent(), "long message 120");
    assert.equal(await count(page, "article.part"), LONG_MESSAGES, "its page was loaded");

    await page.goto(`${url}#c=${id}&b=main&e=n.m20`);
    await target.filter({ hasText: "long message 20" }).waitFor();
    assert.ok(await target.isVisible());
    assert.equal(await count(page, "article.part.target"), 1);
    await page.locator("#resume").waitFor();
    await shot(page, "deep-link");
  });

  it("rejoins fragments and shows notices distinctly when a file is long or broken", async (t) => {
    const { page } = await open(t);
    await page.getByRole("button", { name: "Fragmented conversation" }).click();
    await page.locator("article.part.assistant").waitFor();
    const lengths = await page.evaluate<number[]>(
      `[...document.querySelectorAll("article.part.assistant .block.text")].map((e) => e.textContent.length)`,
    );
    assert.deepEqual(lengths, [FRAGMENTED_LENGTH], "one block holding the whole string");

    await page.getByRole("button", { name: "Broken conversation" }).click();
    for (const kind of ["n-malformed", "n-missing", "n-forked"]) {
      await page.locator(`.notice.${kind}`).first().waitFor();
    }
    await page
      .locator("#conv-flags .flag", { hasText: "Forked from an earlier session" })
      .waitFor();
    await page.locator("#conv-flags .flag", { hasText: "1 unreadable line" }).waitFor();
    await shot(page, "notices");
  });

  it("shows a part appended while following, and pauses and resumes when scrolled up", async (t) => {
    const { fx, page } = await open(t, true);
    await page.getByRole("button", { name: /Growing conversation/ }).click();
    await page.locator("#follow-status.live").waitFor();
    appendFileSync(fx.files.grow, line(user("g3", "g2", "appended while following", 3)));
    await page.getByText("appended while following").waitFor({ timeout: FOLLOW_DEADLINE_MS });

    let parent = "g3";
    let lines = "";
    for (let i = 0; i < 40; i++) {
      lines += line(assistant(`p${i}`, parent, `filler ${i}`, 10 + i));
      parent = `p${i}`;
    }
    appendFileSync(fx.files.grow, lines);
    await page.getByText("filler 39").waitFor({ timeout: FOLLOW_DEADLINE_MS });
    assert.ok(await page.getByText("filler 39").isVisible(), "following keeps the end in view");

    await scrollToTop(page);
    await page.locator("#resume").waitFor();
    assert.equal(await page.locator("#follow-status").textContent(), "Following paused.");
    appendFileSync(fx.files.grow, line(user("q1", parent, "appended while paused", 60)));
    // Resuming opens the live stream again from the cursor it last handed on, and reads no page
    // with that cursor: the board may have read from it for the stream that pausing closed (a
    // cursor reads once) and keeps that page for the stream that resumes there.
    const asked: string[] = [];
    const onRequest = (r: { url(): string }) => asked.push(new URL(r.url()).pathname);
    page.on("request", onRequest);
    await page.locator("#resume").click();
    await page.getByText("appended while paused").waitFor({ timeout: FOLLOW_DEADLINE_MS });
    await page.locator("#resume").waitFor({ state: "hidden" });
    page.off("request", onRequest);
    assert.ok(
      asked.some((p) => p.endsWith("/live")),
      `the stream is opened again: ${asked.join(" ")}`,
    );
    assert.ok(!asked.some((p) => p.endsWith("/page")), `no page is read: ${asked.join(" ")}`);
    await shot(page, "follow");
  });

  it("shows source-replaced and reads again from the start when the file is swapped", async (t) => {
    const { fx, page } = await open(t);
    await page.getByRole("button", { name: /Swappable conversation/ }).click();
    await page.locator("#follow-status.live").waitFor();
    swapFile(fx.files.swap, [
      header(fx.alpha.projectRoot, { id: "01a00000-0000-7000-8000-000000000003" }),
      user("s1", null, "Swappable conversation after the swap", 1),
      assistant("s9", "s1", "a new answer", 9),
    ]);
    const code = page.locator("#conv-refusal .refusal .code");
    await code.waitFor({ timeout: FOLLOW_DEADLINE_MS });
    assert.equal(await code.textContent(), "source-replaced");
    assert.equal(
      await page.locator("#follow-status").textContent(),
      "Reading stopped (source-replaced): see the message above.",
    );
    // Plain words first, the code after them; no export is offered that would fail as well.
    assert.match(
      (await page.locator("#conv-refusal .refusal").textContent()) ?? "",
      /^The file was replaced or rewritten while the page was reading it\. Read it again from the start\. \(source-replaced: /,
    );
    assert.equal(await count(page, "#conv-exports a"), 0, "no export links while refused");
    await shot(page, "swapped");
    await page.getByRole("button", { name: "Read again from the start" }).click();
    await page.getByText("a new answer").waitFor();
    assert.equal(await page.locator("#conv-refusal").isHidden(), true);
    assert.equal(await count(page, "article.part"), 2);
    assert.equal(await count(page, "#conv-exports a"), 3, "read again, the exports are back");
  });

  it("renders hostile text inert when a session carries markup, links and bidi controls", async (t) => {
    const { page } = await open(t);
    await page.getByRole("button", { name: /window\.__pwned/ }).click();
    await page.locator("article.part.bash-execution").waitFor();
    await page.getByText(HOSTILE.script).first().waitFor();
    await page.locator("details.thinking summary").click();
    await shot(page, "hostile");

    assert.equal(await page.evaluate("typeof window.__pwned"), "undefined");
    const scripts = await page.evaluate<string[]>(
      `[...document.querySelectorAll("script")].map((s) => s.getAttribute("src"))`,
    );
    assert.deepEqual(scripts, ["/console.js"], "no script element from content");
    const handlers = await page.evaluate<string[]>(
      `[...document.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => e.tagName + " " + a.name))`,
    );
    assert.deepEqual(handlers, [], "no event handler attribute anywhere");
    const styled = await page.evaluate<number>(
      `document.querySelectorAll("#rows [style], #conversation [style]").length`,
    );
    assert.equal(styled, 0, "no style attribute where conversation text goes");
    const images = await page.evaluate<string[]>(
      `[...document.querySelectorAll("img")].map((i) => i.getAttribute("src").slice(0, 22))`,
    );
    assert.deepEqual(images, ["data:image/png;base64,"], "only the valid PNG is an image");
    assert.equal(await count(page, "#parts a, #rows a, style, iframe, object, embed"), 0);
    const exportLinks = await page
      .locator("#conv-exports a")
      .evaluateAll((as) =>
        as.map((a) => a.getAttribute("href")?.replace(/^\/api\/conversations\/[^/]+/, "")),
      );
    assert.deepEqual(exportLinks, [
      "/export?format=md&branch=main",
      "/export?format=html&branch=main",
      "/export?format=json&branch=main",
    ]);
    const links = await page.evaluate<string[]>(
      `[...document.querySelectorAll("link")].map((l) => l.rel === "icon" ? "icon" : l.rel + " " + l.getAttribute("href"))`,
    );
    assert.deepEqual(
      links,
      ["icon", "manifest /manifest.webmanifest", "stylesheet /console.css"],
      "only the page's own icon (a data: URL, drawn by the inbox), manifest and stylesheet",
    );
    await page.getByText("is not PNG, JPEG, GIF or WebP").waitFor();
    await page.getByText("its data is not base64").waitFor();
    assert.ok(await page.locator("body").isVisible(), "CSS from content changed nothing");

    const title = await page.locator("#conv-title").textContent();
    assert.ok(title?.includes("<U+202E>"), `bidi control is visible in the title: ${title}`);
    assert.ok(!title?.includes("\u202E"), "and not present raw");
    const row = await page.locator("tr.row.selected td.title").textContent();
    assert.ok(row?.includes("<U+202E>"));
    const output = await page.locator(".bash-output").textContent();
    assert.ok(output?.includes("^["), "escape is shown as ^[");
    assert.equal(await page.evaluate("typeof window.__pwned"), "undefined");
  });
});
