// Attention states (issue 27 item 1): what a controlled conversation needs from a person, and
// since when, derived from what an observer of its controller sees (stream events, dialogs,
// state changes) and from whether the controller is still alive. Pure: every input carries its
// time, and `attentionOf` takes `now`, so the board, the terminal and the tests fold the same
// way. The board and `conversation inbox` (src/attention/watch.ts) feed it; nothing here opens
// a socket or reads a file.
//
// The rule, first match wins:
//   failed            the controller died, or its engine is gone (admission fenced or never
//                     opened), or the last run ended on an engine error;
//   waiting-approval  an approval dialog is open (the oldest one's time);
//   stalled           a run is in progress and no event came for `stallMs`;
//   running           a run is in progress;
//   waiting-input     a run ended and the agent waits for the next prompt;
//   idle              no run seen since the controller started (or nothing known yet).

import { waited } from "../present/waiting.ts";

export { waited };

export const ATTENTION_STATES = [
  "waiting-approval",
  "waiting-input",
  "failed",
  "stalled",
  "running",
  "idle",
] as const;
export type AttentionState = (typeof ATTENTION_STATES)[number];

/** The states the inbox lists: the ones a person is needed for. */
export const NEEDS_YOU: readonly AttentionState[] = [
  "waiting-approval",
  "waiting-input",
  "failed",
  "stalled",
];

/** N of "no event for N minutes during a run", unless configured (`--stall-minutes`). */
export const DEFAULT_STALL_MS = 5 * 60_000;

/** A stream event as the controller sends it (`StreamEvent.event`). */
export type EventInput = { kind: string; [k: string]: unknown };

/**
 * A dialog as pushed. Main's controller pushes Pi's dialogs disabled; the Claude Code control
 * work (issue 26) adds `method: "approval"` with a `state`, pushed again with the same id when
 * it ends. Typed loosely on purpose: both shapes fold.
 */
export type DialogInput = {
  id: string;
  method: string;
  title: string;
  state?: string;
  tool?: { name: string; input?: unknown };
};

/** What the observer's probe at connect found: `observe`'s seam and page. */
export type ProbeInput = {
  /** The seam's `quiet`: no run was in progress while the page was read. */
  quiet: boolean;
  /** The page's parts (role, timestamp, stop reason are all that is read). */
  parts: readonly { role?: string; timestamp?: string; meta?: { stopReason?: string } }[];
};

export type OpenApproval = {
  id: string;
  title: string;
  tool: string | null;
  openedAt: number;
  /** The controller's budget dialog (a limit reached: raise or stop), not an engine's approval. */
  budget?: true;
};

type Run =
  | { phase: "unknown" }
  | { phase: "none" }
  | { phase: "running"; startedAt: number; lastEventAt: number; error: string | null }
  | { phase: "ended"; at: number; error: string | null };

/** Everything the fold remembers of one conversation. Treat as immutable. */
export type Observed = {
  /** When the observer first saw the controller. */
  readonly seenAt: number;
  readonly run: Run;
  readonly approvals: readonly OpenApproval[];
  /** Set when the controller's engine is gone or never opened admission. */
  readonly engineDown: { at: number; why: string } | null;
  /** Set when the controller itself died. */
  readonly gone: { at: number; why: string } | null;
};

export type Attention = {
  state: AttentionState;
  /** Milliseconds since the epoch: when this state began. */
  since: number;
  /** For people: why the conversation is in this state. */
  reason: string;
  /** With waiting-approval: the oldest open approval. */
  approval?: OpenApproval;
};

export function observed(at: number): Observed {
  return { seenAt: at, run: { phase: "unknown" }, approvals: [], engineDown: null, gone: null };
}

/** Folds one stream event received at `at`. */
export function onEvent(o: Observed, event: EventInput, at: number): Observed {
  const run = o.run;
  switch (event.kind) {
    case "run-started":
      return { ...o, run: { phase: "running", startedAt: at, lastEventAt: at, error: null } };
    case "run-ended":
      // Pi ends a run it will retry and starts it again: still running.
      if (event.willRetry === true) return touched(o, at);
      return run.phase === "running"
        ? { ...o, run: { phase: "ended", at, error: run.error } }
        : { ...o, run: { phase: "ended", at, error: null } };
    case "run-settled":
      return run.phase === "running" ? { ...o, run: { phase: "ended", at, error: run.error } } : o;
    case "message-ended": {
      const next = touched(o, at);
      if (event.role !== "assistant" || next.run.phase !== "running") return next;
      const failed = event.stopReason === "error";
      return { ...next, run: { ...next.run, error: failed ? engineError(event.message) : null } };
    }
    default:
      return touched(o, at);
  }
}

/**
 * Folds a pushed dialog: an open approval is added, an ended one removed. The controller's
 * budget dialog waits on a person the same way (the run stopped until someone raises or stops).
 */
export function onDialog(o: Observed, dialog: DialogInput, at: number): Observed {
  if (dialog.method !== "approval" && dialog.method !== "budget") return touched(o, at);
  const rest = o.approvals.filter((a) => a.id !== dialog.id);
  if (dialog.state !== undefined && dialog.state !== "open") return { ...o, approvals: rest };
  const known = o.approvals.find((a) => a.id === dialog.id);
  const approval: OpenApproval = {
    id: dialog.id,
    title: dialog.title,
    tool: dialog.tool?.name ?? null,
    openedAt: known?.openedAt ?? at,
    ...(dialog.method === "budget" ? { budget: true as const } : {}),
  };
  return { ...touched(o, at), approvals: [...rest, approval] };
}

