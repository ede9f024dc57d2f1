// `conversation attach` in tmux over the real pinned Pi, every version (issue 16): a person
// takes control, sends a prompt, the reply streams; the socket is cut mid-stream (a tap in
// front of the controller drops it) and the terminal reconnects by itself, the replay fills
// the gap, and no seam marker shows. Harness: test/cli/tmux-pane.ts (skips without tmux unless
// CI is set); the controller: test/control/real-controller.ts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tapController } from "../control/controller-fixture.ts";
import { startReal } from "../control/real-controller.ts";
import { REAL_PI_VERSIONS } from "../helpers/real-pi.ts";
import { firstLine, tmuxSkip as skip, startPane } from "./tmux-pane.ts";

if (skip) process.stderr.write(`attach-real-pi: skipped: ${skip}\n`);

describe("conversation attach in tmux over the real pinned Pi", { skip }, () => {
  for (const piVersion of REAL_PI_VERSIONS) {
    it(`Pi ${piVersion}: a reply streams, a dropped socket resumes with no seam`, async (t) => {
      const run = await startReal(t, { piVersion, replies: [{ kind: "slow", tickMs: 40 }] });
      const tap = await tapController(t, run.ctrl.socketPath, join(run.f.root, "tap.sock"));
      const p = await startPane(t, run.f.root, tap.path, "g-op", { columns: 100, rows: 30 });
      await p.waitScreen("the observer's screen", (s) => firstLine(s).startsWith("observer · "));
      await p.waitScreen("the history", (s) => /^ {2}hello$/m.test(s));
      await p.tmux(["send-keys", "C-t"]);
      await p.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));
      await p.tmux(["send-keys", "-l", "count for me"]);
      await p.tmux(["send-keys", "Enter"]);
      await p.waitScreen("tick 3", (s) => s.includes("tick 3"));
      tap.drop();
      const back = await p.waitScreen("the resume", (s) =>
        /reconnected; \d+ events replayed/.test(s),
      );
      assert.ok(!back.includes("~~"), back);
      // It says that control did not survive the drop, and how to take it again.
      await p.waitScreen("the control hint", (s) =>
        s.includes("control went with the drop: Ctrl-T takes it again"),
      );
      await p.waitScreen("ticks after the drop", (s) => /tick (1[0-9]|[2-9][0-9])/.test(s));
      // Control went with the old connection: take it again, then interrupt.
      await p.tmux(["send-keys", "C-t"]);
      await p.waitScreen("control again", (s) => firstLine(s).startsWith("controller · "));
      await p.tmux(["send-keys", "C-g"]);
      const done = await p.waitScreen("settled", (s) =>
        s.includes("[prompt settled: interrupted]"),
      );
      assert.ok(!done.includes("~~"), `no seam marker:\n${done}`);
      // The ticks are one unbroken text: nothing missing or doubled across the drop.
      const text = done.replace(/\s+/g, " ");
      const ticks = [...text.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
      assert.deepEqual(
        ticks,
        ticks.map((_, i) => ticks[0]! + i),
        text,
      );
    });
  }
});
