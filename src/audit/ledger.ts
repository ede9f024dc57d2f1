// The audit ledger of one conversation (issue 29 item 3): `<state-dir>/audit/<conversation>.jsonl`,
// append-only, one line per control action, each carrying the digest of the line before it, and
// `<conversation>.head` beside it naming the last line (its seq and digest), so a removed or
// changed last line shows too. Only the controller appends, one controller per conversation (the
// writer claim). Never a session file: the folder is the state dir's, private (fs/private-folder).

import type { Stats } from "node:fs";
import {
  closeSync,
  constants,
  fdatasyncSync,
  fstatSync,
  openSync,
  readSync,
  renameSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { ensurePrivateFolder } from "../fs/private-folder.ts";
import {
  encodeLine,
  GENESIS,
  isLedgerId,
  LEDGER_VERSION,
  type LedgerAction,
  type LedgerLine,
  lineDigest,
  MAX_LINE_BYTES,
  parseLine,
} from "./ledger-line.ts";

export type LedgerFiles = { lines: string; head: string };

/** Where one conversation's ledger and its head live under the audit folder. */
export function ledgerFiles(auditDir: string, conversation: string): LedgerFiles {
  if (!isLedgerId(conversation)) throw new Error(`not a conversation id: ${conversation}`);
  return {
    lines: join(auditDir, `${conversation}.jsonl`),
    head: join(auditDir, `${conversation}.head`),
  };
}

export type Head = { seq: number; digest: string };

export type OpenedLedger = { ok: true; ledger: AuditLedger } | { ok: false; message: string };

export class AuditLedger {
  readonly files: LedgerFiles;
  readonly #conversation: string;
  #head: Head;

  private constructor(files: LedgerFiles, conversation: string, head: Head) {
    this.files = files;
    this.#conversation = conversation;
    this.#head = head;
  }

  /**
   * Opens (creating the private folder and the file when missing) the ledger of `conversation`
   * and reads where its chain ends. Refuses, with what to do, a folder that is not private, a
   * file that is not a private regular one, or a last line that is incomplete or not a ledger
   * line: appending after it would chain onto something nobody can vouch for.
   */
  static open(auditDir: string, conversation: string): OpenedLedger {
    if (!isLedgerId(conversation)) {
      return { ok: false, message: `"${conversation}" is not a conversation id` };
    }
    const folder = ensurePrivateFolder(auditDir, {
      what: "the audit folder",
      instead: "choose another state dir with --state-dir",
    });
    if (!folder.ok) return { ok: false, message: folder.problem.message };
    const files = ledgerFiles(auditDir, conversation);
    let fd: number;
    try {
      fd = openSync(
        files.lines,
        constants.O_RDONLY | constants.O_CREAT | constants.O_NOFOLLOW,
        0o600,
      );
    } catch (e) {
      return {
        ok: false,
        message: `the audit ledger ${files.lines} cannot be opened (${code(e)})`,
      };
    }
    try {
      const st = fstatSync(fd);
      const problem = privateFileProblem(st);
      if (problem !== null)
        return { ok: false, message: `the audit ledger ${files.lines} ${problem}` };
      const last = readLastLine(fd, st.size);
      if (!last.ok) {
        return {
          ok: false,
          message: `the audit ledger ${files.lines} ${last.reason}: run \`conversation audit ${conversation} --verify\`, then move the file aside to start a new ledger`,
        };
      }
      if (last.text === null)
        return {
          ok: true,
          ledger: new AuditLedger(files, conversation, { seq: 0, digest: GENESIS }),
        };
      const parsed = parseLine(last.text);
      if (!parsed.ok) {
        return {
          ok: false,
          message: `the last line of the audit ledger ${files.lines} is not a ledger line (${parsed.reason}): run \`conversation audit ${conversation} --verify\``,
        };
      }
      const head = { seq: parsed.line.seq, digest: lineDigest(last.text) };
      return { ok: true, ledger: new AuditLedger(files, conversation, head) };
    } finally {
      closeSync(fd);
    }
  }

  get head(): Head {
    return { ...this.#head };
  }

  /**
   * Appends one action and returns the line written. Throws when the line or the head cannot
   * be written (the controller then refuses every acting request `audit`).
   */
  append(action: LedgerAction): LedgerLine {
    if (action.conversation !== this.#conversation) {
      throw new Error(`this ledger is ${this.#conversation}'s, not ${action.conversation}'s`);
    }
    const line: LedgerLine = {
      v: LEDGER_VERSION,
      seq: this.#head.seq + 1,
      ...action,
      prev: this.#head.digest,
    };
    const text = encodeLine(line);
    const bytes = Buffer.from(`${text}\n`, "utf8");
    if (bytes.length > MAX_LINE_BYTES) throw new Error("an audit line is over 4 MiB");
    const fd = openSync(
      this.files.lines,
      constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW,
    );
    try {
      const problem = privateFileProblem(fstatSync(fd));
      if (problem !== null) throw new Error(`the audit ledger ${this.files.lines} ${problem}`);
      // One write of the whole line: O_APPEND puts it at the end as one piece.
      const n = writeSync(fd, bytes);
      if (n !== bytes.length) throw new Error("the audit line was written in part");
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.#head = { seq: line.seq, digest: lineDigest(text) };
    writeHead(this.files.head, this.#head);
    return line;
  }
}

/** The head beside the ledger, replaced whole (a rename), never half written. */
function writeHead(file: string, head: Head): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(head)}\n`, { mode: 0o600, flag: "w" });
  renameSync(temp, file);
}

/** Why a ledger file may not be used, or null: it must be a regular private file of ours. */
function privateFileProblem(st: Stats): string | null {
  if (!st.isFile()) return "is not a regular file";
  if (st.uid !== (process.getuid?.() ?? st.uid)) return `belongs to uid ${st.uid}, not to you`;
  if (st.nlink !== 1) return "has a second name (a hard link)";
  if ((st.mode & 0o077) !== 0)
    return `is open to others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`;
  return null;
}

type LastLine = { ok: true; text: string | null } | { ok: false; reason: string };

/** The last complete line of the file (null when empty), read from its end only. */
function readLastLine(fd: number, size: number): LastLine {
  if (size === 0) return { ok: true, text: null };
  const span = Math.min(size, MAX_LINE_BYTES + 1);
  const buf = Buffer.alloc(span);
  let got = 0;
  while (got < span) {
    const n = readSync(fd, buf, got, span - got, size - span + got);
    if (n === 0) break;
    got += n;
  }
  if (got !== span) return { ok: false, reason: "changed while it was read" };
  if (buf[span - 1] !== 0x0a) return { ok: false, reason: "ends with an incomplete line" };
  const start = buf.lastIndexOf(0x0a, span - 2);
  if (start === -1 && span < size) return { ok: false, reason: "has a last line over 4 MiB" };
  return { ok: true, text: buf.subarray(start + 1, span - 1).toString("utf8") };
}

function code(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? String(e);
}
