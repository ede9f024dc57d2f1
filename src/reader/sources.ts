// Where conversations may come from: the board's repository specs, and seat registrations as
// hints (seed: Sources). A registration never adds a root or names a file; it can only mark an
// approved root unsupported, add a placeholder row under an approved project, or supply
// engineStartedAt. A pi-agent spec names Pi's own store (pi-store.ts), which is listed only
// there and one level down. Fleet and connector specs are never roots; there is no global scan.
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { basename, join, resolve } from "node:path";

export type BoardSpec =
  | { kind: "repository"; projectRoot: string; seat: string }
  /** Pi's own session store: `~/.pi/agent/sessions` or `$PI_CODING_AGENT_DIR/sessions`. */
  | { kind: "pi-agent"; sessionsDir: string }
  | { kind: "fleet" | "connector"; [k: string]: unknown };

export type SeatRegistration = {
  seat: string;
  layout: string;
  project: string;
  sessionsDir: string;
  harness: string;
  /** ISO 8601. */
  startedAt: string;
};

type RootBase = { projectRoot: string; project: string; seat: string; sessionsDir: string };

/**
 * A `--<encoded cwd>--` directory of Pi's store: `storeDir` is the approved directory (the
 * root's `projectRoot`, where its chain check starts), `dirName` the one component below it.
 */
export type StoreOrigin = { storeDir: string; dirName: string };

/** An approved Pi sessions directory. */
export type PiRoot = RootBase & {
  kind: "pi";
  /** Registration start times (ISO 8601), oldest first: engineStartedAt for later conversations. */
  engineStarts: string[];
  /** Set for a directory of Pi's own store: its header cwd must encode to `dirName`. */
  store?: StoreOrigin;
};

/** A directory of session files the reader reads (harness/index.ts says with which harness). */
export type FileRoot = PiRoot;

/** A root on another harness: one catalogue row, and its directory is never read. */
export type UnsupportedRoot = RootBase & { kind: "unsupported"; harness: string };

/** Pi's own store, approved whole: its `--…--` directories are its roots (pi-store.ts). */
export type PiStoreRoot = { kind: "pi-store"; storeDir: string };

export type Root = PiRoot | UnsupportedRoot | PiStoreRoot;

/** The seat a row of Pi's store shows: the store has no seats, so the spec's kind stands in. */
export const STORE_SEAT = "pi-agent";

export const PI_HARNESS = "pi";

export function sessionsDirOf(projectRoot: string, seat: string): string {
  return join(projectRoot, ".pi", "state", seat, "sessions");
}

/** The same place on disk: equal when resolved, or equal by real path where both exist. */
export function samePath(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  const ra = realOrNull(a);
  return ra !== null && ra === realOrNull(b);
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync.native(path);
  } catch {
    // Missing or unreadable: such a path matches only as written (the check above).
    return null;
  }
}

/** A conversation id: `pi-` + a hash of project root, seat and file name. */
export function conversationId(projectRoot: string, seat: string, fileName: string): string {
  const h = createHash("sha256").update(JSON.stringify([resolve(projectRoot), seat, fileName]));
  return `pi-${h.digest("hex").slice(0, 40)}`;
}

/**
 * The id of a file in a Pi root: a hash of the root's identity and the file name, so no path can
 * be derived from it. Ids in Pi's store hash a four-element list, so none equals a repository id.
 */
export function conversationIdOf(root: PiRoot, fileName: string): string {
  if (!root.store) return conversationId(root.projectRoot, root.seat, fileName);
  const { storeDir, dirName } = root.store;
  const h = createHash("sha256").update(
    JSON.stringify([STORE_SEAT, resolve(storeDir), dirName, fileName]),
  );
  return `pi-${h.digest("hex").slice(0, 40)}`;
}

/** The id of an unsupported root's single row (it has no files). */
export function unsupportedRowId(root: UnsupportedRoot): string {
  return conversationId(root.projectRoot, root.seat, "");
}

function isRepositorySpec(s: BoardSpec): s is Extract<BoardSpec, { kind: "repository" }> {
  return s.kind === "repository" && typeof s.projectRoot === "string" && typeof s.seat === "string";
}

