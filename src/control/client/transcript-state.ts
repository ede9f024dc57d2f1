// The transcript's pure core: pages and stream events in, a render model and "reread" actions
// out, by the seam rules (seed: The seam). Invariants: an event is shown at most once; an event
// past a hole is held, never shown after what came before; a seam not known to be complete
// carries a marker. transcript.ts wires it to a client.
import type { Part } from "../../protocol/chat-01.ts";
import { toChatId } from "../../protocol/chat-01.ts";
import { renderEntry } from "../../reader/harness/pi/blocks.ts";
import type { StreamEvent } from "../protocol.ts";
import type { Seam } from "./outcomes.ts";

/** Why a seam marker shows. `reconcile`: the cut was not quiet (E2, E4); the others are holes
 * (E3) or a page read that failed, each cleared by the next page. */
export type SeamReason = "reconcile" | "gap" | "new-epoch" | "changed-repeat" | "read-failed";
type HoleReason = "gap" | "new-epoch" | "changed-repeat";

export type TranscriptItem =
  | { kind: "part"; key: string; source: "page" | "live"; part: Part }
  /** A message whose deltas are arriving; replaced by its part at `message-ended`. */
  | { kind: "streaming"; key: string; role: string; text: string; thinking: string }
  /** A tool call in flight; hidden once a finished message carries its result (E5). */
  | {
      kind: "tool";
      key: string;
      toolCallId: string;
      toolName: string;
      state: "running" | "ended";
      isError: boolean;
      updates: number;
    }
  | { kind: "notice"; key: string; method: string; text: string }
  /** A prompt's receipt that settled other than `completed` (the controller's `receipt`
   * event): `reason` is the wire's text, untrusted like any other. */
  | { kind: "receipt"; key: string; receiptId: string; reason: string; detail: string | null }
  /** Who did what (the controller's `act` event): shown where it happened in the run. */
  | {
      kind: "act";
      key: string;
      op: string;
      actor: string;
      decision: string | null;
      about: string | null;
    }
  /** An event kind this client does not know, shown generically. */
  | { kind: "event"; key: string; eventKind: string }
  | { kind: "seam"; key: string; reason: SeamReason; detail: string };

/** What the owner of a TranscriptState must do: read the page again (observe). */
export type TranscriptAction = { type: "reread"; reason: HoleReason | "run-settled" };

/** The page as the state needs it: a CHAT-01 Page fits. */
export type PageInput = { parts: readonly Part[] };

/** Events kept while a hole is open or before the first page; the oldest go first. */
const HELD_MAX = 10_000;

type Arrived = { ev: StreamEvent; at: number };

const KINDS = [
  "run-started",
  "turn-started",
  "turn-ended",
  "run-ended",
  "run-settled",
  "message-started",
  "text-delta",
  "thinking-delta",
  "message-updated",
  "message-ended",
  "tool-started",
  "tool-progress",
  "tool-ended",
  "queue-updated",
  "engine-notice",
  "native",
  "receipt",
  "act",
] as const;
type Kind = (typeof KINDS)[number];
const isKind = (k: string): k is Kind => (KINDS as readonly string[]).includes(k);

/** `thinking_level_change` (a setting, not a message) in any spelling: never shown (E6). */
const isThinkingLevel = (s: unknown): boolean =>
  typeof s === "string" && /^thinking[-_]level[-_]change(d)?$/.test(s);

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const same = (a: StreamEvent, b: StreamEvent): boolean =>
  a.id === b.id && JSON.stringify(a) === JSON.stringify(b);

/** The live side of the view: events folded into items after the seam. */
class Live {
  readonly items: TranscriptItem[] = [];
  /** Chat ids of tool calls whose result a finished message carries (page or stream). */
  readonly results: Set<string>;
  running: boolean;
  #openKey: string | null = null;

  constructor(results: Set<string>, running: boolean) {
    this.results = results;
    this.running = running;
  }

