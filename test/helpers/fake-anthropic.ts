// A loopback stand-in for the Anthropic Messages API, for driving the real pinned Claude Code
// with no network (research: claude-code-2.1.328.md). It answers `POST /v1/messages` streamed
// (server-sent events, as the real API) or whole (`stream: false`), and
// `/v1/messages/count_tokens`, from a script of replies served in order: text, thinking,
// redacted thinking and tool_use blocks with usage numbers, HTTP errors, an error event in the
// middle of a stream, and held replies that stream part of a message and then wait (for an
// interrupt) until released or the client goes away. Every request is recorded whole, so a test
// can compare what Claude Code sent (a resumed session's history) with what it wrote. Listens on
// 127.0.0.1 only.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { countWaiter, readRequestBody, split } from "./fake-http.ts";

/** One content block of a scripted reply, as the API returns it. */
export type ReplyBlock =
  /** Text streamed in `pieces` text_delta events (default 2). */
  | { type: "text"; text: string; pieces?: number }
  /** Reasoning streamed as thinking_delta events, then its signature. */
  | { type: "thinking"; thinking: string; signature?: string; pieces?: number }
  /** Reasoning the API withholds: only its opaque `data`. */
  | { type: "redacted_thinking"; data: string }
  /** A tool call, its input streamed as input_json_delta pieces. */
  | { type: "tool_use"; id: string; name: string; input: unknown; pieces?: number };

/** Token counts as the API reports them; absent ones default (see DEFAULT_USAGE). */
export type ReplyUsage = {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
};

export type AnthropicReply =
  /**
   * A whole message. `stopReason` defaults to `tool_use` when a block is one, else `end_turn`;
   * `id` to `msg_fake_<n>`.
   */
  | {
      kind: "message";
      content: ReplyBlock[];
      stopReason?: string;
      usage?: ReplyUsage;
      model?: string;
      id?: string;
    }
  /** One HTTP error with the API's error body (`{type:"error",error:{type,message}}`). */
  | { kind: "error"; status: number; errorType?: string; message?: string }
  /** Streams `content`, then an `error` event and ends the stream (an overload mid-reply). */
  | { kind: "stream-error"; content?: ReplyBlock[]; errorType?: string; message?: string }
  /**
   * Streams `content` (blocks left open: no content_block_stop for the last one), then text
   * deltas every `tickMs` (when given) until `release()` finishes the message normally or the
   * client goes away (an interrupt).
   */
  | { kind: "hold"; content?: ReplyBlock[]; tickMs?: number; usage?: ReplyUsage };

/** Decides a request's reply instead of the queue; return undefined to take the queue's next. */
export type Responder = (request: RecordedRequest) => AnthropicReply | undefined;

export type RecordedRequest = {
  method: string;
  /** The path with its query, as sent (`/v1/messages?beta=true`). */
  url: string;
  /** `messages`, `count_tokens`, or `other` (answered 404). */
  route: "messages" | "count_tokens" | "other";
  headers: Record<string, string | string[] | undefined>;
  /** The JSON body, or the raw text when it is not JSON. */
  body: unknown;
  /** For `messages`: whether it asked for a stream. */
  stream: boolean;
  /** For `messages`: 1-based position among them. */
  n: number;
};

export type FakeAnthropic = {
  /** `http://127.0.0.1:<port>`, for ANTHROPIC_BASE_URL (Claude Code appends `/v1/...`). */
  readonly baseUrl: string;
  readonly port: number;
  /** Every request, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** The `/v1/messages` requests, in order. */
  messages(): RecordedRequest[];
  /** Replies for the next `/v1/messages` requests, in order. */
  enqueue(...replies: AnthropicReply[]): void;
  /**
   * Replies for the requests `match` accepts, taken before the main queue while any are left:
   * a subagent runs beside its parent, so their requests interleave in no fixed order.
   */
  lane(match: (request: RecordedRequest) => boolean, ...replies: AnthropicReply[]): void;
  /** How many queued replies are left. */
  pending(): number;
  /** Resolves once `count` `/v1/messages` requests have arrived (their replies have started). */
  waitForMessages(count: number, timeoutMs?: number): Promise<void>;
  /** Finishes the held replies (message_delta, message_stop) still open; returns how many. */
  release(): number;
  /** Ends every open stream and stops listening. Safe to call twice. */
  close(): Promise<void>;
};

