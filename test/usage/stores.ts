// Synthetic stores in the engines' own shapes for the usage tests: Pi's store
// (`<agent>/sessions/--<cwd>--/<time>_<id>.jsonl`) and Claude Code's
// (`<config>/projects/<encoded cwd>/<session>.jsonl`), with the things that make counting hard:
// branches, a fork that copies its parent's lines, a Claude reply written as one line per
// block, replies either side of midnight, a tier above 200k tokens, a fast reply, a model with
// no price, an old `costUSD`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";

type Rec = Record<string, unknown>;

function write(file: string, lines: readonly Rec[]): void {
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
}

export type PiUsage = { input: number; output: number; cacheRead?: number; cacheWrite?: number };

/** A Pi assistant line with its usage and the cost Pi worked out (USD). */
export function piReply(
  id: string,
  parentId: string | null,
  at: string,
  model: string,
  u: PiUsage,
  cost: number,
): Rec {
  const cacheRead = u.cacheRead ?? 0;
  const cacheWrite = u.cacheWrite ?? 0;
  return {
    type: "message",
    id,
    parentId,
    timestamp: at,
    message: {
      role: "assistant",
      content: [{ type: "text", text: `reply ${id}: its usage is counted once` }],
      api: "anthropic-messages",
      provider: "anthropic",
      model,
      usage: {
        input: u.input,
        output: u.output,
        cacheRead,
        cacheWrite,
        totalTokens: u.input + u.output + cacheRead + cacheWrite,
        cost: { input: cost / 2, output: cost / 2, cacheRead: 0, cacheWrite: 0, total: cost },
      },
      stopReason: "stop",
      timestamp: Date.parse(at),
    },
  };
}

export function piUser(id: string, parentId: string | null, at: string, text: string): Rec {
  return {
    type: "message",
    id,
    parentId,
    timestamp: at,
    message: { role: "user", content: [{ type: "text", text }], timestamp: Date.parse(at) },
  };
}

export function piHeader(id: string, cwd: string, at: string, parentSession?: string): Rec {
  return {
    type: "session",
    version: 3,
    id,
    timestamp: at,
    cwd,
    ...(parentSession ? { parentSession } : {}),
  };
}

/** Writes a Pi session file into `sessionsDir` (Pi's store) for `cwd`; returns its path. */
export function writePiSession(
  sessionsDir: string,
  cwd: string,
  sessionId: string,
  at: string,
  entries: readonly Rec[],
  parentSession?: string,
): string {
  const file = join(sessionsDir, encodeCwd(cwd), `${at.replace(/[:.]/g, "-")}_${sessionId}.jsonl`);
  write(file, [piHeader(sessionId, cwd, at, parentSession), ...entries]);
  return file;
}

/**
 * The Pi store of the agreement tests, in `sessionsDir`: two projects; a conversation with two
 * branches from one reply; a fork that copies a branch (same ids and timestamps) and goes on;
 * replies either side of midnight UTC (and of Tokyo's); a summary line with usage.
 */
