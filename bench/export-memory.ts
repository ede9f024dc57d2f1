// Peak memory of an export (issue 22 item 9), a benchmark, not a test:
//   node bench/export-memory.ts [--sizes 20,100] [--formats md,html,json] [--runs N]
// Sessions written by Pi's own SessionManager (bench/fixtures.ts, cached). Each figure is the
// peak RSS of a process of its own, the median of --runs:
// - cli: `conversation export <id> --project P --format F --out FILE`, measured by
//   /usr/bin/time (maxRSS of the whole process);
// - board: a board over the project, reading in its worker threads as `serve` does; the export
//   is downloaded (and thrown away) by this process, and the board's VmHWM read afterwards;
// - floor: the reader alone opening the branch and reading every page, keeping none; and the
//   board answering every page of the branch through its page route (the board's floor).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startBoard } from "../src/board/index.ts";
import { type BoardSpec, createReader, rootsFromSpecs } from "../src/index.ts";
import { ensureCached, materialize } from "./fixtures.ts";

const SCRIPT = fileURLToPath(import.meta.url);
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const MIB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "20,100" },
    formats: { type: "string", default: "md,html,json" },
    runs: { type: "string", default: "3" },
    // Internal: run as the board's child, or as the reader floor's child.
    "board-child": { type: "string" },
    "floor-child": { type: "string" },
  },
  strict: true,
});

function specsOf(projectRoot: string): BoardSpec[] {
  return [{ kind: "repository", projectRoot, seat: "main" }];
}

function idOf(projectRoot: string): string {
  const reader = createReader({ roots: () => rootsFromSpecs(specsOf(projectRoot), []) });
  const row = reader.catalogue().conversations[0];
  if (row === undefined) throw new Error(`no conversation in ${projectRoot}`);
  return row.conversation;
}

