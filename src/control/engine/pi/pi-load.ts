// Pi's K8 load check: it asks the launched Pi what it loaded (`get_state`, then `get_tree` or
// `get_entries`) and compares that with the file and leaf the controller expects, accepting only
// Pi's own known startup append. Reads the session file; never writes it.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { EngineLink } from "../engine.ts";
import type { Expected, LoadCheck, LoadedSession, StartupAppend } from "../harness.ts";
import { parseEntries, parseSessionState, parseTree } from "./rpc.ts";

/**
 * The session file as it was right before the launch: its complete lines' length and digest,
 * and whether its branch has a thinking entry. The load check needs it to tell Pi's known
 * startup append (seed: Findings, Startup append) from anything else.
 */
export type StartupBasis = {
  bytes: number;
  digest: string;
  thinkingOnBranch: boolean;
  readAt: number;
};

/** Reads the basis, or null when the file can't be read (then no append is ever accepted). */
export function readStartupBasis(file: string): StartupBasis | null {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch {
    // The load check then fails on any leaf change, which is the safe reading of "unknown".
    return null;
  }
  const complete = buf.subarray(0, buf.lastIndexOf(0x0a) + 1);
  const entries = parseLines(complete.toString("utf8"));
  const byId = new Map<string, Record<string, unknown>>();
  let leaf: string | null = null;
  for (const e of entries.slice(1)) {
    if (typeof e.id !== "string" || typeof e.type !== "string") continue;
    byId.set(e.id, e);
    leaf = e.id;
  }
  let thinkingOnBranch = false;
  const seen = new Set<string>();
  for (let id = leaf; id !== null && !seen.has(id); ) {
    seen.add(id);
    const e = byId.get(id);
    if (e === undefined) break;
    if (e.type === "thinking_level_change") thinkingOnBranch = true;
    id = typeof e.parentId === "string" ? e.parentId : null;
  }
  return {
    bytes: complete.length,
    digest: createHash("sha256").update(complete).digest("hex"),
    thinkingOnBranch,
    readAt: Date.now(),
  };
}

/** Clock skew tolerated between the basis read and Pi's entry timestamps. */
const STARTUP_SKEW_MS = 5_000;

/**
 * K8: the engine must have loaded `expected.sessionFile` with header id `expected.sessionId`,
 * its leaf at `expected.leafId` — or past it by exactly Pi's known startup append, given the
 * `basis` read before the launch: a `thinking_level_change` child of the expected leaf when the
 * branch has messages but no thinking entry; `[model_change,] thinking_level_change` when it
 * has no messages (Pi re-adds them at every start, sdk.js 240-252). The appended entries must
 * match what `get_state` reports (level, model), follow the untouched prefix byte for byte and
 * be written after the basis was read. Pi's `get_tree` recurses per level and fails on a very
 * deep tree; then `get_entries` gives the leaf. Never throws: an engine that can't answer fails.
 */
