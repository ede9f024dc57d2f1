// `npm run bench`: the reader's benchmark (Pi's files, then Claude Code's), the controller's,
// the board's under load, search's and the exports' peak memory, each in its own process.
// Arguments go to the reader's bench as before, except `--controller-<flag>`, `--board-<flag>`
// and `--claude-<flag>`, which go to those benches as `--<flag>`; `--quick` goes to all of them. Exits with the first failure.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const args = {
  reader: [] as string[],
  controller: [] as string[],
  board: [] as string[],
  search: [] as string[],
  export: [] as string[],
  claude: [] as string[],
};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i] ?? "";
  const routed = /^--(controller|board|claude)-(.+)$/.exec(arg);
  if (routed) {
    const bench =
      routed[1] === "controller" ? "controller" : routed[1] === "claude" ? "claude" : "board";
    const name = routed[2] ?? "";
    const value = argv[i + 1];
    // A flag followed by another flag, or by nothing, stands alone (--board-quick).
    if (name.includes("=") || value === undefined || value.startsWith("--")) {
      args[bench].push(`--${name}`);
    } else {
      args[bench].push(`--${name}`, value);
      i++;
    }
    continue;
  }
  args.reader.push(arg);
  if (arg === "--quick") {
    args.controller.push(arg);
    args.board.push(arg);
    args.search.push(arg);
    args.claude.push(arg);
    args.export.push("--sizes", "20", "--runs", "1");
  }
}

function run(script: string, scriptArgs: string[]): number {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const result = spawnSync(process.execPath, [path, ...scriptArgs], { stdio: "inherit" });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

for (const [script, scriptArgs] of [
  ["./reader.bench.ts", args.reader],
  // The reader on Claude Code's files against the same floor (--quick: 1 and 5 MiB).
  ["./claude.bench.ts", args.claude],
  ["./controller.bench.ts", args.controller],
  ["./board.bench.ts", args.board],
  // Search over 1 GiB (SEARCH_BENCH_MIB and SEARCH_BENCH_FILES change it; --quick: 64 MiB).
  ["./search.bench.ts", args.search],
  // Peak memory of the exports, command and board, beside the reader's (--quick: 20 MiB once).
  ["./export-memory.ts", args.export],
] as const) {
  const status = run(script, scriptArgs);
  if (status !== 0) process.exit(status);
}
