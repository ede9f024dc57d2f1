// `conversation controllers`: the registry of running controllers, for people (one block per
// controller, with the line that attaches to it) or as JSON. Listing removes the entries of
// controllers that died and what they left, their agent copies included (registry.ts); it
// never connects to a socket.
import { isControlRefusal } from "../control/refusal.ts";
import { placesFor } from "../control/registry/places.ts";
import { listControllers } from "../control/registry/registry.ts";
import { makeVisible } from "../present/visible.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";

export type ControllersCommand = { name: "controllers"; json: boolean; stateDir?: string };

/** Prints the live controllers; exit 0 (an empty list included), 1 when the registry fails. */
export function listRunning(cmd: ControllersCommand, io: Io): number {
  const places = placesFor(cmd.stateDir);
  let listing: ReturnType<typeof listControllers>;
  try {
    listing = listControllers(places.registry);
  } catch (e) {
    // A refusal says what is wrong and what to do (a folder others can change, for example).
    const why = isControlRefusal(e)
      ? `refused: ${e.code}: ${e.message}`
      : ((e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e)));
    const v = makeVisible(why, { showNewlines: true });
    io.err(`conversation: cannot read the registry ${makeVisible(places.registry)}: ${v}\n`);
    return 1;
  }
  if (cmd.json) {
    io.out(`${JSON.stringify({ controllers: listing.live })}\n`);
    return 0;
  }
  const v = (s: string) => makeVisible(s, { showNewlines: true });
  if (listing.live.length === 0) {
    io.out(`No controller is running (registry: ${v(places.registry)}).\n`);
    return 0;
  }
  const stateArgs = cmd.stateDir === undefined ? [] : ["--state-dir", cmd.stateDir];
  const blocks = listing.live.map((e) => {
    const steer = e.grants.includes("operator") ? "operator" : (e.grants[0] ?? "operator");
    return [
      `${e.conversation}  ${v(`${e.project.split("/").at(-1) ?? e.project}/${e.seat}`)}`,
      `  session ${v(e.sessionFile)}`,
      `  socket ${v(e.socket)}`,
      `  ${e.piVersion === undefined ? "" : `Pi ${e.piVersion}, `}pid ${e.pid}, since ${e.startedAt}, grants ${v(e.grants.join(" "))}`,
      `  ${v(commandLine(["attach", e.conversation, ...stateArgs, "--grant", steer]))}`,
    ].join("\n");
  });
  io.out(`${blocks.join("\n\n")}\n`);
  return 0;
}
