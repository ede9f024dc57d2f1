// A board over a controller of the real pinned Claude Code (real-claude-controller.ts),
// registered in the --state-dir registry as `conversation control --harness claude-code`
// registers it, its seat read as a Claude seat (the registration on claude-code, as the
// controller's own reader has it). What the Console's approval tests start from.
import { join } from "node:path";
import type { TestContext } from "node:test";
import { type Board, type BoardOptions, startBoard } from "../../src/board/index.ts";
import type { Grant } from "../../src/control/protocol.ts";
import { register } from "../../src/control/registry/registry.ts";
import { claudeProjectsDirOf } from "../../src/reader/sources.ts";
import { type ClaudeRun, startClaude } from "../control/real-claude-controller.ts";
import type { AnthropicReply } from "../helpers/fake-anthropic.ts";

export async function startClaudeBoard(
  t: TestContext,
  options: {
    replies?: AnthropicReply[];
    grants?: Grant[];
    actions?: NonNullable<Parameters<typeof startClaude>[1]>["actions"];
    board?: Pick<BoardOptions, "proxy">;
  } = {},
): Promise<{ run: ClaudeRun; board: Board; conversation: string; registryDir: string }> {
  const run = await startClaude(t, {
    replies: options.replies ?? [],
    ...(options.grants ? { grants: options.grants } : {}),
    ...(options.actions ? { actions: options.actions } : {}),
  });
  const conversation = run.ctrl.conversation;
  const registryDir = join(run.root, "state", "controllers");
  const reg = await register(registryDir, {
    conversation,
    project: run.projectRoot,
    seat: "main",
    sessionFile: run.sessionFile,
    socket: run.ctrl.socketPath,
    execution: run.ctrl.state().execution,
    grants: ["g-op", "g-ro"],
    startedAt: new Date().toISOString(),
  });
  t.after(() => reg.remove());
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
