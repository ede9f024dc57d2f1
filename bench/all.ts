// `npm run bench`: the reader's benchmark with the command line's options, the controller's,
// then the search benchmark (bench/search.bench.ts; `--quick` makes its corpus 64 MiB in 32 files). One runner
// so options reach the reader's benchmark (npm appends them to the script's last command).
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const args = process.argv.slice(2);
const run = (file: string, extra: string[], env: NodeJS.ProcessEnv = process.env): number =>
  spawnSync(process.execPath, [join(import.meta.dirname, file), ...extra], {
    stdio: "inherit",
    env,
  }).status ?? 1;

const reader = run("reader.bench.ts", args);
if (reader !== 0) process.exit(reader);
const controller = run("controller.bench.ts", []);
if (controller !== 0) process.exit(controller);
const quick = args.includes("--quick") ? { SEARCH_BENCH_MIB: "64", SEARCH_BENCH_FILES: "32" } : {};
process.exit(run("search.bench.ts", [], { ...process.env, ...quick }));
