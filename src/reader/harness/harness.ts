// The harness seam (SPEC §8): what the shared reader — safe-fs, snapshots, cursors, pages, views,
// refusals — asks of one agent's session format. Each harness (harness/pi/, harness/claude-code/)
// answers it for its own files; nothing above this interface knows which one it reads.
import type { MessageLine } from "../message-count.ts";
import type { SessionFormat } from "../parse-sink.ts";
import type { DraftPart } from "../parts.ts";
import type { FileRoot } from "../sources.ts";
import type { ParsedSession } from "../tree.ts";

export type HarnessName = "pi" | "claude-code";

/** What a catalogue row learns from the first and last bytes of a session file. */
export type FileFacts = {
  /** The project the row shows, when the file says (a store's rows: the recorded cwd). */
  project?: string;
  /** The session's own id (CHAT-01 form), or null. */
  sessionId: string | null;
  /** The session's creation time as recorded (at most 256 characters), or null. */
  createdAt: string | null;
  title: string | null;
  /** The first prompt, on one line, at most PREVIEW_CHARS code points (title.ts), or null. */
  preview: string | null;
  /** The model last set or answering in those bytes, or null. */
  model: string | null;
  /** The parent session's path as the header records it (fork-parent.ts), if any. */
  parentPath?: string;
};

export interface Harness {
  readonly name: HarnessName;
  /** The session files among a root directory's entries, sorted (the catalogue's rows). */
  sessionNames(names: readonly string[]): string[];
  /**
   * How a file under `root` is parsed from its first byte, fed its whole lines step by step as
   * the shared snapshot read passes them (parse-sink.ts): the head check refuses what the seed
   * says the file is not (`not-a-pi-session`, `incomplete-header`, `foreign-project`). A follow
   * continues a parse with the same scanner (ExtendedParse); nothing here sees a whole file.
   */
  format(root: FileRoot): SessionFormat;
  /**
   * Parses a snapshot held whole (whole lines; `incomplete` when bytes followed the last
   * newline), as `format` does stepwise: search's indexer reads a file it indexes whole.
   */
  parse(buf: Buffer, incomplete: boolean, root: FileRoot): ParsedSession;
  /**
   * A catalogue row's facts from the file's first bytes (`head`, whole lines up to 64 KiB, or
   * 1 MiB when the first line is longer; `partial` when more of the file follows them) and its
   * last (`tail`, whole lines, or null when the head holds the whole file). Refuses as `parse`.
   */
  describe(head: Buffer, partial: boolean, tail: Buffer | null, root: FileRoot): FileFacts;
  /** Whether a line is a prompt or a reply, from its bytes alone (a row's message count). */
  isMessageLine: MessageLine;
  /**
   * What one entry line shows, from its object alone (no other line: a tool result's name is
   * ""): search indexes its text, and checks a hit against it. Null for a hidden entry.
   */
  draftOf(entry: Record<string, unknown>): DraftPart | null;
}
