// A board over a controller of the real pinned Claude Code (real-claude-controller.ts),
// registered in the --state-dir registry as `conversation control --harness claude-code`
// registers it, its seat read as a Claude seat (the registration on claude-code, as the
// controller's own reader has it). What the Console's approval tests start from.
import { join } from "node:path";
import type { TestContext } from "node:test";
import { type Board, type BoardOptions, startBoard } from "../../src/board/index.ts";
import { ConversationClient } from "../../src/control/client/client.ts";
import type { ControllerOptions } from "../../src/control/controller/controller.ts";
import type { Dialog, Grant, Receipt, StreamEvent } from "../../src/control/protocol.ts";
import { register } from "../../src/control/registry/registry.ts";
import { claudeProjectsDirOf } from "../../src/reader/sources.ts";
import { type ClaudeRun, startClaude } from "../control/real-claude-controller.ts";
import type { AnthropicReply } from "../helpers/fake-anthropic.ts";

export async function startClaudeBoard(
  t: TestContext,
  options: {
    replies?: AnthropicReply[];
    grants?: Grant[];
    actions?: ControllerOptions["actions"];
    board?: Pick<BoardOptions, "proxy">;
  } = {},
): Promise<{ run: ClaudeRun; board: Board; conversation: string; registryDir: string }> {
  const run = await startClaude(t, {
    replies: options.replies ?? [],
    controller: {
      ...(options.grants
        ? { grants: options.grants.map((g) => ({ ...g, capabilities: [...g.capabilities] })) }
        : {}),
      ...(options.actions ? { actions: options.actions } : {}),
    },
  });
  const conversation = run.ctrl.conversation;
  const registryDir = await registerClaude(t, run);
  const board = await startBoard({
    sources: {
      specs: [{ kind: "repository", projectRoot: run.projectRoot, seat: "main" }],
      registrations: [
        {
          seat: "main",
          layout: "repo",
          project: run.projectRoot,
          sessionsDir: claudeProjectsDirOf(run.projectRoot, "main"),
          harness: "claude-code",
          startedAt: new Date().toISOString(),
        },
      ],
      liveRegistry: registryDir,
    },
    lanes: 1,
    grant: "g-op",
    observeGrant: "g-ro",
    ...(options.board ?? {}),
  });
  t.after(() => board.close());
  return { run, board, conversation, registryDir };
}

/**
 * Registers `run`'s controller in `<run.root>/state/controllers`, as `conversation control`
 * registers it (removed at the end); returns the registry's folder.
 */
export async function registerClaude(
  t: Pick<TestContext, "after">,
  run: ClaudeRun,
): Promise<string> {
  const registryDir = join(run.root, "state", "controllers");
  const reg = await register(registryDir, {
    conversation: run.ctrl.conversation,
    project: run.projectRoot,
    seat: "main",
    sessionFile: run.sessionFile,
    socket: run.ctrl.socketPath,
    execution: run.ctrl.state().execution,
    grants: ["g-op", "g-ro"],
    startedAt: new Date().toISOString(),
  });
  t.after(() => reg.remove());
  return registryDir;
}

/** Claude's reply asking to run Bash `command` (described as `description`). */
export function bashCall(id: string, command: string, description: string) {
  return {
    kind: "message" as const,
    content: [{ type: "tool_use" as const, id, name: "Bash", input: { command, description } }],
  };
}

/** Claude's reply "done", ending the turn. */
export const DONE = {
  kind: "message" as const,
  content: [{ type: "text" as const, text: "done" }],
};

/**
 * A terminal's client on `run`'s controller (the fixture's g-op), connected, keeping what it is
 * pushed; `settled()` counts the prompts whose receipt settled. Closed at the end.
 */
export async function terminalOn(t: Pick<TestContext, "after">, run: ClaudeRun) {
  const terminal = new ConversationClient({
    socketPath: run.ctrl.socketPath,
    grant: "g-op",
    requestTimeoutMs: 30_000,
  });
  t.after(() => terminal.close());
  const events: StreamEvent[] = [];
  const dialogs: Dialog[] = [];
  terminal.onEvent((e) => events.push(e));
  terminal.onDialog((d) => dialogs.push(d));
  await terminal.connect();
  const settled = () =>
    events.filter(
      (e) => e.event.kind === "receipt" && (e.event.receipt as Receipt).state === "settled",
    ).length;
  return { terminal, events, dialogs, settled };
}
