// LF-only JSONL framing for Pi's RPC mode (docs/rpc.md:28-37, dist/modes/rpc/jsonl.js:1-48).
// Records split on "\n" only, one trailing "\r" is stripped, and no record may exceed a byte
// limit. Work is linear in the bytes received: each byte is scanned once.
import { StringDecoder } from "node:string_decoder";

/** 64 MiB: Pi's `get_entries` on a 20 MB session is one 21 MB line (research §3.4). */
export const DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024;

export type FramingErrorCode = "record-too-large";

/**
 * A record longer than the limit. The splitter that threw it is closed: every later `push` or
 * `end` throws the same error. `lines` holds the complete records that arrived before the
 * oversize one in the same chunk; the caller still owes them handling.
 */
export class FramingError extends Error {
  readonly code: FramingErrorCode;
  readonly limit: number;
  readonly lines: readonly string[];

  constructor(code: FramingErrorCode, limit: number, lines: readonly string[]) {
    super(`a record exceeded the limit of ${limit} bytes (not counting its LF)`);
    this.name = "FramingError";
    this.code = code;
    this.limit = limit;
    this.lines = lines;
  }
}

export type LineSplitterOptions = { maxRecordBytes?: number };

/**
 * Splits a byte stream into records. Not `node:readline`: readline also breaks lines on
 * U+2028 and U+2029, which JSON.stringify leaves raw inside strings, so it would cut a valid
 * record in two (docs/rpc.md:37). A `StringDecoder` keeps a UTF-8 character that straddles
 * two chunks whole.
 *
 * An oversize record refuses rather than being skipped: a dropped record may be a response or
 * a `message_end`, and a controller that silently lost one would hold a wrong view of the run.
 */
export class LineSplitter {
  readonly maxRecordBytes: number;
  readonly #decoder = new StringDecoder("utf8");
  // The current record's text so far, in arrival order; joined once, when its LF arrives.
  #pending: string[] = [];
  #pendingBytes = 0;
  #failed = false;
  #ended = false;

  constructor(options: LineSplitterOptions = {}) {
    const max = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError(`maxRecordBytes must be a positive integer, got ${max}`);
    }
    this.maxRecordBytes = max;
  }

  /** The complete records in `chunk` and before it, without their LF (and one trailing CR). */
  push(chunk: Uint8Array): string[] {
    this.#checkOpen();
    const text = this.#decoder.write(chunk);
    return this.#scan(text);
  }

  /** Call once when the stream ends: the last record if it had no LF, else null. */
  end(): string | null {
    this.#checkOpen();
    this.#ended = true;
    const rest = this.#decoder.end();
    if (rest.length > 0) this.#scan(rest);
    if (this.#pending.length === 0) return null;
    const line = this.#pending.join("");
    this.#pending = [];
    this.#pendingBytes = 0;
    return stripCr(line);
  }

  /** Bytes held for the record that has not yet seen its LF. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  #checkOpen(): void {
    if (this.#failed) throw new FramingError("record-too-large", this.maxRecordBytes, []);
    if (this.#ended) throw new Error("LineSplitter: push or end after end()");
  }

  // Scans only `text`, the newly decoded characters; earlier pieces are never rescanned.
  #scan(text: string): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const lf = text.indexOf("\n", start);
      const piece = lf === -1 ? text.slice(start) : text.slice(start, lf);
      if (piece.length > 0) {
        this.#pendingBytes += Buffer.byteLength(piece, "utf8");
        if (this.#pendingBytes > this.maxRecordBytes) this.#fail(lines);
        this.#pending.push(piece);
      }
      if (lf === -1) return lines;
      const line = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join("");
      lines.push(stripCr(line));
      this.#pending = [];
      this.#pendingBytes = 0;
      start = lf + 1;
    }
  }

  #fail(lines: string[]): never {
    this.#pending = [];
    this.#failed = true;
    throw new FramingError("record-too-large", this.maxRecordBytes, lines);
  }
}

/**
 * One record: JSON plus LF, as Pi writes them (jsonl.js `serializeJsonLine`). JSON.stringify
 * escapes every C0 control, so the only LF is the terminator. It leaves U+2028 and U+2029 raw;
 * that is valid JSON and harmless under LF framing.
 */
export function encodeLine(value: unknown): string {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError("encodeLine: value has no JSON form");
  return `${json}\n`;
}

function stripCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
