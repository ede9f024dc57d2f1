// Parsing a snapshot as its bytes stream past: the reader reads a file in steps and keeps none
// of it (snapshot.ts), so the parser is fed each step's whole lines as they are read. One sink
// per read attempt; an attempt that turns out not to be a state of the file is thrown away with
// its sink.
import type { LineSink } from "./file-pass.ts";
import { firstScan, type Header, parseHeader, type ScanState, scanLines } from "./pi.ts";
import { isRefusal, type Refusal } from "./refusal.ts";
import type { PiRoot } from "./sources.ts";
import {
  beginExtension,
  type Extension,
  finishExtension,
  indexScan,
  type ParsedSession,
} from "./tree.ts";

/** A sink that parses a file from its first byte. */
export class FreshParse implements LineSink {
  readonly #root: Pick<PiRoot, "projectRoot" | "store">;
  #header: Header | null = null;
  #scan: ScanState | null = null;
  /** A header refused: kept until the read is known to be a state, then thrown. */
  #refusal: Refusal | null = null;

  constructor(root: Pick<PiRoot, "projectRoot" | "store">) {
    this.#root = root;
  }

  lines(lines: Buffer, base: number): void {
    if (this.#refusal) return;
    if (!this.#header) {
      try {
        // The first lines of the file (base 0): the header is line 1, whole.
        this.#header = parseHeader(lines, false, this.#root);
      } catch (e) {
        if (!isRefusal(e)) throw e;
        this.#refusal = e;
        return;
      }
      this.#scan = firstScan(lines);
    }
    if (this.#scan) scanLines(lines, this.#header, this.#scan, base);
  }

  /** The parse; refuses what the header check refused (incomplete-header when no line came). */
  finish(incomplete: boolean): ParsedSession {
    if (this.#refusal) throw this.#refusal;
    if (!this.#header || !this.#scan) {
      parseHeader(Buffer.alloc(0), incomplete, this.#root);
      throw new Error("parseHeader accepted a file without a line");
    }
    return indexScan(this.#header, this.#scan);
  }
}

/** A sink that continues the parse of a snapshot with the lines appended after it. */
export class ExtendedParse implements LineSink {
  readonly #prev: ParsedSession;
  #ext: Extension | null = null;

  constructor(prev: ParsedSession) {
    this.#prev = prev;
  }

  lines(lines: Buffer, base: number): void {
    this.#ext ??= beginExtension(this.#prev);
    scanLines(lines, this.#prev.header, this.#ext.scan, base);
  }

  finish(): ParsedSession {
    this.#ext ??= beginExtension(this.#prev);
    return finishExtension(this.#prev, this.#ext);
  }
}
