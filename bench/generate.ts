// Writes a long branched Pi session through Pi's own SessionManager, for benchmarks:
//   node bench/generate.ts --mb N --out FILE [--seed S] [--cwd DIR]
// N is in MiB; compaction every 8 MiB. The header cwd is --cwd, else the project root when FILE
// sits in <root>/.pi/state/<seat>/sessions/, else the process cwd. Refuses an existing FILE.
import { existsSync, mkdirSync } from "node:fs";
import { basename, dirname, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { writeLongSession } from "../test/helpers/pi-sessions.ts";

const MIB = 1024 * 1024;

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: node bench/generate.ts --mb N --out FILE [--seed S]\n`);
  process.exit(2);
}

function projectRootOf(file: string): string | undefined {
  const parts = dirname(file).split(sep);
  const [dotPi, state, , sessions] = parts.slice(-4);
  const isSeatDir = dotPi === ".pi" && state === "state" && sessions === "sessions";
  return isSeatDir && parts.length > 4 ? parts.slice(0, -4).join(sep) : undefined;
}

const { values } = parseArgs({
  options: {
    mb: { type: "string" },
    out: { type: "string" },
    seed: { type: "string", default: "1" },
    cwd: { type: "string" },
  },
});
const mb = Number(values.mb);
const seed = Number(values.seed);
if (!(mb > 0)) usage("--mb must be a positive number");
if (!Number.isInteger(seed)) usage("--seed must be an integer");
if (values.out === undefined) usage("--out is required");

const out = resolve(values.out);
if (existsSync(out)) usage(`${out} exists`);
const cwd = resolve(values.cwd ?? projectRootOf(out) ?? process.cwd());
mkdirSync(dirname(out), { recursive: true });
const started = performance.now();
const result = await writeLongSession(dirname(out), basename(out), cwd, {
  targetBytes: Math.round(mb * MIB),
  seed,
  branches: true,
  compactionEveryBytes: 8 * MIB,
});
const ms = Math.round(performance.now() - started);
process.stdout.write(
  `${JSON.stringify({ out: result.path, bytes: result.bytes, entries: result.entries, ms })}\n`,
);
