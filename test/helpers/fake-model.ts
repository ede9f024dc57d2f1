// A loopback OpenAI chat-completions server for driving the real Pi with no network (research §4).
// Scripted replies are served in order as SSE: text deltas, streamed tool calls, finish_reason,
// a usage chunk and [DONE]; a slow mode ticks until the client goes away; an error mode answers
// one HTTP error. Every request is recorded. Listens on 127.0.0.1 only.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { countWaiter, readRequestBody, split } from "./fake-http.ts";

export type ToolCallReply = { id: string; name: string; arguments: unknown };

export type ModelReply =
  /** `text` streamed in `pieces` deltas, then finish_reason "stop". */
  | { kind: "text"; text: string; pieces?: number }
  /** Optional text, then each call's arguments JSON streamed in `pieces`, finish "tool_calls". */
  | { kind: "tool-calls"; calls: ToolCallReply[]; text?: string; pieces?: number }
  /** "tick 0 ", "tick 1 ", ... one every `tickMs` until the client disconnects. */
  | { kind: "slow"; tickMs: number }
  /** One HTTP error response, no stream. */
  | { kind: "error"; status: number; body?: string };

export type RecordedRequest = {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
};

export type FakeModel = {
  /** `http://127.0.0.1:<port>/v1`, for models.json `baseUrl`. */
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: readonly RecordedRequest[];
  /** Replies for the next chat-completions requests, in order. */
  enqueue(...replies: ModelReply[]): void;
  /** Drops the replies no request has taken yet, and returns them. */
  dropQueued(): ModelReply[];
  /** Resolves once `count` chat-completions requests have arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  /** Ends every open stream and stops listening. Safe to call twice. */
  close(): Promise<void>;
};

const FALLBACK: ModelReply = { kind: "text", text: "ok" };

export async function startFakeModel(
  options: { replies?: ModelReply[]; fallback?: ModelReply } = {},
): Promise<FakeModel> {
  const queue: ModelReply[] = [...(options.replies ?? [])];
  const fallback = options.fallback ?? FALLBACK;
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let completionCount = 0;
  const completions = countWaiter("fake model", () => completionCount);
  let nextCompletion = 1;

  const server = createServer((req, res) => {
    void readRequestBody(req).then(({ body }) => {
      requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      completionCount++;
      completions.wake();
      const reply = queue.shift() ?? fallback;
      serve(reply, res, `chatcmpl-${nextCompletion++}`, modelOf(body), timers);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | null = null;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    dropQueued: () => queue.splice(0),
    waitForRequests: (count, timeoutMs) => completions.waitFor(count, timeoutMs),
    close() {
      closed ??= new Promise<void>((resolve) => {
        for (const t of timers) clearInterval(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

function serve(
  reply: ModelReply,
  res: ServerResponse,
  id: string,
  model: string,
  timers: Set<NodeJS.Timeout>,
): void {
  if (reply.kind === "error") {
    res.writeHead(reply.status, { "content-type": "application/json" });
    res.end(
      reply.body ??
        JSON.stringify({ error: { message: "fake model error", type: "server_error" } }),
    );
    return;
  }
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const chunk = (delta: object, finish: string | null = null) =>
    sse(res, {
      id,
      object: "chat.completion.chunk",
      created: 0,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
  const finish = (reason: "stop" | "tool_calls") => {
    chunk({}, reason);
    sse(res, {
      id,
      object: "chat.completion.chunk",
      created: 0,
      model,
      choices: [],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
    });
    res.end("data: [DONE]\n\n");
  };
  chunk({ role: "assistant", content: "" });
  switch (reply.kind) {
    case "text":
      for (const piece of split(reply.text, reply.pieces ?? 3)) chunk({ content: piece });
      finish("stop");
      return;
    case "tool-calls":
      if (reply.text) for (const piece of split(reply.text, 2)) chunk({ content: piece });
      reply.calls.forEach((call, index) => {
        chunk({
          tool_calls: [
            { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
          ],
        });
        for (const piece of split(JSON.stringify(call.arguments), reply.pieces ?? 3)) {
          chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
        }
      });
      finish("tool_calls");
      return;
    case "slow": {
      let n = 0;
      const timer = setInterval(() => chunk({ content: `tick ${n++} ` }), reply.tickMs);
      timers.add(timer);
      res.on("close", () => {
        clearInterval(timer);
        timers.delete(timer);
      });
      return;
    }
    default: {
      const never: never = reply;
      throw new Error(`unknown reply ${JSON.stringify(never)}`);
    }
  }
}

function sse(res: ServerResponse, data: object): void {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

function modelOf(body: unknown): string {
  if (
    typeof body === "object" &&
    body !== null &&
    "model" in body &&
    typeof body.model === "string"
  ) {
    return body.model;
  }
  return "fake";
}
