// Claude Code session files in the shapes the real binaries write (docs/claude-code-files.md:
// 2.1.328 by default, and the 2.0.76 and 1.0.128 variants where they differ), for tests that
// need a case the real run cannot make on demand (a fork, a 1.0 sidechain, a huge file) and for
// the benchmark's large files. Ids are deterministic. The oracle tests use the real binary.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export type ClaudeVersion = "2.1.328" | "2.0.76" | "1.0.128";

export type ReplyBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: unknown };

export type ToolResult = {
  toolUseId: string;
  content: string | object[];
  isError?: boolean;
  toolUseResult?: unknown;
};

type Rec = Record<string, unknown>;

/** Writes one session's lines as Claude Code appends them; `leaf` is where the next record hangs. */
export class ClaudeWriter {
  readonly lines: Rec[] = [];
  leaf: string | null = null;
  readonly version: ClaudeVersion;
  readonly cwd: string;
  readonly sessionId: string;
  sidechain: boolean;
  agentId: string | undefined;
  #n = 0;
  #msg = 0;
  #clock: number;
  /** uuid of the chunk that holds each tool_use id (2.1 hangs a result on it). */
  readonly #callChunk = new Map<string, string>();

  constructor(o: {
    cwd: string;
    sessionId?: string;
    version?: ClaudeVersion;
    start?: number;
    sidechain?: boolean;
    agentId?: string;
    /** Distinguishes the uuids of several writers in one test. */
    seed?: number;
  }) {
    this.cwd = o.cwd;
    this.sessionId = o.sessionId ?? "5e55e55e-0000-4000-8000-000000000001";
    this.version = o.version ?? "2.1.328";
    this.#clock = o.start ?? Date.parse("2026-03-01T10:00:00.000Z");
    this.sidechain = o.sidechain ?? false;
    this.agentId = o.agentId;
    this.#n = (o.seed ?? 0) * 1_000_000;
  }

  /** A fresh uuid (deterministic). */
  uuid(): string {
    this.#n++;
    return `00000000-0000-4000-8000-${this.#n.toString(16).padStart(12, "0")}`;
  }

  #now(): string {
    this.#clock += 1000;
    return new Date(this.#clock).toISOString();
  }