export const DEFAULT_USAGE: Required<ReplyUsage> = {
  input_tokens: 120,
  output_tokens: 30,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

const FALLBACK: AnthropicReply = { kind: "message", content: [{ type: "text", text: "ok" }] };

export async function startFakeAnthropic(
  options: { replies?: AnthropicReply[]; fallback?: AnthropicReply; respond?: Responder } = {},
): Promise<FakeAnthropic> {
  const queue: AnthropicReply[] = [...(options.replies ?? [])];
  const lanes: { match: (r: RecordedRequest) => boolean; replies: AnthropicReply[] }[] = [];
  const fallback = options.fallback ?? FALLBACK;
  const requests: RecordedRequest[] = [];
  const open = new Set<Held>();
  let messageCount = 0;
  const messagesServed = countWaiter("fake anthropic", () => messageCount);

  const server = createServer((req, res) => {
    void readRequestBody(req).then(({ text, body }) => {
      const path = (req.url ?? "").split("?")[0];
      const route =
        req.method === "POST" && path === "/v1/messages"
          ? "messages"
          : req.method === "POST" && path === "/v1/messages/count_tokens"
            ? "count_tokens"
            : "other";
      const stream = route === "messages" && isObject(body) && body.stream === true;
      const n = route === "messages" ? ++messageCount : 0;
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        route,
        headers: req.headers,
        body,
        stream,
        n,
      };
      requests.push(recorded);
      if (route === "count_tokens") {
        // A rough count: the API's own tokenizer is not ours to imitate.
        json(res, 200, { input_tokens: Math.max(1, Math.ceil(text.length / 4)) });
        return;
      }
      if (route === "other") {
        json(res, 404, {
          type: "error",
          error: { type: "not_found_error", message: `no route ${req.method} ${req.url}` },
        });
        return;
      }
      const lane = lanes.find((l) => l.replies.length > 0 && l.match(recorded));
      const reply =
        options.respond?.(recorded) ?? lane?.replies.shift() ?? queue.shift() ?? fallback;
      const model = isObject(body) && typeof body.model === "string" ? body.model : "claude-fake";
      serve(reply, res, { id: `msg_fake_${String(n).padStart(4, "0")}`, model, stream }, open);
      messagesServed.wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | null = null;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    requests,
    messages: () => requests.filter((r) => r.route === "messages"),
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    lane: (match, ...replies) => {
      lanes.push({ match, replies });
    },
    pending: () => queue.length + lanes.reduce((n, l) => n + l.replies.length, 0),
    waitForMessages: (count, timeoutMs) => messagesServed.waitFor(count, timeoutMs),
    release() {
      const held = [...open];
      for (const h of held) h.finish();
      return held.length;
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        for (const h of [...open]) h.drop();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** A reply held open: finish it normally, or drop it (the server is closing). */
type Held = { finish(): void; drop(): void };

type Envelope = { id: string; model: string; stream: boolean };

function serve(reply: AnthropicReply, res: ServerResponse, env: Envelope, open: Set<Held>): void {
  switch (reply.kind) {
    case "error":
      json(res, reply.status, {
        type: "error",
        error: {
          type: reply.errorType ?? (reply.status === 529 ? "overloaded_error" : "api_error"),
          message: reply.message ?? "fake anthropic error",
        },
      });
      return;
    case "message": {
      const usage = { ...DEFAULT_USAGE, ...reply.usage };
      const stopReason = reply.stopReason ?? stopReasonOf(reply.content);
      const message = { ...env, ...(reply.model ? { model: reply.model } : {}) };
      if (reply.id) message.id = reply.id;
      if (!env.stream) {
        json(res, 200, {
          id: message.id,
          type: "message",
          role: "assistant",
          model: message.model,
          content: reply.content.map(wholeBlock),
          stop_reason: stopReason,
          stop_sequence: null,
          usage,
        });
        return;
      }
      startStream(res, message, usage);
      for (const [i, b] of reply.content.entries()) streamBlock(res, b, i, true);
      endStream(res, stopReason, usage);
      return;
    }
    case "stream-error": {
      const usage = { ...DEFAULT_USAGE };
      if (!env.stream) {
        json(res, 500, {
          type: "error",
          error: { type: reply.errorType ?? "api_error", message: reply.message ?? "fake error" },
        });
        return;
      }
      startStream(res, env, usage);
      for (const [i, b] of (reply.content ?? []).entries()) streamBlock(res, b, i, true);
      event(res, "error", {
        type: "error",
        error: {
          type: reply.errorType ?? "overloaded_error",
          message: reply.message ?? "Overloaded",
        },
      });
      res.end();
      return;
    }
    case "hold": {
      const usage = { ...DEFAULT_USAGE, ...reply.usage };
      const content = reply.content ?? [];
      startStream(res, env, usage);
      for (const [i, b] of content.entries()) streamBlock(res, b, i, i < content.length - 1);
      // The block left open: the last one streamed, or a text block the ticks go to.
      let openIndex = content.length - 1;
      let timer: NodeJS.Timeout | null = null;
      if (reply.tickMs !== undefined) {
        if (content[openIndex]?.type !== "text") {
          if (openIndex >= 0) blockStop(res, openIndex);
          openIndex = content.length;
          event(res, "content_block_start", {
            type: "content_block_start",
            index: openIndex,
            content_block: { type: "text", text: "" },
          });
        }
        const index = openIndex;
        let k = 0;
        timer = setInterval(() => {
          event(res, "content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: `tick ${k++} ` },
          });
        }, reply.tickMs);
      }
      const stop = () => {
        if (timer) clearInterval(timer);
        timer = null;
        open.delete(held);
      };
      const held: Held = {
        finish() {
          stop();
          if (openIndex >= 0) blockStop(res, openIndex);
          endStream(res, stopReasonOf(content), usage);
        },
        drop() {
          stop();
          res.destroy();
        },
      };
      open.add(held);
      res.on("close", stop);
      return;
    }
    default: {
      const never: never = reply;
      throw new Error(`unknown reply ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The text a request's first user message carries beside the `<system-reminder>` blocks Claude
 * Code adds: the prompt that started its thread (a subagent's request starts with its task).
 */
export function firstPromptOf(request: RecordedRequest): string {
  const body = request.body;
  if (!isObject(body) || !Array.isArray(body.messages)) return "";
  const first: unknown = body.messages[0];
  if (!isObject(first)) return "";
  const c = first.content;
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  return c
    .filter((b): b is { type: "text"; text: string } => isObject(b) && b.type === "text")
    .map((b) => b.text)
    .filter((t) => !t.startsWith("<system-reminder>"))
    .join("\n");
}

function stopReasonOf(content: readonly ReplyBlock[]): string {
  return content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
}

/** A block as a non-streaming response carries it. */
function wholeBlock(b: ReplyBlock): object {
  switch (b.type) {
    case "text":
      return { type: "text", text: b.text };
    case "thinking":
      return { type: "thinking", thinking: b.thinking, signature: b.signature ?? "fake-signature" };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: b.data };
    case "tool_use":
      return { type: "tool_use", id: b.id, name: b.name, input: b.input };
  }
}

function startStream(res: ServerResponse, env: Pick<Envelope, "id" | "model">, usage: object) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "request-id": `req_${env.id}`,
  });
  event(res, "message_start", {
    type: "message_start",
    message: {
      id: env.id,
      type: "message",
      role: "assistant",
      model: env.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
}

function endStream(res: ServerResponse, stopReason: string, usage: Required<ReplyUsage>): void {
  event(res, "message_delta", {
    type: "message_delta",
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage,
  });
  event(res, "message_stop", { type: "message_stop" });
  res.end();
}

function streamBlock(res: ServerResponse, b: ReplyBlock, index: number, close: boolean): void {
  const start = (content_block: object) =>
    event(res, "content_block_start", { type: "content_block_start", index, content_block });
  const delta = (d: object) =>
    event(res, "content_block_delta", { type: "content_block_delta", index, delta: d });
  switch (b.type) {
    case "text":
      start({ type: "text", text: "" });
      for (const piece of split(b.text, b.pieces ?? 2)) delta({ type: "text_delta", text: piece });
      break;
    case "thinking":
      start({ type: "thinking", thinking: "", signature: "" });
      for (const piece of split(b.thinking, b.pieces ?? 2)) {
        delta({ type: "thinking_delta", thinking: piece });
      }
      delta({ type: "signature_delta", signature: b.signature ?? "fake-signature" });
      break;
    case "redacted_thinking":
      start({ type: "redacted_thinking", data: b.data });
      break;
    case "tool_use":
      start({ type: "tool_use", id: b.id, name: b.name, input: {} });
      for (const piece of split(JSON.stringify(b.input), b.pieces ?? 2)) {
        delta({ type: "input_json_delta", partial_json: piece });
      }
      break;
  }
  if (close) blockStop(res, index);
}

function blockStop(res: ServerResponse, index: number): void {
  event(res, "content_block_stop", { type: "content_block_stop", index });
}

function event(res: ServerResponse, name: string, data: object): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

function json(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
