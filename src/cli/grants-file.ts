// The grants `conversation control` serves: a grants file (`--grants FILE`), checked field by
// field with messages that name the file and the field, or the default operator and observer.
import { readFileSync } from "node:fs";
import {
  ACTOR_RULE,
  type Grant,
  isActorName,
  OPERATIONS,
  type Operation,
} from "../control/protocol.ts";
import { ID_PATTERN } from "../protocol/chat-01.ts";
import { type Checked, fail } from "./config.ts";

const GRANTS_MAX_BYTES = 1024 * 1024;
const GRANT_FIELDS = ["id", "actor", "capabilities", "delegate"];
/**
 * Without --grants: one grant that may do everything, one that may only watch. The operator
 * grant delegates: the board's connection for a logged-in person names them (docs/remote.md).
 */
export const DEFAULT_GRANTS: readonly Grant[] = [
  { id: "operator", actor: "local-operator", capabilities: [...OPERATIONS], delegate: true },
  { id: "observer", actor: "local-observer", capabilities: ["observe"] },
];

/** Reads and checks a grants file; every problem is a message naming the file and field. */
export function readGrantsFile(file: string): Checked<Grant[]> {
  let text: string;
  try {
    const buf = readFileSync(file);
    if (buf.length > GRANTS_MAX_BYTES) return fail(`grants ${file}: larger than 1 MiB`);
    text = buf.toString("utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    return fail(`grants ${file}: cannot read it (${code})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return fail(`grants ${file}: not JSON (${(e as Error).message})`);
  }
  const parsed = parseGrants(value);
  return parsed.ok ? parsed : fail(`grants ${file}: ${parsed.error}`);
}

/** `[{ id, actor, capabilities, delegate? }]`: unique CHAT-01 ids, an actor, known operations once each. */
export function parseGrants(value: unknown): Checked<Grant[]> {
  if (!Array.isArray(value)) return fail("expected a JSON array of grants");
  if (value.length === 0) return fail("no grants: a client could never say hello");
  const grants: Grant[] = [];
  const known: readonly string[] = OPERATIONS;
  for (const [i, g] of value.entries()) {
    const at = `[${i}]`;
    if (typeof g !== "object" || g === null || Array.isArray(g)) {
      return fail(`${at}: expected an object`);
    }
    const extra = Object.keys(g).filter((k) => !GRANT_FIELDS.includes(k));
    if (extra.length > 0) return fail(`${at}: unknown field ${JSON.stringify(extra[0])}`);
    const { id, actor, capabilities, delegate } = g as Record<string, unknown>;
    if (typeof id !== "string" || !ID_PATTERN.test(id)) {
      return fail(`${at}.id: expected an id (letters, digits, '.', '_', '-'; up to 200)`);
    }
    if (grants.some((other) => other.id === id)) return fail(`${at}.id: "${id}" is repeated`);
    if (!isActorName(actor)) return fail(`${at}.actor: ${ACTOR_RULE}`);
    if (delegate !== undefined && typeof delegate !== "boolean") {
      return fail(`${at}.delegate: expected true or false`);
    }
    if (!Array.isArray(capabilities)) return fail(`${at}.capabilities: expected an array`);
    for (const [j, c] of capabilities.entries()) {
      if (typeof c !== "string" || !known.includes(c)) {
        return fail(`${at}.capabilities[${j}]: expected one of ${OPERATIONS.join(", ")}`);
      }
      if (capabilities.indexOf(c) !== j) return fail(`${at}.capabilities: "${c}" is repeated`);
    }
    const ops = capabilities as Operation[];
    grants.push({ id, actor, capabilities: ops, ...(delegate === true ? { delegate } : {}) });
  }
  return { ok: true, value: grants };
}
