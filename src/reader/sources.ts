// Where conversations may come from: the board's repository specs, and seat registrations as
// hints (seed: Sources). A registration never adds a root or names a file; it can only mark an
// approved root unsupported, add a placeholder row under an approved project, or supply
// engineStartedAt; a registration on `claude-code` makes its seat read the seat's own Claude
// sessions, in the seat's state folder. A pi-agent spec names Pi's own store (pi-store.ts), a
// claude-code spec Claude Code's (claude-code/store.ts), each listed only there and below. Fleet
// and connector specs are never roots; there is no global scan.
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { basename, join, resolve } from "node:path";

export type BoardSpec =
  | { kind: "repository"; projectRoot: string; seat: string }
  /** Pi's own session store: `~/.pi/agent/sessions` or `$PI_CODING_AGENT_DIR/sessions`. */
  | { kind: "pi-agent"; sessionsDir: string }
  /** Claude Code's own store: `$CLAUDE_CONFIG_DIR/projects` or `~/.claude/projects`. */
  | { kind: "claude-code"; projectsDir: string }
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

/**
 * One folder of Claude Code session files (claude-code/store.ts): a `<encoded cwd>` folder of a
 * projects directory, or a session's `subagents` folder below it. `projectRoot` is where its
 * chain check starts (the store, or a seat's project root).
 */
export type ClaudeRoot = RootBase & {
  kind: "claude";
  engineStarts: string[];
  /** Set in Claude Code's own store: a session's cwd must encode to `dirName`. */
  store?: StoreOrigin;
  /** What names this folder's conversations (hashed into their ids with the file name). */
  identity: readonly string[];
  /** Set for a `<session>/subagents` folder: the session file its agents ran under. */
  agentsOf?: string;
};

/** A directory of session files the reader reads (harness/index.ts says with which harness). */
export type FileRoot = PiRoot | ClaudeRoot;

/** A root on another harness: one catalogue row, and its directory is never read. */
export type UnsupportedRoot = RootBase & { kind: "unsupported"; harness: string };

/** Pi's own store, approved whole: its `--…--` directories are its roots (pi-store.ts). */
export type PiStoreRoot = { kind: "pi-store"; storeDir: string };

/** Claude Code's own store, approved whole: each `<encoded cwd>` folder in it is a root. */
export type ClaudeStoreRoot = { kind: "claude-store"; storeDir: string };

/**
 * A repository seat on Claude Code: its sessions are where a controlled Claude Code writes them,
 * `<projectRoot>/.pi/state/<seat>/claude/projects/<encoded cwd>/` (claudeProjectsDirOf); each
 * folder there is a root whose sessions must have a cwd inside the project. `sessionsDir` is the
 * projects folder.
 */
export type ClaudeSeatRoot = RootBase & { kind: "claude-seat"; engineStarts: string[] };

export type Root = PiRoot | UnsupportedRoot | PiStoreRoot | ClaudeStoreRoot | ClaudeSeatRoot;

/** The seat a row of Pi's store shows: the store has no seats, so the spec's kind stands in. */
export const STORE_SEAT = "pi-agent";
/** The seat a row of Claude Code's own store shows. */
export const CLAUDE_STORE_SEAT = "claude-code";

export const PI_HARNESS = "pi";
export const CLAUDE_HARNESS = "claude-code";

/** Whether a root's own files are read (a Pi or Claude folder), as against a store or a row. */
export function isFileRoot(root: { kind: string }): root is FileRoot {
  return root.kind === "pi" || root.kind === "claude";
}

/** The folder a configured root reads below: a seat's sessions folder, or a whole store. */
export function rootDirOf(root: Root): string {
  return root.kind === "pi-store" || root.kind === "claude-store"
    ? root.storeDir
    : root.sessionsDir;
}

/**
 * A Claude Code seat's config folder (CLAUDE_CONFIG_DIR of a controlled Claude Code): in the
 * seat's state, never `~/.claude` (a live root). Its sessions are in `projects/` below it.
 */
export function claudeConfigDirOf(projectRoot: string, seat: string): string {
  return join(projectRoot, ".pi", "state", seat, "claude");
}

/** Where a Claude Code seat's sessions are: `<claudeConfigDirOf>/projects`. */
export function claudeProjectsDirOf(projectRoot: string, seat: string): string {
  return join(claudeConfigDirOf(projectRoot, seat), "projects");
}

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
export function conversationIdOf(root: FileRoot, fileName: string): string {
  if (root.kind === "claude") return claudeConversationId(root, fileName);
  if (!root.store) return conversationId(root.projectRoot, root.seat, fileName);
  const { storeDir, dirName } = root.store;
  const h = createHash("sha256").update(
    JSON.stringify([STORE_SEAT, resolve(storeDir), dirName, fileName]),
  );
  return `pi-${h.digest("hex").slice(0, 40)}`;
}