  #common(): Rec {
    const c: Rec = {
      isSidechain: this.sidechain,
      userType: "external",
      cwd: this.cwd,
      sessionId: this.sessionId,
      version: this.version,
      gitBranch: this.version === "2.1.328" ? "HEAD" : "",
    };
    if (this.agentId !== undefined) c.agentId = this.agentId;
    if (this.version === "2.1.328") c.entrypoint = "sdk-cli";
    return c;
  }

  /** A conversation record hanging on the leaf (or `parent`), which becomes the leaf. */
  record(fields: Rec, parent: string | null = this.leaf): string {
    const uuid = this.uuid();
    this.lines.push({
      parentUuid: parent,
      ...this.#common(),
      ...fields,
      uuid,
      timestamp: this.#now(),
    });
    this.leaf = uuid;
    return uuid;
  }

  /** A line without a uuid (queue operations, titles, costs…). */
  bookkeeping(type: string, fields: Rec = {}): void {
    this.lines.push({ type, ...fields, sessionId: this.sessionId });
  }

  /** A person's prompt, with what 2.1.328 writes around it (queue operations, attachments). */
  prompt(content: string | object[], fields: Rec = {}): string {
    if (this.version === "2.1.328") {
      this.bookkeeping("queue-operation", {
        operation: "enqueue",
        timestamp: this.#now(),
        content: typeof content === "string" ? content : "",
      });
      this.bookkeeping("queue-operation", { operation: "dequeue", timestamp: this.#now() });
    }
    const uuid = this.record({
      type: "user",
      message: { role: "user", content },
      ...(this.version === "2.1.328" ? { promptId: this.uuid(), permissionMode: "default" } : {}),
      ...fields,
    });
    if (this.version === "2.1.328") {
      this.attachment({ type: "date", date: "2026-03-01" }, "Today's date is 2026-03-01.");
      this.attachment({ type: "total_tokens_reminder", text: "<total_tokens>1</total_tokens>" });
    }
    return uuid;
  }

  /** What the model is told as a system reminder (hidden from a person). */
  attachment(attachment: Rec, rendered?: string): string {
    return this.record({
      type: "attachment",
      attachment,
      ...(rendered === undefined
        ? {}
        : {
            rendered: [{ content: `<system-reminder>\n${rendered}\n</system-reminder>` }],
            renderedRole: "system",
          }),
    });
  }

  /**
   * One API reply: one `assistant` line per block, the same message id and usage on each; 2.1
   * writes an api-request line before it and stop_reason on every chunk, older versions
   * `stop_reason: null` on the first.
   */
  reply(
    blocks: ReplyBlock[],
    o: { usage?: Rec; model?: string; stopReason?: string; fields?: Rec } = {},
  ): string[] {
    const id = `msg_${(++this.#msg).toString().padStart(6, "0")}`;
    const stop =
      o.stopReason ?? (blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn");
    const usage = o.usage ?? {
      input_tokens: 100,
      output_tokens: 20,
      cache_creation_input_tokens: 10,
      cache_read_input_tokens: 5,
    };
    if (this.version === "2.1.328") {
      this.bookkeeping("api-request", { id: this.uuid(), timestamp: this.#now(), params: {} });
    }
    const uuids: string[] = [];
    blocks.forEach((block, i) => {
      const content = block.type === "thinking" ? { ...block, signature: "c2ln" } : block;
      // Claude Code writes a reply's `message` (its own `type` inside) before the record's type.
      const uuid = this.record({
        message: {
          id,
          type: "message",
          role: "assistant",
          model: o.model ?? "claude-sonnet-4-5",
          content: [content],
          stop_reason: i === 0 && this.version !== "2.1.328" ? null : stop,
          stop_sequence: null,
          usage,
        },
        requestId: `req_${id}`,
        ...(this.version === "2.1.328" ? { apiBlockIndex: i } : {}),
        type: "assistant",
        ...o.fields,
      });
      if (block.type === "tool_use") this.#callChunk.set(block.id, uuid);
      uuids.push(uuid);
    });
    return uuids;
  }

  /**
   * Tool results, one user line each: 2.1 hangs each on the chunk of its call
   * (`sourceToolAssistantUUID`), older versions chain them below the reply.
   */
  toolResults(results: ToolResult[]): string[] {
    const out: string[] = [];
    for (const r of results) {
      const call = this.#callChunk.get(r.toolUseId);
      const modern = this.version === "2.1.328" && call !== undefined;
      const uuid = this.record(
        {
          type: "user",
          message: {
            role: "user",
            content: [
              {
                tool_use_id: r.toolUseId,
                type: "tool_result",
                content: r.content,
                ...(r.isError ? { is_error: true } : {}),
              },
            ],
          },
          toolUseResult: r.toolUseResult ?? { stdout: "", stderr: "", interrupted: false },
          ...(modern ? { sourceToolAssistantUUID: call } : {}),
        },
        modern ? call : this.leaf,
      );
      out.push(uuid);
    }
    // The next record hangs on the last result, as in every version.
    if (out.length > 0) this.leaf = out[out.length - 1]!;
    return out;
  }

  /** `/compact`: a boundary hanging on the last record logically, the summary, the command. */
  compact(summary: string, preserved?: string): string {
    const before = this.leaf;
    const boundary = this.record(
      {
        type: "system",
        subtype: "compact_boundary",
        content: "Conversation compacted",
        isMeta: false,
        level: "info",
        logicalParentUuid: before,
        compactMetadata: {
          trigger: "manual",
          preTokens: 1234,
          ...(preserved
            ? { preservedSegment: { headUuid: preserved, anchorUuid: "", tailUuid: preserved } }
            : {}),
        },
      },
      null,
    );
    this.record({
      type: "user",
      message: {
        role: "user",
        content: `This session is being continued from a previous conversation.\nSummary:\n${summary}`,
      },
      isVisibleInTranscriptOnly: true,
      isCompactSummary: true,
    });
    this.record({
      type: "user",
      message: {
        role: "user",
        content: "<local-command-caveat>Caveat: not sent to the model.</local-command-caveat>",
      },
      isMeta: true,
    });
    this.record({
      type: "user",
      message: {
        role: "user",
        content:
          "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args></command-args>",
      },
    });
    this.record({
      type: "user",
      message: { role: "user", content: "<local-command-stdout>Compacted </local-command-stdout>" },
    });
    return boundary;
  }

  /** An interrupt mid-reply: the partial reply, then the marker Claude Code writes. */
  interrupt(partial: string | null): void {
    if (partial !== null) {
      this.reply([{ type: "text", text: partial }], {
        stopReason: "",
        fields: { isAbortedMidStream: true },
      });
      const last = this.lines[this.lines.length - 1]!;
      (last.message as Rec).stop_reason = null;
    }
    this.record({
      type: "user",
      message: { role: "user", content: [{ type: "text", text: "[Request interrupted by user]" }] },
    });
  }

  /** A request that failed: Claude Code's synthetic error reply. */
  apiError(text: string): string {
    return this.record({
      type: "assistant",
      message: {
        id: this.uuid(),
        type: "message",
        role: "assistant",
        model: "<synthetic>",
        content: [{ type: "text", text }],
        stop_reason: "stop_sequence",
        usage: { input_tokens: 0, output_tokens: 0 },
      },
      isApiErrorMessage: true,
      apiErrorStatus: 500,
    });
  }

  text(): string {
    return this.lines.map((l) => `${JSON.stringify(l)}\n`).join("");
  }

  /** Writes the file (its folder made). */
  write(file: string): string {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, this.text());
    return file;
  }

  /** Appends the lines written since `from` (a follow test's growth). */
  appendSince(file: string, from: number): void {
    appendFileSync(
      file,
      this.lines
        .slice(from)
        .map((l) => `${JSON.stringify(l)}\n`)
        .join(""),
    );
  }
}

/** A small session of every kind of record: prompts, a reply with thinking, tool calls, results. */
export function richClaudeSession(cwd: string, version: ClaudeVersion = "2.1.328"): ClaudeWriter {
  const w = new ClaudeWriter({ cwd, version });
  w.bookkeeping("custom-title", { customTitle: "Rich session" });
  w.prompt("Write notes and echo");
  w.reply([
    { type: "thinking", thinking: "Two tools at once." },
    { type: "text", text: "Doing both." },
    {
      type: "tool_use",
      id: "toolu_w",
      name: "Write",
      input: { file_path: `${cwd}/n.txt`, content: "a\n" },
    },
    { type: "tool_use", id: "toolu_b", name: "Bash", input: { command: "echo hi" } },
  ]);
  w.toolResults([
    { toolUseId: "toolu_w", content: "File created", toolUseResult: { type: "create" } },
    { toolUseId: "toolu_b", content: "hi", toolUseResult: { stdout: "hi", stderr: "" } },
  ]);
  w.reply([
    { type: "redacted_thinking", data: "b3BhcXVl" },
    { type: "text", text: "Both done." },
  ]);
  w.bookkeeping("last-prompt", { lastPrompt: "Write notes and echo", leafUuid: w.leaf });
  return w;
}
