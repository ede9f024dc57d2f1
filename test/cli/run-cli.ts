// Runs the `conversation` command as a child process, as a person or a script would, with a
// deadline on everything: a child that outlives its test is killed and the test fails.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { DEADLINE_MS } from "../helpers/deadline.ts";

export const MAIN = join(import.meta.dirname, "..", "..", "src", "cli", "main.ts");
// Every wait has the shared generous deadline: a command starts in about a second alone, but
// several files spawn commands at once on a shared two-core machine, where a start has been
// seen to take over 30 s.

export type Exit = { code: number | null; signal: NodeJS.Signals | null };
export type Child = {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when `test` holds for the output so far; rejects at the deadline. */
  waitFor(what: string, test: (c: Child) => boolean, ms?: number): Promise<void>;
  exited: Promise<Exit>;
};

/** Options of a run: `env` is merged over this process's environment (undefined removes). */
export type CliOptions = { env?: Record<string, string | undefined> };

/** Starts `node src/cli/main.ts ...args`; the child is killed when the test ends. */
export function startCli(t: TestContext, args: string[], options: CliOptions = {}): Child {
  // Each child gets a TMPDIR (and a search cache) of its own, removed when the test ends: a controller killed by a
  // test cannot remove its engine's scratch HOME, and nothing may be left behind in /tmp.
  const tmp = mkdtempSync(join(tmpdir(), "cli-tmp-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: tmp,
    // A test that names its own cache (process.env) keeps it; otherwise never ~/.cache.
    XDG_CACHE_HOME: process.env.XDG_CACHE_HOME ?? join(tmp, "cache"),
    // Nor the machine's ~/.claude: with no source named the command reads every default store
    // that exists, so a test sees Claude's only where it names one (or removes this).
    CLAUDE_CONFIG_DIR: process.env.CLAUDE_CONFIG_DIR ?? join(tmp, "no-claude"),
    ...options.env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const proc = spawn(process.execPath, [MAIN, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of listeners) l();
  };
  proc.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    changed();
  });
  proc.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
    changed();
  });
  const exited = new Promise<Exit>((resolve) => {
    proc.on("close", (code, signal) => {
      resolve({ code, signal });
      changed();
    });
  });
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      // 'exit', not 'close': a detached grandchild may hold the pipes a little longer.
      const gone = new Promise((resolve) => proc.once("exit", resolve));
      proc.kill("SIGKILL");
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    }
    rmSync(tmp, { recursive: true, force: true });
  });
  const child: Child = {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor: (what, test, ms = DEADLINE_MS) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!test(child)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${what}\nstdout: ${out}\nstderr: ${err}`));
        }, ms);
        listeners.add(check);
        check();
      }),
  };
  return child;
}

export type Result = { code: number | null; stdout: string; stderr: string };

/** Runs the command to its end (within the deadline). */
export async function runCli(
  t: TestContext,
  args: string[],
  options: CliOptions = {},
): Promise<Result> {
  const child = startCli(t, args, options);
  await child.waitFor(
    "the command to exit",
    (c) => c.proc.exitCode !== null || c.proc.signalCode !== null,
  );
  const { code } = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}
