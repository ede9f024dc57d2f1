// CHAT-01 version 1: the records the reader returns (pages, parts, blocks, cursors, refusals,
// catalogue rows, view). schema/chat-01.schema.json is the same contract as JSON Schema;
// docs/contracts.md explains it. Every record here is plain JSON: no undefined, no functions.
import { createHash } from "node:crypto";

/** Ids that CHAT-01 records carry: 1–200 characters, starting alphanumeric. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
/** Native ids longer than this, or outside ID_PATTERN, are hashed (see toChatId). */
export const NATIVE_ID_MAX = 128;
/** The prefix of every hashed id; a native id that starts with it is hashed too. */
export const HASHED_ID_PREFIX = "h-";

/**
 * Maps a native id (a Pi entry id, a tool call id) to a CHAT-01 id: unchanged when it fits,
 * else `h-` + the first 40 hex of its SHA-256. OpenAI tool call ids (`call_x|fc_y`) are the
 * real case; the mapping is deterministic so the same call id always meets its result. A native
 * id that itself starts with `h-` is hashed as well, so a kept id can never equal a hashed one
 * (`a|b` and a native `h-<hash of a|b>` would otherwise both become the same id); two ids map to
 * the same CHAT-01 id only through a 160-bit SHA-256 prefix collision.
 */
export function toChatId(native: string): string {
  if (
    native.length <= NATIVE_ID_MAX &&
    ID_PATTERN.test(native) &&
    !native.startsWith(HASHED_ID_PREFIX)
  ) {
    return native;
  }
  return `${HASHED_ID_PREFIX}${createHash("sha256").update(native, "utf8").digest("hex").slice(0, 40)}`;
}

export const LIMITS = {
  partsPerPage: 100,
  pageBytes: 8 * 1024 * 1024,
  blocksPerPart: 64,
  stringChars: 262_144,
  fragmentJsonBytes: 1024 * 1024,
  partBytes: 4 * 1024 * 1024,
  fileBytes: 256 * 1024 * 1024,
  /** Branches a view lists; `branchCount` says how many the file has. */
  branchesPerView: 100,
} as const;

/** A piece of one long string: fragments with the same block position rejoin in index order. */
export type Fragment = { index: number; count: number };

type Body = { fragment?: Fragment };
export type TextBlock = Body & { type: "text"; text: string };
export type ThinkingBlock = Body & { type: "thinking"; text: string };
/** Redacted reasoning: the text is never available (Pi's `redacted: true`). */
export type UnavailableBlock = { type: "unavailable"; of: "thinking"; text: "" };
export type ToolCallBlock = Body & {
  type: "tool-call";
  id: string;
  name: string;
  /** The call's arguments as JSON text, exactly as recorded. */
  text: string;
};
/** Opens a tool result; the result's content follows as text and image blocks. */
export type ToolResultBlock = {
  type: "tool-result";
  toolCallId: string;
  toolName: string;
  isError: boolean;
  /**
   * A subagent's transcript (the conversation id to open) when the call ran one: Claude Code's
   * Agent/Task tool. Absent otherwise.
   */
  transcript?: string;
};
export type ImageBlock = Body & { type: "image"; mimeType: string; data: string };
export type BashBlock = Body & {
  type: "bash-command" | "bash-output";
  text: string;
};
export type NoticeCode =
  | "malformed-line"
  | "ignored-header"
  | "missing-parent"
  | "loop"
  | "forked-from-earlier-session"
  | "unknown-entry-type"
  | "unknown-role"
  | "unknown-content"
  | "long-field"
  | "stopped";
export type NoticeBlock = Body & { type: "notice"; code: NoticeCode; text: string };

export type Block =
  | TextBlock
  | ThinkingBlock
  | UnavailableBlock
  | ToolCallBlock
  | ToolResultBlock
  | ImageBlock
  | BashBlock
  | NoticeBlock;

export type PartKind =
  | "message"
  | "notice"
  | "compaction"
  | "branch-summary"
  | "custom-message"
  | "bash-execution";
export type Role = "user" | "assistant" | "toolResult";

export type Part = {
  /** Unique within the branch: `<entry>.<index of this part within the entry>`. */
  id: string;
  /** `n.<native entry id>` or `x.<notice id>`. */
  entry: string;
  kind: PartKind;
  role?: Role;
  timestamp?: string;
  /** True on every part of an entry after its first. */
  continues?: boolean;
  /** Extra facts a part's kind carries (exit code, stop reason, custom type...). */
  meta?: PartMeta;
  blocks: Block[];
};

