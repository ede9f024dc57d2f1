// Watching processes a test did not spawn (grandchildren, orphans): /proc, pid files, and
// cleanup that tolerates what is already gone. Every wait has a deadline.
import { existsSync, readFileSync, watch } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { DEADLINE_MS } from "./deadline.ts";

export type ProcStat = { state: string; pgrp: number; session: number };

/** proc(5) stat fields 3, 5 and 6; null once the process is gone. */
export function statOf(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: f[0] ?? "", pgrp: Number(f[2]), session: Number(f[3]) };
}

/** Alive: present and not a zombie (a killed orphan waits for init to reap it). */
export function isAlive(pid: number): boolean {
  const s = statOf(pid);
  return s !== null && s.state !== "Z" && s.state !== "X";
}

/** A process that is not our child gives no exit event: poll /proc, with a deadline. */
export async function waitGone(pid: number, timeoutMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`pid ${pid} still alive after ${timeoutMs} ms`);
    await delay(10);
  }
}

export function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch (e) {
    // ESRCH: already gone, which is what cleanup wants.
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}

/** Waits for `<dir>/<name>.pid` with a deadline and returns the pid. */
export function waitForPidFile(
  dir: string,
  name: string,
  timeoutMs = DEADLINE_MS,
): Promise<number> {
  const file = join(dir, `${name}.pid`);
  return new Promise((resolve, reject) => {
    const watcher = watch(dir, () => check());
    const timer = setTimeout(() => {
      watcher.close();
      reject(new Error(`${file} did not appear within ${timeoutMs} ms`));
    }, timeoutMs);
    function check(): void {
      if (!existsSync(file)) return;
      watcher.close();
      clearTimeout(timer);
      resolve(Number(readFileSync(file, "utf8").trim()));
    }
    check();
  });
}
