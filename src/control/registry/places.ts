// Where `conversation control` keeps its state by default (SPEC §6): claims under
// $XDG_STATE_HOME/mosaic-conversation (else ~/.local/state/mosaic-conversation); the registry of
// running controllers, their sockets and private agent directories under
// $XDG_RUNTIME_DIR/mosaic-conversation when set (else under the state dir). `--state-dir DIR`
// puts all of it under DIR. Pure path arithmetic: nothing here touches the disk.
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";

export const STATE_NAME = "mosaic-conversation";

export type Places = {
  /** The claim store's root (ClaimStore `root`). */
  claims: string;
  /** One JSON entry per running controller (registry.ts). */
  registry: string;
  /** Each controller's own socket directory is created 0700 inside this one. */
  sockets: string;
  /** Private agent directories copied by `--agent-from`, one per controller. */
  agents: string;
  /** The audit ledgers, one `<conversation>.jsonl` each (src/audit/): kept, like the claims. */
  audit: string;
  /** The board's device login links (`serve --phone`, `conversation logins`). */
  board: string;
};

/** The default places for `env`, or all of them under `stateDir` when it is given. */
export function placesFor(
  stateDir: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
): Places {
  if (stateDir !== undefined) return placesUnder(resolve(stateDir), resolve(stateDir));
  // The XDG base directory spec: a relative value is invalid and must be ignored.
  const xdgState = env.XDG_STATE_HOME;
  const state =
    xdgState !== undefined && isAbsolute(xdgState)
      ? join(xdgState, STATE_NAME)
      : join(home, ".local", "state", STATE_NAME);
  const xdgRuntime = env.XDG_RUNTIME_DIR;
  const runtime =
    xdgRuntime !== undefined && isAbsolute(xdgRuntime) ? join(xdgRuntime, STATE_NAME) : state;
  return placesUnder(state, runtime);
}

function placesUnder(state: string, runtime: string): Places {
  return {
    claims: join(state, "claims"),
    registry: join(runtime, "controllers"),
    sockets: join(runtime, "sockets"),
    agents: join(runtime, "agents"),
    audit: join(state, "audit"),
    board: join(state, "board"),
  };
}

/**
 * The sockets and agent copies beside a registry: one base holds all three (placesUnder), so a
 * listing that finds a dead controller knows where what it left can be, and nowhere else.
 */
export function besideRegistry(registry: string): Pick<Places, "sockets" | "agents"> {
  const { sockets, agents } = placesUnder(dirname(resolve(registry)), dirname(resolve(registry)));
  return { sockets, agents };
}
