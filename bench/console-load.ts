// How long a phone waits for the Console (docs/console.md, "One script and one stylesheet"): a
// board over one conversation, a fresh Chromium context at 390 px per load, and the time from
// `goto` to the first catalogue row, with `--rtt` milliseconds added to every request by
// DevTools' network emulation (a remote board over a mobile link). Also the requests a load
// makes. Needs Debian's chromium (/usr/bin/chromium); loopback only.
//
//   node bench/console-load.ts [--rtt 100] [--loads 5]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { startBoard } from "../src/board/index.ts";
import { createReader, rootsFromSpecs } from "../src/index.ts";
import { assistant, header, project, user, writeSession } from "../test/helpers/reader.ts";

const { values } = parseArgs({
  options: { rtt: { type: "string", default: "100" }, loads: { type: "string", default: "5" } },
});
const rtt = Number(values.rtt);
const loads = Number(values.loads);
if (!Number.isFinite(rtt) || rtt < 0 || !Number.isInteger(loads) || loads < 1) {
  console.error(
    "--rtt takes milliseconds (0 or more), --loads a whole number of loads (1 or more)",
  );
  process.exit(2);
}

const base = mkdtempSync(join(tmpdir(), "mosaic-console-load-"));
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  const p = project(base, "delta", "main");
  writeSession(p.sessionsDir, "s.jsonl", [
    header(p.projectRoot, { id: "01a00000-0000-7000-8000-0000000000c1" }),
    user("u1", null, "hello", 1),
    assistant("a1", "u1", "hello to you", 2),
  ]);
  const specs = [{ kind: "repository" as const, projectRoot: p.projectRoot, seat: p.seat }];
  const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
  const times: number[] = [];
  let requests = 0;
  for (let i = 0; i < loads; i++) {
    const board = await startBoard({ reader });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(60_000);
      let made = 0;
      page.on("request", () => made++);
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: rtt,
        downloadThroughput: -1,
        uploadThroughput: -1,
      });
      const t0 = performance.now();
      await page.goto(board.url);
      await page.locator("tr.row").first().waitFor();
      times.push(performance.now() - t0);
      requests = made;
    } finally {
      await context.close();
      await board.close();
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  console.log(
    `Console load at ${rtt} ms a request: first row after ${median.toFixed(0)} ms (median of ${loads}: ${times.map((t) => t.toFixed(0)).join(", ")}); ${requests} requests`,
  );
} finally {
  await browser.close();
  rmSync(base, { recursive: true, force: true });
}
