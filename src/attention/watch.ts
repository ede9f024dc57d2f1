// Watching every running controller for attention (issue 27): the registry says which
// controllers live; for each, one observer connection (an observe-only grant: watching must
// never be able to act) feeds states.ts's fold, and a probe at connect (`observe`'s seam and
// page) says whether a run is in progress and when the last reply ended. The board's inbox and
// `conversation inbox` both use this, so they list the same thing.
//
// A controller whose connection closes is looked up again: when its registry entry still
// exists but its process is gone, it died (failed, kept in the list with the reason); when
// the entry is gone, it stopped cleanly (removed from the list). Another listing that swept a
// dead entry first makes a death look like a stop: documented in docs/attention.md.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ConversationClient } from "../control/client/client.ts";
import {
  isLive,
  type Listing,
  listControllers,
  type RegistryEntry,
} from "../control/registry/registry.ts";
import {
  type Attention,
  attentionOf,
  byOldestWait,
  DEFAULT_STALL_MS,
  type DialogInput,
  needsYou,
  nextChangeAt,
  type Observed,
  observed,
  onDialog,
  onEvent,
  onGone,
  onProbe,
  onState,
  type ProbeInput,
} from "./states.ts";

export type WatchOptions = {
  registryDir: string;
  /** The observe-only grant the connections name. */
  grant: string;
  stallMs?: number;
  /** How often the registry is listed for controllers that started. Default 2 s. */
  scanMs?: number;
  log?(line: string): void;
  /** The clock; tests pass their own. */
  now?(): number;
};

/** One controlled conversation as the inbox shows it. */
export type InboxRow = {
  conversation: string;
  project: string;
  seat: string;
  sessionFile: string;
  /** The grant `attach` should steer with: "operator" when the controller has it. */
  steerGrant: string;
  attention: Attention;
};

export type Snapshot = { at: number; rows: InboxRow[] };

type Seat = {
  entry: RegistryEntry;
  client: ConversationClient | null;
  observed: Observed;
  last: string;
};

