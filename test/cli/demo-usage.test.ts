// `npm start -- <something wrong>`: a usage error in words, exit 2, and what was typed shown
// with its control characters made visible (an escape sequence typed into a flag is not sent
// to the terminal). The demo exits before writing or serving anything.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";

const DEMO = join(import.meta.dirname, "..", "..", "src", "cli", "demo.ts");

function demo(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [DEMO, ...args],
      { timeout: 30_000, killSignal: "SIGKILL", encoding: "utf8" },
      (error, _stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        resolve({ code, stderr });
      },
    );
  });
}

describe("npm start usage errors", () => {
  it("names an unknown option with its control characters made visible, exit 2", async () => {
    const r = await demo(["--bo\u001b[31mgus"]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.includes("\u001b"), false, "no raw ESC reaches the terminal");
    assert.match(r.stderr, /^npm start: Unknown option '--bo\^\[\[31mgus'/);
    assert.match(r.stderr, /Run "npm start -- --help" for usage\.\n$/);
  });
});
