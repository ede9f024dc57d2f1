// attach's budget dialog in tmux, as a person uses it (issue 28 item 4), over the real pinned
// Pi with a token budget and the loopback model (17 tokens a reply): the reply that reaches the
// budget stops the run and the panel shows the dialog; ^Y with an empty or too small draft
// sends nothing and says what to type; ^Y with "30" raises and the next prompt runs; ^N stops,
// and the prompt after is refused saying how much was spent. Harness: test/cli/tmux-pane.ts.
import { describe, it } from "node:test";
import { startReal } from "../control/real-controller.ts";
import { SLOW_TEST_MS } from "../helpers/deadline.ts";
import { firstLine, resetArtifacts, tmuxSkip as skip, startPane } from "./tmux-pane.ts";

if (skip) process.stderr.write(`attach-budget-tmux: skipped: ${skip}\n`);

describe("attach's budget dialog in tmux over the real pinned Pi", { skip }, () => {
  it("refuses an empty or small raise in the draft, raises with ^Y, stops with ^N", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    const run = await startReal(t, {
      replies: [
        { kind: "text", text: "reply one" },
        { kind: "text", text: "reply two" },
      ],
      controller: { budget: { tokens: 10 } },
    });
    resetArtifacts("budget");
    const p = await startPane(t, run.f.root, run.ctrl.socketPath, "g-op", {
      columns: 100,
      rows: 30,
      artifacts: "budget",
    });
    const keys = (...k: string[]) => p.tmux(["send-keys", ...k]);
    const type = (text: string) => p.tmux(["send-keys", "-l", text]);
    await p.waitScreen("the meter", (s) => s.includes("budget 0 of 10 tokens"));
    await keys("C-t");
    await p.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));
    await type("say one");
    await keys("Enter");
    await p.waitScreen(
      "the budget dialog",
      (s) => s.includes("── budget") && s.includes("^Y raises to the amount in the draft"),
      { joined: true, step: "open" },
    );
    await keys("C-y");
    await p.waitScreen(
      "empty refused",
      (s) => s.includes("nothing raised: type a new token limit"),
      {
        joined: true,
        step: "empty",
      },
    );
    await type("17");
    await keys("C-y");
    await p.waitScreen(
      "too small refused",
      (s) => s.includes("17 tokens is not above the 17 spent"),
      {
        joined: true,
        step: "small",
      },
    );
    await keys("BSpace", "BSpace");
    await type("30");
    await keys("C-y");
    await p.waitScreen("raised", (s) => s.includes("budget raised by you"), {
      joined: true,
      step: "raised",
    });
    await type("say two");
    await keys("Enter");
    await p.waitScreen("the second reply", (s) => s.includes("reply two"), { joined: true });
    await p.waitScreen("the second dialog", (s) => s.includes("34 of 30 tokens"), { joined: true });
    await keys("C-n");
    await p.waitScreen("stopped", (s) => s.includes("budget not raised: stopped by you"), {
      joined: true,
      step: "stopped",
    });
    await type("say three");
    await keys("Enter");
    await p.waitScreen(
      "refused",
      (s) => /not admitted: budget: the budget is reached: 34 of 30 tokens/.test(s),
      {
        joined: true,
        step: "refused",
      },
    );
  });
});