export function writePiStore(
  sessionsDir: string,
  projects: { a: string; b: string },
  o: { summary?: boolean } = {},
): string[] {
  const main = [
    piUser("u0000001", null, "2026-11-28T10:00:00.000Z", "first"),
    piReply(
      "a0000001",
      "u0000001",
      "2026-11-28T10:00:05.000Z",
      "claude-sonnet-4-5",
      { input: 1200, output: 340, cacheRead: 5000, cacheWrite: 800 },
      0.0123,
    ),
    piUser("u0000002", "a0000001", "2026-11-28T14:59:00.000Z", "left"),
    piReply(
      "a0000002",
      "u0000002",
      "2026-11-28T14:59:59.500Z",
      "claude-sonnet-4-5",
      { input: 90, output: 1500 },
      0.02277,
    ),
    // A second branch from the first reply.
    piUser("u0000003", "a0000001", "2026-11-28T23:59:59.900Z", "right"),
    piReply(
      "a0000003",
      "u0000003",
      "2026-11-29T00:00:00.100Z",
      "gpt-5",
      { input: 4000, output: 700, cacheRead: 100 },
      0.5101,
    ),
  ];
  const forkedFrom = writePiSession(
    sessionsDir,
    projects.a,
    "01a00000-0000-7000-8000-00000000a001",
    "2026-11-28T10:00:00.000Z",
    main,
  );
  // A fork: Pi copies the path to the fork point with the same ids and timestamps, then goes on.
  const fork = [
    main[0]!,
    main[1]!,
    main[2]!,
    main[3]!,
    piUser("u0000004", "a0000002", "2026-11-30T08:00:00.000Z", "fork goes on"),
    piReply(
      "a0000004",
      "u0000004",
      "2026-11-30T08:00:03.000Z",
      "claude-opus-4-7",
      { input: 10, output: 20, cacheRead: 300000 },
      0.15055,
    ),
  ];
  const forked = writePiSession(
    sessionsDir,
    projects.a,
    "01a00000-0000-7000-8000-00000000a002",
    "2026-11-30T07:59:00.000Z",
    fork,
    forkedFrom,
  );
  const other: Rec[] = [
    piUser("u0000010", null, "2026-11-29T12:00:00.000Z", "hello"),
    piReply(
      "a0000010",
      "u0000010",
      "2026-11-29T12:00:01.000Z",
      "claude-haiku-4-5",
      { input: 70, output: 9 },
      0.000115,
    ),
  ];
  // A compaction: its summary was written by a request whose usage the line records.
  if (o.summary !== false)
    other.push({
      type: "compaction",
      id: "c0000011",
      parentId: "a0000010",
      timestamp: "2026-11-29T12:30:00.000Z",
      summary: "what happened",
      firstKeptEntryId: "a0000010",
      tokensBefore: 79,
      usage: {
        input: 500,
        output: 100,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 600,
        cost: { input: 0.0005, output: 0.0005, cacheRead: 0, cacheWrite: 0, total: 0.001 },
      },
    });
  const second = writePiSession(
    sessionsDir,
    projects.b,
    "01a00000-0000-7000-8000-00000000b001",
    "2026-11-29T12:00:00.000Z",
    other,
  );
  return [forkedFrom, forked, second];
}

export type ClaudeUsage = {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  speed?: "standard" | "fast";
};

/** The lines Claude Code 2.1 writes for one reply: one per block, same id, request id, usage. */
export function claudeReply(o: {
  session: string;
  cwd: string;
  id: string;
  at: string;
  model: string;
  usage: ClaudeUsage;
  blocks?: number;
  parent?: string | null;
  costUSD?: number;
  requestId?: string | null;
}): Rec[] {
  const out: Rec[] = [];
  const n = o.blocks ?? 1;
  let parent = o.parent ?? null;
  for (let i = 0; i < n; i++) {
    const uuid = `${o.id}-line-${i}`;
    const at = new Date(Date.parse(o.at) + i * 30).toISOString();
    out.push({
      parentUuid: parent,
      isSidechain: false,
      userType: "external",
      cwd: o.cwd,
      sessionId: o.session,
      version: "2.1.328",
      type: "assistant",
      uuid,
      timestamp: at,
      ...(o.requestId === null ? {} : { requestId: o.requestId ?? `req_${o.id}` }),
      ...(o.costUSD === undefined ? {} : { costUSD: o.costUSD }),
      message: {
        id: o.id,
        type: "message",
        role: "assistant",
        model: o.model,
        content: [{ type: "text", text: `block ${i} of ${o.id}` }],
        stop_reason: i === n - 1 ? "end_turn" : null,
        usage: o.usage,
      },
    });
    parent = uuid;
  }
  return out;
}

export function claudeUser(
  session: string,
  cwd: string,
  uuid: string,
  at: string,
  text: string,
): Rec {
  return {
    parentUuid: null,
    isSidechain: false,
    userType: "external",
    cwd,
    sessionId: session,
    version: "2.1.328",
    type: "user",
    uuid,
    timestamp: at,
    message: { role: "user", content: text },
  };
}

