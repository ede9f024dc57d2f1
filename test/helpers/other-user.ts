// Runs a script as a real other user (uid and gid 65534, "nobody", no supplementary groups),
// with setpriv(1): the attacker of a security test. Every machine here runs as root, so file
// modes prove nothing about what root may do; what another uid can do is what they prove.
// Each child has a deadline and is killed when the test ends.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { TestContext } from "node:test";
import { DEADLINE_MS } from "./deadline.ts";

export const OTHER_UID = 65534;

let probed: string | false | undefined;

/** False when a child can run as OTHER_UID here; else why not (the caller skips or fails). */
export function whyNoOtherUser(): string | false {
  if (probed !== undefined) return probed;
  if (process.getuid?.() !== 0) {
    probed = "not root: a child can't switch to another uid";
    return probed;
  }
  try {
    execFileSync("setpriv", [...AS_OTHER, "--", "true"], { stdio: "ignore" });
    probed = false;
  } catch (e) {
    probed = `setpriv cannot switch to uid ${OTHER_UID} here: ${String(e)}`;
  }
  return probed;
}

const AS_OTHER = [
  `--reuid=${OTHER_UID}`,
  `--regid=${OTHER_UID}`,
  "--clear-groups",
  "--inh-caps=-all",
];

export type OtherUser = {
  readonly child: ChildProcess;
  /** Everything it wrote to stdout so far. */
  output(): string;
  /** Resolves once its stdout holds `text` (rejects at the deadline or when it exits first). */
  waitFor(text: string, ms?: number): Promise<void>;
  /** Resolves with its exit code (rejects at the deadline). */
  exited(ms?: number): Promise<number | null>;
};

/** Starts `process.execPath script ...args` as OTHER_UID; killed after the test. */
export function startAsOtherUser(t: TestContext, script: string, args: string[]): OtherUser {
  const [node, file] = [reachable(process.execPath), reachable(script)];
  const child = spawn("setpriv", [...AS_OTHER, "--", node, file, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let code: number | null | undefined;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    wake();
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  child.on("exit", (c) => {
    code = c;
    wake();
  });
  t.after(() => {
    if (code === undefined) child.kill("SIGKILL");
  });
  const until = <T>(ready: () => T | undefined, what: string, ms: number): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const value = ready();
        if (value !== undefined) {
          done();
          resolve(value);
        } else if (code !== undefined) {
          done();
          reject(new Error(`the other user's script exited (${code}) before ${what}: ${err}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms; stdout ${out}; stderr ${err}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return {
    child,
    output: () => out,
    waitFor: (text, ms = DEADLINE_MS) =>
      until(() => (out.includes(text) ? true : undefined), JSON.stringify(text), ms).then(() => {}),
    exited: (ms = DEADLINE_MS) =>
      new Promise((resolve, reject) => {
        if (code !== undefined) return resolve(code);
        const timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
        child.once("exit", (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      }),
  };
}

/** Copies of files the other user could not reach where they are, made once per process. */
let staged: string | undefined;
const copies = new Map<string, string>();

/**
 * `path`, or a copy the other user can run. A checkout may sit in a folder only its owner may
 * enter (`mktemp -d` makes one 0700), and then neither the pinned Node nor the script is within
 * the other user's reach; the copies (self-contained scripts, `node:` imports only) sit in a
 * folder of their own that anyone may enter, removed when this process exits.
 */
function reachable(path: string): string {
  if (othersReach(path)) return path;
  const known = copies.get(path);
  if (known !== undefined) return known;
  if (staged === undefined) {
    const dir = mkdtempSync(join(tmpdir(), "other-user-"));
    chmodSync(dir, 0o755);
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    staged = dir;
  }
  const copy = join(staged, `${copies.size}-${basename(path)}`);
  copyFileSync(path, copy);
  chmodSync(copy, 0o755);
  copies.set(path, copy);
  return copy;
}

/** Whether every folder above `path` lets others in and others may read and run it. */
function othersReach(path: string): boolean {
  if ((statSync(path).mode & 0o005) !== 0o005) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

/** A request the other user sends (test/board/attacker-request.ts sends it). */
export type Sent = {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
};
export type Received = { uid: number; status: number; body: string };

const REQUEST_SCRIPT = join(import.meta.dirname, "..", "board", "attacker-request.ts");

/** Sends `spec` to 127.0.0.1:`port` as OTHER_UID; what came back. Rejects at a deadline. */
export async function requestAsOtherUser(
  t: TestContext,
  port: number,
  spec: Sent,
): Promise<Received> {
  const other = startAsOtherUser(t, REQUEST_SCRIPT, [
    String(port),
    JSON.stringify({ method: "GET", ...spec }),
  ]);
  const code = await other.exited();
  if (code !== 0) throw new Error(`the other user's request failed (${code})`);
  return JSON.parse(other.output()) as Received;
}
