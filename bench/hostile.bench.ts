// Figures for issue 17's hostile inputs, one child process per case so RSS is the case's own:
//   ./node_modules/.bin/node bench/hostile.bench.ts [case…]
// cases: tiny-chain (2.78 M tiny entries, 255 MiB, one branch), tiny-roots (2.95 M roots),
// surrogates (4 M escaped lone surrogates in one 24 MB message). Each prints the time to open
// (wall and CPU: the machine may be shared), the time to read up to 50 pages, the largest read
// result (JSON bytes) and the peak RSS. tiny-chain-follow: the tiny-chain file and one more
// root, whose branch the reader opens (its last page is the first: a follow cursor at once);
// then 5 times one line is appended to that branch and the follow (`next`) is timed, side by
// side with the bare check a follow cannot skip (read the pinned prefix, SHA-256 it).
// tiny-roots-follow: the same on the tiny-roots file.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { conversationId, createReader, rootsFromSpecs } from "../src/index.ts";
import { writeLoneSurrogates, writeTinyEntries } from "./hostile-files.ts";

const CASES = [
  "tiny-chain",
  "tiny-roots",
  "surrogates",
  "tiny-chain-follow",
  "tiny-roots-follow",
] as const;
type Case = (typeof CASES)[number];

/** What any follow must do: read the pinned prefix and SHA-256 it (as bench/reader.bench.ts). */
function bareCheck(path: string, bytes: number, digest: string): void {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.allocUnsafe(bytes);
    for (let got = 0; got < bytes; ) {
      const n = readSync(fd, buf, got, bytes - got, got);
      if (n === 0) throw new Error("the file is shorter than its snapshot");
      got += n;
    }
    if (createHash("sha256").update(buf).digest("hex") !== digest) throw new Error("changed");
  } finally {
    closeSync(fd);
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** The follow after a one-line append on the tiny-chain (or tiny-roots) file, 5 samples. */
function runFollow(base: string, shape: "chain" | "roots"): void {
  const projectRoot = join(base, "p");
  const sessionsDir = join(projectRoot, ".pi", "state", "main", "sessions");
  mkdirSync(sessionsDir, { recursive: true });
  const file = join(sessionsDir, "s.jsonl");
  writeTinyEntries(file, projectRoot, shape === "chain" ? 2_780_000 : 2_950_000, shape);
  const side = (id: string, parent: string | null) =>
    `${JSON.stringify({ type: "message", id, parentId: parent, message: { role: "user", content: id } })}\n`;
  appendFileSync(file, side("side0", null));
  const reader = createReader({
    roots: rootsFromSpecs([{ kind: "repository", projectRoot, seat: "main" }], []),
  });
  const conversation = conversationId(projectRoot, "main", "s.jsonl");
  const branch = "b.side0";
  const t0 = performance.now();
  let r = reader.open({ conversation, branch });
  const openMs = performance.now() - t0;
  if (!r.ok || !r.follow) throw new Error("no follow cursor on the side branch");
  const gcNow = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const follow: number[] = [];
  const bare: number[] = [];
  let heldMax = 0;
  for (let k = 1; k <= 5; k++) {
    appendFileSync(file, side(`side${k}`, `side${k - 1}`));
    const pinned = r.ok && r.follow ? r.follow : null;
    if (!pinned) throw new Error("no follow cursor");
    gcNow();
    let t = performance.now();
    bareCheck(file, pinned.snapshot.bytes, pinned.snapshot.digest);
    bare.push(performance.now() - t);
    gcNow();
    t = performance.now();
    r = reader.next({ cursor: pinned.id, conversation, branch });
    follow.push(performance.now() - t);
    if (!r.ok) throw new Error(r.refusal.message);
    const parts = r.page.parts.map((p) => p.entry);
    if (parts.join() !== `n.side${k}`) throw new Error(`the follow read ${parts.join()}`);
    gcNow();
    const mem = process.memoryUsage();
    heldMax = Math.max(heldMax, mem.heapUsed + mem.external);
  }
  const rss = process.resourceUsage().maxRSS * 1024;
  const f = median(follow);
  const b = median(bare);
  console.log(
    `tiny-${shape}-follow: open ${openMs.toFixed(0)} ms; follow after a one-line append: median ${f.toFixed(0)} ms (${follow.map((x) => x.toFixed(0)).join(" ")}), bare check ${b.toFixed(0)} ms (${bare.map((x) => x.toFixed(0)).join(" ")}), follow/bare ${(f / b).toFixed(2)}×, peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB, held after the follows ${(heldMax / 2 ** 20).toFixed(0)} MiB`,
  );
}

function runCase(name: Case): void {
  if (name === "tiny-chain-follow" || name === "tiny-roots-follow") {
    const base = mkdtempSync(join(tmpdir(), "hostile-"));
    try {
      runFollow(base, name === "tiny-chain-follow" ? "chain" : "roots");
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
    return;
  }
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
