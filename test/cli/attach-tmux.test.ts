// `conversation attach` in a real pty: tmux runs it against a controller over fake-pi, a person's
// keys go in with `send-keys` and `paste-buffer`, the screen comes back with `capture-pane`.
// Each test has its own tmux server (-L, a unique socket name), killed in t.after; every wait
// polls with a deadline. Without tmux the tests skip, saying why, unless CI is set (CI installs
// tmux, .ci/run), where they fail instead.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { textWidth } from "../../src/cli/wrap.ts";
import { startController } from "../control/controller-fixture.ts";
import { MAIN } from "./run-cli.ts";

const DEADLINE_MS = 10_000;
const TMUX_COMMAND_MS = 5_000;
const POLL_MS = 50;

const tmuxVersion = spawnSync("tmux", ["-V"], { encoding: "utf8", timeout: TMUX_COMMAND_MS });
const tmuxMissing = tmuxVersion.status !== 0;
const skip =
  tmuxMissing && process.env.CI === undefined
    ? `tmux is not installed (${tmuxVersion.error?.message ?? tmuxVersion.stderr}); CI installs it`
    : false;
if (skip) process.stderr.write(`attach-tmux: skipped: ${skip}\n`);

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

type Pane = {
  /** Runs one tmux command on this test's server. */
  tmux(args: string[], input?: string): Promise<string>;
  /** The visible screen; `joined` joins lines the terminal wrapped (capture-pane -J). */
  screen(joined?: boolean): Promise<string>;
  waitScreen(what: string, test: (screen: string) => boolean, joined?: boolean): Promise<string>;
  /** Resolves once the pane (and so the session) is gone. */
  waitClosed(): Promise<void>;
  /** The attach process's exit status, written by the pane's shell after it exits. */
  status(): string | null;
};