/** Claude Code's folder name for a cwd: every character but ASCII letters and digits as `-`. */
export function claudeDir(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

export function writeClaudeSession(
  projectsDir: string,
  cwd: string,
  session: string,
  lines: Rec[],
): string {
  const file = join(projectsDir, claudeDir(cwd), `${session}.jsonl`);
  write(file, lines);
  return file;
}

/**
 * The Claude Code store of the agreement tests: two projects; a reply of three blocks (three
 * lines, one request); a session resumed with --fork-session (its history copied, message and
 * request ids kept); models priced exactly, by a contained name, in the tier above 200k, fast,
 * and one with no price; a line with an old `costUSD`; replies either side of midnight.
 */
export function writeClaudeStore(
  projectsDir: string,
  projects: { a: string; b: string },
): string[] {
  const s1 = "0aaaaaaa-0000-4000-8000-000000000001";
  const s2 = "0aaaaaaa-0000-4000-8000-000000000002";
  const s3 = "0aaaaaaa-0000-4000-8000-000000000003";
  const a = projects.a;
  const first = [
    claudeUser(s1, a, "u1", "2026-11-28T09:00:00.000Z", "go"),
    ...claudeReply({
      session: s1,
      cwd: a,
      id: "msg_01",
      at: "2026-11-28T09:00:02.000Z",
      model: "claude-sonnet-4-5-20250929",
      blocks: 3,
      usage: {
        input_tokens: 1000,
        output_tokens: 555,
        cache_creation_input_tokens: 200,
        cache_read_input_tokens: 3000,
      },
    }),
    ...claudeReply({
      session: s1,
      cwd: a,
      id: "msg_02",
      at: "2026-11-28T23:59:59.990Z",
      model: "claude-opus-4-7",
      blocks: 2,
      usage: {
        input_tokens: 10,
        output_tokens: 7000,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 250000,
      },
    }),
    ...claudeReply({
      session: s1,
      cwd: a,
      id: "msg_03",
      at: "2026-11-29T00:00:00.010Z",
      model: "claude-3-5-sonnet-20241022",
      usage: {
        input_tokens: 300000,
        output_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    }),
  ];
  const f1 = writeClaudeSession(projectsDir, a, s1, first);
  // --resume s1 --fork-session: the history is copied into the new session's file (ids kept).
  const forked = [
    ...first.map((l) => ({ ...l, sessionId: s2 })),
    claudeUser(s2, a, "u2", "2026-11-30T10:00:00.000Z", "fork"),
    ...claudeReply({
      session: s2,
      cwd: a,
      id: "msg_04",
      at: "2026-11-30T10:00:01.000Z",
      model: "claude-opus-4-6",
      usage: {
        input_tokens: 50,
        output_tokens: 60,
        cache_creation_input_tokens: 1000,
        cache_read_input_tokens: 0,
        speed: "fast",
      },
    }),
    ...claudeReply({
      session: s2,
      cwd: a,
      id: "msg_05",
      at: "2026-11-30T10:05:00.000Z",
      model: "claude-fake-9",
      usage: { input_tokens: 11, output_tokens: 22 },
    }),
  ];
  const f2 = writeClaudeSession(projectsDir, a, s2, forked);
  const b = projects.b;
  const other = [
    claudeUser(s3, b, "u3", "2026-11-29T15:00:00.000Z", "hi"),
    ...claudeReply({
      session: s3,
      cwd: b,
      id: "msg_06",
      at: "2026-11-29T15:00:01.000Z",
      model: "claude-haiku-4-5-20251001",
      blocks: 2,
      usage: {
        input_tokens: 400,
        output_tokens: 80,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 1200,
      },
    }),
    // An older Claude Code recorded the cost itself.
    ...claudeReply({
      session: s3,
      cwd: b,
      id: "msg_07",
      at: "2026-11-29T15:10:00.000Z",
      model: "claude-sonnet-4-20250514",
      costUSD: 0.4242,
      usage: { input_tokens: 5, output_tokens: 6 },
    }),
  ];
  const f3 = writeClaudeSession(projectsDir, b, s3, other);
  return [f1, f2, f3];
}
