// A real pty for `conversation attach`: tmux runs it, a person's keys go in with `send-keys`
// and `paste-buffer`, the screen comes back with `capture-pane`. Each pane has its own tmux
// server (-L, a unique socket name), killed in t.after; every wait polls with a deadline.
// Without tmux the tests skip, saying why, unless CI is set (CI installs tmux, .ci/run), where
// they fail instead. Captured screens can be kept as test artifacts
// (`test-artifacts/attach/<test>/<step>.txt`, git-ignored).
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { MAIN } from "./run-cli.ts";

/** One tmux command (it answers at once alone; slower when the machine is busy). */
const TMUX_COMMAND_MS = 30_000;
const POLL_MS = 50;

export const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts/attach");

const tmuxVersion = spawnSync("tmux", ["-V"], { encoding: "utf8", timeout: TMUX_COMMAND_MS });
const tmuxMissing = tmuxVersion.status !== 0;
/** The reason to skip the tmux tests, or false. */
export const tmuxSkip: string | false =
  tmuxMissing && process.env.CI === undefined
    ? `tmux is not installed (${tmuxVersion.error?.message ?? tmuxVersion.stderr}); CI installs it`
    : false;

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export type WaitOptions = {
  /** Join lines the terminal wrapped (capture-pane -J). */
  joined?: boolean;
  /** Save the matching screen as this step's artifact (and the last screen on a timeout). */
  step?: string;
  deadlineMs?: number;
};

export type Pane = {
  /** Runs one tmux command on this pane's server. */
  tmux(args: string[], input?: string): Promise<string>;
  /** The visible screen; `joined` joins lines the terminal wrapped (capture-pane -J). */
  screen(joined?: boolean): Promise<string>;
  waitScreen(
    what: string,
    test: (screen: string) => boolean,
    options?: boolean | WaitOptions,
  ): Promise<string>;
  /** Captures the screen now and saves it as `step`'s artifact. */
  snap(step: string): Promise<string>;
  /** Saves `screen` as `step`'s artifact (when the pane was started with `artifacts`). */
  save(step: string, screen: string): void;
  /** Resolves once the pane (and so the session) is gone. */
  waitClosed(): Promise<void>;
  /** The attach process's exit status, written by the pane's shell after it exits. */
  status(): string | null;
};

export type PaneOptions = {
  columns?: number;
  rows?: number;
  /** Artifact folder under test-artifacts/attach (see `resetArtifacts`). */
  artifacts?: string;
  /** Prefix for this pane's artifact files (two panes sharing one folder). */
  prefix?: string;
  /** The arguments after `attach`, instead of `--socket <socket> --grant <grant>`. */
  attachArgs?: string[];
};

/** Empties `test-artifacts/attach/<name>`, so it holds only this run's screens. */
export function resetArtifacts(name: string): void {
  rmSync(join(ARTIFACTS, name), { recursive: true, force: true });
}

/** Starts `node src/cli/main.ts attach` in a new detached tmux session (60 x 20 by default). */
export async function startPane(
  t: Pick<TestContext, "after">,
  root: string,
  socket: string,
  grant: string,
  options: PaneOptions = {},
): Promise<Pane> {
  const name = `mc-attach-${process.pid}-${randomBytes(4).toString("hex")}`;
  const env: NodeJS.ProcessEnv = { ...process.env, LANG: "C.UTF-8" };
  delete env.TMUX;
  const tmux = (args: string[], input?: string) =>
    new Promise<string>((resolve, reject) => {
      const child = execFile(
        "tmux",
        ["-f", "/dev/null", "-L", name, ...args],
        { env, timeout: TMUX_COMMAND_MS, encoding: "utf8" },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`tmux ${args.join(" ")}: ${error.message} ${stderr}`));
          else resolve(stdout);
        },
      );
      if (input !== undefined) child.stdin?.end(input);
    });
  let socketPath: string | null = null;
  t.after(async () => {
    // The server is gone already when the pane closed; kill it in every other case. A server
    // that exits with its last session leaves its socket file behind: remove it.
    await tmux(["kill-server"]).catch(() => {});
    if (socketPath) rmSync(socketPath, { force: true });
  });
  const dir = options.artifacts === undefined ? null : join(ARTIFACTS, options.artifacts);
  if (dir !== null) mkdirSync(dir, { recursive: true });
  const save = (step: string, screen: string) => {
    if (dir !== null) writeFileSync(join(dir, `${options.prefix ?? ""}${step}.txt`), screen);
  };
  const statusFile = join(root, `${name}.status`);
  const args = options.attachArgs ?? ["--socket", socket, "--grant", grant];
  const attach = [process.execPath, MAIN, "attach", ...args];
  const command = `${attach.map(quote).join(" ")}; echo $? > ${quote(statusFile)}`;
  const size = ["-x", String(options.columns ?? 60), "-y", String(options.rows ?? 20)];
  await tmux(["new-session", "-d", ...size, command]);
  socketPath = (await tmux(["display-message", "-p", "#{socket_path}"])).trim() || null;
  // Let applications set tmux buffers with OSC 52, so a clipboard write that got through
  // would show in list-buffers.
  await tmux(["set-option", "-g", "set-clipboard", "on"]);
  const screen = (joined = false) => tmux(["capture-pane", "-p", ...(joined ? ["-J"] : [])]);
  const pane: Pane = {
    tmux,
    screen,
    save,
    async snap(step) {
      const s = await screen();
      save(step, s);
      return s;
    },
    async waitScreen(what, test, given = {}) {
      const o: WaitOptions = typeof given === "boolean" ? { joined: given } : given;
      const deadline = Date.now() + (o.deadlineMs ?? DEADLINE_MS);
      let last = "";
      while (Date.now() < deadline) {
        last = await screen(o.joined).catch((e: Error) => `(no screen: ${e.message})`);
        if (test(last)) {
          if (o.step !== undefined) save(o.step, last);
          return last;
        }
        await sleep(POLL_MS);
      }
      if (o.step !== undefined) save(`${o.step}.timeout`, last);
      throw new Error(`timed out waiting for ${what}; the screen:\n${last}`);
    },
    async waitClosed() {
      const deadline = Date.now() + DEADLINE_MS;
      while (Date.now() < deadline) {
        const open = await tmux(["has-session"]).then(
          () => true,
          () => false,
        );
        if (!open) return;
        await sleep(POLL_MS);
      }
      throw new Error(`the pane did not close within ${DEADLINE_MS} ms:\n${await screen()}`);
    },
    status: () => (existsSync(statusFile) ? readFileSync(statusFile, "utf8").trim() : null),
  };
  return pane;
}

/** The composer's empty line: capture-pane drops trailing spaces (with -J it keeps them). */
export const EMPTY_COMPOSER = /^> *$/m;
export const firstLine = (screen: string) => screen.split("\n")[0] ?? "";

/** Ctrl-C: the pane closes and attach exited 0. */
export async function quit(p: Pane): Promise<void> {
  await p.tmux(["send-keys", "C-c"]);
  await p.waitClosed();
  assert.equal(p.status(), "0", "attach exits 0 on Ctrl-C");
}
