// A board over a running controller (the real Controller over fake-pi), registered in the
// --state-dir registry as `conversation control` registers it: what every steering and live
// test of the board starts from. Both are stopped when the test ends.
import { join } from "node:path";
import type { TestContext } from "node:test";
import { type Board, startBoard } from "../../src/board/index.ts";
import type { Controller } from "../../src/control/controller/controller.ts";
import { register } from "../../src/control/registry/registry.ts";
import { conversationId } from "../../src/reader/sources.ts";
import { startController } from "../control/controller-fixture.ts";

export async function startControlledBoard(
  t: TestContext,
): Promise<{ board: Board; conversation: string; ctl: Controller }> {
  const { ctl, f } = await startController(t);
  const conversation = conversationId(f.projectRoot, "main", "s.jsonl");
  const registryDir = join(f.root, "state", "controllers");
  const reg = await register(registryDir, {
    conversation,
    project: f.projectRoot,
    seat: "main",
    sessionFile: f.sessionFile,
    socket: ctl.socketPath,
    execution: "ex-test",
    grants: ["g-op"],
    startedAt: new Date().toISOString(),
  });
  t.after(() => reg.remove());
  const board = await startBoard({
    sources: {
      specs: [{ kind: "repository", projectRoot: f.projectRoot, seat: "main" }],
      registrations: [],
      liveRegistry: registryDir,
    },
    lanes: 1,
    grant: "g-op",
  });
  t.after(() => board.close());
  return { board, conversation, ctl };
}
