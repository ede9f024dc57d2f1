// Runs the real pinned Claude Code (devDependency @anthropic-ai/claude-code, exact version) sealed
// and offline against the loopback Anthropic stand-in (fake-anthropic.ts): a scratch HOME, its
// config folder (CLAUDE_CONFIG_DIR) and TMPDIR in one temp dir, no environment but PATH and
// those, every setting from `--settings` (user, project and local settings files not read), no
// MCP servers, stream-json in and out. It returns the session files Claude Code wrote. The
// reader's tests use it as their oracle (docs/claude-code-files.md); the control layer's tests
// can reuse the same seal.
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import type { TestContext } from "node:test";
import { LineSplitter } from "../../src/control/engine/framing.ts";
import { type AnthropicReply, type FakeAnthropic, startFakeAnthropic } from "./fake-anthropic.ts";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");
/** The pinned version (package.json pins it exactly; package-lock.json is the pin). */
export const CLAUDE_VERSION = "2.1.328";
/** The native binary npm installs for this platform (install.cjs replaces the stub). */
export const CLAUDE_BIN = join(REPO_ROOT, "node_modules/@anthropic-ai/claude-code/bin/claude.exe");
/** The model the sealed runs ask for: any name works with the stand-in. */
export const CLAUDE_MODEL = "claude-sonnet-4-5";

export type ClaudeScratch = {
  root: string;
  /** HOME. */
  home: string;
  /** CLAUDE_CONFIG_DIR: where Claude Code keeps `projects/`, `.claude.json`, backups. */
  configDir: string;
  /** `<configDir>/projects`: the store the reader reads. */
  projectsDir: string;
  /** The working directory Claude Code runs in (its project). */
  cwd: string;
  /** TMPDIR: Claude Code's sockets and the Bash tool's scratch files. */
  tmp: string;
};

/** `<tmp>/{home,config,proj,tmp}` under one new temp dir (`cwdName` names the project). */
export function makeClaudeScratch(cwdName = "proj"): ClaudeScratch {
  const root = mkdtempSync(join(tmpdir(), "real-claude-"));
  const home = join(root, "home");
  const configDir = join(root, "config");
  const cwd = join(root, cwdName);
  const tmp = join(root, "tmp");
  for (const d of [home, configDir, cwd, tmp]) mkdirSync(d, { recursive: true });
  return { root, home, configDir, projectsDir: join(configDir, "projects"), cwd, tmp };
}

/**
 * The settings a sealed run passes with `--settings`: the API at the stand-in with a dummy key,
 * and every kind of traffic that is not a model request turned off (update checks, telemetry,
 * error reports, title and suggestion side requests).
 */
export function sealedClaudeSettings(baseUrl: string): Record<string, unknown> {
  return {
    env: {
      ANTHROPIC_BASE_URL: baseUrl,
      ANTHROPIC_API_KEY: "sk-ant-fake-key",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      // A failed request is answered at once, not retried for minutes with backoff.
      CLAUDE_CODE_MAX_RETRIES: "0",
    },
  };
}

export type ClaudeRunOptions = {
  /** `--session-id`: the file's name is known before launch. */
  sessionId?: string;
  /** `--resume <id>`: continue that session (the history is re-sent to the model). */
  resume?: string;
  /** `--fork-session` (with `resume`): a new session id for the continuation. */
  fork?: boolean;
  /** Tools pre-approved with `--allowedTools` (default: Bash Read Edit Write Agent). */
  allowedTools?: string[];
  /** More arguments, before the stream-json flags. */
  args?: string[];
  model?: string;
  /**
   * Run under `strace -f -e trace=connect` writing to this file (connectsIn reads it): a test can
   * prove the process and its tools connected nowhere but the stand-in.
   */
  traceConnects?: string;
};

/** The argv after the binary. */
export function sealedClaudeArgs(baseUrl: string, o: ClaudeRunOptions = {}): string[] {
  return [
    "-p",
    "--settings",
    JSON.stringify(sealedClaudeSettings(baseUrl)),
    "--setting-sources",
    "",
    "--strict-mcp-config",
    "--model",
    o.model ?? CLAUDE_MODEL,
    ...(o.sessionId ? ["--session-id", o.sessionId] : []),
    ...(o.resume ? ["--resume", o.resume] : []),
    ...(o.fork ? ["--fork-session"] : []),
    "--allowedTools",
    (o.allowedTools ?? ["Bash", "Read", "Edit", "Write", "Agent"]).join(","),
    ...(o.args ?? []),
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
  ];
}

/** PATH, HOME, CLAUDE_CONFIG_DIR and the temp folders: nothing of the test's own environment. */
export function sealedClaudeEnv(s: ClaudeScratch): Record<string, string> {
  return {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    HOME: s.home,
    CLAUDE_CONFIG_DIR: s.configDir,
    TMPDIR: s.tmp,
    CLAUDE_CODE_TMPDIR: s.tmp,
  };
}

type Event = Record<string, unknown>;

/** One running `claude -p` in stream-json mode. */
export class ClaudeProcess {
  readonly events: Event[] = [];
  stderr = "";
  readonly #child: ChildProcess;
  readonly #waiters = new Set<() => void>();
  #exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #exited = false;

  constructor(child: ChildProcess) {
    this.#child = child;
    const lines = new LineSplitter();
    child.stdout?.on("data", (chunk: Buffer) => {
      for (const line of lines.push(chunk)) this.#take(line);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString("utf8");
    });
    this.#exit = new Promise((resolve) => {
      child.on("exit", (code, signal) => {
        this.#exited = true;
        for (const wake of [...this.#waiters]) wake();
        resolve({ code, signal });
      });
    });
  }

