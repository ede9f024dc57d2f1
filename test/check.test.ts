// `npm run check` (Biome, then tsc) as one file of the suite: it runs beside the others instead
// of before them all, so the core tsc leaves idle does test work meanwhile (docs/testing.md).
// Its output is the failure's message, as it would be on the terminal.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { it } from "node:test";
import { SLOW_TEST_MS } from "./helpers/deadline.ts";

const ROOT = resolve(import.meta.dirname, "..");

it("formats and type-checks the whole tree (npm run check)", {
  timeout: SLOW_TEST_MS,
}, async (t) => {
  // The test's signal ends the check if the test is cancelled or runs past its deadline.
  const child = spawn("npm", ["run", "--silent", "check"], {
    cwd: ROOT,
    stdio: "pipe",
    signal: t.signal,
  });
  child.on("error", () => {});
  let out = "";
  child.stdout.on("data", (b: Buffer) => {
    out += b;
  });
  child.stderr.on("data", (b: Buffer) => {
    out += b;
  });
  const code = await new Promise<number | null>((ok) => child.on("close", ok));
  assert.equal(code, 0, `npm run check failed; run it to see and fix:\n${out}`);
});
