// One execution's engine: its environment (SPEC §6: PATH, a scratch HOME, PI_OFFLINE=1 and
// PI_CODING_AGENT_DIR when given; nothing else inherited) and the K8 load check, which asks the
// launched engine what it loaded (`get_state`, then `get_tree` or `get_entries`) and compares
// that with the file and leaf the controller expects. Never touches the session file.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Launched } from "../cohort/launcher.ts";
import type { EngineLink } from "../engine/engine.ts";
import { parseEntries, parseSessionState, parseTree } from "../engine/rpc.ts";
import { ControlRefusal } from "../refusal.ts";
import type { EventStream } from "./events.ts";
import type { BindingRecord, DialogRecord, LoadedSession } from "./records.ts";
import type { Closer, StopChain } from "./stops.ts";
import type { Tracker } from "./turns.ts";

const RESERVED_ENV = new Set(["PATH", "HOME", "PI_OFFLINE", "PI_CODING_AGENT_DIR"]);

/** Refuses `configuration` when extra env (a test hook) tries to set what the seal sets. */
export function checkExtraEnv(env: Readonly<Record<string, string>> | undefined): void {
  for (const [k, v] of Object.entries(env ?? {})) {
    if (RESERVED_ENV.has(k) || k.startsWith("PI_")) {
      throw new ControlRefusal("configuration", `engine.env may not set ${k}`);
    }
    if (typeof v !== "string") throw new ControlRefusal("configuration", `engine.env ${k}`);
  }
}

/** The engine's whole environment, with a fresh scratch HOME it creates. */
export async function engineEnv(options: {
  agentDir?: string | undefined;
  extra?: Readonly<Record<string, string>> | undefined;
}): Promise<{ env: Record<string, string>; home: string }> {
  const home = await mkdtemp(join(tmpdir(), "mosaic-home-"));
  const env: Record<string, string> = {
    ...(options.extra ?? {}),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    PI_OFFLINE: "1",
  };
  if (options.agentDir !== undefined) env.PI_CODING_AGENT_DIR = options.agentDir;
  return { env, home };
}

export type Expected = { sessionFile: string; sessionId: string; leafId: string | null };
export type LoadCheck = { ok: boolean; loaded: LoadedSession | null; reason: string };

/**
 * K8: the engine must have loaded `expected.sessionFile` with header id `expected.sessionId`,
 * its leaf at `expected.leafId`. Pi's `get_tree` recurses per level and fails on a very deep
 * tree; then `get_entries` gives the leaf. Never throws: an engine that can't answer fails.
 */
export async function checkLoad(
  link: EngineLink,
  expected: Expected,
  timeoutMs = 15_000,
): Promise<LoadCheck> {
  try {
    const stateResponse = await link.request({ type: "get_state" }, { timeoutMs });
    if (!stateResponse.success) return fail(null, `get_state failed: ${stateResponse.error}`);
    const state = parseSessionState(stateResponse.data);
    if (!state.ok) return fail(null, `get_state's answer: ${state.reason}`);
    let via: LoadedSession["via"] = "get_tree";
    let leaf: string | null;
    const tree = await link.request({ type: "get_tree" }, { timeoutMs });
    const parsedTree = tree.success ? parseTree(tree.data) : null;
    if (parsedTree?.ok) {
      leaf = parsedTree.value.leafId;
    } else {
      via = "get_entries";
      const entries = await link.request({ type: "get_entries" }, { timeoutMs });
      if (!entries.success) return fail(null, `get_entries failed: ${entries.error}`);
      const parsed = parseEntries(entries.data);
      if (!parsed.ok) return fail(null, `get_entries' answer: ${parsed.reason}`);
      leaf = parsed.value.leafId;
    }
    const loaded: LoadedSession = {
      sessionFile: state.value.sessionFile ?? null,
      sessionId: state.value.sessionId,
      leafId: leaf,
      via,
    };
    if (loaded.sessionFile === null || resolve(loaded.sessionFile) !== expected.sessionFile) {
      return fail(loaded, "the engine loaded another file");
    }
    if (loaded.sessionId !== expected.sessionId) {
      return fail(loaded, "the engine loaded another session id");
    }
    if (loaded.leafId !== expected.leafId) {
      return fail(loaded, "the engine's leaf is not the expected leaf (a startup append?)");
    }
    return { ok: true, loaded, reason: "loaded" };
  } catch (e) {
    return fail(null, `the engine did not answer the load check: ${String(e)}`);
  }
}

function fail(loaded: LoadedSession | null, reason: string): LoadCheck {
  return { ok: false, loaded, reason };
}

/** One engine run: its launch, tracker, stop chain, stream and fences. */
export type Execution = {
  execution: string;
  incarnation: string;
  launched: Launched;
  link: EngineLink;
  tracker: Tracker;
  stops: StopChain;
  stream: EventStream;
  binding: BindingRecord;
  closers: Set<Closer>;
  dialogs: DialogRecord[];
  home: string;
  leafAtStart: string | null;
};
