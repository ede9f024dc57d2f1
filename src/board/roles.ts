// Roles (issue 29 item 2): what each person behind the trusted proxy may do, by the role a roles
// file gives their identity. `viewer` reads histories; `observer` also watches a controller
// live; `operator` also steers (take control, release, prompt, interrupt) and answers
// approvals; `admin` also force-stops, recovers, launches and changes budgets. One table
// (ROLE_OPERATIONS) decides, on the board and again in the controller: each login's
// connection narrows its grant to its role's operations (hello `capabilities`).
import { readFileSync } from "node:fs";
import { isActorName, OPERATIONS, type Operation } from "../control/protocol.ts";

export const ROLES = ["viewer", "observer", "operator", "admin"] as const;
export type Role = (typeof ROLES)[number];

/**
 * The operations of each role, as the controller names them. `answer` and `budget` are the
 * approval and budget operations (issue 26); a controller that has no such operation yet never
 * hears of them (capabilitiesOf keeps only what OPERATIONS names).
 */
export const ROLE_OPERATIONS: Record<Role, readonly string[]> = {
  viewer: [],
  observer: ["observe"],
  operator: ["observe", "takeover", "release", "prompt", "interrupt", "answer"],
  admin: [
    "observe",
    "takeover",
    "release",
    "prompt",
    "interrupt",
    "answer",
    "confirm",
    "force-stop",
    "recover",
    "launch",
    "budget",
  ],
};

export function isRole(v: unknown): v is Role {
  return typeof v === "string" && (ROLES as readonly string[]).includes(v);
}

/** Whether `role` may do `op` (a controller operation name). */
export function roleAllows(role: Role, op: string): boolean {
  return ROLE_OPERATIONS[role].includes(op);
}

/** Whether `role` may watch a controller's live stream (events, state, dialogs). */
export function roleWatches(role: Role): boolean {
  return roleAllows(role, "observe");
}

/** The operations a connection for `role` narrows its grant to: those the controller knows. */
export function capabilitiesOf(role: Role): Operation[] {
  return OPERATIONS.filter((op) => roleAllows(role, op));
}

/** The lowest role that may do `op`, for a message that says whom to ask. */
export function lowestRoleFor(op: string): Role | null {
  return ROLES.find((r) => roleAllows(r, op)) ?? null;
}

export type Roles = ReadonlyMap<string, Role>;
export type RolesRead = { ok: true; roles: Roles } | { ok: false; error: string };

const ROLES_MAX_BYTES = 1024 * 1024;

/**
 * Reads a roles file: `{ "identities": { "<identity>": "<role>", ... } }`, the identity as the
 * proxy sends it (a user name, an e-mail address). Every problem names the file and the entry.
 */
export function readRolesFile(file: string): RolesRead {
  let text: string;
  try {
    const buf = readFileSync(file);
    if (buf.length > ROLES_MAX_BYTES)
      return { ok: false, error: `roles ${file}: larger than 1 MiB` };
    text = buf.toString("utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    return { ok: false, error: `roles ${file}: cannot read it (${code})` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `roles ${file}: not JSON (${(e as Error).message})` };
  }
  const parsed = parseRoles(value);
  return parsed.ok ? parsed : { ok: false, error: `roles ${file}: ${parsed.error}` };
}

export function parseRoles(value: unknown): RolesRead {
  const bad = (error: string): RolesRead => ({ ok: false, error });
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return bad('expected { "identities": { "<identity>": "<role>" } }');
  }
  const extra = Object.keys(value).filter((k) => k !== "identities");
  if (extra.length > 0) return bad(`unknown field ${JSON.stringify(extra[0])}`);
  const ids = (value as { identities?: unknown }).identities;
  if (typeof ids !== "object" || ids === null || Array.isArray(ids)) {
    return bad('"identities" must be an object of identity to role');
  }
  const roles = new Map<string, Role>();
  for (const [identity, role] of Object.entries(ids)) {
    if (!isActorName(identity)) {
      return bad(
        `identities: ${JSON.stringify(String(identity).slice(0, 40))} is not an identity (1 to 200 characters, no control character)`,
      );
    }
    if (!isRole(role)) {
      return bad(
        `identities.${identity}: expected one of ${ROLES.join(", ")}, not ${JSON.stringify(role)}`,
      );
    }
    roles.set(identity, role);
  }
  if (roles.size === 0) return bad("no identities: nobody could use the board through the proxy");
  return { ok: true, roles };
}