/** Starts `node src/cli/main.ts attach` in a new detached tmux session of 60 x 20. */
async function startPane(t: TestContext, root: string, socket: string, grant: string) {
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
  const statusFile = join(root, `${name}.status`);
  const attach = [process.execPath, MAIN, "attach", "--socket", socket, "--grant", grant];
  const command = `${attach.map(quote).join(" ")}; echo $? > ${quote(statusFile)}`;
  await tmux(["new-session", "-d", "-x", "60", "-y", "20", command]);
  socketPath = (await tmux(["display-message", "-p", "#{socket_path}"])).trim() || null;
  // Let applications set tmux buffers with OSC 52, so a clipboard write that got through
  // would show in list-buffers.
  await tmux(["set-option", "-g", "set-clipboard", "on"]);
  const screen = (joined = false) => tmux(["capture-pane", "-p", ...(joined ? ["-J"] : [])]);
  const pane: Pane = {
    tmux,
    screen,
    async waitScreen(what, test, joined = false) {
      const deadline = Date.now() + DEADLINE_MS;
      let last = "";
      while (Date.now() < deadline) {
        last = await screen(joined).catch((e: Error) => `(no screen: ${e.message})`);
        if (test(last)) return last;
        await sleep(POLL_MS);
      }
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
const EMPTY_COMPOSER = /^> *$/m;
const firstLine = (screen: string) => screen.split("\n")[0] ?? "";

/** Attached as observer with the history shown, then Ctrl-T until the header says controller. */
async function takeControl(p: Pane): Promise<void> {
  await p.waitScreen("the observer's screen", (s) => firstLine(s).startsWith("observer · "));
  await p.waitScreen("the history", (s) => /^ {2}hello$/m.test(s));
  await p.tmux(["send-keys", "C-t"]);
  await p.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));
}

async function quit(p: Pane): Promise<void> {
  await p.tmux(["send-keys", "C-c"]);
  await p.waitClosed();
  assert.equal(p.status(), "0", "attach exits 0 on Ctrl-C");
}

describe("conversation attach in tmux", { concurrency: 2, skip }, () => {
  it("takes control, shows the reply, re-wraps on a resize to 40 columns, Ctrl-C closes the pane", async (t) => {
    const { ctl, f } = await startController(t);
    const p = await startPane(t, f.root, ctl.socketPath, "g-op");
    await takeControl(p);
    await p.tmux(["send-keys", "-l", "hello there"]);
    await p.tmux(["send-keys", "Enter"]);
    const replied = await p.waitScreen("the echo", (s) => s.includes("echo: hello there"));
    assert.match(replied, EMPTY_COMPOSER, "the composer is empty after the submit");

    const long = `${"wrap me ".repeat(12)}END-OF-LONG`;
    await p.tmux(["send-keys", "-l", long]);
    await p.tmux(["send-keys", "Enter"]);
    await p.waitScreen("the long echo", (s) => s.includes("END-OF-LONG") && EMPTY_COMPOSER.test(s));
    await p.tmux(["resize-window", "-x", "40"]);
    assert.equal((await p.tmux(["display-message", "-p", "#{pane_width}"])).trim(), "40");
    // Re-wrapped by the app, whole, not cut and not wrapped by the terminal: -J joins a line the
    // terminal wrapped, which would then be longer than 40 columns.
    const narrow = await p.waitScreen(
      "the echo re-wrapped to 40 columns",
      (s) => {
        // -J keeps trailing spaces.
        const lines = s.split("\n").map((l) => l.trimEnd());
        const at = lines.findIndex((l) => l.startsWith("  echo: wrap me"));
        const reply = lines.slice(at, at + 4).map((l) => l.trim());
        return (
          firstLine(s).startsWith("controller · ") &&
          at >= 0 &&
          reply.join(" ").startsWith(`echo: ${long}`) &&
          lines.every((l) => textWidth(l) <= 40)
        );
      },
      true,
    );
    assert.match(narrow, EMPTY_COMPOSER);
    await quit(p);
  });

  it("a bracketed paste inserts hostile multi-line text without sending; the reply shows it made visible", async (t) => {
    const { ctl, f } = await startController(t);
    const p = await startPane(t, f.root, ctl.socketPath, "g-op");
    await takeControl(p);
    const hostile =
      "line one\nclip \x1b]52;c;cHduZWQ=\x07 clear \x1b[2J title \x1b]0;pwn\x07 bidi \u202Etxt.exe";
    // tmux wraps the buffer in ESC[200~ ... ESC[201~ (-p) since attach asked for bracketed
    // paste, and turns its LF into CR: inside a paste that is a newline, not Enter.
    await p.tmux(["load-buffer", "-b", "mc-paste", "-"], hostile);
    await p.tmux(["paste-buffer", "-p", "-d", "-b", "mc-paste"]);
    const pasted = await p.waitScreen("the paste in the composer", (s) => /^> line one$/m.test(s));
    assert.match(pasted, /^ {2}clip \^\[\]52;c;cHduZWQ=\^G clear \^\[\[2J/m);
    // Give a wrongly submitted paste time to show, then check that nothing was sent.
    await sleep(300);
    const still = await p.screen();
    assert.doesNotMatch(still, /echo:|sending|prompt admitted/, "the paste did not submit");
    assert.match(still, /^> line one$/m);

    await p.tmux(["send-keys", "Enter"]);
    const echoed = await p.waitScreen(
      "the hostile echo",
      (s) => s.includes("echo: line one") && EMPTY_COMPOSER.test(s) && s.includes("txt.exe"),
    );
    for (const token of ["^[]52;c;cHduZWQ=^G", "^[[2J", "^[]0;pwn^G", "<U+202E>txt.exe"]) {
      assert.ok(echoed.includes(token), `${token} is shown made visible:\n${echoed}`);
    }
    // ESC[2J never reached the terminal: the header and the history are still on screen.
    assert.ok(firstLine(echoed).startsWith("controller · "), echoed);
    assert.match(echoed, /^ {2}hello$/m);
    // OSC 52 would have made a tmux buffer (set-clipboard on); OSC 0 would have set the title.
    assert.equal(await p.tmux(["list-buffers"]), "", "no clipboard write got through");
    const title = await p.tmux(["display-message", "-p", "#{pane_title}"]);
    assert.notEqual(title.trim(), "pwn", "no title change got through");
    await quit(p);
  });
});
