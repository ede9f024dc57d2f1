// A Controller in a child process (ctrl-child.ts), as the crash tests start it: so it can be
// killed with SIGKILL at any point and leave behind what a real crash leaves. Its stdout is JSON
// lines (a ready line, then events); `event` waits for one, and fails at once (with the tail of
// the child's stderr) if the child exits first. The caller records the pids it must see gone.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { LineSplitter } from "../../src/control/engine/framing.ts";
import { within } from "../helpers/deadline.ts";
import type { CtrlChildArgs, CtrlChildEvent, CtrlChildReady } from "./ctrl-child.ts";

const CTRL_CHILD = join(import.meta.dirname, "ctrl-child.ts");

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export type CtrlChild = {
  proc: ChildProcess;
  ready: CtrlChildReady;
  exited: Promise<Exit>;
  event(match: (e: CtrlChildEvent) => boolean, what: string): Promise<CtrlChildEvent>;
};

/**
 * Starts ctrl-child.ts with `args` and resolves once its ready line is read. `tmpDir` is its
 * TMPDIR (the engine's HOME is made there, so a crash leaks nothing outside the fixture);
 * `spawned` hears the child's pid at once, before anything can fail; a child whose ready
 * line does not come is killed and awaited before the error is thrown.
 */
export async function startCtrlChild(
  args: CtrlChildArgs,
  options: { tmpDir: string; waitMs: number; spawned: (pid: number) => void },
): Promise<CtrlChild> {
  const proc = spawn(process.execPath, [CTRL_CHILD, JSON.stringify(args)], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, TMPDIR: options.tmpDir },
  });
  if (proc.pid !== undefined) options.spawned(proc.pid);
  proc.stdin?.on("error", () => {});
  const exited = new Promise<Exit>((ok) =>
    proc.once("exit", (code, signal) => ok({ code, signal })),
  );
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  const splitter = new LineSplitter();
  proc.stdout?.on("data", (chunk: Buffer) => {
    for (const line of splitter.push(chunk)) {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    for (const w of [...waiters]) w();
  });
  proc.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  const wait = <T>(match: (l: Record<string, unknown>) => boolean, what: string): Promise<T> =>
    within(
      new Promise<T>((ok, fail) => {
        const check = () => {
          const hit = lines.find(match);
          if (hit) {
            waiters.delete(check);
            ok(hit as T);
          }
        };
        waiters.add(check);
        void exited.then((e) => {
          waiters.delete(check);
          fail(new Error(`ctrl-child exited (${e.code ?? e.signal}) before ${what}: ${stderr}`));
        });
        check();
      }),
      what,
      options.waitMs,
    );
  let first: CtrlChildReady | CtrlChildEvent;
  try {
    first = await wait<CtrlChildReady | CtrlChildEvent>(
      (l) => "socketPath" in l || "event" in l,
      "the ctrl-child's ready line",
    );
    if ("event" in first) throw new Error(`ctrl-child: ${JSON.stringify(first)}`);
  } catch (e) {
    // Not handed to the caller, so not left running: stopped here.
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await within(exited, `ctrl-child ${proc.pid} exit`);
    throw e;
  }
  return {
    proc,
    exited,
    ready: first,
    event: (match, what) =>
      wait<CtrlChildEvent>((l) => "event" in l && match(l as CtrlChildEvent), what),
  };
}
