// Transcript: a reader page plus the live stream, joined by the seam rules (seed: The seam).
// The rules live in TranscriptState (transcript-state.ts); this wires it to a client and reads
// the page on every welcome.
import type { Part } from "../../protocol/chat-01.ts";
import type { ControllerState, StreamEvent, Welcome } from "../protocol.ts";
import type { ObserveOutcome, Seam } from "./outcomes.ts";
import { type TranscriptItem, TranscriptState } from "./transcript-state.ts";

export {
  type PageInput,
  type SeamReason,
  type TranscriptAction,
  type TranscriptItem,
  TranscriptState,
} from "./transcript-state.ts";

/** What Transcript needs of a client; ConversationClient fits. */
export type TranscriptClient = {
  observe(options?: { cursor?: string }): Promise<ObserveOutcome>;
  onEvent(fn: (event: StreamEvent) => void): () => void;
  /** Called on each welcome and state change; a new `welcome` object means a (re)connect.
   * A client without `welcome` has the page read on every call. */
  onState?(fn: (state: ControllerState) => void): () => void;
  readonly welcome?: Welcome | null;
  readonly connected?: boolean;
};

export type TranscriptOptions = {
  client: TranscriptClient;
  /** Cursor pages followed per read before giving up (100 parts each). Default 1000. */
  maxPages?: number;
};

/** Reads in a row that the state asks for before the view gives up until a welcome or reread. */
const MAX_CHAINED_READS = 10;

/**
 * The page plus the live stream for one client: reads the page (following its cursors) on
 * every welcome, and again whenever the seam rules ask. `items()` is the render model.
 */
export class Transcript {
  readonly #client: TranscriptClient;
  readonly #state = new TranscriptState();
  readonly #maxPages: number;
  readonly #changeFns = new Set<() => void>();
  readonly #detach: (() => void)[] = [];
  #welcome: Welcome | null | undefined = null;
  #reading = false;
  /** A welcome or reread came while reading: read once more. */
  #again = false;
  /** Settles when the reads in flight are done. */
  #idle: Promise<void> = Promise.resolve();
  #closed = false;
  #shown = -1;

