// Watching a controlled run (issue 15 item 1, issue 22 item 9): when the registry of `serve
// --state-dir` names a running controller for a followed conversation, the live streams also
// relay that controller's `event`, `state` and `dialog` messages. The board holds one
// connection per conversation for all its streams, with an observe-only grant: a stream needs
// no login, so what it opens must never be able to act, and a flood of streams must not become
// a flood of controller connections. Steering is control-route.ts, one connection per login.
//
// Resume (issue 16): a reconnecting EventSource sends the last `id:` it saw. The connection is
// opened with the first stream's resume point, so the controller replays what that browser
// missed; a stream that joins an open connection is replayed from the events the board kept
// (the last KEPT_EVENTS). When neither can (another epoch, older than kept), the stream says so
// with a `seam` event and goes on live, as a fresh stream would.
import { ConversationClient } from "../control/client/client.ts";
import type {
  ControllerState,
  ReplayReason,
  ResumePoint,
  StreamEvent,
  Welcome,
} from "../control/protocol.ts";
import { findController } from "../control/registry/registry.ts";

/** The grant a logged-in action's connection uses unless configured: `conversation control`'s. */
export const DEFAULT_GRANT = "operator";
/** The observe-only grant streams watch with unless configured: `conversation control`'s. */
export const DEFAULT_OBSERVE_GRANT = "observer";

/** Events kept per conversation for streams that join or rejoin an open connection. */
const KEPT_EVENTS = 4096;
const KEPT_BYTES = 4 * 1024 * 1024;

export type RelayEvent = "event" | "state" | "dialog" | "controller" | "seam";

/** One stream's end of a watch: writes one SSE event; `id` is the controller's event id. */
export type Watcher = { send(event: RelayEvent, id: string | null, data: string): void };

export type WatchOptions = {
  registryDir: string;
  /** The observe-only grant; DEFAULT_OBSERVE_GRANT unless configured. */
  grant: string;
  log(line: string): void;
};

type Logged = { n: number; id: string; data: string; epoch: string; sequence: number };

type Seat = {
  /** The one watcher whose resume point the hello carried. */
  opener: boolean;
  resume: ResumePoint | null;
  greeted: boolean;
  /** The last logged event (its `n`) this watcher has been sent. */
  afterN: number;
};

/** The board's connections to running controllers, one per watched conversation. */
export class ControllerWatches {
  readonly #options: WatchOptions;
  readonly #watches = new Map<string, Watch>();

  constructor(options: WatchOptions) {
    this.#options = options;
  }

  /** Controller connections open or being opened now. */
  get connections(): number {
    return this.#watches.size;
  }

  /**
   * Relays the controller serving `conversation` to `watcher`, if the registry names a live
   * one (else nothing is sent: the stream is a plain follow). Returns the detach function.
   */
  watch(conversation: string, watcher: Watcher, resume: ResumePoint | null): () => void {
    let watch = this.#watches.get(conversation);
    if (watch === undefined) {
      const socket = this.#socketFor(conversation, watcher);
      if (socket === null) return () => {};
      const made = new Watch(socket, resume, this.#options, () => {
        if (this.#watches.get(conversation) === made) this.#watches.delete(conversation);
      });
      watch = made;
      this.#watches.set(conversation, made);
      made.add(watcher, resume, true);
      made.open();
    } else {
      watch.add(watcher, resume, false);
    }
    const held = watch;
    return () => held.remove(watcher);
  }

  async close(): Promise<void> {
    const all = [...this.#watches.values()];
    this.#watches.clear();
    await Promise.all(all.map((w) => w.close()));
  }

  /** The socket of the controller serving `conversation`, or null (the watcher told why). */
  #socketFor(conversation: string, watcher: Watcher): string | null {
    let entry: ReturnType<typeof findController>;
    try {
      entry = findController(this.#options.registryDir, conversation);
    } catch (e) {
      // An unreadable registry knows of no controller: the stream still follows the file.
      this.#options.log(`board: live: the controller registry cannot be read: ${describe(e)}`);
      return null;
    }
    if (entry === null) return null;
    const { grant } = this.#options;
    if (!entry.grants.includes(grant)) {
      watcher.send(
        "controller",
        null,
        notRunning(
          `The controller has no grant "${grant}", which the board watches with (its grants: ${entry.grants.join(", ") || "none"}): start it with an observe-only grant of that id (\`conversation control\` has one, "observer", unless --grants says otherwise).`,
        ),
      );
      return null;
    }
    return entry.socket;
  }
}

/** One observer connection to one controller, shared by every stream of its conversation. */
class Watch {
  readonly #client: ConversationClient;
  readonly #log: (line: string) => void;
  readonly #gone: () => void;
  readonly #seats = new Map<Watcher, Seat>();
  #phase: "connecting" | "replaying" | "open" | "closed" = "connecting";
  #welcome: Welcome | null = null;
  #state: ControllerState | null = null;
  /**
   * The approvals open now, as last pushed: a stream that joins later (or is greeted after the
   * controller sent them, right behind its welcome) is sent each, as the controller sends them
   * to a connection welcomed while they are open.
   */
  readonly #openApprovals = new Map<string, string>();
  readonly #events: Logged[] = [];
  #bytes = 0;
  #nextN = 1;
  /** Where the live stream stands: the last event received, or the welcome's start. */
  #head: { epoch: string; sequence: number } | null = null;
  /** The last replayed event the opener's hello asked for, while it is still to come. */
  #replayEnd: { epoch: string; sequence: number } | null = null;
  readonly #offs: (() => void)[] = [];