function hwmMiB(pid: number | "self"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

async function boardChild(projectRoot: string): Promise<void> {
  const board = await startBoard({ sources: { specs: specsOf(projectRoot), registrations: [] } });
  process.stdout.write(`${JSON.stringify({ port: board.port })}\n`);
  process.stdin.on("end", () => void board.close().then(() => process.exit(0)));
  process.stdin.resume();
}

function floorChild(projectRoot: string): void {
  const reader = createReader({ roots: () => rootsFromSpecs(specsOf(projectRoot), []) });
  const conversation = idOf(projectRoot);
  let r = reader.open({ conversation });
  let pages = 0;
  while (r.ok && r.cursor) {
    r = reader.next({ cursor: r.cursor.id, conversation, branch: r.page.branch });
    pages++;
  }
  if (!r.ok) throw new Error(r.refusal.message);
  process.stdout.write(`${JSON.stringify({ pages, hwm: hwmMiB("self") })}\n`);
}

/** A GET's body, whole (small answers: the pages of the floor). */
function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The board's floor: every page of the branch through the page route, none kept. */
async function pageAll(port: number, id: string): Promise<number> {
  const base = `/api/conversations/${id}/page`;
  let answer = await get(port, base);
  let pages = 1;
  for (;;) {
    const r = JSON.parse(answer.body) as {
      ok: boolean;
      page: { branch: string };
      cursor: { id: string } | null;
    };
    if (!r.ok) throw new Error(`page refused: ${answer.body.slice(0, 200)}`);
    if (r.cursor === null) return pages;
    const q = new URLSearchParams({ branch: r.page.branch, cursor: r.cursor.id });
    answer = await get(port, `${base}?${q}`);
    pages++;
  }
}

async function measureBoard(projectRoot: string, id: string, format: string): Promise<number> {
  const child = spawn(process.execPath, [SCRIPT, "--board-child", projectRoot], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const stdout = child.stdout;
  if (stdout === null) throw new Error("no stdout from the board child");
  const lines = createInterface({ input: stdout });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the board exited (${code})`)));
    lines.once("line", (line) => resolve((JSON.parse(line) as { port: number }).port));
  });
  if (format === "pages") {
    await pageAll(port, id);
  } else {
    await downloadExport(port, id, format);
  }
  const peak = hwmMiB(child.pid ?? 0);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.stdin?.end();
  await exited;
  return peak;
}

async function downloadExport(port: number, id: string, format: string): Promise<void> {
  const bytes = await new Promise<number>((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path: `/api/conversations/${id}/export?format=${format}` },
      (res) => {
        let n = 0;
        res.on("data", (chunk: Buffer) => {
          n += chunk.length;
        });
        res.on("end", () =>
          res.statusCode === 200 ? resolve(n) : reject(new Error(`${res.statusCode}`)),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
  if (bytes === 0) throw new Error("an empty export");
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function bench(): Promise<void> {
  const sizes = (values.sizes ?? "").split(",").map(Number);
  const formats = (values.formats ?? "").split(",");
  const runs = Number(values.runs);
  const tmp = mkdtempSync(join(tmpdir(), "export-memory-"));
  try {
    process.stdout.write(`load ${readFileSync("/proc/loadavg", "utf8")}`);
    for (const size of sizes) {
      const cached = ensureCached(size, 1, tmp);
      const projectRoot = join(tmp, `p${size}`);
      materialize(cached, projectRoot, "long.jsonl");
      const id = idOf(projectRoot);
      const floor: number[] = [];
      for (let i = 0; i < runs; i++) {
        const out = execFileSync(process.execPath, [SCRIPT, "--floor-child", projectRoot], {
          encoding: "utf8",
        });
        floor.push((JSON.parse(out) as { hwm: number }).hwm);
      }
      const boardFloor: number[] = [];
      for (let i = 0; i < runs; i++) boardFloor.push(await measureBoard(projectRoot, id, "pages"));
      process.stdout.write(
        `${size} MiB (${cached.bytes} bytes): reader floor peak ${median(floor).toFixed(0)} MiB; board paging every page ${median(boardFloor).toFixed(0)} MiB (${boardFloor.map((x) => x.toFixed(0)).join(" ")})\n`,
      );
      for (const format of formats) {
        const cli: number[] = [];
        const board: number[] = [];
        let fileBytes = 0;
        for (let i = 0; i < runs; i++) {
          const out = join(tmp, `out.${format}`);
          cli.push(cliMaxRss(projectRoot, id, format, out));
          fileBytes = statSync(out).size;
          rmSync(out);
          board.push(await measureBoard(projectRoot, id, format));
        }
        process.stdout.write(
          `  ${format}: file ${(fileBytes / MIB).toFixed(1)} MiB; cli peak ${median(cli).toFixed(0)} MiB (${cli.map((x) => x.toFixed(0)).join(" ")}); board peak ${median(board).toFixed(0)} MiB (${board.map((x) => x.toFixed(0)).join(" ")})\n`,
        );
      }
    }
    process.stdout.write(`load ${readFileSync("/proc/loadavg", "utf8")}`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function cliMaxRss(projectRoot: string, id: string, format: string, out: string): number {
  const args = [MAIN, "export", id, "--project", projectRoot, "--format", format, "--out", out];
  const result = execFileSyncStderr("/usr/bin/time", [
    "-f",
    "maxrss=%M",
    process.execPath,
    ...args,
  ]);
  const kib = Number(/maxrss=(\d+)/.exec(result)?.[1]);
  if (!Number.isFinite(kib)) throw new Error(`no maxrss in ${result}`);
  return kib / 1024;
}

function execFileSyncStderr(file: string, args: string[]): string {
  const r = spawnSync(file, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${file} failed (${r.status}): ${r.stderr}`);
  return r.stderr;
}

if (values["board-child"] !== undefined) await boardChild(values["board-child"]);
else if (values["floor-child"] !== undefined) floorChild(values["floor-child"]);
else await bench();
