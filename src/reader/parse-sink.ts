// Parsing a snapshot as its bytes stream past: the reader reads a file in steps and keeps none
// of it (snapshot.ts), so the parser is fed each step's whole lines as they are read. One sink
// per read attempt; an attempt that turns out not to be a state of the file is thrown away with
// its sink. The same two sinks serve every harness: a harness says only how its head is read and
// how its lines are scanned (SessionFormat), so every harness's snapshots are made, verified and
// paged by one mechanism.
import type { Scanner, ScanState, SessionHead } from "./entries.ts";
import type { LineSink } from "./file-pass.ts";
import { isRefusal, type Refusal } from "./refusal.ts";
import {
  beginExtension,
  type Extension,
  finishExtension,
  indexScan,
  type ParsedSession,
  type RowFormat,
} from "./tree.ts";

/** How a harness parses one file from its first byte (harness.ts `format`). */
export type SessionFormat<H extends SessionHead = SessionHead, S extends ScanState = ScanState> = {
  /**
   * The session's head from the file's first whole lines (`first`, from byte 0; empty when the
   * snapshot has none, `incomplete` when bytes followed). Refuses what the file is not.
   */
  head(first: Buffer, incomplete: boolean): H;
  scanner: Scanner<H, S>;
  rows: RowFormat;
};

const EMPTY = Buffer.alloc(0);

/**
 * A sink that parses a file from its first byte. A refusal (a head refused, or a first record's
 * cwd outside the project) is kept until the read is known to be a state of the file, then
 * thrown by `finish`: a refusal read from a torn mix of versions must not stand.
 */
export class FreshParse<H extends SessionHead = SessionHead, S extends ScanState = ScanState>
  implements LineSink
{
  readonly #format: SessionFormat<H, S>;
  #head: H | null = null;
  #scan: S | null = null;
  #refusal: Refusal | null = null;

  constructor(format: SessionFormat<H, S>) {
    this.#format = format;
  }

  lines(lines: Buffer, base: number): void {
    if (this.#refusal) return;
    try {
      if (!this.#head) {
        // The first lines of the file (base 0): a header is line 1, whole.
        this.#head = this.#format.head(lines, false);
        this.#scan = this.#format.scanner.first(lines, this.#head);
      }
      if (this.#scan) this.#format.scanner.lines(lines, this.#head, this.#scan, base);
    } catch (e) {
      if (!isRefusal(e)) throw e;
      this.#refusal = e;
    }
  }

  /** The parse; refuses what the head check refused (for Pi, incomplete-header when no line came). */
  finish(incomplete: boolean): ParsedSession {
    if (this.#refusal) throw this.#refusal;
    const { scanner, rows } = this.#format;
    const head = this.#head ?? this.#format.head(EMPTY, incomplete);
    const scan = this.#scan ?? scanner.first(EMPTY, head);
    return indexScan(head, scanner, rows, scan);
  }
}

/** A sink that continues the parse of a snapshot with the lines appended after it. */
export class ExtendedParse implements LineSink {
  readonly #prev: ParsedSession;
  #ext: Extension | null = null;
  #refusal: Refusal | null = null;

  constructor(prev: ParsedSession) {
    this.#prev = prev;
  }

  lines(lines: Buffer, base: number): void {
    if (this.#refusal) return;
    this.#ext ??= beginExtension(this.#prev);
    try {
      // A harness may check what appended lines bring (Claude: the first record's cwd).
      this.#prev.scanner.lines(lines, this.#prev.header, this.#ext.scan, base);
    } catch (e) {
      if (!isRefusal(e)) throw e;
      this.#refusal = e;
    }
  }

  finish(): ParsedSession {
    if (this.#refusal) throw this.#refusal;
    this.#ext ??= beginExtension(this.#prev);
    return finishExtension(this.#prev, this.#ext);
  }
}

/** A whole snapshot's lines (`buf`, from byte 0, whole lines) parsed as one step. */
export function parseWhole(format: SessionFormat, buf: Buffer, incomplete: boolean): ParsedSession {
  const sink = new FreshParse(format);
  if (buf.length > 0) sink.lines(buf, 0);
  return sink.finish(incomplete);
}
