// The approval panel of `conversation attach` (src/cli/attach-approvals.ts): what it shows of an
// open approval, for the controller and for everyone else, how an ended one reads, and the words
// of a refused answer. The same panel in a real pty with the real Claude Code:
// attach-approve.test.ts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ApprovalBoard,
  type ApprovalView,
  answerRefusalWords,
  approvalLines,
  endedWords,
} from "../../src/cli/attach-approvals.ts";
import { textWidth } from "../../src/cli/wrap.ts";
import type { Dialog } from "../../src/control/protocol.ts";
import { firstForbidden } from "./hostile.ts";

const open = (
  id: string,
  input: unknown = { command: "touch x", description: "make x" },
): Dialog => ({
  type: "dialog",
  id,
  method: "approval",
  title: "Bash: make x",
  disabled: false,
  state: "open",
  tool: { name: "Bash", input },
});
const me: ApprovalView = { role: "controller", connection: "c-me", controllerConnection: "c-me" };
const watcher: ApprovalView = { role: "observer", connection: "c-w", controllerConnection: "c-me" };

describe("attach-approvals", () => {
  it("shows the tool, its input and the keys when this connection controls", () => {
    const b = new ApprovalBoard();
    assert.deepEqual(b.take(open("dl-1")), { opened: open("dl-1") });
    const lines = approvalLines(b, me, 60, 10);
    assert.equal(lines[0], "── approval: run Bash? make x");
    assert.ok(lines.includes("    $ touch x"), lines.join("\n"));
    assert.equal(lines.at(-1), "  ^Y allows · ^N denies");
  });

  it("says who answers and how to take control when this connection observes", () => {
    const b = new ApprovalBoard();
    b.take(open("dl-1"));
    const text = approvalLines(b, watcher, 200, 10).join("\n");
    assert.match(text, /only the controller answers: connection c-me controls/);
    assert.match(text, /\^T takes control, then \^Y or \^N/);
    assert.doesNotMatch(text, /\^Y allows/);
    const nobody = approvalLines(b, { ...watcher, controllerConnection: null }, 200, 10).join("\n");
    assert.match(nobody, /nobody controls this conversation/);
  });

  it("makes hostile input visible: no control character reaches the terminal", () => {
    const b = new ApprovalBoard();
    b.take(open("dl-1", { command: "rm -rf /\x1b[2J\x1b]0;x\x07", description: "\u202eevil\r" }));
    const lines = approvalLines(b, me, 60, 10);
    const text = lines.join("\n");
    for (const l of lines) assert.equal(firstForbidden(l), null, l);
    assert.ok(text.includes("^[[2J^[]0;x^G"), text);
    assert.ok(text.includes("<U+202E>"), text);
    assert.ok(lines.every((l) => textWidth(l) <= 60));
  });

  it("cuts a long input to the room it has, saying how much is left out", () => {
    const b = new ApprovalBoard();
    const content = Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n");
    b.take({
      ...open("dl-1", { file_path: "/p/a.txt", content }),
      tool: { name: "Write", input: { file_path: "/p/a.txt", content } },
    });
    const lines = approvalLines(b, me, 60, 8);
    assert.equal(lines.length, 8);
    assert.match(lines.at(-2) ?? "", /… \d+ more lines/);
    assert.equal(lines.at(-1), "  ^Y allows · ^N denies");
  });

  it("answers the oldest open approval first and counts the others", () => {
    const b = new ApprovalBoard();
    b.take(open("dl-1"));
    b.take(open("dl-2"));
    assert.equal(b.current?.id, "dl-1");
    assert.match(approvalLines(b, me, 60, 10)[0] ?? "", /approval \(1 of 2\)/);
    b.take({ ...open("dl-1"), state: "allowed" });
    assert.equal(b.current?.id, "dl-2");
  });

  it("says a connection that lost control after the approval opened can't answer it", () => {
    const b = new ApprovalBoard();
    b.take(open("dl-1"));
    b.observeRole("observer", true);
    b.observeRole("controller", false);
    assert.ok(b.lostControlOf("dl-1"));
    const text = approvalLines(b, me, 200, 10).join("\n");
    assert.match(text, /you lost control after it opened/);
    assert.match(text, /\^G interrupts, which denies it/);
    // A connection that only now took control may answer (it did not lose it).
    const c = new ApprovalBoard();
    c.take(open("dl-1"));
    c.observeRole("controller", false);
    assert.equal(c.lostControlOf("dl-1"), false);
  });

  it("says who answered when an approval ends, or what ended it", () => {
    const by = { connection: "c-x", actor: "alice" };
    const allowed: Dialog = { ...open("dl-1"), state: "allowed", answeredBy: by };
    assert.equal(endedWords(allowed, "c-me"), "Bash allowed by alice (c-x): it runs");
    assert.equal(endedWords(allowed, "c-x"), "Bash allowed by you (alice): it runs");
    const denied: Dialog = { ...open("dl-1"), state: "denied", answeredBy: by, message: "no" };
    assert.equal(endedWords(denied, null), "Bash denied by alice (c-x), saying: no");
    const interrupted: Dialog = {
      ...open("dl-1"),
      state: "denied",
      reason: "denied by an interrupt",
    };
    assert.equal(
      endedWords(interrupted, null),
      "Bash denied (denied by an interrupt): it does not run",
    );
    const stopped: Dialog = { ...open("dl-1"), state: "closed", reason: "closed by a force stop" };
    assert.equal(
      endedWords(stopped, null),
      "Bash not answered, closed by a force stop: it does not run",
    );
    const b = new ApprovalBoard();
    b.take(open("dl-1"));
    b.take(stopped);
    assert.equal(b.current, null);
    assert.deepEqual(approvalLines(b, me, 80, 5), [
      "approval: Bash not answered, closed by a force stop: it does not run",
    ]);
  });

  it("ignores Pi's disabled dialogs and starts afresh at a new welcome", () => {
    const b = new ApprovalBoard();
    const pi: Dialog = {
      type: "dialog",
      id: "dl-p",
      method: "confirm",
      title: "Delete?",
      disabled: true,
    };
    assert.equal(b.take(pi), null);
    b.take(open("dl-1"));
    b.reset();
    assert.equal(b.current, null);
  });

  it("words each refusal of an answer with what to do", () => {
    for (const [code, words] of [
      ["controller", /\^T takes control/],
      ["dialog", /no longer open/],
      ["generation", /control changed hands just before; look again/],
      ["fenced", /only a deny goes through/],
    ] as const) {
      const line = answerRefusalWords(code, "the controller's words");
      assert.match(line, words);
      assert.ok(line.endsWith(`(${code}: the controller's words)`), line);
    }
  });
});
