// A board over a running controller (the real Controller over fake-pi), registered in the
// --state-dir registry as `conversation control` registers it: what every steering and live
// test of the board starts from (boardOverController does the registering and the board for a
// controller a test made itself, as the real-Pi one does).
import { join } from "node:path";
import type { TestContext } from "node:test";
import { type Board, type BoardOptions, startBoard } from "../../src/board/index.ts";
import type { Controller } from "../../src/control/controller/controller.ts";
import { register } from "../../src/control/registry/registry.ts";
import { conversationId } from "../../src/reader/sources.ts";
import { startController } from "../control/controller-fixture.ts";

/** A controller over fake-pi, registered, and a board over its project; all stopped at the end. */
export async function startControlledBoard(
  t: TestContext,
  options: Pick<BoardOptions, "observeGrant"> = {},
): Promise<{ board: Board; conversation: string; ctl: Controller }> {
  const { ctl, f } = await startController(t);
  const { board, conversation, unregister } = await boardOverController(f, ctl.socketPath, options);
  t.after(unregister);
  t.after(() => board.close());
  return { board, conversation, ctl };
}

/**
 * Registers the controller serving `f`'s session (at `socket`) in `f`'s --state-dir registry,
 * and starts a board reading `f`'s project with that registry. The caller undoes both.
 */
export async function boardOverController(
  f: { root: string; projectRoot: string; sessionFile: string },
  socket: string,
  options: Pick<BoardOptions, "observeGrant" | "proxy" | "push" | "stallMs" | "devices"> = {},
): Promise<{ board: Board; conversation: string; unregister: () => void }> {
  const conversation = conversationId(f.projectRoot, "main", "s.jsonl");
  const registryDir = join(f.root, "state", "controllers");
  const reg = await register(registryDir, {
    conversation,
    project: f.projectRoot,
    seat: "main",
    sessionFile: f.sessionFile,
    socket,
    execution: "ex-test",
    grants: ["g-op", "g-ro"],
    startedAt: new Date().toISOString(),
  });
  try {
    const board = await startBoard({
      sources: {
        specs: [{ kind: "repository", projectRoot: f.projectRoot, seat: "main" }],
        registrations: [],
        liveRegistry: registryDir,
      },
      lanes: 1,
      grant: "g-op",
      // The streams watch with the fixture's observe-only grant (controller-fixture.ts).
      observeGrant: "g-ro",
      ...options,
    });
    return { board, conversation, unregister: () => reg.remove() };
  } catch (e) {
    reg.remove();
    throw e;
  }
}
