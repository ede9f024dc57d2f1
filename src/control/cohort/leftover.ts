// What a dead controller's cgroup scope shows now (docs/claim.md, Recovery after a crash). When a
// controller dies, its shim kills the scope's `engine` cgroup and removes the scope; a recovery
// then looks at what is left. The engine's stop is proven when the `engine` cgroup is gone (a
// cgroup can only be removed once nothing is in it) or, frozen so nothing in it can fork, has no
// member and reads `populated 0`. Anything else is not a proof: a still-populated cgroup, or a
// hierarchy this process can't read (an absent observation is never an empty one, K15).
import { lstat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  errnoOf,
  listMembers,
  readEvents,
  removeTree,
  waitForEvents,
  writeControl,
} from "./cgroup.ts";

export type LeftScope =
  /** `<scope>/engine` does not exist while its parent hierarchy is readable. */
  | { seen: "gone"; engine: string }
  /** Frozen (`frozen 1`), no member in the subtree, `populated 0`. */
  | { seen: "empty"; engine: string; frozen: true; members: []; populated: false }
  /** Members run in it: nothing is proven. */
  | { seen: "populated"; engine: string; pids: number[] }
  /** A read or write that could not be made: nothing is proven. */
  | { seen: "unreadable"; engine: string; reason: string };

export type LeftScopeOptions = {
  /** How long to wait for the shim's own kill to empty the cgroup first. Default 5 s. */
  settleMs?: number;
  /** How long to wait for `frozen 1`. Default 2 s. */
  freezeTimeoutMs?: number;
};

/**
 * Observes the `engine` cgroup of `scope` (a `mosaic-<execution>` directory). Freezes it to
 * enumerate; an empty one is then removed with its scope (best effort: a shim still cleaning up
 * may hold `supervisor`), a populated one is thawed again, as it was found.
 */
export async function observeLeftScope(
  scope: string,
  options: LeftScopeOptions = {},
): Promise<LeftScope> {
  const engine = join(scope, "engine");
  const unreadable = (reason: string): LeftScope => ({ seen: "unreadable", engine, reason });
  if (!basename(scope).startsWith("mosaic-")) return unreadable(`${scope} is not a mosaic scope`);
  // The hierarchy must be visible, else a missing scope says nothing.
  try {
    await lstat(join(dirname(scope), "cgroup.procs"));
  } catch (e) {
    return unreadable(`the cgroup hierarchy ${dirname(scope)} is not readable: ${errnoOf(e)}`);
  }
  const gone = async (): Promise<boolean> => {
    try {
      await lstat(engine);
      return false;
    } catch (e) {
      if (errnoOf(e) === "ENOENT") return true;
      throw e;
    }
  };
  if (await gone()) return { seen: "gone", engine };
  // The shim kills the cgroup the moment its controller's channel closes: give it that time.
  await waitForEvents(engine, { populated: false }, options.settleMs ?? 5000);
  const frozen = await writeControl(engine, "cgroup.freeze", "1");
  if (frozen.status === "failed") {
    if (await gone()) return { seen: "gone", engine };
    return unreadable(`${engine}/cgroup.freeze: ${frozen.errno}`);
  }
  const waited = await waitForEvents(engine, { frozen: true }, options.freezeTimeoutMs ?? 2000);
  if (!waited.met) {
    if (await gone()) return { seen: "gone", engine };
    await writeControl(engine, "cgroup.freeze", "0");
    return unreadable(`${engine} did not report frozen 1`);
  }
  const members = await listMembers(engine);
  const events = await readEvents(engine);
  if (members.status === "absent" || events.status === "absent") {
    if (await gone()) return { seen: "gone", engine };
    await writeControl(engine, "cgroup.freeze", "0");
    const reason =
      members.status === "absent" ? members.reason : (events as { reason: string }).reason;
    return unreadable(reason);
  }
  if (members.pids.length > 0 || events.populated) {
    await writeControl(engine, "cgroup.freeze", "0");
    return { seen: "populated", engine, pids: members.pids };
  }
  // Proven empty. What the shim would have removed goes now, if nothing else holds it.
  await removeTree(scope);
  return { seen: "empty", engine, frozen: true, members: [], populated: false };
}