/** Watches the registry and every live controller in it; `rows` is the current picture. */
export class AttentionWatch {
  readonly #o: Required<Omit<WatchOptions, "log" | "now">> & {
    log(line: string): void;
    now(): number;
  };
  readonly #seats = new Map<string, Seat>();
  readonly #listeners = new Set<(changed: InboxRow) => void>();
  #scanTimer: NodeJS.Timeout | null = null;
  #stallTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(options: WatchOptions) {
    this.#o = {
      registryDir: options.registryDir,
      grant: options.grant,
      stallMs: options.stallMs ?? DEFAULT_STALL_MS,
      scanMs: options.scanMs ?? 2000,
      log: options.log ?? (() => {}),
      now: options.now ?? Date.now,
    };
  }

  /** Lists the registry now and every scanMs after; resolves once every probe answered. */
  async start(): Promise<void> {
    await this.scan();
    this.#scanTimer = setInterval(() => {
      this.scan().catch((e: unknown) => this.#o.log(`attention: scan failed: ${describe(e)}`));
    }, this.#o.scanMs);
    this.#scanTimer.unref();
  }

  /** Every conversation watched, in the inbox's order (oldest wait first). */
  rows(): InboxRow[] {
    const now = this.#o.now();
    return [...this.#seats.values()]
      .map((s) => this.#row(s, now))
      .map((row) => ({ row, attention: row.attention, key: row.conversation }))
      .sort(byOldestWait)
      .map((x) => x.row);
  }

  /** The rows a person is needed for. */
  inbox(): InboxRow[] {
    return this.rows().filter((r) => needsYou(r.attention.state));
  }

  /** Called with a conversation's row each time its state (or reason) changes. */
  onChange(fn: (row: InboxRow) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#scanTimer) clearInterval(this.#scanTimer);
    if (this.#stallTimer) clearTimeout(this.#stallTimer);
    const clients = [...this.#seats.values()].map((s) => s.client);
    this.#seats.clear();
    await Promise.all(clients.map((c) => c?.close()));
  }

  /** Lists the registry: connects to controllers not yet watched. */
  async scan(): Promise<void> {
    if (this.#closed) return;
    let listing: Listing;
    try {
      listing = listControllers(this.#o.registryDir);
    } catch (e) {
      this.#o.log(`attention: the controller registry cannot be read: ${describe(e)}`);
      return;
    }
    const opened: Promise<void>[] = [];
    for (const entry of listing.live) {
      const seat = this.#seats.get(entry.conversation);
      // A new controller of a conversation (after a death, or a restart) starts afresh.
      if (seat !== undefined && seat.entry.pid === entry.pid && seat.observed.gone === null) {
        continue;
      }
      opened.push(this.#open(entry, seat));
    }
    await Promise.all(opened);
  }

  async #open(entry: RegistryEntry, previous: Seat | undefined): Promise<void> {
    await previous?.client?.close();
    const now = this.#o.now();
    const seat: Seat = { entry, client: null, observed: observed(now), last: "" };
    this.#seats.set(entry.conversation, seat);
    if (!entry.grants.includes(this.#o.grant)) {
      seat.observed = onGone(
        seat.observed,
        `the controller has no observe-only grant "${this.#o.grant}" to watch it with`,
        now,
      );
      this.#changed(seat);
      return;
    }
    const client = new ConversationClient({
      socketPath: entry.socket,
      grant: this.#o.grant,
      clientName: "attention",
    });
    seat.client = client;
    const fold = (f: (o: Observed, at: number) => Observed) => {
      if (this.#seats.get(entry.conversation) !== seat) return;
      seat.observed = f(seat.observed, this.#o.now());
      this.#changed(seat);
    };
    client.onEvent((m) => fold((o, at) => onEvent(o, m.event, at)));
    client.onDialog((d) => fold((o, at) => onDialog(o, d as DialogInput, at)));
    client.onState((s) => fold((o, at) => onState(o, s, at)));
    client.onClose(() => fold((o, at) => this.#closedAt(o, entry, at)));
    try {
      const welcome = await client.connect();
      fold((o, at) => onState(o, welcome.state, at));
      const probe = await client.observe({ limit: 1 });
      if (probe.outcome === "admitted") {
        const page = probe.result.page as { parts?: ProbeInput["parts"] } | undefined;
        const parts = Array.isArray(page?.parts) ? page.parts : [];
        fold((o, at) => onProbe(o, { quiet: probe.seam.quiet, parts }, at));
      } else {
        this.#o.log(`attention: ${entry.conversation}: observe: ${probe.outcome}`);
      }
    } catch (e) {
      fold((o, at) => this.#closedAt(o, entry, at, describe(e)));
    }
  }

  /** The connection ended: died (its entry outlived it) or stopped (its entry is gone). */
  #closedAt(o: Observed, entry: RegistryEntry, at: number, detail?: string): Observed {
    if (this.#closed) return o;
    const file = join(
      this.#o.registryDir,
      `${entry.conversation}.${entry.pid}.${entry.pidStart}.json`,
    );
    if (!existsSync(file)) {
      // A clean stop removes its own entry: nothing needs anyone.
      queueMicrotask(() => {
        const seat = this.#seats.get(entry.conversation);
        if (seat?.entry === entry) this.#seats.delete(entry.conversation);
      });
      return o;
    }
    const why = isLive(entry)
      ? `the controller's connection failed${detail === undefined ? "" : `: ${detail}`}`
      : "the controller died (its process is gone)";
    return onGone(o, why, at);
  }

  #row(seat: Seat, now: number): InboxRow {
    const e = seat.entry;
    return {
      conversation: e.conversation,
      project: e.project,
      seat: e.seat,
      sessionFile: e.sessionFile,
      steerGrant: e.grants.includes("operator") ? "operator" : (e.grants[0] ?? "operator"),
      attention: attentionOf(seat.observed, now, this.#o.stallMs),
    };
  }

  /** Tells the listeners when a seat's state changed, and arms the stall timer. */
  #changed(seat: Seat): void {
    const row = this.#row(seat, this.#o.now());
    const key = `${row.attention.state} ${row.attention.since} ${row.attention.reason}`;
    if (key !== seat.last) {
      seat.last = key;
      for (const fn of this.#listeners) fn(row);
    }
    this.#armStall();
  }

  /** One timer for the next run to turn stalled, so a silent run is noticed on time. */
  #armStall(): void {
    if (this.#stallTimer) clearTimeout(this.#stallTimer);
    this.#stallTimer = null;
    if (this.#closed) return;
    const now = this.#o.now();
    let next = Number.POSITIVE_INFINITY;
    for (const s of this.#seats.values()) {
      const at = nextChangeAt(s.observed, this.#o.stallMs);
      // A run already stalled changes only with an input: no timer for it.
      if (at !== null && at > now && at < next) next = at;
    }
    if (!Number.isFinite(next)) return;
    const delay = next - now + 5;
    this.#stallTimer = setTimeout(() => {
      this.#stallTimer = null;
      for (const s of this.#seats.values()) this.#changed(s);
    }, delay);
    this.#stallTimer.unref();
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
