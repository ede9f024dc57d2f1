// The racing writers of racer.c, compiled with cc into a temporary directory at test time and
// run as child processes that every test kills in t.after (each also stops itself by deadline).
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

const SOURCE = join(import.meta.dirname, "racer.c");

let compiled: { path: string } | { why: string } | undefined;

/** The compiled racer, or why there is none (no C compiler). Compiled once per process. */
function compile(): { path: string } | { why: string } {
  if (compiled) return compiled;
  const dir = mkdtempSync(join(tmpdir(), "racer-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "racer");
  try {
    execFileSync("cc", ["-O2", "-Wall", "-o", path, SOURCE], { stdio: "pipe", timeout: 60_000 });
    compiled = { path };
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    if (err.code === "ENOENT") compiled = { why: "no C compiler (cc) to build the racing writer" };
    else throw new Error(`cc failed on racer.c: ${err.stderr?.toString() ?? String(e)}`);
  }
  return compiled;
}

/**
 * The racer's path, or null after marking the test skipped (locally) when there is no C
 * compiler. Under CI a missing compiler fails the test instead.
 */
export function racerOrSkip(t: TestContext): string | null {
  const c = compile();
  if ("path" in c) return c.path;
  if (process.env.CI) throw new Error(c.why);
  t.skip(c.why);
  return null;
}

export type Racer = {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the count the racer printed when it exits (rejects on a failure). */
  done: Promise<number>;
};

/** Starts `racer mode seconds ...args`; the test's t.after kills it if it is still running. */
export function startRacer(t: TestContext, racer: string, args: string[]): Racer {
  const child = spawn(racer, args, { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    out += s;
  });
  child.stderr.setEncoding("utf8").on("data", (s: string) => {
    err += s;
  });
  const done = new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (code === 0) resolve(Number(out.trim().split("\n").pop()));
      else reject(new Error(`racer ${args[0]} ended with ${code ?? signal}: ${err}`));
    });
  });
  // A rejection nobody awaits (the test failed first) must not crash the runner.
  done.catch(() => {});
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, done };
}

/** Waits for `child` to print `ok` `count` more times (a step command answered), with a deadline. */
export function stepper(racer: Racer): (command: string) => Promise<void> {
  let buffered = "";
  const waiters: (() => void)[] = [];
  racer.child.stdout.on("data", (s: string) => {
    buffered += s;
    let i = buffered.indexOf("ok\n");
    while (i >= 0) {
      buffered = buffered.slice(i + 3);
      waiters.shift()?.();
      i = buffered.indexOf("ok\n");
    }
  });
  return (command) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`racer did not answer ${command}`)), 10_000);
      waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
      racer.child.stdin.write(`${command}\n`);
    });
}