  /** Folds one event; true when it settled a run. */
  fold(se: StreamEvent): boolean {
    const e = se.event;
    const key = `l:${se.id}`;
    if (!isKind(e.kind)) {
      if (!isThinkingLevel(e.kind)) this.items.push({ kind: "event", key, eventKind: e.kind });
      return false;
    }
    switch (e.kind) {
      case "run-started":
        this.running = true;
        return false;
      // Pi's agent_settled (events.ts): the run's messages are all persisted, so a read now
      // holds all of it (E4).
      case "run-settled":
        this.running = false;
        return true;
      case "turn-started":
      case "turn-ended":
      case "run-ended":
      case "message-updated":
      case "queue-updated":
        return false;
      // Engine bookkeeping (compaction, retries, thinking_level_changed, ...): not transcript.
      case "native":
        return false;
      case "message-started":
        this.#open(key, str(e.role) ?? "assistant");
        return false;
      case "text-delta":
      case "thinking-delta":
        this.#delta(key, e.kind, str(e.delta) ?? "");
        return false;
      case "message-ended":
        this.#end(key, e.message);
        return false;
      case "tool-started":
      case "tool-progress":
      case "tool-ended":
        this.#tool(e.kind, str(e.toolCallId) ?? "", str(e.toolName) ?? "", e.isError === true);
        return false;
      // The controller's own event, right before the run-settled it settles (or where an
      // overlap, the engine's exit or Pi's refusal was read). Decision: a receipt settled
      // `completed` (or one not settled yet) is hidden, since the run's messages already show
      // what happened; any other settle reason (interrupted, transport-unknown, run-overlap,
      // ...) is shown as one compact status line, because nothing else in the transcript says
      // that the prompt did not run to its end. Never the generic `[event receipt]`.
      case "receipt": {
        const r = e.receipt;
        const receipt = typeof r === "object" && r !== null ? (r as Record<string, unknown>) : {};
        const reason = str(receipt.reason);
        if (receipt.state === "settled" && reason !== null && reason !== "completed") {
          const detail = str(receipt.detail);
          this.items.push({
            kind: "receipt",
            key,
            receiptId: str(receipt.id) ?? "",
            reason,
            detail,
          });
        }
        return false;
      }
      case "act":
        this.items.push({
          kind: "act",
          key,
          op: str(e.op) ?? "",
          actor: str(e.actor) ?? "",
          decision: str(e.decision),
          about: str(e.about),
        });
        return false;
      case "engine-notice":
        this.items.push({
          kind: "notice",
          key,
          method: str(e.method) ?? "",
          text: str(e.message) ?? "",
        });
        return false;
      default: {
        const never: never = e.kind;
        throw new Error(`unhandled event kind ${String(never)}`);
      }
    }
  }

  #indexOf(key: string | null): number {
    if (key === null) return -1;
    for (let i = this.items.length - 1; i >= 0; i--) if (this.items[i]?.key === key) return i;
    return -1;
  }

  #open(key: string, role: string): void {
    this.items.push({ kind: "streaming", key, role, text: "", thinking: "" });
    this.#openKey = key;
  }

  #delta(key: string, kind: "text-delta" | "thinking-delta", delta: string): void {
    // Deltas after a seam may belong to a message started before it: open one implicitly.
    if (this.#indexOf(this.#openKey) < 0) this.#open(key, "assistant");
    const i = this.#indexOf(this.#openKey);
    const item = this.items[i];
    if (item?.kind !== "streaming") return;
    this.items[i] =
      kind === "text-delta"
        ? { ...item, text: item.text + delta }
        : { ...item, thinking: item.thinking + delta };
  }

  #end(key: string, message: unknown): void {
    const draft = renderEntry({ type: "message", message });
    const at = this.#indexOf(this.#openKey);
    this.#openKey = null;
    if (draft === null) {
      if (at >= 0) this.items.splice(at, 1);
      return;
    }
    const part: Part = { id: key, entry: key, kind: draft.kind, blocks: draft.blocks };
    if (draft.role !== undefined) part.role = draft.role;
    if (draft.timestamp !== undefined) part.timestamp = draft.timestamp;
    if (draft.meta !== undefined) part.meta = draft.meta;
    const item: TranscriptItem = { kind: "part", key, source: "live", part };
    if (at >= 0) this.items[at] = item;
    else this.items.push(item);
    for (const id of resultIds([part])) this.finish(id);
  }

  /** A finished message carries the result of `id`: its progress item goes. */
  finish(id: string): void {
    this.results.add(id);
    const i = this.#indexOf(`t:${id}`);
    if (i >= 0) this.items.splice(i, 1);
  }

  #tool(
    kind: "tool-started" | "tool-progress" | "tool-ended",
    native: string,
    name: string,
    isError: boolean,
  ): void {
    const toolCallId = toChatId(native);
    if (this.results.has(toolCallId)) return;
    const key = `t:${toolCallId}`;
    const i = this.#indexOf(key);
    const prior = this.items[i];
    if (prior?.kind !== "tool") {
      this.items.push({
        kind: "tool",
        key,
        toolCallId,
        toolName: name,
        state: kind === "tool-ended" ? "ended" : "running",
        isError,
        updates: kind === "tool-progress" ? 1 : 0,
      });
      return;
    }
    this.items[i] =
      kind === "tool-ended"
        ? { ...prior, state: "ended", isError }
        : { ...prior, updates: prior.updates + (kind === "tool-progress" ? 1 : 0) };
  }

  /** Tool calls still in flight, to carry across a page read that did not see them finish. */
  inFlight(): TranscriptItem[] {
    return this.items.filter((i) => i.kind === "tool");
  }
}

