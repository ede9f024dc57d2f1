// The demo's loopback model: a tiny OpenAI chat-completions server on 127.0.0.1 that streams
// (SSE) a short reply to any prompt, so `npm start` can steer a real Pi without an account.
// It echoes the prompt; a prompt that mentions reading a file gets a `read` tool call on
// DEMO_FILE, and the tool's result gets a one-line summary. Demo code: no state, no auth.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** The file (in Pi's working directory) the model asks Pi to read. */
export const DEMO_FILE = "hello.txt";
/** The provider and model id to declare in models.json. */
export const DEMO_MODEL = { provider: "loopback", id: "demo-echo" } as const;
const WORD_MS = 40;
const MAX_BODY = 8 * 1024 * 1024;

export type DemoModel = { baseUrl: string; close(): Promise<void> };

type Reply = { text: string; read: boolean };

/** Starts the server on a free loopback port. */
export async function startDemoModel(): Promise<DemoModel> {
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions" || body === null) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "not found" } }));
        return;
      }
      stream(res, replyTo(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** models.json for Pi's agent directory, declaring the demo model at `baseUrl`. */
export function demoModelsJson(baseUrl: string): string {
  const model = { id: DEMO_MODEL.id, name: "Demo echo", reasoning: false, input: ["text"] };
  const provider = {
    baseUrl,
    api: "openai-completions",
    apiKey: "none",
    compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
    models: [{ ...model, contextWindow: 128000, maxTokens: 4096 }],
  };
  return `${JSON.stringify({ providers: { [DEMO_MODEL.provider]: provider } }, null, 2)}\n`;
}

function replyTo(body: unknown): Reply {
  const messages = isObj(body) && Array.isArray(body.messages) ? body.messages : [];
  const last: unknown = messages.at(-1);
  if (isObj(last) && last.role === "tool") {
    const seen = textOf(last.content).trim().split("\n")[0]?.slice(0, 200) ?? "";
    return { text: `I read ${DEMO_FILE}. Its first line says: "${seen}"`, read: false };
  }
  const said = isObj(last) ? textOf(last.content).trim() : "";
  if (/\b(read|file)\b/i.test(said)) return { text: `Let me read ${DEMO_FILE}.`, read: true };
  return {
    text:
      `You said: "${said.slice(0, 500)}". I am the demo's loopback model, so I only echo; ` +
      "ask me to read a file to see a tool call.",
    read: false,
  };
}

/** Streams the reply word by word, then the tool call if any, finish_reason and [DONE]. */
function stream(res: ServerResponse, reply: Reply): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (delta: object, finish: string | null = null) =>
    res.write(
      `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
    );
  const words = reply.text.split(/(?<= )/);
  let i = 0;
  const timer = setInterval(() => {
    if (i < words.length) {
      chunk(i === 0 ? { role: "assistant", content: words[i++] } : { content: words[i++] });
      return;
    }
    clearInterval(timer);
    if (reply.read) {
      const call = { id: `call_${Date.now()}`, type: "function" };
      const fn = { name: "read", arguments: JSON.stringify({ path: DEMO_FILE }) };
      chunk({ tool_calls: [{ index: 0, ...call, function: fn }] });
    }
    chunk({}, reply.read ? "tool_calls" : "stop");
    res.end("data: [DONE]\n\n");
  }, WORD_MS);
  // Pi aborts the request on an interrupt: stop streaming to a closed socket.
  res.on("close", () => clearInterval(timer));
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (isObj(p) && typeof p.text === "string" ? p.text : "")).join("");
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The request's JSON body, or null when it is too large or not JSON. */
function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on("end", () => {
      try {
        resolve(size > MAX_BODY ? null : JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        // Not JSON: answered 404 like any request the demo model doesn't serve.
        resolve(null);
      }
    });
    req.on("error", () => resolve(null));
  });
}
