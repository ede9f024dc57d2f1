// `conversation audit <conversation-id> [--verify] [--json] [--state-dir DIR]`: the audit
// ledger of one conversation (src/audit/), who did what and what came of it, one line per act;
// --verify proves the chain and exits 1 when a line was changed, removed or added. Never writes.
import { resolve } from "node:path";
import { ledgerFiles } from "../audit/ledger.ts";
import { isLedgerId, type LedgerLine } from "../audit/ledger-line.ts";
import { readLedger } from "../audit/verify.ts";
import { placesFor } from "../control/registry/places.ts";
import { makeVisible } from "../present/visible.ts";
import { parseFlags } from "./flags.ts";
import type { Io } from "./io.ts";

export type AuditCommand = {
  name: "audit";
  conversation: string;
  verify: boolean;
  json: boolean;
  stateDir?: string;
};

export const AUDIT_HELP = `Usage: conversation audit <conversation-id> [--verify] [--json]
                          [--state-dir DIR]

Prints the audit ledger of a conversation: every act done through its
controllers (take control, release, prompt with its text, interrupt,
confirm, force stop, recover, launch, answers), who did it, when, and what
came of it (admitted, or refused and why). Each line carries the digest of
the line before it; the ledger is in the state dir's audit folder.

  --verify           prove the chain: every line there, unchanged, in order,
                     and the last one the one the ledger's head names; exit 1
                     and say which line when not
  --json             one JSON document: { conversation, lines, verified,
                     problems, head }
  --state-dir DIR    the state directory the controllers were started with
  -h, --help         this help

Exit status: 0 printed (and, with --verify, the chain holds); 1 no ledger,
or the chain is broken; 2 usage error.
`;

export type AuditParsed =
  | { ok: true; command: AuditCommand | { name: "help"; text: string } }
  | { ok: false; error: string; usage: string };

export function parseAudit(args: string[]): AuditParsed {
  const bad = (error: string): AuditParsed => ({ ok: false, error, usage: AUDIT_HELP });
  const { values, positionals } = parseFlags(args, {
    verify: { type: "boolean" },
    json: { type: "boolean" },
    "state-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return { ok: true, command: { name: "help", text: AUDIT_HELP } };
  const [id, extra] = positionals;
  if (id === undefined || id === "") return bad("missing the <conversation-id>");
  if (extra !== undefined) return bad(`unexpected argument ${JSON.stringify(extra)}`);
  if (!isLedgerId(id)) return bad(`${JSON.stringify(id)} is not a conversation id`);
  if (values["state-dir"] === "") return bad("--state-dir needs a value");
  const command: AuditCommand = {
    name: "audit",
    conversation: id,
    verify: values.verify ?? false,
    json: values.json ?? false,
  };
  if (values["state-dir"] !== undefined) command.stateDir = resolve(values["state-dir"]);
  return { ok: true, command };
}

/** Prints the ledger; 1 when there is none, or when --verify finds the chain broken. */
export function runAudit(cmd: AuditCommand, io: Io): number {
  const files = ledgerFiles(placesFor(cmd.stateDir).audit, cmd.conversation);
  const reading = readLedger(files, cmd.conversation);
  const v = (s: string) => makeVisible(s, { showNewlines: true });
  if (!reading.found) {
    io.err(`conversation: ${v(reading.message)}\n`);
    return 1;
  }
  const holds = reading.problems.length === 0;
  if (cmd.json) {
    io.out(
      `${JSON.stringify({
        conversation: cmd.conversation,
        lines: reading.lines,
        verified: holds,
        problems: reading.problems,
        head: reading.end,
      })}\n`,
    );
    return cmd.verify && !holds ? 1 : 0;
  }
  if (reading.lines.length === 0) io.out(`Nothing was done to ${cmd.conversation} yet.\n`);
  for (const line of reading.lines) io.out(`${describeLine(line)}\n`);
  if (!cmd.verify) {
    if (!holds) io.err(`The chain does not hold: run with --verify to see where.\n`);
    return 0;
  }
  if (holds) {
    io.out(
      `Chain verified: ${reading.end.seq} line${reading.end.seq === 1 ? "" : "s"}, the last one's digest ${reading.end.digest}.\n`,
    );
    return 0;
  }
  for (const p of reading.problems) io.err(`broken: ${v(p.message)}\n`);
  io.err(`The ledger ${v(files.lines)} was changed outside the controller.\n`);
  return 1;
}

/** One act on one line: when, who (and for whom), what, and what came of it. */
export function describeLine(line: LedgerLine): string {
  const v = (s: string) => makeVisible(s, { showNewlines: true });
  const who =
    line.delegatedBy === undefined
      ? v(line.actor)
      : `${v(line.actor)} (via ${v(line.delegatedBy)})`;
  const text =
    typeof line.input.text === "string" ? ` ${JSON.stringify(clip(line.input.text))}` : "";
  const asked = Object.entries(line.input)
    .filter(([k, x]) => k !== "text" && (typeof x === "string" || typeof x === "number"))
    .map(([k, x]) => ` ${k}=${v(String(x))}`)
    .join("");
  const why =
    line.outcome.startsWith("refused:") && typeof line.answer.message === "string"
      ? `: ${v(clip(line.answer.message))}`
      : "";
  return `${line.seq}  ${line.at}  ${who}  ${line.op}${v(text)}${asked}  ${line.outcome}${why}`;
}

function clip(s: string): string {
  return s.length > 120 ? `${s.slice(0, 119)}…` : s;
}
