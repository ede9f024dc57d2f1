// A fake engine modelling pinned Pi 0.85.1's RPC mode (research §3–5, seed "Findings against
// pinned Pi"). Run as `node test/control/fake-pi.ts --mode rpc ... --session <file>`.
// Deterministic: entry ids come from the header id and a counter, replies from the prompt text.
// Like Pi it appends to the session file at startup and on each message_end, and is silent
// until its first command. FAKE_PI_SCRIPT names a JSON file of hold points and delays.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { encodeLine, LineSplitter } from "../../src/control/engine/framing.ts";
import { type Message, Session, SessionError } from "./fake-pi-session.ts";

/** Named points a script can hold or delay at. A point reached n times is numbered 1..n. */
export const HOLD_POINTS = [
  "first-response", // before the first response is written
  "run-start", // after a prompt's response, before agent_start
  "user-message-end", // after a user message_end is written and persisted
  "assistant-start", // before the assistant message_start
  "assistant-delta", // before each text_delta
  "assistant-end", // before the assistant message_end
  "agent-end", // before agent_end
  "settled", // before agent_settled
  "abort-response", // after the run settled, before abort's response
  "clear-queue-response", // after clear_queue's queue_update, before its response
] as const;
export type HoldPoint = (typeof HOLD_POINTS)[number];

/**
 * FAKE_PI_SCRIPT. At a held point the fake creates `<holdDir>/<point>.<n>.reached` and waits
 * until `<holdDir>/<point>.<n>.release` exists. `delays` sleep at a point first.
 */
export type FakePiScript = {
  holdDir?: string;
  holds?: HoldPoint[];
  delays?: Partial<Record<HoldPoint, number>>;
  /** Interval of the endless stream a prompt containing "slow" gets. Default 20 ms. */
  tickMs?: number;
  /** Every prompt fails preflight with this message, as Pi's "No API key" does. */
  promptError?: string;
  /** Exit at startup, before reading stdin, like Pi with a missing header cwd (exit 1). */
  startupExit?: { code: number; stderr: string };
  /** Another input path acting at a point (see Foreign). */
  foreign?: Foreign[];
};

/**
 * A stand-in for an input path other than this RPC stream (under the seal there is none, so
 * whatever it does is an overlap the controller must read). It acts the n-th time (default 1)
 * the fake reaches `at`, after any delay or hold there, and writes no response: `run` gives the
 * run about to start this user message instead of its prompt's (N8; at `run-start`), `steer`
 * queues `text` as a steer with its queue_update, `abort` aborts the running run.
 */
export type Foreign = { at: HoldPoint; n?: number; act: "run" | "steer" | "abort"; text?: string };

// Pi's hidden built-in command, listed even with --no-extensions (research §3.2).
const LLAMA = {
  name: "llama",
  description: "Manage llama.cpp router models",
  source: "extension",
  sourceInfo: {
    path: "<inline:llama.cpp>",
    source: "inline",
    scope: "temporary",
    origin: "top-level",
  },
};
const BUSY =
  "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";
const NO_KEY =
  "No API key found for the selected model.\n\nUse /login to log into a provider via OAuth or API key.";
const ZERO_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

type Command = { type?: unknown; id?: unknown; [key: string]: unknown };
type Args = { session: string; model: string | null; thinking: string | null };

function parseArgs(argv: string[]): Args {
  const sealed = new Set(["--no-extensions", "--no-prompt-templates", "--no-themes", "--offline"]);
  const args: Args = { session: "", model: null, thinking: null };
  let provider: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) die(2, `fake-pi: ${a} needs a value`);
      return v;
    };
    if (sealed.has(a)) continue;
    if (a === "--mode") {
      if (value() !== "rpc") die(2, "fake-pi: only --mode rpc");
    } else if (a === "--session") args.session = value();
    else if (a === "--model") args.model = value();
    else if (a === "--provider") provider = value();
    else if (a === "--thinking") args.thinking = value();
    else die(2, `fake-pi: unknown argument ${a}`);
  }
  if (!args.session) die(2, "fake-pi: --session is required");
  if (provider && args.model && !args.model.includes("/")) args.model = `${provider}/${args.model}`;
  return args;
}

