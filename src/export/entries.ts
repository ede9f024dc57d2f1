// The pages' parts as an export reads them, one part at a time: an entry's head when it starts
// (a part that continues an entry adds blocks to it), then its blocks. A string the reader cut
// into fragments is joined again when the whole is small enough to hold (at most JOIN_FRAGMENTS
// fragments, about a million characters); a longer one is handed over piece by piece, so no
// export ever holds more of one string than a fragment.
import type { Block, Part, PartMeta } from "../protocol/chat-01.ts";

/** An entry as an export shows it: its first part's head. */
export type EntryHead = {
  entry: string;
  kind: Part["kind"];
  role?: Part["role"];
  timestamp?: string;
  meta?: PartMeta;
};

/** Runs of at most this many fragments are joined (each is at most 262,144 characters). */
export const JOIN_FRAGMENTS = 4;

/** What a format writes for each event; each returns the text to append. */
export type EntryEvents = {
  entry(head: EntryHead): string;
  /** A whole block: never a fragment, its string joined when it came in a few. */
  block(block: Block, head: EntryHead): string;
  /** A long run starts: `block` holds its first piece; `count` fragments in all. */
  longStart(block: Block, head: EntryHead, count: number): string;
  longPiece(text: string): string;
  longEnd(): string;
};

type Run = {
  block: Block;
  head: EntryHead;
  next: number;
  count: number;
  /** Joined pieces of a short run; null for a long one, whose pieces went out as they came. */
  pieces: string[] | null;
};

/** Feeds parts in page order; `events` says what each one becomes. */
export class EntryStream {
  readonly #events: EntryEvents;
  #head: EntryHead | null = null;
  #run: Run | null = null;

  constructor(events: EntryEvents) {
    this.#events = events;
  }

  /** The text for one part. */
  part(part: Part): string {
    let out = "";
    if (!part.continues || this.#head?.entry !== part.entry) {
      out += this.#endRun();
      const head: EntryHead = { entry: part.entry, kind: part.kind };
      if (part.role !== undefined) head.role = part.role;
      if (part.timestamp !== undefined) head.timestamp = part.timestamp;
      if (part.meta !== undefined) head.meta = part.meta;
      this.#head = head;
      out += this.#events.entry(head);
    }
    const head = this.#head;
    if (head === null) return out;
    for (const block of part.blocks) out += this.#block(block, head);
    return out;
  }

  /** Whatever a run left open at the end of the pages (a cut-off export). */
  finish(): string {
    return this.#endRun();
  }

  /** Whether a long run is open (its pieces are being written). */
  get inLongRun(): boolean {
    return this.#run !== null && this.#run.pieces === null;
  }

  #block(block: Block, head: EntryHead): string {
    const f = "fragment" in block ? block.fragment : undefined;
    const run = this.#run;
    if (f !== undefined && run !== null && continuesRun(run, block, f)) {
      const piece = bodyOf(block);
      run.next++;
      let out = "";
      if (run.pieces === null) out = this.#events.longPiece(piece);
      else run.pieces.push(piece);
      if (run.next === run.count) out += this.#endRun();
      return out;
    }
    let out = this.#endRun();
    const whole = withoutFragment(block);
    if (f === undefined || f.index !== 0 || f.count < 2) {
      // Whole, or a fragment out of its run (the reader never makes one): shown as it is.
      return out + this.#events.block(whole, head);
    }
    if (f.count <= JOIN_FRAGMENTS) {
      this.#run = { block: whole, head, next: 1, count: f.count, pieces: [bodyOf(block)] };
      return out;
    }
    this.#run = { block: whole, head, next: 1, count: f.count, pieces: null };
    out += this.#events.longStart(whole, head, f.count);
    return out;
  }

  #endRun(): string {
    const run = this.#run;
    if (run === null) return "";
    this.#run = null;
    if (run.pieces === null) return this.#events.longEnd();
    return this.#events.block(withBody(run.block, run.pieces.join("")), run.head);
  }
}

function continuesRun(run: Run, block: Block, f: { index: number; count: number }): boolean {
  return f.index === run.next && f.count === run.count && block.type === run.block.type;
}

/** The block's long string: an image's base64, any other block's text. */
export function bodyOf(block: Block): string {
  if (block.type === "image") return block.data;
  return "text" in block ? block.text : "";
}

function withBody(block: Block, body: string): Block {
  if (block.type === "image") return { ...block, data: body };
  if ("text" in block) return { ...block, text: body } as Block;
  return block;
}

/** A copy without `fragment`. */
function withoutFragment(block: Block): Block {
  const { fragment: _, ...rest } = block as Block & { fragment?: unknown };
  return { ...rest } as Block;
}