/** Folds a controller state: a fenced or never-opened admission means no engine to talk to. */
export function onState(o: Observed, state: { admission: string }, at: number): Observed {
  if (state.admission === "open") return o.engineDown === null ? o : { ...o, engineDown: null };
  if (o.engineDown !== null) return o;
  const why =
    state.admission === "fenced"
      ? "the engine stopped or exited; recover it or stop the controller"
      : "the engine never opened for prompts (its load check failed); start the controller again";
  // The engine is gone: its open dialogs went with it.
  return { ...o, engineDown: { at, why }, approvals: [] };
}

/** Folds what the observer read at connect; events that already arrived take precedence. */
export function onProbe(o: Observed, probe: ProbeInput, at: number): Observed {
  if (o.run.phase !== "unknown") return o;
  if (!probe.quiet) {
    return { ...o, run: { phase: "running", startedAt: at, lastEventAt: at, error: null } };
  }
  const last = probe.parts.findLast((p) => p.role === "assistant");
  if (last === undefined) return { ...o, run: { phase: "none" } };
  const when = last.timestamp === undefined ? Number.NaN : Date.parse(last.timestamp);
  const ended = Number.isFinite(when) ? when : at;
  const error =
    last.meta?.stopReason === "error" ? "the last reply ended on an engine error" : null;
  return { ...o, run: { phase: "ended", at: ended, error } };
}

/** The controller died (its process is gone while its registry entry still named it). */
export function onGone(o: Observed, why: string, at: number): Observed {
  return o.gone === null ? { ...o, gone: { at, why }, approvals: [] } : o;
}

/** The attention state at `now`. */
export function attentionOf(o: Observed, now: number, stallMs: number): Attention {
  if (o.gone !== null) return { state: "failed", since: o.gone.at, reason: o.gone.why };
  if (o.engineDown !== null) {
    return { state: "failed", since: o.engineDown.at, reason: o.engineDown.why };
  }
  const oldest = o.approvals.reduce<OpenApproval | null>(
    (a, b) => (a === null || b.openedAt < a.openedAt ? b : a),
    null,
  );
  if (oldest !== null) {
    if (oldest.budget) {
      // The controller's title says what was spent of what ("Budget reached: … Raise it, or …").
      const reason = oldest.title.slice(0, 300);
      return { state: "waiting-approval", since: oldest.openedAt, reason, approval: oldest };
    }
    // Claude Code's titles already start with the tool's name ("Bash: create the file").
    const what =
      oldest.tool === null || oldest.title.startsWith(`${oldest.tool}:`)
        ? oldest.title
        : `${oldest.tool}: ${oldest.title}`;
    return {
      state: "waiting-approval",
      since: oldest.openedAt,
      reason: `asks to run ${what}`.slice(0, 300),
      approval: oldest,
    };
  }
  const run = o.run;
  switch (run.phase) {
    case "running": {
      if (now - run.lastEventAt >= stallMs) {
        return {
          state: "stalled",
          since: run.lastEventAt,
          reason: `no event for ${waited(now - run.lastEventAt)} during a run`,
        };
      }
      return { state: "running", since: run.startedAt, reason: "a run is in progress" };
    }
    case "ended":
      if (run.error !== null) return { state: "failed", since: run.at, reason: run.error };
      return { state: "waiting-input", since: run.at, reason: "the run ended; it waits for you" };
    case "none":
      return { state: "idle", since: o.seenAt, reason: "no run since the controller started" };
    case "unknown":
      return { state: "idle", since: o.seenAt, reason: "connecting to the controller" };
  }
}

/** Whether the inbox lists this state. */
export function needsYou(state: AttentionState): boolean {
  return NEEDS_YOU.includes(state);
}

/** The inbox's order: the oldest wait first; ties by `key`, so the order is stable. */
export function byOldestWait<T extends { attention: Attention; key: string }>(a: T, b: T): number {
  return a.attention.since - b.attention.since || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/**
 * When `attentionOf` can next change with no input: the moment a quiet run turns stalled.
 * Null when only an input can change it. Lets a watcher set one timer instead of polling.
 */
export function nextChangeAt(o: Observed, stallMs: number): number | null {
  if (o.gone !== null || o.engineDown !== null || o.approvals.length > 0) return null;
  return o.run.phase === "running" ? o.run.lastEventAt + stallMs : null;
}

function touched(o: Observed, at: number): Observed {
  const run = o.run;
  if (run.phase !== "running") return o;
  return { ...o, run: { ...run, lastEventAt: Math.max(run.lastEventAt, at) } };
}

/** The engine's own error text when the message carries one (bounded), else a plain reason. */
function engineError(message: unknown): string {
  const text =
    typeof message === "object" && message !== null
      ? (message as { errorMessage?: unknown }).errorMessage
      : undefined;
  if (typeof text === "string" && text.length > 0) {
    return `the engine failed: ${text.slice(0, 200)}`;
  }
  return "the engine failed (its reply ended on an error)";
}
