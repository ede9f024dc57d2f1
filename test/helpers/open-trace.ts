// Runs a script on this Node (24+) under strace and reports every path it tried to open,
// so a test can prove a file was never opened even as root, where mode 000 stops nothing.
// Every attempt counts, failed or not. Paths are read from `strace -xx -y` (all bytes as
// \xNN, fd arguments annotated with their paths), so quotes, spaces and UTF-8 decode exactly.
import { AssertionError } from "node:assert";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export type OpenSyscall = "open" | "openat" | "openat2" | "creat";

export interface OpenCall {
  readonly pid: number;
  readonly syscall: OpenSyscall;
  /** The path argument exactly as passed. */
  readonly path: string;
  /** Absolute when its base directory is known (always for AT_FDCWD), else as passed. */
  readonly resolved: string;
  /** The fd, -1 on failure, null if the process died inside the call. */
  readonly result: number | null;
  /** What a successful call opened, per `-y` (symlinks resolved by the kernel). */
  readonly target: string | null;
  /** Opened with O_PATH: the inode was reached (a walk step), never opened for reading. */
  readonly pathOnly: boolean;
  /** Asked to write: O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or O_APPEND (or `creat`). */
  readonly writes: boolean;
}

export interface TraceOptions {
  readonly cwd?: string;
  /** Default 30 000. On expiry the whole process group is killed and the call rejects. */
  readonly timeoutMs?: number;
  /** Merged over process.env; UV_USE_IO_URING defaults to "0" so libuv opens by syscall. */
  readonly env?: Readonly<Record<string, string>>;
}

export interface TraceResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The script's stderr, with any diagnostics of strace itself. */
  readonly stderr: string;
  /**
   * Unique, in first-seen order: every `resolved` path, then each `target` not already listed,
   * of the opens that could read or list (O_PATH opens are in `reached` instead).
   */
  readonly opened: string[];
  /** The same for O_PATH opens: inodes named (a directory walk step, a file looked at) only. */
  readonly reached: string[];
  readonly calls: OpenCall[];
}

const STRACE = "strace";
const SYSCALLS = "open,openat,openat2,creat";
const DEFAULT_TIMEOUT_MS = 30_000;
// After a kill, a grandchild that left the process group may still hold our pipes.
const PIPE_GRACE_MS = 2_000;

let straceWorks: boolean | undefined;

/** True when strace is installed and may ptrace here (probed once, by tracing `node --version`). */
export function hasStrace(): boolean {
  straceWorks ??=
    spawnSync(
      STRACE,
      ["-qq", "-e", "trace=none", "-o", "/dev/null", process.execPath, "--version"],
      { stdio: "ignore", timeout: 10_000 },
    ).status === 0;
  return straceWorks;
}

/**
 * The `skip` option for a test that needs strace: a reason locally when strace is missing,
 * false otherwise. Under CI it is always false, so the test runs and traceOpens fails it.
 */
export function skipWithoutStrace(): string | false {
  if (hasStrace() || isCi()) return false;
  return "strace is missing or cannot ptrace here (apt-get install strace)";
}

/**
 * Runs `node <script> ...args` under `strace -f` and returns its output and every open.
 * Rejects when strace is unusable, the script is missing, the trace holds no open of the
 * script (tracing failed), or the deadline passes (after killing the process group).
 */