function die(code: number, message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

function loadScript(): FakePiScript {
  const file = process.env.FAKE_PI_SCRIPT;
  return file ? (JSON.parse(readFileSync(file, "utf8")) as FakePiScript) : {};
}

class FakePi {
  readonly args: Args;
  readonly script: FakePiScript;
  readonly session: Session;
  readonly thinkingLevel: string;
  readonly #holdCounts = new Map<string, number>();
  #responded = false;
  #steering: string[] = [];
  #followUp: string[] = [];
  #run: { abort: AbortController; done: Promise<void> } | null = null;
  #dialogs = new Map<string, (answer: Command | null) => void>();
  #uiCounter = 0;
  #responseCounter = 0;
  #foreignRun: string | null = null;

  constructor(args: Args, script: FakePiScript) {
    this.args = args;
    this.script = script;
    try {
      this.session = new Session(args.session);
    } catch (e) {
      if (e instanceof SessionError) die(1, e.message);
      throw e;
    }
    if (!existsSync(String(this.session.header.cwd))) {
      die(1, `Stored session working directory does not exist: ${this.session.header.cwd}`);
    }
    // A model without reasoning clamps every level to "off" (sdk.js, clampThinkingLevel).
    this.thinkingLevel = "off";
    this.#startupAppend();
  }

  // sdk.js:80-83 and 239-252: messages on the branch but no thinking entry gain one; a session
  // with no messages gains model_change (with a model) and thinking_level_change on every start.
  #startupAppend(): void {
    const branch = this.session.branch();
    if (branch.some((e) => e.type === "message")) {
      if (!branch.some((e) => e.type === "thinking_level_change")) {
        this.session.append({ type: "thinking_level_change", thinkingLevel: this.thinkingLevel });
      }
      return;
    }
    const model = this.#model();
    if (model)
      this.session.append({ type: "model_change", provider: model.provider, modelId: model.id });
    this.session.append({ type: "thinking_level_change", thinkingLevel: this.thinkingLevel });
  }

  #model(): { provider: string; id: string } | null {
    const m = this.args.model;
    if (!m) return null;
    const slash = m.indexOf("/");
    return slash === -1
      ? { provider: "fake", id: m }
      : { provider: m.slice(0, slash), id: m.slice(slash + 1) };
  }

  #modelObject(): Record<string, unknown> {
    const m = this.#model();
    const base = {
      id: m?.id ?? "unknown",
      name: m?.id ?? "unknown",
      api: m ? "openai-completions" : "unknown",
      provider: m?.provider ?? "unknown",
      baseUrl: "",
      reasoning: false,
      input: m ? ["text"] : [],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: m ? 128000 : 0,
      maxTokens: m ? 4096 : 0,
    };
    return base;
  }

  out(record: object): void {
    process.stdout.write(encodeLine(record));
  }

  async respond(
    id: unknown,
    command: unknown,
    fields: { data?: unknown; error?: string },
  ): Promise<void> {
    if (!this.#responded) {
      this.#responded = true;
      if (this.wants("first-response")) await this.hold("first-response");
    }
    const base: Record<string, unknown> = { id, type: "response", command };
    if (fields.error !== undefined) this.out({ ...base, success: false, error: fields.error });
    else if (fields.data !== undefined) this.out({ ...base, success: true, data: fields.data });
    else this.out({ ...base, success: true });
  }

  /**
   * Whether `point` has a delay or hold. Callers await `hold` only then: even `await undefined`
   * yields, and an unscripted fake must write a synchronous command's response at once, as Pi
   * does (rpc-mode.js:627-633), so responses keep the order of their commands.
   */
  wants(point: HoldPoint): boolean {
    return (
      Boolean(this.script.delays?.[point]) ||
      Boolean(this.script.holds?.includes(point)) ||
      Boolean(this.script.foreign?.some((f) => f.at === point))
    );
  }

  async hold(point: HoldPoint): Promise<void> {
    const n = (this.#holdCounts.get(point) ?? 0) + 1;
    this.#holdCounts.set(point, n);
    const delay = this.script.delays?.[point];
    if (delay) await sleep(delay);
    if (this.script.holds?.includes(point) && this.script.holdDir) {
      const base = `${this.script.holdDir}/${point}.${n}`;
      writeFileSync(`${base}.reached`, "");
      // Polling a marker file keeps the fake free of any extra channel to the test.
      while (!existsSync(`${base}.release`)) await sleep(5);
    }
    for (const f of this.script.foreign ?? []) {
      if (f.at !== point || (f.n ?? 1) !== n) continue;
      if (f.act === "run") this.#foreignRun = f.text ?? "foreign";
      else if (f.act === "abort") this.#run?.abort.abort();
      else {
        this.#steering.push(f.text ?? "foreign");
        this.#queueUpdate();
      }
    }
  }

  onLine(line: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (e) {
      void this.respond(undefined, "parse", {
        error: `Failed to parse command: ${(e as Error).message}`,
      });
      return;
    }
    const cmd = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Command;
    if (cmd.type === "extension_ui_response") {
      const answer = typeof cmd.id === "string" ? this.#dialogs.get(cmd.id) : undefined;
      if (answer) answer(cmd);
      return;
    }
    void this.handle(cmd);
  }

  async handle(cmd: Command): Promise<void> {
    const { id, type } = cmd;
    switch (type) {
      case "get_state":
        return this.respond(id, type, {
          data: {
            model: this.#modelObject(),
            thinkingLevel: this.thinkingLevel,
            isStreaming: this.#run !== null,
            isCompacting: false,
            steeringMode: "one-at-a-time",
            followUpMode: "one-at-a-time",
            sessionFile: this.session.file,
            sessionId: this.session.header.id,
            autoCompactionEnabled: true,
            messageCount: this.session.contextMessages(),
            pendingMessageCount: this.#steering.length + this.#followUp.length,
          },
        });
      case "get_commands":
        return this.respond(id, type, { data: { commands: [LLAMA] } });
      case "get_tree":
        return this.respond(id, type, {
          data: { tree: this.session.tree(), leafId: this.session.leafId },
        });
      case "get_entries": {
        let entries = this.session.entries;
        if (typeof cmd.since === "string") {
          const at = entries.findIndex((e) => e.id === cmd.since);
          if (at === -1) return this.respond(id, type, { error: `Entry not found: ${cmd.since}` });
          entries = entries.slice(at + 1);
        }
        return this.respond(id, type, { data: { entries, leafId: this.session.leafId } });
      }
      case "get_messages":
        return this.respond(id, type, {
          data: {
            messages: this.session
              .branch()
              .flatMap((e) => (e.type === "message" ? [e.message] : [])),
          },
        });
      case "prompt":
        return this.#prompt(cmd);
      case "abort":
        return this.#abort(id);
      case "clear_queue": {
        const cleared = { steering: this.#steering, followUp: this.#followUp };
        this.#steering = [];
        this.#followUp = [];
        this.#queueUpdate();
        if (this.wants("clear-queue-response")) await this.hold("clear-queue-response");
        return this.respond(id, type, { data: cleared });
      }
      default:
        return this.respond(id, type, { error: `Unknown command: ${String(type)}` });
    }
  }

  async #prompt(cmd: Command): Promise<void> {
    const { id } = cmd;
    const text = typeof cmd.message === "string" ? cmd.message : "";
    // agent-session.js:824-832: an extension command runs at once, even while streaming.
    if (text === "/llama" || text.startsWith("/llama ")) {
      this.out({
        type: "extension_ui_request",
        id: this.#uiId(),
        method: "notify",
        message: "/llama is available in interactive mode",
        notifyType: "warning",
      });
      return this.respond(id, "prompt", {});
    }
    if (this.#run) {
      const behavior = cmd.streamingBehavior;
      if (behavior !== "steer" && behavior !== "followUp")
        return this.respond(id, "prompt", { error: BUSY });
      // agent-session.js:1046-1075: queue, queue_update, then the response.
      (behavior === "steer" ? this.#steering : this.#followUp).push(text);
      this.#queueUpdate();
      return this.respond(id, "prompt", {});
    }
    if (this.script.promptError !== undefined)
      return this.respond(id, "prompt", { error: this.script.promptError });
    if (!this.#model()) return this.respond(id, "prompt", { error: NO_KEY });
    const abort = new AbortController();
    let finish!: () => void;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    this.#run = { abort, done };
    // rpc-mode.js:298-320: the response comes after preflight, before agent_start.
    await this.respond(id, "prompt", {});
    try {
      await this.#runAgent(text, abort.signal);
    } finally {
      this.#run = null;
      finish();
    }
  }

  // agent-loop.js:43-170: turns until no steering or follow-up remains, or a stop is aborted.
  async #runAgent(first: string, signal: AbortSignal): Promise<void> {
    if (this.wants("run-start")) await this.hold("run-start");
    const runMessages: Message[] = [];
    this.out({ type: "agent_start" });
    let text: string | undefined = this.#foreignRun ?? first;
    this.#foreignRun = null;
    let firstTurn = true;
    while (text !== undefined) {
      this.out({ type: "turn_start" });
      const user: Message = {
        role: "user",
        content: [{ type: "text", text }],
        timestamp: Date.now(),
      };
      if (!firstTurn) this.#queueUpdate(); // agent-session.js:362-378: dequeued before message_start
      firstTurn = false;
      this.out({ type: "message_start", message: user });
      this.out({ type: "message_end", message: user });
      this.session.append({ type: "message", message: user });
      runMessages.push(user);
      if (this.wants("user-message-end")) await this.hold("user-message-end");
      const assistant = await this.#assistant(text, signal);
      runMessages.push(assistant);
      this.out({ type: "turn_end", message: assistant, toolResults: [] });
      if (assistant.stopReason === "aborted") break;
      text = this.#steering.shift() ?? this.#followUp.shift();
    }
    if (this.wants("agent-end")) await this.hold("agent-end");
    this.out({ type: "agent_end", messages: runMessages, willRetry: false });
    if (this.wants("settled")) await this.hold("settled");
    this.out({ type: "agent_settled" });
  }

  async #assistant(prompt: string, signal: AbortSignal): Promise<Message> {
    let reply = `echo: ${prompt}`;
    const dialog = /^dialog:(select|confirm|input|editor)\b/.exec(prompt)?.[1];
    if (dialog && !signal.aborted) {
      const answer = await this.#dialog(dialog, signal);
      reply = `dialog ${dialog}: ${answer === null ? "aborted" : JSON.stringify(answer)}`;
    }
    if (this.wants("assistant-start")) await this.hold("assistant-start");
    const model = this.#model()!;
    const message: Message = {
      role: "assistant",
      content: [],
      api: "openai-completions",
      provider: model.provider,
      model: model.id,
      usage: ZERO_USAGE,
      stopReason: "pending",
      timestamp: Date.now(),
      responseId: `fake-${++this.#responseCounter}`,
    };
    this.out({ type: "message_start", message });
    let text = "";
    const pieces = /\bslow\b/.test(prompt) ? ticks() : chunks(reply);
    let started = false;
    for (const piece of pieces) {
      if (signal.aborted) break;
      if (this.wants("assistant-delta")) await this.hold("assistant-delta");
      if (/\bslow\b/.test(prompt)) await abortableSleep(this.script.tickMs ?? 20, signal);
      if (signal.aborted) break;
      if (!started) this.#update({ type: "text_start", contentIndex: 0 });
      started = true;
      text += piece;
      this.#update({ type: "text_delta", contentIndex: 0, delta: piece });
    }
    if (started) this.#update({ type: "text_end", contentIndex: 0, content: text });
    const final: Message = {
      ...message,
      content: text ? [{ type: "text", text }] : [],
      stopReason: signal.aborted ? "aborted" : "stop",
      ...(signal.aborted ? { errorMessage: "Request was aborted" } : {}),
    };
    if (this.wants("assistant-end")) await this.hold("assistant-end");
    this.out({ type: "message_end", message: final });
    this.session.append({ type: "message", message: final });
    return final;
  }

  #update(assistantMessageEvent: object): void {
    this.out({ type: "message_update", usage: ZERO_USAGE, assistantMessageEvent });
  }

  // A dialog as an extension's tool_call hook would raise it (research §5); abort cancels it.
  #dialog(method: string, signal: AbortSignal): Promise<Command | null> {
    const id = this.#uiId();
    const fields: Record<string, Record<string, unknown>> = {
      select: { title: "Pick one", options: ["Allow", "Block"] },
      confirm: { title: "Confirm", message: "Go ahead?" },
      input: { title: "Name", placeholder: "type here" },
      editor: { title: "Edit", prefill: "draft" },
    };
    return new Promise((resolve) => {
      const settle = (answer: Command | null) => {
        this.#dialogs.delete(id);
        signal.removeEventListener("abort", onAbort);
        resolve(answer);
      };
      const onAbort = () => settle(null);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#dialogs.set(id, settle);
      this.out({ type: "extension_ui_request", id, method, ...fields[method] });
    });
  }

  #uiId(): string {
    return `00000000-0000-4000-8000-${(++this.#uiCounter).toString(16).padStart(12, "0")}`;
  }

  // agent-session.js:1222-1228: abort waits for idle, so its response follows agent_settled.
  async #abort(id: unknown): Promise<void> {
    const run = this.#run;
    if (run) {
      run.abort.abort();
      await run.done;
    }
    if (this.wants("abort-response")) await this.hold("abort-response");
    return this.respond(id, "abort", {});
  }

  #queueUpdate(): void {
    this.out({
      type: "queue_update",
      steering: [...this.#steering],
      followUp: [...this.#followUp],
    });
  }
}

function chunks(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function* ticks(): Generator<string> {
  for (let n = 0; ; n++) yield `tick ${n} `;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}

function main(): void {
  const script = loadScript();
  if (script.startupExit) die(script.startupExit.code, script.startupExit.stderr);
  const pi = new FakePi(parseArgs(process.argv.slice(2)), script);
  const splitter = new LineSplitter();
  process.stdin.on("data", (chunk: Buffer) => {
    for (const line of splitter.push(chunk)) pi.onLine(line);
  });
  // rpc-mode.js:581-598, 641-644: EOF exits 0 after flushing stdout; signals exit 128+n.
  process.stdin.on("end", () => {
    const last = splitter.end();
    if (last !== null) pi.onLine(last);
    process.stdout.write("", () => process.exit(0));
  });
  process.on("SIGTERM", () => process.exit(143));
  process.on("SIGHUP", () => process.exit(129));
}

if (import.meta.main) main();
