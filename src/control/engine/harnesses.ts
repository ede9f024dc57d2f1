// The harnesses the controller can run (SPEC §8), by name: Pi (the default) and Claude Code.
// Each is an EngineHarness (harness.ts) of its own wire; here each is closed over that wire, so
// the controller launches and drives any of them without knowing its record types.
import type { AnyLaunched, Launcher } from "../cohort/launcher.ts";
import { ControlRefusal } from "../refusal.ts";
import { CLAUDE_ENGINE } from "./claude-code/claude-engine.ts";
import type { EngineSpec } from "./engine.ts";
import type { EngineHarness, EngineHooks, EngineSession, HarnessName } from "./harness.ts";
import { HARNESS_NAMES, isHarnessName } from "./harness.ts";
import { PI_ENGINE } from "./pi/pi-engine.ts";

/** A harness with its wire closed over: it launches its engine and starts its protocol. */
export type Harness = Omit<EngineHarness, "linkOptions" | "start"> & {
  /**
   * Launches `spec` through `launcher` with this harness's wire and starts its protocol over the
   * link: `hooks` hear every record from the first one on.
   */
  launch(
    launcher: Launcher,
    spec: EngineSpec,
    executionId: string,
    hooks: EngineHooks,
    basis: unknown,
  ): Promise<{ launched: AnyLaunched; engine: EngineSession }>;
};

function closed<E, C, O extends object>(h: EngineHarness<E, C, O>): Harness {
  const { linkOptions, start, ...rest } = h;
  return {
    ...rest,
    async launch(launcher, spec, executionId, hooks, basis) {
      const launched = await launcher.launch<E, C, O>(spec, { executionId, link: linkOptions() });
      return { launched, engine: start(launched.link, hooks, basis) };
    },
  };
}

const HARNESSES: Readonly<Partial<Record<HarnessName, Harness>>> = {
  pi: closed(PI_ENGINE),
  "claude-code": closed(CLAUDE_ENGINE),
};

/** The harness called `name`; refuses `configuration` for any other name. */
export function harnessFor(name: unknown = "pi"): Harness {
  const harness = isHarnessName(name) ? HARNESSES[name] : undefined;
  if (harness === undefined) {
    const known = HARNESS_NAMES.filter((n) => HARNESSES[n] !== undefined);
    throw new ControlRefusal(
      "configuration",
      `the harness ${JSON.stringify(name)} is not one the controller runs (${known.join(", ")})`,
    );
  }
  return harness;
}