function isPiAgentSpec(s: BoardSpec): s is Extract<BoardSpec, { kind: "pi-agent" }> {
  return s.kind === "pi-agent" && typeof s.sessionsDir === "string" && s.sessionsDir !== "";
}

/** Whether a registration speaks for this root: seat, layout `repo`, project and directory. */
function registrationMatches(reg: SeatRegistration, root: RootBase): boolean {
  return (
    reg.seat === root.seat &&
    reg.layout === "repo" &&
    (reg.project === root.project || samePath(reg.project, root.projectRoot)) &&
    samePath(reg.sessionsDir, root.sessionsDir)
  );
}

const SEAT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * The roots of the given specs. A seat name that could climb out of `.pi/state` is not a root.
 * Registrations that do not match a root exactly are ignored.
 */
export function rootsFromSpecs(specs: BoardSpec[], registrations: SeatRegistration[]): Root[] {
  const regs = registrations.filter(isWellFormedRegistration);
  const roots: Root[] = [];
  const seen = new Set<string>();
  for (const spec of specs) {
    if (isPiAgentSpec(spec)) {
      const storeDir = resolve(spec.sessionsDir);
      const key = `pi-agent:${storeDir}`;
      if (!seen.has(key)) roots.push({ kind: "pi-store", storeDir });
      seen.add(key);
      continue;
    }
    if (!isRepositorySpec(spec) || !SEAT_NAME.test(spec.seat)) continue;
    const projectRoot = resolve(spec.projectRoot);
    const base: RootBase = {
      projectRoot,
      project: basename(projectRoot),
      seat: spec.seat,
      sessionsDir: sessionsDirOf(projectRoot, spec.seat),
    };
    if (seen.has(base.sessionsDir)) continue;
    seen.add(base.sessionsDir);
    const mine = regs.filter((r) => registrationMatches(r, base));
    const foreign = mine.find((r) => r.harness !== PI_HARNESS);
    if (foreign) {
      roots.push({ ...base, kind: "unsupported", harness: foreign.harness });
      continue;
    }
    const engineStarts = mine.map((r) => r.startedAt).sort((a, b) => Date.parse(a) - Date.parse(b));
    roots.push({ ...base, kind: "pi", engineStarts });
  }
  // Placeholder rows: a seat on another harness, under a project root that is already approved,
  // naming the standard directory. It has no Pi sessions directory, so no spec names it.
  const projects = new Map<string, string>();
  for (const r of roots) if (r.kind !== "pi-store") projects.set(r.projectRoot, r.project);
  for (const reg of regs) {
    if (reg.harness === PI_HARNESS || reg.layout !== "repo" || !SEAT_NAME.test(reg.seat)) continue;
    for (const [projectRoot, project] of projects) {
      const sessionsDir = sessionsDirOf(projectRoot, reg.seat);
      if (seen.has(sessionsDir)) continue;
      const base: RootBase = { projectRoot, project, seat: reg.seat, sessionsDir };
      if (!registrationMatches(reg, base)) continue;
      seen.add(sessionsDir);
      roots.push({ ...base, kind: "unsupported", harness: reg.harness });
    }
  }
  return roots;
}

function isWellFormedRegistration(r: SeatRegistration): boolean {
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.seat === "string" &&
    typeof r.layout === "string" &&
    typeof r.project === "string" &&
    typeof r.sessionsDir === "string" &&
    typeof r.harness === "string" &&
    typeof r.startedAt === "string" &&
    !Number.isNaN(Date.parse(r.startedAt)) &&
    // What a catalogue row copies must fit CHAT-01 (seat 1024, harness a string, a time 256).
    r.seat.length <= 1024 &&
    r.harness.length <= 1024 &&
    r.startedAt.length <= 256
  );
}

/** The latest registration start at or before the conversation's creation, if any. */
export function engineStartedAtFor(root: PiRoot, createdAt: string | null): string | null {
  if (createdAt === null) return null;
  const created = Date.parse(createdAt);
  if (Number.isNaN(created)) return null;
  let found: string | null = null;
  for (const s of root.engineStarts) if (Date.parse(s) <= created) found = s;
  return found;
}