export async function traceOpens(
  script: string,
  args: string[],
  opts: TraceOptions = {},
): Promise<TraceResult> {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 24) throw new Error(`traceOpens: needs Node 24+, running ${process.version}`);
  if (!hasStrace()) {
    throw new Error(
      "traceOpens: strace is missing or cannot ptrace here; install it (apt-get install strace)." +
        (isCi() ? " CI must provide it: this test fails rather than skips." : ""),
    );
  }
  const cwd = path.resolve(opts.cwd ?? process.cwd());
  const scriptPath = path.resolve(cwd, script);
  if (!existsSync(scriptPath)) throw new Error(`traceOpens: no script at ${scriptPath}`);
  const env: NodeJS.ProcessEnv = { ...process.env, UV_USE_IO_URING: "0", ...opts.env };
  // The runner's child marker would make a node:test script in the child report as a subtest.
  delete env.NODE_TEST_CONTEXT;
  const dir = mkdtempSync(path.join(tmpdir(), "open-trace-"));
  try {
    const out = path.join(dir, "strace.log");
    // biome-ignore format: the flags read best grouped as strace options, output, command
    const argv = [
      "-f", "-qq", "-xx", "-y", "-s", "65536", "--seccomp-bpf",
      "-e", `trace=${SYSCALLS}`, "-e", "signal=none", "-o", out,
      process.execPath, script, ...args,
    ];
    const run = await runWithDeadline(argv, cwd, env, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, script);
    const calls = parseStrace(existsSync(out) ? readFileSync(out, "latin1") : "", cwd);
    const pathsOf = (cs: OpenCall[]) =>
      unique([
        ...cs.map((c) => c.resolved),
        ...cs.flatMap((c) => (c.target === null ? [] : [c.target])),
      ]);
    const opened = pathsOf(calls.filter((c) => !c.pathOnly));
    const reached = pathsOf(calls.filter((c) => c.pathOnly));
    // Node loads a symlinked main module by its real path.
    const scriptForms = [...aliasesOf(scriptPath), realpathSync(scriptPath)];
    if (!scriptForms.some((s) => opened.includes(s))) {
      throw new Error(
        `traceOpens: the trace never shows ${scriptPath} being opened, so tracing failed ` +
          `(${calls.length} opens recorded; exit ${run.code ?? run.signal}); stderr:\n${run.stderr}`,
      );
    }
    return { ...run, opened, reached, calls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Fails listing each forbidden path that appears in `opened`. Paths compare after
 * path.resolve and with symlinks in the parent directory resolved; a relative entry
 * (base directory unknown) matches any forbidden path it is a suffix of.
 */
export function assertNeverOpened(opened: readonly string[], forbidden: readonly string[]): void {
  const spellings = opened.map((o) => ({
    o,
    forms: path.isAbsolute(o) ? aliasesOf(o) : null,
    suffix: `${path.sep}${path.normalize(o)}`,
  }));
  const hits: string[] = [];
  for (const bad of forbidden) {
    const forms = aliasesOf(bad);
    const matches = spellings
      .filter((s) =>
        s.forms === null
          ? forms.some((f) => f.endsWith(s.suffix))
          : forms.some((f) => s.forms?.includes(f)),
      )
      .map((s) => s.o);
    if (matches.length > 0)
      hits.push(`${bad} (as ${matches.map((m) => JSON.stringify(m)).join(", ")})`);
  }
  if (hits.length === 0) return;
  throw new AssertionError({
    message: `opened ${hits.length} forbidden path(s):\n  ${hits.join("\n  ")}`,
    operator: "assertNeverOpened",
  });
}

function isCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== "" && ci !== "0" && ci !== "false";
}

interface RunOutput {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runWithDeadline(
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  script: string,
): Promise<RunOutput> {
  return new Promise((resolve, reject) => {
    // detached: strace leads a new process group holding the traced node and its children.
    const child = spawn(STRACE, argv, {
      cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
    });
    child.stderr.setEncoding("utf8").on("data", (s: string) => {
      stderr += s;
    });
    let timedOut = false;
    let grace: NodeJS.Timeout | undefined;
    const deadline = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
      grace = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_GRACE_MS);
    }, timeoutMs);
    const settle = () => {
      clearTimeout(deadline);
      clearTimeout(grace);
    };
    child.once("error", (err) => {
      settle();
      killGroup(child.pid);
      reject(err);
    });
    child.once("close", (code, signal) => {
      settle();
      if (!timedOut) {
        resolve({ code, signal, stdout, stderr });
        return;
      }
      reject(
        new Error(
          `traceOpens: ${script} did not exit within ${timeoutMs} ms; killed its process group. ` +
            `stdout: ${JSON.stringify(stdout.slice(-500))} stderr: ${JSON.stringify(stderr.slice(-500))}`,
        ),
      );
    });
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch (err) {
    // ESRCH: the group already exited, which is what the kill was for.
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

const HEX = String.raw`((?:\\x[0-9a-f]{2})*)`;
const CALL_RE = /^(?:(\d+) +)?(open|openat|openat2|creat)\((.*)$/;
const RESUMED_RE = /^(?:(\d+) +)?<\.\.\. (open|openat|openat2|creat) resumed>(.*)$/;
const DIRFD_RE = new RegExp(String.raw`^(AT_FDCWD|-?\d+)(?:<${HEX}>)?, `);
const PATH_RE = new RegExp(String.raw`^"${HEX}"(\.\.\.)?`);
const BAD_POINTER_RE = /^(?:NULL|0x[0-9a-f]+)[,)]/;
const RESULT_RE = new RegExp(String.raw`\) += (-?\d+|\?)(?:<${HEX}>)?(?: .*)?$`);
const UNFINISHED = " <unfinished ...>";

const PROC_FD_RE = /^\/proc\/(?:self|thread-self|\d+)\/fd\/(\d+)(\/.*)?$/;

/**
 * Parses `strace -f -xx -y` output; throws on an open line it cannot read rather than skip it.
 * A path through `/proc/self/fd/<n>` (the reader's stand-in for openat) resolves against what
 * the traced process last opened as fd n.
 */
export function parseStrace(text: string, cwd: string): OpenCall[] {
  const calls: OpenCall[] = [];
  const pending = new Map<number, number>();
  const fds = new Map<number, string>();
  const throughFd = (raw: string): string => {
    const m = PROC_FD_RE.exec(raw);
    const dir = m ? fds.get(Number(m[1])) : undefined;
    return m && dir !== undefined ? path.join(dir, m[2] ?? "") : raw;
  };
  const remember = (call: OpenCall | undefined): void => {
    if (call?.result !== null && call?.result !== undefined && call.result >= 0 && call.target)
      fds.set(call.result, call.target);
  };
  for (const line of text.split("\n")) {
    const resumed = RESUMED_RE.exec(line);
    if (resumed !== null) {
      const pid = Number(resumed[1] ?? 0);
      const index = pending.get(pid);
      pending.delete(pid);
      const call = index === undefined ? undefined : calls[index];
      if (call !== undefined && index !== undefined) {
        calls[index] = { ...call, ...readResult(resumed[3] ?? "") };
        remember(calls[index]);
      }
      continue;
    }
    const m = CALL_RE.exec(line);
    if (m === null) continue;
    const pid = Number(m[1] ?? 0);
    const syscall = m[2] as OpenSyscall;
    let rest = m[3] ?? "";
    let base: string | null = cwd;
    if (syscall === "openat" || syscall === "openat2") {
      const fd = DIRFD_RE.exec(rest);
      if (fd === null) throw new Error(`parseStrace: unreadable dirfd in: ${line}`);
      base = fd[2] !== undefined ? decodeHex(fd[2]) : fd[1] === "AT_FDCWD" ? cwd : null;
      rest = rest.slice(fd[0].length);
    }
    if (BAD_POINTER_RE.test(rest)) continue; // EFAULT: no path reached the kernel
    const p = PATH_RE.exec(rest);
    if (p === null) throw new Error(`parseStrace: unreadable path in: ${line}`);
    if (p[2] !== undefined) throw new Error(`parseStrace: path truncated by strace -s in: ${line}`);
    const raw = decodeHex(p[1] ?? "");
    const resolved =
      path.isAbsolute(raw) || base === null ? throughFd(raw) : path.resolve(base, raw);
    const flags = rest.slice(p[0].length);
    const pathOnly = /\bO_PATH\b/.test(flags);
    const writes = syscall === "creat" || /\bO_(?:WRONLY|RDWR|CREAT|TRUNC|APPEND)\b/.test(flags);
    if (line.endsWith(UNFINISHED)) {
      pending.set(pid, calls.length);
      calls.push({
        pid,
        syscall,
        path: raw,
        resolved,
        result: null,
        target: null,
        pathOnly,
        writes,
      });
    } else {
      calls.push({ pid, syscall, path: raw, resolved, ...readResult(rest), pathOnly, writes });
      remember(calls[calls.length - 1]);
    }
  }
  return calls;
}

function readResult(tail: string): Pick<OpenCall, "result" | "target"> {
  const r = RESULT_RE.exec(tail);
  if (r === null || r[1] === "?") return { result: null, target: null };
  const target = r[2] === undefined ? null : decodeHex(r[2]);
  return {
    result: Number(r[1]),
    target: target !== null && path.isAbsolute(target) ? target : null,
  };
}

function decodeHex(escaped: string): string {
  return Buffer.from(escaped.replaceAll("\\x", ""), "hex").toString("utf8");
}

// The path itself and, when its parent exists, the path with the parent's symlinks resolved.
function aliasesOf(p: string): string[] {
  const abs = path.resolve(p);
  try {
    const real = path.join(realpathSync(path.dirname(abs)), path.basename(abs));
    return real === abs ? [abs] : [abs, real];
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // A missing parent has no other spelling worth comparing.
    if (code === "ENOENT" || code === "ENOTDIR") return [abs];
    throw err;
  }
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