  #take(line: string): void {
    if (line.trim() === "") return;
    try {
      const v: unknown = JSON.parse(line);
      if (typeof v === "object" && v !== null && !Array.isArray(v)) this.events.push(v as Event);
    } catch {
      // Claude Code writes only JSON on stdout in this mode; anything else goes with stderr.
      this.stderr += `[stdout] ${line}\n`;
    }
    for (const wake of [...this.#waiters]) wake();
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Sends one stream-json record. */
  write(record: object): void {
    this.#child.stdin?.write(`${JSON.stringify(record)}\n`);
  }

  /** A user turn. */
  send(text: string): void {
    this.write({ type: "user", message: { role: "user", content: text } });
  }

  /** The control protocol's interrupt; returns its request id. */
  interrupt(): string {
    const id = `int-${randomUUID()}`;
    this.write({ type: "control_request", request_id: id, request: { subtype: "interrupt" } });
    return id;
  }

  /** Resolves with the first event (from `from`) that `pred` accepts; fails after `ms`. */
  waitFor(pred: (e: Event) => boolean, what: string, ms = 60_000, from = 0): Promise<Event> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.events.slice(from).find(pred);
        if (found) {
          done();
          resolve(found);
        } else if (this.#exited) {
          done();
          reject(new Error(`claude exited before ${what}; stderr: ${this.stderr.slice(-2000)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`deadline: ${what} after ${ms} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** The `n`-th `result` event (1-based): one ends each turn. */
  waitForResult(n: number, ms = 60_000): Promise<Event> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const results = this.events.filter((e) => e.type === "result");
        if (results.length >= n) {
          done();
          resolve(results[n - 1]!);
        } else if (this.#exited) {
          done();
          reject(new Error(`claude exited after ${results.length} of ${n} turns: ${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`deadline: turn ${n} after ${ms} ms; stderr: ${this.stderr}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** EOF on stdin, then SIGTERM, then SIGKILL, each after a grace period. */
  async close(graceMs = 5000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.#exited) this.#child.stdin?.end();
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (this.#exited) break;
      const timer = new Promise<"late">((r) => setTimeout(() => r("late"), graceMs).unref());
      if ((await Promise.race([this.#exit, timer])) !== "late") break;
      this.#child.kill(signal);
    }
    return this.#exit;
  }
}

/** Spawns the pinned binary, sealed, in `scratch.cwd`. */
export function spawnClaude(
  scratch: ClaudeScratch,
  fake: Pick<FakeAnthropic, "baseUrl">,
  options: ClaudeRunOptions = {},
): ClaudeProcess {
  const argv = sealedClaudeArgs(fake.baseUrl, options);
  const [command, args] = options.traceConnects
    ? [
        "strace",
        ["-f", "-qq", "-e", "trace=connect", "-o", options.traceConnects, CLAUDE_BIN, ...argv],
      ]
    : [CLAUDE_BIN, argv];
  const child = spawn(command as string, args as string[], {
    cwd: scratch.cwd,
    env: sealedClaudeEnv(scratch),
    stdio: ["pipe", "pipe", "pipe"],
  });
  return new ClaudeProcess(child);
}

/** The socket addresses a traced run connected to: `inet 127.0.0.1:PORT`, `inet6 …`, `unix PATH`. */
export function connectsIn(traceFile: string): string[] {
  const out = new Set<string>();
  for (const line of readFileSync(traceFile, "utf8").split("\n")) {
    if (!line.includes("connect(")) continue;
    const inet = /sa_family=AF_INET, sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)/.exec(
      line,
    );
    const inet6 =
      /sa_family=AF_INET6, sin6_port=htons\((\d+)\).*inet_pton\(AF_INET6, "([^"]+)"/.exec(line);
    const unix = /sa_family=AF_UNIX, sun_path="([^"]*)"/.exec(line);
    if (inet) out.add(`inet ${inet[2]}:${inet[1]}`);
    else if (inet6) out.add(`inet6 [${inet6[2]}]:${inet6[1]}`);
    else if (unix) out.add(`unix ${unix[1]}`);
    else out.add(`other ${line.trim()}`);
  }
  return [...out];
}

/** Every file under `dir`, as paths relative to it, sorted. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      // Not there (yet): no files.
      return;
    }
    for (const name of names) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** A session file's lines, parsed (blank lines skipped). */
export function readJsonl(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Claude Code's directory name for a cwd: every character but ASCII letters and digits as `-`. */
export function claudeProjectDirName(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

export type RealClaude = {
  fake: FakeAnthropic;
  scratch: ClaudeScratch;
  /** Starts a process (closed at the test's end). */
  start(options?: ClaudeRunOptions): ClaudeProcess;
  /** `<projectsDir>/<encoded cwd>/<id>.jsonl`. */
  sessionFile(id: string): string;
};

/**
 * The stand-in, a scratch and a way to start sealed processes; one cleanup closes every
 * process started (EOF, SIGTERM, SIGKILL), the server, and removes the temp dir.
 */
export async function realClaude(
  t: Pick<TestContext, "after">,
  options: { replies?: AnthropicReply[]; cwdName?: string } = {},
): Promise<RealClaude> {
  const scratch = makeClaudeScratch(options.cwdName);
  const started: ClaudeProcess[] = [];
  const fake = await startFakeAnthropic(options.replies ? { replies: options.replies } : {});
  t.after(async () => {
    for (const p of started) await p.close(2000);
    await fake.close();
    rmSync(scratch.root, { recursive: true, force: true });
  });
  return {
    fake,
    scratch,
    start(o = {}) {
      const p = spawnClaude(scratch, fake, o);
      started.push(p);
      return p;
    },
    sessionFile: (id) =>
      join(scratch.projectsDir, claudeProjectDirName(scratch.cwd), `${id}.jsonl`),
  };
}
