// Figures for issue 17's hostile inputs, one child process per case so RSS is the case's own:
//   ./node_modules/.bin/node bench/hostile.bench.ts [case…]
// cases: tiny-chain (2.78 M tiny entries, 255 MiB, one branch), tiny-roots (2.95 M roots),
// surrogates (4 M escaped lone surrogates in one 24 MB message). Each prints the time to open
// (wall and CPU: the machine may be shared), the time to read up to 50 pages, the largest read
// result (JSON bytes) and the peak RSS.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { conversationId, createReader, rootsFromSpecs } from "../src/index.ts";
import { writeLoneSurrogates, writeTinyEntries } from "./hostile-files.ts";

const CASES = ["tiny-chain", "tiny-roots", "surrogates"] as const;
type Case = (typeof CASES)[number];

function runCase(name: Case): void {
  const base = mkdtempSync(join(tmpdir(), "hostile-"));
  try {
    const projectRoot = join(base, "p");
    const sessionsDir = join(projectRoot, ".pi", "state", "main", "sessions");
    mkdirSync(sessionsDir, { recursive: true });
    const file = join(sessionsDir, "s.jsonl");
    if (name === "tiny-chain") writeTinyEntries(file, projectRoot, 2_780_000, "chain");
    else if (name === "tiny-roots") writeTinyEntries(file, projectRoot, 2_950_000, "roots");
    else writeLoneSurrogates(file, projectRoot, 4_000_000);
    const reader = createReader({
      roots: rootsFromSpecs([{ kind: "repository", projectRoot, seat: "main" }], []),
    });
    const conversation = conversationId(projectRoot, "main", "s.jsonl");
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    let r = reader.open({ conversation });
    const openMs = performance.now() - t0;
    const openCpu = process.cpuUsage(c0);
    // What stays held once the open's garbage is gone: the parse cache's snapshot and index.
    (globalThis as { gc?: () => void }).gc?.();
    const mem = process.memoryUsage();
    const held = mem.heapUsed + mem.external;
    if (!r.ok) throw new Error(r.refusal.message);
    let pages = 1;
    let maxPage = Buffer.byteLength(JSON.stringify(r));
    const t1 = performance.now();
    // Page through at most 50 pages: enough to show the per-page cost.
    while (r.ok && r.cursor && pages < 50) {
      r = reader.next({ cursor: r.cursor.id, conversation, branch: r.page.branch });
      if (!r.ok) throw new Error(r.refusal.message);
      maxPage = Math.max(maxPage, Buffer.byteLength(JSON.stringify(r)));
      pages++;
    }
    const pagesMs = performance.now() - t1;
    const rss = process.resourceUsage().maxRSS * 1024;
    console.log(
      `${name}: open ${openMs.toFixed(0)} ms (CPU ${((openCpu.user + openCpu.system) / 1000).toFixed(0)} ms), ${pages} pages in ${pagesMs.toFixed(0)} ms (${(pagesMs / pages).toFixed(0)} ms/page), largest result ${(maxPage / 1e6).toFixed(2)} MB, peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB, held after the open ${(held / 2 ** 20).toFixed(0)} MiB`,
    );
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (args[0] === "--case") runCase(args[1] as Case);
else {
  for (const c of args.length > 0 ? (args as Case[]) : CASES) {
    execFileSync(
      process.execPath,
      ["--max-old-space-size=8192", "--expose-gc", fileURLToPath(import.meta.url), "--case", c],
      {
        stdio: "inherit",
      },
    );
  }
}
