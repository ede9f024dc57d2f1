// `conversation attach` in a real pty: tmux runs it against a controller over fake-pi, a person's
// keys go in with `send-keys` and `paste-buffer`, the screen comes back with `capture-pane`.
// The harness (its own tmux server per pane, deadlines on every wait, skipping without tmux
// unless CI is set) is test/cli/tmux-pane.ts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { textWidth } from "../../src/cli/wrap.ts";
import { startController } from "../control/controller-fixture.ts";
import {
  EMPTY_COMPOSER,
  firstLine,
  type Pane,
  quit,
  tmuxSkip as skip,
  startPane,
} from "./tmux-pane.ts";

if (skip) process.stderr.write(`attach-tmux: skipped: ${skip}\n`);

/** Attached as observer with the history shown, then Ctrl-T until the header says controller. */
async function takeControl(p: Pane): Promise<void> {
  await p.waitScreen("the observer's screen", (s) => firstLine(s).startsWith("observer · "));
  await p.waitScreen("the history", (s) => /^ {2}hello$/m.test(s));
  await p.tmux(["send-keys", "C-t"]);
  await p.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));
}

describe("conversation attach in tmux", { concurrency: 2, skip }, () => {
  it("takes control, shows the reply, re-wraps on a resize to 40 columns, Ctrl-C closes the pane", async (t) => {
    const { ctl, f } = await startController(t);
    const p = await startPane(t, f.root, ctl.socketPath, "g-op");
    await takeControl(p);
    await p.tmux(["send-keys", "-l", "hello there"]);
    await p.tmux(["send-keys", "Enter"]);
    // The run over too ([running] gone): the next prompt sent before it ends is refused `busy`.
    const replied = await p.waitScreen(
      "the echo, and the run over",
      (s) => s.includes("echo: hello there") && !s.includes("[running]"),
    );
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