export type PartMeta = {
  stopReason?: string;
  exitCode?: number | null;
  cancelled?: boolean;
  truncated?: boolean;
  customType?: string;
  tokensBefore?: number;
  firstKeptEntry?: string;
  fromEntry?: string;
  line?: number;
  /** An assistant message's model and provider, as Pi recorded them. */
  model?: string;
  provider?: string;
  /** An assistant message's token counts and cost (USD) as Pi recorded them. */
  usage?: Usage;
};

export type Usage = {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Total cost in USD; null when Pi recorded none. */
  cost: number | null;
};

export type Snapshot = { bytes: number; digest: string };

export type Page = {
  conversation: string;
  branch: string;
  parts: Part[];
  nextCursor: string | null;
  snapshot: Snapshot;
  sourceEpoch: string;
};

export type CursorKind = "page" | "follow";
export type Cursor = {
  id: string;
  kind: CursorKind;
  actor: string;
  purpose: string;
  conversation: string;
  branch: string;
  snapshot: Snapshot;
  sourceEpoch: string;
  expiresAt: string;
};

export const READER_REFUSAL_CODES = [
  "unknown-conversation",
  "unknown-branch",
  "unavailable",
  "unsupported-harness",
  "unsafe-path",
  "foreign-project",
  "unreadable",
  "not-a-pi-session",
  "incomplete-header",
  "too-large",
  "cursor-unknown",
  "cursor-expired",
  "cursor-foreign",
  "source-replaced",
  "unknown-actor",
  "unsupported-purpose",
] as const;
export type ReaderRefusalCode = (typeof READER_REFUSAL_CODES)[number];

export type RefusalRecord = { code: string; reconcile: boolean; message: string };

export type BranchInfo = {
  name: string;
  /** The entry that ends this branch (`n.<id>`), or null for an empty `main`. */
  leaf: string | null;
  /** The entry this branch starts from, or null for an empty `main`. */
  start: string | null;
  /** Where it forks: the parent entry and the branch that parent is on; null for a root. */
  forksFrom: { branch: string; entry: string } | null;
  /** Number of entries on the path from the root to the leaf. */
  depth: number;
  /**
   * The name a person gave the branch (Pi: the latest label still set on an entry of its own
   * segment, branch-labels.ts), else the first words of its first entry with text; at most 60
   * characters, or null.
   */
  label: string | null;
};

export type View = {
  defaultBranch: string;
  /** Pi's default leaf (`n.<id>`): the last valid entry in file order; null when none. */
  defaultLeaf: string | null;
  /**
   * At most LIMITS.branchesPerView branches, in file order: the page's branch, the default
   * branch, those forking from the page's branch (up to half the room), the ones it forks from
   * (nearest first), then the first others. Every branch opens by name, listed or not.
   */
  branches: BranchInfo[];
  /** How many branches the conversation has (listed or not). */
  branchCount: number;
  /** The snapshot left out a trailing partial line. */
  incomplete: boolean;
  forkedFromEarlierSession: boolean;
  /**
   * The conversation it was forked from, when the header's parent session is a file of an
   * approved root (matched by its path alone; nothing else is opened); else null.
   */
  forkedFrom: ForkedFrom | null;
  /** Lines that are not JSON objects with a string id (each is also a notice part). */
  unreadableLines: number;
};

export type CatalogueRow = {
  conversation: string;
  project: string;
  seat: string;
  fileName: string | null;
  sessionId: string | null;
  createdAt: string | null;
  size: number | null;
  modifiedAt: string | null;
  engineStartedAt: string | null;
  title: string | null;
  /** The first prompt on one line, at most 240 code points and "…", or null. */
  preview: string | null;
  /** Prompts and replies in the file (every branch; tool results are not counted), or null. */
  messageCount: number | null;
  /** The model last set or answering, from the file's first and last 64 KiB, or null. */
  model: string | null;
  /** Set when the row cannot be opened: `unsupported-harness`, or why the file is refused. */
  unsupportedReason: ReaderRefusalCode | null;
  harness: string | null;
  /** The catalogue's conversation this one was forked from (View.forkedFrom), or null. */
  forkedFrom: ForkedFrom | null;
};

/** A parent conversation in the same approved roots: its id and title (null when untitled). */
export type ForkedFrom = { conversation: string; title: string | null };

export type RefusedRoot = {
  project: string;
  seat: string;
  code: ReaderRefusalCode;
  message: string;
};

export type Catalogue = {
  ok: true;
  conversations: CatalogueRow[];
  refusedRoots: RefusedRoot[];
  generatedAt: string;
};
