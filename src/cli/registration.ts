// A started controller in the registry of running controllers: the entry `conversation
// controllers` lists and `attach` finds it by, the same for `conversation control` and `npm
// start`'s demo. If registering fails, the controller is stopped before the error goes on: no
// controller keeps running that nobody can find.
import type { Controller } from "../control/controller/controller.ts";
import { type Registration, type RegistryEntry, register } from "../control/registry/registry.ts";

/**
 * Registers `ctl` (started) in `dir` with the ids of the grants it serves; `more` adds what
 * only its command knows (the private copy of an agent dir, swept if the controller dies).
 */
export async function registerStarted(
  dir: string,
  ctl: Controller,
  grants: readonly string[],
  more: Pick<RegistryEntry, "agentCopy"> = {},
): Promise<Registration> {
  const engine = ctl.execution?.binding.engine;
  try {
    return await register(dir, {
      conversation: ctl.conversation,
      project: ctl.projectRoot,
      seat: ctl.seat,
      sessionFile: ctl.sessionFile,
      socket: ctl.socketPath,
      execution: ctl.execution?.execution ?? "none",
      grants: [...grants],
      startedAt: new Date().toISOString(),
      ...more,
      ...(engine ? { piVersion: engine.version } : {}),
    });
  } catch (e) {
    await ctl.stop().catch(() => undefined);
    throw e;
  }
}