/** Chat ids of the tool results that `parts` carry. */
function resultIds(parts: readonly Part[]): string[] {
  const ids: string[] = [];
  for (const p of parts) {
    for (const b of p.blocks) if (b.type === "tool-result") ids.push(b.toolCallId);
  }
  return ids;
}

/** Tool calls of the page's last assistant message that have no result in the page. */
function unanswered(parts: readonly Part[], results: Set<string>): TranscriptItem[] {
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i];
    if (p?.kind !== "message" || p.role === "toolResult") continue;
    if (p.role !== "assistant") return [];
    const items: TranscriptItem[] = [];
    const seen = new Set<string>();
    for (const b of p.blocks) {
      if (b.type !== "tool-call" || results.has(b.id) || seen.has(b.id)) continue;
      seen.add(b.id);
      items.push({
        kind: "tool",
        key: `t:${b.id}`,
        toolCallId: b.id,
        toolName: b.name,
        state: "running",
        isError: false,
        updates: 0,
      });
    }
    return items;
  }
  return [];
}

/**
 * The seam rules as a pure state machine. Call `beginRead` when an observe request is sent,
 * `applyPage` with its page and seam, `applyEvent` for every stream event in arrival order.
 * A returned `reread` action asks for a new page read now; `wantsRead` says the same.
 */
export class TranscriptState {
  #pageItems: TranscriptItem[] = [];
  #seam: Seam | null = null;
  /** The cut was not quiet: a reconcile marker stands until a quiet read (E2, E4). */
  #reconcile = false;
  #live = new Live(new Set(), false);
  /** Events applied after the seam, in sequence order from `fromSequence`. */
  #log: Arrived[] = [];
  /** Events not applied: before the first page, or past a hole (E3). */
  #held: Arrived[] = [];
  #hole: { reason: HoleReason; detail: string } | null = null;
  #readFailure: string | null = null;
  #arrivals = 0;
  #readStart = 0;
  #wantsRead = false;
  #version = 0;
  #cache: readonly TranscriptItem[] | null = null;

  /** The seam of the page in view; null before the first page. */
  get seam(): Seam | null {
    return this.#seam;
  }

  /** A read is needed: a hole is open, or a run settled after a cut that was not quiet. */
  get wantsRead(): boolean {
    return this.#wantsRead;
  }

  /** The last page read failed (its marker shows until a read succeeds). */
  get hasReadFailure(): boolean {
    return this.#readFailure !== null;
  }

  /** A run is visible (from the stream, or a cut that was not quiet). */
  get running(): boolean {
    return this.#live.running;
  }

  /** Events held back, not shown. */
  get held(): number {
    return this.#held.length;
  }

  /** Increases on every change of `items()`. */
  get version(): number {
    return this.#version;
  }

