// How long a phone waits for the Console (docs/console.md, "One script and one stylesheet"): a
// board over one conversation, a fresh Chromium context at 390 px per load, and the time from
// `goto` to the first catalogue row, with `--rtt` milliseconds added to every request by
// DevTools' network emulation (a remote board over a mobile link), and the requests a load
// makes. `--kbps` caps the rate each way (kilobits a second); `--reload` times a reload of a
// page that has loaded the Console once already (a person coming back: the browser revalidates
// what it kept). Needs Debian's chromium (/usr/bin/chromium); loopback only.
//
//   node bench/console-load.ts [--rtt 100] [--kbps 1600] [--loads 5] [--reload]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { startBoard } from "../src/board/index.ts";
import { createReader, rootsFromSpecs } from "../src/index.ts";
import { assistant, header, project, user, writeSession } from "../test/helpers/reader.ts";

const { values } = parseArgs({
  options: {
    rtt: { type: "string", default: "100" },
    kbps: { type: "string" },
    loads: { type: "string", default: "5" },
    reload: { type: "boolean", default: false },
  },
});
const rtt = Number(values.rtt);
const kbps = values.kbps === undefined ? null : Number(values.kbps);
const loads = Number(values.loads);
if (
  !Number.isFinite(rtt) ||
  rtt < 0 ||
  (kbps !== null && !(kbps > 0)) ||
  !Number.isInteger(loads) ||
  loads < 1
) {
  console.error(
    "--rtt takes milliseconds (0 or more), --kbps kilobits a second (more than 0), --loads a whole number of loads (1 or more)",
  );
  process.exit(2);
}
// DevTools takes bytes a second; -1 is no cap.
const throughput = kbps === null ? -1 : (kbps * 1000) / 8;

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
        downloadThroughput: throughput,
        uploadThroughput: throughput,
      });
      if (values.reload) {
        await page.goto(board.url);
        await page.locator("tr.row").first().waitFor();
        made = 0;
      }
      const t0 = performance.now();
      if (values.reload) await page.reload();
      else await page.goto(board.url);
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
  const link = `${rtt} ms a request${kbps === null ? "" : `, ${kbps} kbit/s`}`;
  console.log(
    `Console ${values.reload ? "reload" : "load"} at ${link}: first row after ${median.toFixed(0)} ms (median of ${loads}: ${times.map((t) => t.toFixed(0)).join(", ")}); ${requests} requests`,
  );
} finally {
  await browser.close();
  rmSync(base, { recursive: true, force: true });
}
