// `conversation attach` answering Claude Code's approvals in tmux (issue 26), against a
// controller over the REAL pinned Claude Code 2.1.328 and the loopback Anthropic stand-in: an
// observer pane and an operator pane; the approval shows in both with the tool and its input
// (hostile escapes made visible), the observer's ^Y sends nothing and says who answers, the
// operator's ^Y allows the first tool (it runs) and ^N denies the second (it does not), and both
// panes say who answered. Screens are kept under test-artifacts/attach/claude-approve/.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { startClaude } from "../control/real-claude-controller.ts";
import { SLOW_TEST_MS } from "../helpers/deadline.ts";
import {
  EMPTY_COMPOSER,
  firstLine,
  quit,
  resetArtifacts,
  tmuxSkip as skip,
  startPane,
} from "./tmux-pane.ts";

if (skip) process.stderr.write(`attach-approve: skipped: ${skip}\n`);

const ARTIFACTS = "claude-approve";
const SIZE = { columns: 100, rows: 30, artifacts: ARTIFACTS };
const WAIT = { deadlineMs: 60_000 };
/** Hostile text in the tool's input: a colour change and a title change, raw. */
const HOSTILE = "\x1b[31mred\x1b]0;pwned\x07";

function touch(id: string, path: string, description: string) {
  return {
    kind: "message" as const,
    content: [
      {
        type: "tool_use" as const,
        id,
        name: "Bash",
        // Claude Code itself refuses a command holding control characters, unasked: the
        // hostile text goes in the description, which it passes on as it is.
        input: { command: `touch ${path}`, description: `${description} ${HOSTILE}` },
      },
    ],
  };
}
const text = (t: string) => ({
  kind: "message" as const,
  content: [{ type: "text" as const, text: t }],
});

describe("conversation attach answering approvals of the real pinned Claude Code", { skip }, () => {
  it("allows one tool with ^Y and denies one with ^N; observers see who answered", {
    timeout: SLOW_TEST_MS,
  }, async (t) => {
    resetArtifacts(ARTIFACTS);
    const run = await startClaude(t, { replies: [] });
    const allowed = join(run.projectRoot, "allowed.txt");
    const denied = join(run.projectRoot, "denied.txt");
    run.fake.enqueue(
      touch("toolu_a", allowed, "make the allowed marker"),
      text("made it"),
      touch("toolu_d", denied, "make the denied marker"),
      text("did not make it"),
    );
    const root = mkdtempSync("/tmp/mcc-pane-");
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const obs = await startPane(t, root, run.ctrl.socketPath, "g-ro", { ...SIZE, prefix: "obs-" });
    const op = await startPane(t, root, run.ctrl.socketPath, "g-op", { ...SIZE, prefix: "op-" });
    await obs.waitScreen("the observer", (s) => firstLine(s).startsWith("observer · "));
    await op.waitScreen("the operator", (s) => firstLine(s).startsWith("observer · "));
    await op.tmux(["send-keys", "C-t"]);
    await op.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));

    await op.tmux(["send-keys", "-l", "make the allowed marker"]);
    await op.tmux(["send-keys", "Enter"]);
    const asked = await op.waitScreen(
      "the approval with its keys",
      (s) => s.includes("── approval: run Bash?") && s.includes("^Y allows · ^N denies"),
      { ...WAIT, step: "01-op-approval" },
    );
    assert.ok(asked.includes(`$ touch ${allowed}`), asked);
    assert.ok(asked.includes("make the allowed marker"), "the engine's description shows");
    // Made visible: the escapes show as markers, and none reached the terminal (tmux would have
    // taken them: the text would be gone and the window renamed).
    assert.ok(asked.includes("^[[31mred^[]0;pwned^G"), asked);
    const title = await op.tmux(["display-message", "-p", "#{pane_title}"]);
    assert.ok(!title.includes("pwned"), `the pane title is ${title}`);
    const seen = await obs.waitScreen(
      "the observer seeing the approval and who answers",
      (s) => s.includes("── approval: run Bash?") && s.includes("only the controller answers"),
      { ...WAIT, step: "02-obs-approval" },
    );
    assert.ok(seen.includes("^T takes control"), seen);
    await obs.tmux(["send-keys", "C-y"]);
    await obs.waitScreen(
      "the observer's ^Y refused locally",
      (s) => s.includes("not answered: only the controller answers; ^T takes control"),
      { step: "03-obs-refused" },
    );
    assert.equal(existsSync(allowed), false, "nothing was allowed by the observer");

    await op.tmux(["send-keys", "C-y"]);
    await op.waitScreen(
      "the tool allowed, the reply, and the run over",
      // The reply shows before Claude Code's `result` ends the run; a prompt sent in between is
      // refused `busy` (no queue), so the next one waits for the status line's [running] to go.
      (s) =>
        s.includes("Bash allowed by you (local-operator)") &&
        s.includes("made it") &&
        !s.includes("[running]"),
      { ...WAIT, step: "04-op-allowed" },
    );
    assert.ok(existsSync(allowed), "the allowed tool ran");
    await obs.waitScreen(
      "the observer told who allowed it",
      (s) => s.includes("Bash allowed by local-operator (c-"),
      { ...WAIT, step: "05-obs-allowed" },
    );

    await op.tmux(["send-keys", "-l", "make the denied marker"]);
    await op.tmux(["send-keys", "Enter"]);
    await op.waitScreen(
      "the second approval",
      (s) => s.includes("── approval: run Bash?") && s.includes(`$ touch ${denied}`),
      { ...WAIT, step: "06-op-approval-2" },
    );
    await op.tmux(["send-keys", "C-n"]);
    const after = await op.waitScreen(
      "the tool denied and the reply",
      (s) => s.includes("Bash denied by you (local-operator)") && s.includes("did not make it"),
      { ...WAIT, step: "07-op-denied" },
    );
    assert.match(after, EMPTY_COMPOSER);
    assert.equal(existsSync(denied), false, "the denied tool did not run");
    await obs.waitScreen(
      "the observer told who denied it",
      (s) => s.includes("Bash denied by local-operator (c-"),
      {
        ...WAIT,
        step: "08-obs-denied",
      },
    );
    // A second ^N finds nothing open, and says so.
    await op.tmux(["send-keys", "C-n"]);
    await op.waitScreen("nothing to answer", (s) => s.includes("no approval is open"));
    await quit(op);
    await quit(obs);
  });
});
