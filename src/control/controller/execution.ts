// One execution's engine: its environment (SPEC §6: a fresh scratch HOME and what its harness
// sets, nothing else inherited) and what the controller keeps of it. The load check is the
// harness's (engine/pi/pi-load.ts for Pi).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AnyLaunched } from "../cohort/launcher.ts";
import type { AnyEngineLink } from "../engine/engine.ts";
import type { EngineHarness, EngineSession, LoadCheck } from "../engine/harness.ts";
import { ControlRefusal } from "../refusal.ts";
import { controlPlace, ensurePrivateDir } from "../registry/private-dirs.ts";
import type { Approvals } from "./dialogs.ts";
import type { EventStream } from "./events.ts";
import type { BindingRecord, DialogRecord } from "./records.ts";
import type { Closer, StopChain } from "./stops.ts";
import type { Tracker } from "./turns.ts";

const SCRATCH_INSTEAD = "set TMPDIR to a folder of your own (or leave it unset for /tmp)";

/** Refuses `configuration` when extra env (a test hook) tries to set what the seal sets. */
export function checkExtraEnv(
  harness: Pick<EngineHarness, "reservesEnv">,
  env: Readonly<Record<string, string>> | undefined,
): void {
  for (const [k, v] of Object.entries(env ?? {})) {
    if (harness.reservesEnv(k)) {
      throw new ControlRefusal("configuration", `engine.env may not set ${k}`);
    }
    if (typeof v !== "string") throw new ControlRefusal("configuration", `engine.env ${k}`);
  }
}

/** The engine's whole environment, with a fresh scratch HOME it creates. */
export async function engineEnv(
  harness: Pick<EngineHarness, "env">,
  options: {
    agentDir?: string | undefined;
    extra?: Readonly<Record<string, string>> | undefined;
    projectRoot: string;
    seat: string;
  },
): Promise<{ env: Record<string, string>; home: string }> {
  const home = await mkdtemp(join(tmpdir(), "mosaic-home-"));
  try {
    // An engine reads its settings from HOME when no agent dir is given (Pi's models, Claude
    // Code's scratch): nobody else may be able to swap the folder under it (a TMPDIR others can
    // write, for example).
    ensurePrivateDir(home, controlPlace("the engine's scratch home", SCRATCH_INSTEAD));
  } catch (e) {
    await rm(home, { recursive: true, force: true });
    throw e;
  }
  const env = harness.env({
    home,
    agentDir: options.agentDir,
    extra: options.extra,
    projectRoot: options.projectRoot,
    seat: options.seat,
  });
  return { env, home };
}

/** One engine run: its launch, tracker, stop chain, stream and fences. */
export type Execution = {
  execution: string;
  incarnation: string;
  launched: AnyLaunched;
  link: AnyEngineLink;
  /** The engine's protocol (its harness's session over the link). */
  engine: EngineSession;
  tracker: Tracker;
  stops: StopChain;
  stream: EventStream;
  binding: BindingRecord;
  closers: Set<Closer>;
  dialogs: DialogRecord[];
  /** The approvals the engine asked in this execution (Claude Code's permission prompts). */
  approvals: Approvals;
  home: string;
  leafAtStart: string | null;
  /** The K8 load check's verdict, in words (null until it ran). */
  load: LoadCheck | null;
};
