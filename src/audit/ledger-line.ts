// One line of the audit ledger (issue 29 item 3): who did what to a conversation, when, and what
// came of it, carrying the digest of the line before it. Lines are written in one fixed key
// order (encodeLine), so a line's digest is the digest of exactly the bytes in the file;
// parseLine is the only way a line read back becomes a LedgerLine.
import { createHash } from "node:crypto";
import { ID_PATTERN } from "../protocol/chat-01.ts";

export const LEDGER_VERSION = 1;
/** The `prev` of the first line: no line came before it. */
export const GENESIS = "0".repeat(64);
/** A line longer than this is not one of ours (a prompt is at most 262,144 characters). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

/** What the controller reports of one answered request (everything a line holds but the chain). */
export type LedgerAction = {
  /** ISO 8601, when the answer was sent. */
  at: string;
  conversation: string;
  /** The person (a delegating grant's hello) or the grant's own actor. */
  actor: string;
  grant: string;
  /** The grant's own actor when the connection acts for a person it named. */
  delegatedBy?: string;
  connection: string;
  op: string;
  request: string;
  /** `admitted`, `refused:<code>` or `unknown` (the reply's outcome). */
  outcome: string;
  /** The request's own fields (a prompt's text, a confirmation's id, an answer's decision). */
  input: Record<string, unknown>;
  /** What the reply said: a refusal's message, a receipt, the ids and results it handed out. */
  answer: Record<string, unknown>;
};

export type LedgerLine = LedgerAction & { v: typeof LEDGER_VERSION; seq: number; prev: string };

const KEYS = [
  "v",
  "seq",
  "at",
  "conversation",
  "actor",
  "grant",
  "delegatedBy",
  "connection",
  "op",
  "request",
  "outcome",
  "input",
  "answer",
  "prev",
] as const;

/** The line's JSON in the ledger's key order (no LF). */
export function encodeLine(line: LedgerLine): string {
  const ordered: Record<string, unknown> = {};
  for (const k of KEYS) if (line[k] !== undefined) ordered[k] = line[k];
  return JSON.stringify(ordered);
}

/** The SHA-256 of a line's bytes as written (without its LF), in hex: the next line's `prev`. */
export function lineDigest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Whether `id` may name a ledger file: a CHAT-01 id, so no path can be made of it. */
export function isLedgerId(id: string): boolean {
  return ID_PATTERN.test(id);
}

export type ParsedLine = { ok: true; line: LedgerLine } | { ok: false; reason: string };

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isText = (v: unknown): v is string => typeof v === "string" && v !== "";

/** Checks every field of a line read back; the reason names the first one that is wrong. */
export function parseLine(text: string): ParsedLine {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { ok: false, reason: "it is not JSON" };
  }
  if (!isObj(v)) return { ok: false, reason: "it is not a JSON object" };
  for (const k of Object.keys(v)) {
    if (!(KEYS as readonly string[]).includes(k))
      return { ok: false, reason: `unknown field ${k}` };
  }
  if (v.v !== LEDGER_VERSION) return { ok: false, reason: `"v" is not ${LEDGER_VERSION}` };
  if (!Number.isSafeInteger(v.seq) || (v.seq as number) < 1) {
    return { ok: false, reason: '"seq" is not a positive integer' };
  }
  for (const k of ["at", "conversation", "actor", "grant", "connection", "op", "request"]) {
    if (!isText(v[k])) return { ok: false, reason: `"${k}" is not a non-empty string` };
  }
  if (v.delegatedBy !== undefined && !isText(v.delegatedBy)) {
    return { ok: false, reason: '"delegatedBy" is not a non-empty string' };
  }
  if (!isText(v.outcome)) return { ok: false, reason: '"outcome" is not a non-empty string' };
  if (!isObj(v.input) || !isObj(v.answer)) {
    return { ok: false, reason: '"input" and "answer" must be objects' };
  }
  if (typeof v.prev !== "string" || !/^[0-9a-f]{64}$/.test(v.prev)) {
    return { ok: false, reason: '"prev" is not a SHA-256 digest in hex' };
  }
  return { ok: true, line: v as LedgerLine };
}