  constructor(options: TranscriptOptions) {
    this.#client = options.client;
    this.#maxPages = options.maxPages ?? 1000;
    this.#detach.push(this.#client.onEvent((ev) => this.#onEvent(ev)));
    if (this.#client.onState) this.#detach.push(this.#client.onState(() => this.#onState()));
    if (this.#client.connected === true) this.#onState();
  }

  items(): readonly TranscriptItem[] {
    return this.#state.items();
  }

  /** The pure state behind the view (seam, running, held). */
  get state(): TranscriptState {
    return this.#state;
  }

  /** True while a page read is in flight. */
  get reading(): boolean {
    return this.#reading;
  }

  /** Called after every change of `items()`. Returns the detach function. */
  onChange(fn: () => void): () => void {
    this.#changeFns.add(fn);
    return () => {
      this.#changeFns.delete(fn);
    };
  }

  /** Reads the page again now (the terminal's Ctrl-O). Resolves once no read is in flight. */
  async reread(): Promise<void> {
    await this.#read();
  }

  /** Detaches from the client; a read in flight is discarded. */
  close(): void {
    this.#closed = true;
    for (const d of this.#detach.splice(0)) d();
  }

  #onState(): void {
    const welcome = this.#client.welcome;
    if (welcome !== undefined && welcome === this.#welcome) return;
    this.#welcome = welcome;
    if (this.#replayCovers(welcome)) return;
    void this.#read();
  }

  /**
   * A reconnect whose welcome replays the events after the last one seen, in the epoch of the
   * page in view, leaves no seam: the replayed events continue the stream where it broke, so
   * the page is not read again. A view with no page yet, a failed read or a hole still reads.
   */
  #replayCovers(welcome: Welcome | null | undefined): boolean {
    const replay = welcome?.replay;
    if (replay === undefined || replay === "unavailable") return false;
    const seam = this.#state.seam;
    return (
      seam !== null &&
      !this.#reading &&
      !this.#state.wantsRead &&
      !this.#state.hasReadFailure &&
      seam.streamEpoch === replay.streamEpoch
    );
  }

  #onEvent(ev: StreamEvent): void {
    const actions = this.#state.applyEvent(ev);
    this.#notify();
    // A read in flight re-applies every event from its seam on, so it answers these too.
    if (actions.length > 0 && !this.#reading) void this.#read();
  }

  #read(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return this.#idle;
    }
    this.#idle = this.#readLoop();
    return this.#idle;
  }

  async #readLoop(): Promise<void> {
    this.#reading = true;
    try {
      let chained = 0;
      for (;;) {
        this.#again = false;
        this.#state.beginRead();
        const read = await this.#readPages();
        if (this.#closed) return;
        if (typeof read === "string") this.#state.readFailed(read);
        else this.#state.applyPage({ parts: read.parts }, read.seam);
        this.#notify();
        if (this.#again) continue;
        if (typeof read === "string" || !this.#state.wantsRead) return;
        if (++chained >= MAX_CHAINED_READS) {
          this.#state.readFailed(`the page and the stream disagreed ${chained} reads in a row`);
          this.#notify();
          return;
        }
      }
    } finally {
      this.#reading = false;
    }
  }

  /** The whole branch: the first page's seam, and its parts plus every cursor page's. */
  async #readPages(): Promise<{ parts: Part[]; seam: Seam } | string> {
    try {
      const first = await this.#client.observe();
      if (first.outcome !== "admitted") return failure(first);
      let page = readPage(first.result);
      if (typeof page === "string") return page;
      const parts = [...page.parts];
      for (let n = 1; page.nextCursor !== null; n++) {
        if (n >= this.#maxPages) return `the branch has more than ${this.#maxPages} pages`;
        const next = await this.#client.observe({ cursor: page.nextCursor });
        if (next.outcome !== "admitted") return failure(next);
        page = readPage(next.result);
        if (typeof page === "string") return page;
        parts.push(...page.parts);
      }
      return { parts, seam: first.seam };
    } catch (e) {
      // ConversationClient never rejects; another client might. The marker says why.
      return `the page read failed: ${e instanceof Error ? e.message : String(e)}`;
    }
  }

  #notify(): void {
    const v = this.#state.version;
    if (v === this.#shown) return;
    this.#shown = v;
    for (const fn of [...this.#changeFns]) fn();
  }
}

function failure(o: Exclude<ObserveOutcome, { outcome: "admitted" }>): string {
  return o.outcome === "unknown"
    ? `outcome unknown, check the transcript: ${o.message}`
    : `not admitted: ${o.refusal}: ${o.message}`;
}

/** The page of an observe result: checked as far as the view relies on it. */
function readPage(
  result: Record<string, unknown>,
): { parts: Part[]; nextCursor: string | null } | string {
  const page = result.page;
  if (typeof page !== "object" || page === null) return "observe's result has no page";
  const { parts, nextCursor } = page as Record<string, unknown>;
  if (!Array.isArray(parts)) return "the page has no parts";
  if (nextCursor !== null && typeof nextCursor !== "string") return "the page's nextCursor is bad";
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
  for (const p of parts as unknown[]) {
    const ok =
      isObj(p) &&
      typeof p.id === "string" &&
      typeof p.kind === "string" &&
      Array.isArray(p.blocks) &&
      (p.blocks as unknown[]).every((b) => isObj(b) && typeof b.type === "string");
    if (!ok) return "a page part is malformed";
  }
  // Checked above: ids, kinds and typed blocks; the renderer treats block fields as untrusted.
  return { parts: parts as Part[], nextCursor: nextCursor === null ? null : nextCursor };
}
