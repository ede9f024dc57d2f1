// Where a controlled Claude Code's sessions are and what the controller reads of one. Its config
// folder (CLAUDE_CONFIG_DIR) is the seat's: `<project>/.pi/state/<seat>/claude`, never
// `~/.claude` (a live root), so its sessions land in
// `<project>/.pi/state/<seat>/claude/projects/<encoded project>/<session id>.jsonl`, where the
// reader's Claude seat root reads them. A session's key is its id (the file's name, which
// `--session-id` fixes before launch); its leaf is the last record with a place in the tree.
// A new session has no file until its first turn. Reads only; never writes a session file.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { ControlRefusal } from "../../refusal.ts";
import { isSeatName } from "../guard.ts";
import type { SessionHead, SessionPlace } from "../harness.ts";

const SESSION_FILE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/;
/** Claude Code shortens a folder name past this many characters, with a hash (its rule). */
const DIR_NAME_MAX = 200;

/** The seat's Claude Code config folder (CLAUDE_CONFIG_DIR). */
export function claudeConfigDir(projectRoot: string, seat: string): string {
  return join(projectRoot, ".pi", "state", seat, "claude");
}

/** Claude Code's folder name for a working directory. */
export function encodeCwd(cwd: string): string {
  const name = cwd.replace(/[^a-zA-Z0-9]/g, "-");
  if (name.length <= DIR_NAME_MAX) return name;
  let h = 0;
  for (let i = 0; i < cwd.length; i++) h = (Math.imul(h, 31) + cwd.charCodeAt(i)) | 0;
  return `${name.slice(0, DIR_NAME_MAX)}-${Math.abs(h).toString(36)}`;
}

/** Where session `sessionId` of this seat is (or will be, before its first turn). */
export function claudeSessionFile(projectRoot: string, seat: string, sessionId: string): string {
  const root = resolve(projectRoot);
  return join(claudeConfigDir(root, seat), "projects", encodeCwd(root), `${sessionId}.jsonl`);
}

/** The session id a correctly named file carries, or null. */
export function sessionIdOf(file: string): string | null {
  return SESSION_FILE.exec(basename(file))?.[1] ?? null;
}

export const CLAUDE_SESSION_PLACE: SessionPlace = {
  projectOf(file, seat) {
    if (sessionIdOf(file) === null) return null;
    const encoded = dirname(file);
    const projects = dirname(encoded);
    const claude = dirname(projects);
    const seatDir = dirname(claude);
    const state = dirname(seatDir);
    const dotPi = dirname(state);
    const project = dirname(dotPi);
    const placed =
      basename(projects) === "projects" &&
      basename(claude) === "claude" &&
      basename(state) === "state" &&
      basename(dotPi) === ".pi" &&
      isSeatName(basename(seatDir)) &&
      (seat === undefined || basename(seatDir) === seat) &&
      basename(encoded) === encodeCwd(project);
    return placed ? project : null;
  },
  describe: (seat) =>
    `<project>/.pi/state/${seat ?? "<seat>"}/claude/projects/<encoded project>/<session id>.jsonl`,
};

/** The conversation id the reader's Claude seat root gives this file. */
export function claudeConversationId(projectRoot: string, seat: string, file: string): string {
  const identity = ["claude-code", resolve(projectRoot), seat, basename(dirname(file))];
  const h = createHash("sha256").update(JSON.stringify([...identity, basename(file)]));
  return `cc-${h.digest("hex").slice(0, 40)}`;
}

/** What the file holds now: its complete lines' bytes and digest, and its leaf. */
export type ClaudeFileState = {
  exists: boolean;
  bytes: number;
  digest: string;
  leafId: string | null;
};

/**
 * Reads the file: every record that names a session must name this one (a file holding another
 * session's records is not this session: `mapping`); a missing file is a session before its
 * first turn. Refuses `configuration` for a file not named by a session id.
 */
export function readClaudeFile(file: string): ClaudeFileState {
  const id = sessionIdOf(file);
  if (id === null) {
    throw new ControlRefusal("configuration", `${basename(file)} is not named <session id>.jsonl`);
  }
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { exists: false, bytes: 0, digest: "", leafId: null };
    throw new ControlRefusal("mapping", `the session file can't be read (${code})`);
  }
  const complete = buf.subarray(0, buf.lastIndexOf(0x0a) + 1);
  let leafId: string | null = null;
  for (const line of complete.toString("utf8").split("\n")) {
    if (line.trim() === "") continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      // Claude Code skips a line it can't parse when it resumes; so does the leaf.
      continue;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) continue;
    const r = v as Record<string, unknown>;
    if (typeof r.sessionId === "string" && r.sessionId !== id) {
      throw new ControlRefusal(
        "mapping",
        `the file holds records of session ${r.sessionId.slice(0, 64)}, not ${id}`,
      );
    }
    if (typeof r.uuid === "string" && "parentUuid" in r) leafId = r.uuid;
  }
  return {
    exists: true,
    bytes: complete.length,
    digest: createHash("sha256").update(complete).digest("hex"),
    leafId,
  };
}

/** What was appended to a file since `basis`: bookkeeping only (record types), or why not. */
export type StartupAppend = { ok: true; types: string[] } | { ok: false; why: string };

/**
 * Claude Code appends bookkeeping records as it starts (2.1.328: an `atis-latch` line, written
 * while or just after it answers `initialize`, so a load check sees it or not by timing). They
 * have no place in the tree and change nothing it resumed. The load check accepts exactly that:
 * the basis's bytes unchanged, then complete lines that are records of this session with a type
 * and no `uuid`/`parentUuid`. Anything else (a conversation record, another session's, a line
 * that is not a record, a changed prefix) is another writer, and the check fails.
 */
export function appendedSince(file: string, basis: ClaudeFileState): StartupAppend {
  const id = sessionIdOf(file);
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      return basis.exists ? { ok: false, why: "the file is gone" } : { ok: true, types: [] };
    }
    return { ok: false, why: `the file can't be read (${code})` };
  }
  if (buf.length < basis.bytes) return { ok: false, why: "the file is shorter" };
  const prefix = buf.subarray(0, basis.bytes);
  const digest = basis.exists ? createHash("sha256").update(prefix).digest("hex") : "";
  if (digest !== basis.digest) return { ok: false, why: "its earlier lines changed" };
  const rest = buf.subarray(basis.bytes, buf.lastIndexOf(0x0a) + 1);
  const types: string[] = [];
  for (const line of rest.toString("utf8").split("\n")) {
    if (line === "") continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      return { ok: false, why: "a line that is not a record was added" };
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      return { ok: false, why: "a line that is not a record was added" };
    }
    const r = v as Record<string, unknown>;
    if (typeof r.type !== "string" || "uuid" in r || "parentUuid" in r) {
      return { ok: false, why: "a conversation record was added" };
    }
    if (r.sessionId !== undefined && r.sessionId !== id) {
      return { ok: false, why: "a record of another session was added" };
    }
    types.push(r.type.slice(0, 64));
  }
  return { ok: true, types };
}

/** The session's key (its id) and leaf. */
export function readClaudeHead(file: string): SessionHead {
  const state = readClaudeFile(file);
  return { sessionKey: sessionIdOf(file) as string, leafId: state.leafId };
}
