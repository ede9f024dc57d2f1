// Reads a conversation's audit ledger back and proves its chain (issue 29 item 3): every line a
// ledger line of this conversation, numbered 1, 2, 3, … with no gap, each `prev` the digest of
// the line before it, and the head file naming the last one. A changed line breaks the next
// line's `prev`; a removed line breaks the numbering and the chain; a changed or removed last
// line disagrees with the head. Never writes; opens nothing through a link.
import { closeSync, constants, openSync, readSync } from "node:fs";
import { readNoFollow } from "../fs/read-no-follow.ts";
import type { Head, LedgerFiles } from "./ledger.ts";
import { GENESIS, type LedgerLine, lineDigest, parseLine } from "./ledger-line.ts";

export type LedgerProblem = { line: number | null; message: string };

export type LedgerReading =
  | { found: false; message: string }
  | {
      found: true;
      /** Every line that parsed, in file order. */
      lines: LedgerLine[];
      /** The chain's faults, first first; empty when it holds. */
      problems: LedgerProblem[];
      /** The last line's seq and digest (seq 0 for an empty ledger). */
      end: Head;
    };

const CHUNK = 1024 * 1024;

/** Reads and checks the ledger `files` of `conversation`. */
export function readLedger(files: LedgerFiles, conversation: string): LedgerReading {
  let fd: number;
  try {
    fd = openSync(files.lines, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return {
      found: false,
      message:
        code === "ENOENT"
          ? `no audit ledger for ${conversation} in ${files.lines}: nothing was done to it through a controller with this state dir`
          : `the audit ledger ${files.lines} cannot be read (${code ?? String(e)})`,
    };
  }
  const lines: LedgerLine[] = [];
  const problems: LedgerProblem[] = [];
  let prev = GENESIS;
  let n = 0;
  let rest = Buffer.alloc(0);
  const take = (raw: Buffer) => {
    n++;
    const text = raw.toString("utf8");
    const parsed = parseLine(text);
    if (!parsed.ok) {
      problems.push({ line: n, message: `line ${n} is not a ledger line: ${parsed.reason}` });
    } else {
      const l = parsed.line;
      if (l.seq !== n) {
        problems.push({
          line: n,
          message: `line ${n} is numbered ${l.seq}: ${l.seq > n ? "lines before it were removed" : "lines were repeated or moved"}`,
        });
      }
      if (l.prev !== prev) {
        problems.push({
          line: n,
          message: `line ${n} does not follow the line before it (its "prev" is not that line's digest): ${n === 1 ? "the first line was removed or" : `line ${n - 1} was changed, removed, or`} this line was`,
        });
      }
      if (l.conversation !== conversation) {
        problems.push({
          line: n,
          message: `line ${n} is about ${l.conversation}, not ${conversation}`,
        });
      }
      lines.push(l);
    }
    prev = lineDigest(text);
  };
  try {
    const buf = Buffer.alloc(CHUNK);
    for (;;) {
      const got = readSync(fd, buf, 0, CHUNK, null);
      if (got === 0) break;
      let data = Buffer.concat([rest, buf.subarray(0, got)]);
      let at = data.indexOf(0x0a);
      while (at !== -1) {
        take(data.subarray(0, at));
        data = data.subarray(at + 1);
        at = data.indexOf(0x0a);
      }
      rest = Buffer.from(data);
    }
  } finally {
    closeSync(fd);
  }
  if (rest.length > 0) {
    take(rest);
    problems.push({
      line: n,
      message: `line ${n} is incomplete (no line end): a write was cut off or the file was cut`,
    });
  }
  const end = { seq: n, digest: n === 0 ? GENESIS : prev };
  const head = readHead(files.head);
  if (head === "missing") {
    if (n > 0)
      problems.push({
        line: null,
        message: `the head file ${files.head} is missing: whether lines were removed from the end cannot be told`,
      });
  } else if (head === "bad") {
    problems.push({ line: null, message: `the head file ${files.head} is not a ledger head` });
  } else if (head.seq !== end.seq || head.digest !== end.digest) {
    problems.push({
      line: null,
      message:
        head.seq > end.seq
          ? `the head names line ${head.seq}, but the ledger ends at line ${end.seq}: lines were removed from the end`
          : head.seq < end.seq
            ? `the ledger goes on past line ${head.seq}, where the head says it ends: lines were added by something other than the controller`
            : `the last line (${end.seq}) is not the one the head names: it was changed`,
    });
  }
  return { found: true, lines, problems, end };
}

function readHead(file: string): Head | "missing" | "bad" {
  let text: string;
  try {
    text = readNoFollow(file);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "bad";
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return "bad";
  }
  if (typeof v !== "object" || v === null) return "bad";
  const { seq, digest } = v as Record<string, unknown>;
  if (!Number.isSafeInteger(seq) || typeof digest !== "string" || !/^[0-9a-f]{64}$/.test(digest)) {
    return "bad";
  }
  return { seq: seq as number, digest };
}
