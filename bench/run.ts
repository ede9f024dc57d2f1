// `npm run bench`: the reader's benchmark, then the board's under load, each in its own
// process. Arguments go to the reader's bench as before, except `--board-<flag>`, which goes
// to the board's as `--<flag>`; `--quick` goes to both. Exits with the first failure.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const readerArgs: string[] = [];
const boardArgs: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i] ?? "";
  if (arg.startsWith("--board-")) {
    const flag = `--${arg.slice("--board-".length)}`;
    const value = argv[i + 1];
    // Every board flag takes a value except --quick, which is passed on its own.
    if (flag.includes("=") || value === undefined || value.startsWith("--")) boardArgs.push(flag);
    else {
      boardArgs.push(flag, value);
      i++;
    }
    continue;
  }
  readerArgs.push(arg);
  if (arg === "--quick") boardArgs.push(arg);
}

function run(script: string, args: string[]): number {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const result = spawnSync(process.execPath, [path, ...args], { stdio: "inherit" });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

const reader = run("./reader.bench.ts", readerArgs);
if (reader !== 0) process.exit(reader);
process.exit(run("./board.bench.ts", boardArgs));