  /** `resume`: the opener's, which the hello carries. */
  constructor(socket: string, resume: ResumePoint | null, options: WatchOptions, gone: () => void) {
    this.#log = options.log;
    this.#gone = gone;
    this.#client = new ConversationClient({
      socketPath: socket,
      grant: options.grant,
      clientName: "board-observer",
      ...(resume === null ? {} : { resume }),
    });
  }

  add(watcher: Watcher, resume: ResumePoint | null, opener: boolean): void {
    this.#seats.set(watcher, { opener, resume, greeted: false, afterN: 0 });
    if (this.#phase === "open") this.#greet(watcher);
  }

  remove(watcher: Watcher): void {
    this.#seats.delete(watcher);
    if (this.#seats.size > 0 || this.#phase === "closed") return;
    this.close().catch((e: unknown) => {
      this.#log(`board: live: closing an observer failed: ${describe(e)}`);
    });
  }

  async close(): Promise<void> {
    this.#phase = "closed";
    this.#gone();
    for (const off of this.#offs) off();
    await this.#client.close();
  }

  /** Connects; every watcher is told the outcome. */
  open(): void {
    const client = this.#client;
    this.#offs.push(
      client.onEvent((m) => this.#onEvent(m)),
      client.onState((state) => {
        this.#state = state;
        this.#toGreeted("state", null, JSON.stringify({ type: "state", state }));
      }),
      client.onDialog((m) => {
        const data = JSON.stringify(m);
        // The controller's budget dialog waits on a person as an approval does: a page opened
        // after it opened must see it to raise or stop.
        const answerable = m.method === "approval" || m.method === "budget";
        if (answerable && m.state === "open") this.#openApprovals.set(m.id, data);
        else this.#openApprovals.delete(m.id);
        this.#toGreeted("dialog", null, data);
      }),
      client.onClose(() => this.#end("The controller's connection closed.")),
    );
    client.connect().then(
      (welcome) => this.#welcomed(welcome),
      (e: unknown) => this.#end(`The controller could not be reached: ${describe(e)}`),
    );
  }

  #welcomed(welcome: Welcome): void {
    if (this.#phase === "closed") return;
    this.#welcome = welcome;
    this.#state = welcome.state;
    // Live events may have come in before this continuation ran (replayed ones have lower
    // sequences than the welcome's start): the head is the latest of them.
    const start = welcome.stream;
    this.#head =
      start === undefined ? null : { epoch: start.streamEpoch, sequence: start.nextSequence - 1 };
    for (const e of this.#events) {
      const head = this.#head;
      if (head === null || (e.epoch === head.epoch && e.sequence > head.sequence)) {
        this.#head = { epoch: e.epoch, sequence: e.sequence };
      }
    }
    const replay = welcome.replay;
    if (typeof replay === "object" && replay.toSequence >= replay.fromSequence) {
      const end = { epoch: replay.streamEpoch, sequence: replay.toSequence };
      if (!this.#events.some((e) => e.epoch === end.epoch && e.sequence >= end.sequence)) {
        this.#replayEnd = end;
      }
    }
    this.#phase = this.#replayEnd === null ? "open" : "replaying";
    // The opener first: the replay is its. The others wait until the replay is over, so a
    // stream that did not ask for it is not sent old events as if they were new.
    for (const [watcher, seat] of this.#seats) {
      if (seat.opener || this.#phase === "open") this.#greet(watcher);
    }
  }

  #onEvent(m: StreamEvent): void {
    if (this.#phase === "closed") return;
    const data = JSON.stringify(m);
    const logged = { n: this.#nextN++, id: m.id, data, epoch: m.streamEpoch, sequence: m.sequence };
    this.#events.push(logged);
    this.#bytes += data.length;
    while (this.#events.length > KEPT_EVENTS || this.#bytes > KEPT_BYTES) {
      this.#bytes -= this.#events.shift()?.data.length ?? 0;
    }
    const end = this.#replayEnd;
    const isReplay = end !== null && m.streamEpoch === end.epoch && m.sequence <= end.sequence;
    if (this.#welcome !== null && !isReplay) {
      this.#head = { epoch: m.streamEpoch, sequence: m.sequence };
    }
    for (const [watcher, seat] of this.#seats) {
      if (!seat.greeted || seat.afterN >= logged.n) continue;
      seat.afterN = logged.n;
      watcher.send("event", m.id, data);
    }
    if (end !== null && m.streamEpoch === end.epoch && m.sequence >= end.sequence) {
      this.#replayEnd = null;
      this.#phase = "open";
      for (const [watcher, seat] of this.#seats) if (!seat.greeted) this.#greet(watcher);
    }
  }

  /** Who and what first, then any seam, then the kept events this watcher has not seen. */
  #greet(watcher: Watcher): void {
    const seat = this.#seats.get(watcher);
    const welcome = this.#welcome;
    if (seat === undefined || welcome === null || seat.greeted) return;
    seat.greeted = true;
    const who = { running: true, connection: welcome.connection, role: welcome.role };
    watcher.send("controller", null, JSON.stringify(who));
    watcher.send("state", null, JSON.stringify({ type: "state", state: this.#state }));
    for (const data of this.#openApprovals.values()) watcher.send("dialog", null, data);
    const from = this.#startOf(seat, welcome);
    if (from.seam !== null) watcher.send("seam", null, JSON.stringify(from.seam));
    seat.afterN = from.afterN;
    for (const e of this.#events) {
      if (e.n <= seat.afterN) continue;
      seat.afterN = e.n;
      watcher.send("event", e.id, e.data);
    }
  }

  /** Where a watcher's events start (after which logged event), and the seam to send first. */
  #startOf(
    seat: Seat,
    welcome: Welcome,
  ): {
    afterN: number;
    seam: { replay: "unavailable"; reason: ReplayReason | null; message: string } | null;
  } {
    const live = this.#nextN - 1;
    const first = this.#events[0];
    if (seat.opener) {
      // Everything this connection received is what its hello asked for: the replay, then live.
      if (seat.resume !== null && welcome.replay === "unavailable") {
        const message =
          welcome.replayMessage ??
          "The controller no longer keeps the events missed while disconnected.";
        const seam = {
          replay: "unavailable" as const,
          reason: welcome.replayReason ?? null,
          message,
        };
        return { afterN: 0, seam };
      }
      if (first !== undefined && first.n > 1) {
        return { afterN: live, seam: gap("older-than-kept") };
      }
      return { afterN: 0, seam: null };
    }
    const r = seat.resume;
    if (r === null) return { afterN: live, seam: null };
    const at = this.#events.find(
      (e) => e.epoch === r.streamEpoch && e.sequence === r.afterSequence,
    );
    if (at !== undefined) return { afterN: at.n, seam: null };
    if (
      first !== undefined &&
      first.epoch === r.streamEpoch &&
      first.sequence === r.afterSequence + 1
    ) {
      return { afterN: first.n - 1, seam: null };
    }
    const head = this.#head;
    if (head !== null && head.epoch === r.streamEpoch && head.sequence === r.afterSequence) {
      return { afterN: live, seam: null };
    }
    let reason: ReplayReason = "older-than-kept";
    if (head === null || head.epoch !== r.streamEpoch) reason = "another-epoch";
    else if (r.afterSequence > head.sequence) reason = "ahead-of-stream";
    return { afterN: live, seam: gap(reason) };
  }

  #toGreeted(event: RelayEvent, id: string | null, data: string): void {
    for (const [watcher, seat] of this.#seats) if (seat.greeted) watcher.send(event, id, data);
  }

  /** The connection is over (closed, or never made): every watcher is told, and it is gone. */
  #end(message: string): void {
    if (this.#phase === "closed") return;
    this.#phase = "closed";
    this.#gone();
    for (const off of this.#offs) off();
    for (const watcher of this.#seats.keys()) watcher.send("controller", null, notRunning(message));
    this.#seats.clear();
    this.#client.close().catch(() => {
      // Closing a connection that failed or already closed: nothing is left to release.
    });
  }
}

function gap(reason: ReplayReason) {
  return {
    replay: "unavailable" as const,
    reason,
    message: "The board no longer keeps the events missed while this page was disconnected.",
  };
}

function notRunning(message: string): string {
  return JSON.stringify({ running: false, message });
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