/**
 * A Claude Code conversation: `cc-` + a hash of its folder's identity and the file name (never
 * equal to a Pi id, which starts `pi-`). A subagent's transcript, `agent-<id>.jsonl` in its
 * session's `subagents` folder (2.1) or in the project folder itself (2.0), is named by its agent
 * id instead (claudeAgentId), so the Agent call that ran it can link to it either way.
 */
function claudeConversationId(root: ClaudeRoot, fileName: string): string {
  const agent = agentIdOfFile(fileName);
  if (agent !== null) return claudeAgentId(root.identity, agent);
  return hashedId("cc-", [...root.identity, fileName]);
}

/** The conversation id of agent `agentId`'s transcript, in a folder of this identity. */
export function claudeAgentId(identity: readonly string[], agentId: string): string {
  return hashedId("cc-", [...identity, "agent", agentId]);
}

const AGENT_FILE = /^agent-([A-Za-z0-9_-]{1,128})\.jsonl$/;

/** `agent-<id>.jsonl`: a subagent's transcript, not a session of its own. */
export function isAgentFileName(name: string): boolean {
  return AGENT_FILE.test(name);
}

function agentIdOfFile(name: string): string | null {
  return AGENT_FILE.exec(name)?.[1] ?? null;
}

function hashedId(prefix: string, parts: readonly string[]): string {
  return `${prefix}${createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 40)}`;
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

function isClaudeCodeSpec(s: BoardSpec): s is Extract<BoardSpec, { kind: "claude-code" }> {
  return s.kind === "claude-code" && typeof s.projectsDir === "string" && s.projectsDir !== "";
}

/**
 * Whether a registration speaks for this seat: seat, layout `repo`, project and directory. The
 * directory is the seat's standard one (`.pi/state/<seat>/sessions`), or, for a seat on Claude
 * Code, where its sessions are (`.pi/state/<seat>/claude/projects`, claudeProjectsDirOf).
 */
function registrationMatches(reg: SeatRegistration, root: RootBase): boolean {
  return (
    reg.seat === root.seat &&
    reg.layout === "repo" &&
    (reg.project === root.project || samePath(reg.project, root.projectRoot)) &&
    (samePath(reg.sessionsDir, root.sessionsDir) ||
      (reg.harness === CLAUDE_HARNESS &&
        samePath(reg.sessionsDir, claudeProjectsDirOf(root.projectRoot, root.seat))))
  );
}

function startsOf(regs: readonly SeatRegistration[]): string[] {
  return regs.map((r) => r.startedAt).sort((a, b) => Date.parse(a) - Date.parse(b));
}

/** The root of a seat whose registrations say it runs `harness` (not Pi). */
function seatOn(base: RootBase, harness: string, regs: SeatRegistration[]): Root {
  if (harness !== CLAUDE_HARNESS) return { ...base, kind: "unsupported", harness };
  const engineStarts = startsOf(regs.filter((r) => r.harness === CLAUDE_HARNESS));
  const sessionsDir = claudeProjectsDirOf(base.projectRoot, base.seat);
  return { ...base, sessionsDir, kind: "claude-seat", engineStarts };
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
    if (isClaudeCodeSpec(spec)) {
      const storeDir = resolve(spec.projectsDir);
      const key = `claude-code:${storeDir}`;
      if (!seen.has(key)) roots.push({ kind: "claude-store", storeDir });
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
      roots.push(seatOn(base, foreign.harness, mine));
      continue;
    }
    roots.push({ ...base, kind: "pi", engineStarts: startsOf(mine) });
  }
  // Placeholder rows: a seat on another harness, under a project root that is already approved,
  // naming the standard directory. It has no Pi sessions directory, so no spec names it. A seat
  // on Claude Code reads its own sessions there instead (seatOn).
  const projects = new Map<string, string>();
  for (const r of roots) {
    if (r.kind !== "pi-store" && r.kind !== "claude-store") projects.set(r.projectRoot, r.project);
  }
  for (const reg of regs) {
    if (reg.harness === PI_HARNESS || reg.layout !== "repo" || !SEAT_NAME.test(reg.seat)) continue;
    for (const [projectRoot, project] of projects) {
      const sessionsDir = sessionsDirOf(projectRoot, reg.seat);
      if (seen.has(sessionsDir)) continue;
      const base: RootBase = { projectRoot, project, seat: reg.seat, sessionsDir };
      if (!registrationMatches(reg, base)) continue;
      seen.add(sessionsDir);
      roots.push(seatOn(base, reg.harness, [reg]));
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
export function engineStartedAtFor(root: FileRoot, createdAt: string | null): string | null {
  if (createdAt === null) return null;
  const created = Date.parse(createdAt);
  if (Number.isNaN(created)) return null;
  let found: string | null = null;
  for (const s of root.engineStarts) if (Date.parse(s) <= created) found = s;
  return found;
}