  /** Page parts, the reconcile marker, live items, then a hole or read-failure marker. */
  items(): readonly TranscriptItem[] {
    if (this.#cache) return this.#cache;
    const items = [...this.#pageItems];
    if (this.#reconcile) {
      items.push({
        kind: "seam",
        key: "s:reconcile",
        reason: "reconcile",
        detail:
          "the page was read while a run was active: a message near here may repeat or be missing",
      });
    }
    items.push(...this.#live.items);
    if (this.#hole) {
      const { reason, detail } = this.#hole;
      items.push({ kind: "seam", key: `s:${reason}`, reason, detail });
    }
    if (this.#readFailure !== null) {
      items.push({
        kind: "seam",
        key: "s:read-failed",
        reason: "read-failed",
        detail: this.#readFailure,
      });
    }
    this.#cache = items;
    return items;
  }

  /** An observe request is being sent: events arriving from now on may follow its page. */
  beginRead(): void {
    this.#readStart = this.#arrivals;
  }

  /** The page read failed; the view stays, with a marker, until a page arrives. */
  readFailed(message: string): void {
    this.#readFailure = message;
    this.#changed();
  }

  /**
   * Replaces the view with `page` and re-applies the events that may follow it: those of the
   * seam's epoch from `fromSequence` on, in sequence order. Events of another epoch that
   * arrived before the read began are older than the page and dropped; later ones may be
   * newer, so they are held and the page is read again.
   */
  applyPage(page: PageInput, seam: Seam): TranscriptAction[] {
    const candidates = [...this.#log, ...this.#held].sort((x, y) => x.at - y.at);
    const results = new Set(resultIds(page.parts));
    const carried = seam.quiet
      ? []
      : [...this.#live.inFlight(), ...unanswered(page.parts, results)].filter(
          (t, i, all) =>
            t.kind === "tool" &&
            !results.has(t.toolCallId) &&
            all.findIndex((u) => u.key === t.key) === i,
        );
    this.#seam = seam;
    this.#pageItems = page.parts.map((part) => ({
      kind: "part",
      key: `p:${part.id}`,
      source: "page",
      part,
    }));
    this.#reconcile = !seam.quiet;
    this.#live = new Live(results, !seam.quiet);
    this.#live.items.push(...carried);
    this.#log = [];
    this.#held = [];
    this.#hole = null;
    this.#readFailure = null;
    this.#wantsRead = false;

    const bySeq = new Map<number, Arrived[]>();
    const foreign: Arrived[] = [];
    for (const a of candidates) {
      if (a.ev.streamEpoch !== seam.streamEpoch) {
        if (a.at >= this.#readStart) foreign.push(a);
        continue;
      }
      if (a.ev.sequence < seam.fromSequence) continue;
      const versions = bySeq.get(a.ev.sequence);
      if (!versions) bySeq.set(a.ev.sequence, [a]);
      else if (!versions.some((v) => same(v.ev, a.ev))) versions.push(a);
    }
    const actions: TranscriptAction[] = [];
    let seq = seam.fromSequence;
    for (let versions = bySeq.get(seq); versions?.length === 1; versions = bySeq.get(++seq)) {
      const a = versions[0]!;
      bySeq.delete(seq);
      this.#log.push(a);
      if (this.#live.fold(a.ev) && this.#reconcile) actions.push(this.#want("run-settled"));
    }
    const rest = [...bySeq.values()].flat().sort((x, y) => x.at - y.at);
    this.#readStart = this.#arrivals;
    if (rest.length > 0) {
      const conflict = (bySeq.get(seq)?.length ?? 0) > 1;
      const reason = conflict ? "changed-repeat" : "gap";
      const detail = conflict
        ? `event ${seq} arrived twice with different content`
        : `events after ${seq - 1} are missing`;
      actions.push(this.#openHole(reason, detail, rest));
    }
    if (foreign.length > 0) {
      const detail = "events of another stream epoch arrived while the page was read";
      actions.push(this.#openHole("new-epoch", detail, foreign));
    }
    this.#changed();
    return actions;
  }

  /** Applies one stream event (E1–E5): applied, dropped as covered or repeated, or held. */
  applyEvent(ev: StreamEvent): TranscriptAction[] {
    const a: Arrived = { ev, at: this.#arrivals++ };
    const seam = this.#seam;
    if (seam === null || this.#hole) {
      this.#hold([a]);
      return [];
    }
    if (ev.streamEpoch !== seam.streamEpoch) {
      return [this.#openHole("new-epoch", `the stream moved to epoch ${ev.streamEpoch}`, [a])];
    }
    if (ev.sequence < seam.fromSequence) return [];
    const i = ev.sequence - seam.fromSequence;
    const prior = this.#log[i];
    if (prior) {
      if (same(prior.ev, ev)) return [];
      return [this.#openHole("changed-repeat", `event ${ev.sequence} arrived again, changed`, [a])];
    }
    if (i > this.#log.length) {
      const expected = seam.fromSequence + this.#log.length;
      return [this.#openHole("gap", `expected event ${expected}, got ${ev.sequence}`, [a])];
    }
    this.#log.push(a);
    const settled = this.#live.fold(ev);
    this.#changed();
    return settled && this.#reconcile ? [this.#want("run-settled")] : [];
  }

  #want(reason: TranscriptAction["reason"]): TranscriptAction {
    this.#wantsRead = true;
    return { type: "reread", reason };
  }

  #openHole(reason: HoleReason, detail: string, held: Arrived[]): TranscriptAction {
    this.#hole ??= { reason, detail };
    this.#hold(held);
    this.#changed();
    return this.#want(reason);
  }

  #hold(events: Arrived[]): void {
    this.#held.push(...events);
    if (this.#held.length > HELD_MAX) this.#held.splice(0, this.#held.length - HELD_MAX);
  }

  #changed(): void {
    this.#cache = null;
    this.#version++;
  }
}