export async function checkLoad(
  link: EngineLink,
  expected: Expected,
  timeoutMs = 15_000,
  basis: StartupBasis | null = null,
): Promise<LoadCheck> {
  try {
    const stateResponse = await link.request({ type: "get_state" }, { timeoutMs });
    if (!stateResponse.success) {
      return fail(null, `Pi could not report its state (get_state: ${stateResponse.error})`);
    }
    const state = parseSessionState(stateResponse.data);
    if (!state.ok)
      return fail(null, `Pi's state report is not what this build reads: ${state.reason}`);
    let via: LoadedSession["via"] = "get_tree";
    let leaf: string | null;
    const tree = await link.request({ type: "get_tree" }, { timeoutMs });
    const parsedTree = tree.success ? parseTree(tree.data) : null;
    if (parsedTree?.ok) {
      leaf = parsedTree.value.leafId;
    } else {
      via = "get_entries";
      const entries = await link.request({ type: "get_entries" }, { timeoutMs });
      if (!entries.success) {
        return fail(
          null,
          `Pi could not list the session's entries (get_entries: ${entries.error})`,
        );
      }
      const parsed = parseEntries(entries.data);
      if (!parsed.ok)
        return fail(null, `Pi's entry list is not what this build reads: ${parsed.reason}`);
      leaf = parsed.value.leafId;
    }
    const loaded: LoadedSession = {
      sessionFile: state.value.sessionFile ?? null,
      sessionId: state.value.sessionId,
      leafId: leaf,
      via,
    };
    if (loaded.sessionFile === null || resolve(loaded.sessionFile) !== expected.sessionFile) {
      return fail(
        loaded,
        `Pi opened ${loaded.sessionFile ?? "no file"}, not ${expected.sessionFile}; ` +
          "was the session file moved or replaced while Pi started?",
      );
    }
    if (loaded.sessionId !== expected.sessionId) {
      return fail(
        loaded,
        `the session's header id is now ${loaded.sessionId}, not ${expected.sessionId}: ` +
          "the file was rewritten while Pi started",
      );
    }
    if (loaded.leafId === expected.leafId) return { ok: true, loaded, reason: "loaded" };
    const model = state.value.model;
    const append = acceptStartupAppend(expected, loaded.leafId, basis, {
      thinkingLevel: state.value.thinkingLevel,
      model:
        model && typeof model.provider === "string" && typeof model.id === "string"
          ? { provider: model.provider, id: model.id }
          : null,
      messageCount: state.value.messageCount,
    });
    if (!append.ok) {
      return fail(
        loaded,
        `Pi's last entry is ${loaded.leafId ?? "none"}, not ${expected.leafId ?? "none"}, ` +
          `and what was added is not Pi's known startup entry (${append.why}). ` +
          "Another program may be writing this session: make sure nothing else (another Pi, " +
          "an editor) has it open, then start the controller again",
      );
    }
    return { ok: true, loaded, reason: "loaded-after-startup-append", startupAppend: append.value };
  } catch (e) {
    return fail(
      null,
      `Pi did not answer the load check: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

type EngineSettings = {
  thinkingLevel: string;
  model: { provider: string; id: string } | null;
  messageCount: number;
};

function acceptStartupAppend(
  expected: Expected,
  leaf: string | null,
  basis: StartupBasis | null,
  engine: EngineSettings,
): { ok: true; value: StartupAppend } | { ok: false; why: string } {
  if (basis === null) return { ok: false, why: "the file could not be read before the launch" };
  let buf: Buffer;
  try {
    buf = readFileSync(expected.sessionFile);
  } catch (e) {
    return { ok: false, why: `the file can't be read now: ${(e as NodeJS.ErrnoException).code}` };
  }
  if (buf.length < basis.bytes) return { ok: false, why: "the file is shorter than before" };
  const prefix = createHash("sha256").update(buf.subarray(0, basis.bytes)).digest("hex");
  if (prefix !== basis.digest) return { ok: false, why: "earlier lines changed" };
  const tail = buf.subarray(basis.bytes);
  if (tail.length > 0 && tail[tail.length - 1] !== 0x0a) {
    return { ok: false, why: "a partial line follows" };
  }
  const entries = parseLines(tail.toString("utf8"), true);
  if (entries === null) return { ok: false, why: "an added line is not a JSON object" };
  const types = entries.map((e) => e.type).join(",");
  const noMessages = engine.messageCount === 0;
  const known =
    // With no messages Pi adds the thinking entry at every start, and the model entry only
    // when a model resolved; with messages, only when the branch had no thinking entry.
    (types === "thinking_level_change" && (noMessages || !basis.thinkingOnBranch)) ||
    (types === "model_change,thinking_level_change" && noMessages && engine.model !== null);
  if (!known) return { ok: false, why: `added: ${types || "nothing"}` };
  let parent = expected.leafId;
  for (const e of entries) {
    if (typeof e.id !== "string" || e.parentId !== parent) {
      return { ok: false, why: "the added entries do not continue the expected leaf" };
    }
    const at = typeof e.timestamp === "string" ? Date.parse(e.timestamp) : Number.NaN;
    if (!(at >= basis.readAt - STARTUP_SKEW_MS)) {
      return { ok: false, why: "an added entry is dated before the launch" };
    }
    parent = e.id;
  }
  if (parent !== leaf) return { ok: false, why: "Pi's leaf is not the last added entry" };
  const thinking = entries.at(-1);
  if (thinking?.thinkingLevel !== engine.thinkingLevel) {
    return { ok: false, why: "the thinking level differs from Pi's" };
  }
  const modelEntry = entries.length === 2 ? entries[0] : undefined;
  if (
    modelEntry !== undefined &&
    (modelEntry.provider !== engine.model?.provider || modelEntry.modelId !== engine.model?.id)
  ) {
    return { ok: false, why: "the model differs from Pi's" };
  }
  return {
    ok: true,
    value: {
      entries: entries.map((e) => ({
        id: e.id as string,
        type: e.type as "model_change" | "thinking_level_change",
      })),
      bytes: tail.length,
    },
  };
}

/** Complete lines as JSON objects; malformed lines skipped, or null when `strict`. */
function parseLines(text: string, strict: true): Record<string, unknown>[] | null;
function parseLines(text: string, strict?: false): Record<string, unknown>[];
function parseLines(text: string, strict = false): Record<string, unknown>[] | null {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      // Pi skips a malformed line on load too (research §1.2); strict callers refuse it.
      if (strict) return null;
      continue;
    }
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      out.push(v as Record<string, unknown>);
    } else if (strict) return null;
  }
  return out;
}

function fail(loaded: LoadedSession | null, reason: string): LoadCheck {
  return { ok: false, loaded, reason };
}
