// Session fixtures written by the pinned Pi's own SessionManager, and an oracle that asks Pi how
// it reads a file. Pi is imported lazily (about 0.6 s). The oracle only ever opens a temporary
// copy: Pi's open can write to the file it loads (research §1.2 steps 3, 5, 6).
import { appendFileSync, copyFileSync, existsSync, mkdirSync, renameSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { SessionManager } from "@earendil-works/pi-coding-agent";
import { mulberry32 } from "./prng.ts";

type PiModule = typeof import("@earendil-works/pi-coding-agent");
type PiMessage = Parameters<SessionManager["appendMessage"]>[0];
type AssistantMessage = Extract<PiMessage, { role: "assistant" }>;
type AssistantContent = AssistantMessage["content"][number];
type ToolCall = Extract<AssistantContent, { type: "toolCall" }>;

let piModule: Promise<PiModule> | undefined;

function loadPi(): Promise<PiModule> {
  piModule ??= import("@earendil-works/pi-coding-agent");
  return piModule;
}

/** A 1×1 PNG. */
export const TINY_PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/** `<base>/<project>/.pi/state/<seat>/sessions`, created. Defaults: project "project", seat "main". */
export function makeProject(
  base: string,
  opts: { project?: string; seat?: string } = {},
): { projectRoot: string; seat: string; sessionsDir: string } {
  const seat = opts.seat ?? "main";
  const projectRoot = join(base, opts.project ?? "project");
  const sessionsDir = join(projectRoot, ".pi", "state", seat, "sessions");
  mkdirSync(sessionsDir, { recursive: true });
  return { projectRoot, seat, sessionsDir };
}

/** One JSONL line for `obj`, with its LF. */
export function entryLine(obj: object): string {
  return `${JSON.stringify(obj)}\n`;
}

/** Appends whole lines in one write, as Pi's `_persist` does (`session-manager.js:739-768`). */
export function appendRawLines(file: string, lines: object[]): void {
  appendFileSync(file, lines.map(entryLine).join(""));
}

function usage(input: number, output: number): AssistantMessage["usage"] {
  return {
    input,
    output,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    totalTokens: input + output,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function assistant(
  content: AssistantContent[],
  timestamp: number,
  stopReason: AssistantMessage["stopReason"],
  extra: { errorMessage?: string } = {},
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    responseId: `msg_${timestamp.toString(36)}`,
    usage: usage(1200, 300),
    stopReason,
    timestamp,
    ...extra,
  };
}

function toolResult(call: ToolCall, text: string, timestamp: number): PiMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text }],
    isError: false,
    timestamp,
  };
}

/**
 * Creates the session with `SessionManager.create` (which names it `<iso-ts>_<uuidv7>.jsonl`
 * in `sessionsDir`, `session-manager.js:645-667`), lets `write` append, then renames it to
 * `<name>.jsonl`. The rename comes last because the manager keeps writing to the first name.
 * Pi writes nothing before the first assistant message (§1.3), so `write` must append one.
 * Throws if the target exists.
 */
async function writeWithPi(
  sessionsDir: string,
  name: string,
  cwd: string,
  write: (sm: SessionManager) => void,
): Promise<{ path: string; sm: SessionManager }> {
  const target = join(sessionsDir, name.endsWith(".jsonl") ? name : `${name}.jsonl`);
  if (existsSync(target)) throw new Error(`session file exists: ${target}`);
  const { SessionManager } = await loadPi();
  const sm = SessionManager.create(cwd, sessionsDir);
  write(sm);
  const written = sm.getSessionFile();
  if (written === undefined || !existsSync(written)) {
    throw new Error("Pi flushed nothing: the session needs an assistant message");
  }
  renameSync(written, target);
  return { path: target, sm };
}

/**
 * A small session with every entry kind and message role the reader handles. Tree (leaves ◆):
 *
 *   modelChange → thinkingLevel → user1 → assistantToolUse → toolResult → assistantFinal
 *     → label(user1) → sessionInfo → userImage → assistantImage → userOpenAI → assistantOpenAI
 *     → toolResultOpenAI → assistantOpenAIFinal → customMessageShown → customMessageHidden
 *     → custom → bashExecution → userRedacted → assistantRedacted → userAborted
 *     → assistantAborted → compaction → userAfterCompaction → mainTip ◆ (the default leaf)
 *   assistantFinal (forkPoint) → forkUser → forkAssistant ◆           (branch())
 *   assistantImage (summaryPoint) → branchSummary → summaryUser → summaryAssistant ◆
 *   null → root2User → root2Assistant ◆                               (resetLeaf())
 *
 * The file order is: main line up to assistantOpenAIFinal, the fork, the summary branch, the
 * second root, then the rest of the main line. `ids` names every entry above, plus
 * `toolCallId` ("toolu_01…") and `openAIToolCallId` ("call_abc123|fc_def456"). mainTip's text
 * holds U+2028, U+2029, non-ASCII and an emoji. Session name: "Rich fixture".
 */
export async function writeRichSession(
  sessionsDir: string,
  name: string,
  cwd: string,
): Promise<{ path: string; ids: Record<string, string> }> {
  const ids: Record<string, string> = {};
  let clock = Date.now() - 3_600_000;
  const at = (): number => {
    clock += 1500;
    return clock;
  };
  const readCall: ToolCall = {
    type: "toolCall",
    id: "toolu_01A9sTestReadCall00001",
    name: "read",
    arguments: { path: "a.txt" },
  };
  const bashCall: ToolCall = {
    type: "toolCall",
    id: "call_abc123|fc_def456",
    name: "bash",
    arguments: { command: "ls -la" },
  };
  ids.toolCallId = readCall.id;
  ids.openAIToolCallId = bashCall.id;
  const { path } = await writeWithPi(sessionsDir, name, cwd, (sm) => {
    const user = (content: string | Extract<PiMessage, { role: "user" }>["content"]): string =>
      sm.appendMessage({ role: "user", content, timestamp: at() });
    const reply = (text: string): string =>
      sm.appendMessage(assistant([{ type: "text", text }], at(), "stop"));

    ids.modelChange = sm.appendModelChange("anthropic", "claude-sonnet-4-5");
    ids.thinkingLevel = sm.appendThinkingLevelChange("medium");
    ids.user1 = user("Read a.txt and tell me what it says.");
    ids.assistantToolUse = sm.appendMessage(
      assistant(
        [
          {
            type: "thinking",
            thinking: "The user wants a.txt. I'll read it.",
            thinkingSignature: "sig-think-1",
          },
          { type: "text", text: "Let me read the file." },
          readCall,
        ],
        at(),
        "toolUse",
      ),
    );
    ids.toolResult = sm.appendMessage(toolResult(readCall, "hello from a.txt\n", at()));
    ids.assistantFinal = reply("a.txt says: hello from a.txt");
    ids.label = sm.appendLabelChange(ids.user1, "start");
    ids.sessionInfo = sm.appendSessionInfo("Rich fixture");
    ids.userImage = user([
      { type: "text", text: "What is in this picture?" },
      { type: "image", data: TINY_PNG_BASE64, mimeType: "image/png" },
    ]);
    ids.assistantImage = reply("A single pixel.");
    ids.userOpenAI = user("List the files.");
    ids.assistantOpenAI = sm.appendMessage(
      assistant([{ type: "text", text: "Listing." }, bashCall], at(), "toolUse"),
    );
    ids.toolResultOpenAI = sm.appendMessage(toolResult(bashCall, "a.txt\nb.txt\n", at()));
    ids.assistantOpenAIFinal = reply("Two files: a.txt and b.txt.");
    const mainSoFar = ids.assistantOpenAIFinal;

    ids.forkPoint = ids.assistantFinal;
    sm.branch(ids.forkPoint);
    ids.forkUser = user("Actually, summarise a.txt in French.");
    ids.forkAssistant = reply("a.txt dit : bonjour.");

    ids.summaryPoint = ids.assistantImage;
    ids.branchSummary = sm.branchWithSummary(
      ids.summaryPoint,
      "The user asked for a French summary of a.txt; abandoned.",
    );
    ids.summaryUser = user("Describe the picture in more detail.");
    ids.summaryAssistant = reply("It is one transparent-ish pixel.");

    sm.resetLeaf();
    ids.root2User = user("Start over: what is this project?");
    ids.root2Assistant = reply("A fixture for the reader tests.");

    sm.branch(mainSoFar);
    ids.customMessageShown = sm.appendCustomMessageEntry(
      "mosaic-note",
      "A note shown to the user.",
      true,
      { level: "info" },
    );
    ids.customMessageHidden = sm.appendCustomMessageEntry(
      "mosaic-hidden",
      [{ type: "text", text: "Hidden context for the model." }],
      false,
    );
    ids.custom = sm.appendCustomEntry("mosaic-state", { step: 3, files: ["a.txt"] });
    ids.bashExecution = sm.appendMessage({
      role: "bashExecution",
      command: "cat b.txt",
      output: "contents of b\n",
      exitCode: 0,
      cancelled: false,
      truncated: false,
      timestamp: at(),
    });
    ids.userRedacted = user("Think hard about b.txt.");
    ids.assistantRedacted = sm.appendMessage(
      assistant(
        [
          { type: "thinking", thinking: "", thinkingSignature: "opaque-redacted", redacted: true },
          { type: "text", text: "b.txt holds a single line." },
        ],
        at(),
        "stop",
      ),
    );
    ids.userAborted = user("Now rewrite everything.");
    ids.assistantAborted = sm.appendMessage(
      assistant([{ type: "text", text: "Rewriting fi" }], at(), "aborted", {
        errorMessage: "Request was aborted",
      }),
    );
    ids.compaction = sm.appendCompaction(
      "Read a.txt and b.txt, listed files; a rewrite was aborted.",
      ids.userOpenAI,
      12345,
      { readFiles: ["a.txt", "b.txt"], modifiedFiles: [] },
    );
    ids.userAfterCompaction = user("Where were we?");
    ids.mainTip = reply("Line one\u2028line two\u2029then: naïve café → 日本語 🙂");
  });
  return { path, ids };
}

const WORDS = (
  "the reader session entry branch leaf parent cursor snapshot file line byte offset " +
  "tool result output error warning passed failed test build compile module import export " +
  "function const return value string number object array map set promise await async " +
  "naïve café → 日本語 ✓ 🙂"
).split(" ");
const FILES = ["src/reader/pi.ts", "src/index.ts", "test/reader.test.ts", "README.md", "a.txt"];
const TOOLS = ["read", "bash", "grep", "edit"] as const;

/** About `bytes` UTF-8 bytes of log-like text, driven by `rand`. */
function pseudoText(rand: () => number, bytes: number): string {
  const parts: string[] = [];
  let n = 0;
  while (n < bytes) {
    const file = FILES[Math.floor(rand() * FILES.length)] ?? "a.txt";
    let line = `${file}:${1 + Math.floor(rand() * 900)}:`;
    const words = 4 + Math.floor(rand() * 14);
    for (let i = 0; i < words; i++) line += ` ${WORDS[Math.floor(rand() * WORDS.length)] ?? ""}`;
    line += "\n";
    parts.push(line);
    n += Buffer.byteLength(line);
  }
  return parts.join("");
}

/** A Pi-shaped turn: user → assistant(thinking, text, tool calls) → tool results → assistant. */
function appendTurn(
  sm: SessionManager,
  rand: () => number,
  clock: () => number,
  turn: number,
  outputBudget: number,
): string {
  const userId = sm.appendMessage({
    role: "user",
    content: `Turn ${turn}: ${pseudoText(rand, 60 + Math.floor(rand() * 200)).trim()}`,
    timestamp: clock(),
  });
  const calls: ToolCall[] = [];
  const nCalls = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < nCalls; i++) {
    const name = TOOLS[Math.floor(rand() * TOOLS.length)] ?? "read";
    const file = FILES[Math.floor(rand() * FILES.length)] ?? "a.txt";
    calls.push({
      type: "toolCall",
      id: `toolu_${turn.toString(36)}_${i}_${Math.floor(rand() * 1e9).toString(36)}`,
      name,
      arguments: name === "bash" ? { command: `grep -n reader ${file}` } : { path: file },
    });
  }
  sm.appendMessage(
    assistant(
      [
        { type: "thinking", thinking: pseudoText(rand, 100 + Math.floor(rand() * 400)) },
        { type: "text", text: pseudoText(rand, 40 + Math.floor(rand() * 160)).trim() },
        ...calls,
      ],
      clock(),
      "toolUse",
    ),
  );
  for (const call of calls) {
    const wanted = 2048 + Math.floor(rand() * 14 * 1024);
    const size = Math.max(64, Math.min(wanted, Math.floor(outputBudget / nCalls)));
    sm.appendMessage(toolResult(call, pseudoText(rand, size), clock()));
  }
  sm.appendMessage(
    assistant(
      [{ type: "text", text: pseudoText(rand, 80 + Math.floor(rand() * 300)).trim() }],
      clock(),
      "stop",
    ),
  );
  return userId;
}

/** Roughly the JSON bytes of a turn besides its tool outputs. */
const TURN_OVERHEAD = 4096;

/**
 * A long session in the shape of research §2 `gen.mjs`: turns of user → assistant(thinking, text,
 * 1–3 tool calls) → tool results (2–16 KiB of seeded log-like text each) → assistant, until the
 * file holds at least `targetBytes` (the last turn's outputs shrink to fit; overshoot is about one
 * turn's overhead). Opens with model_change, thinking_level_change, session_info ("Long
 * fixture"). With `branches`, after turn 2: a label on the first user message, a `branch()` fork
 * from turn 1, a `branchWithSummary` from turn 0 and a `resetLeaf` second root, each one turn
 * long, then back to the main tip (the default leaf is always on the main line). A compaction
 * follows the turn that crosses each multiple of `compactionEveryBytes`, keeping that turn.
 * Content (and so the byte count and entry sequence) depends only on `seed`; Pi's entry ids and
 * entry timestamps are its own. Message timestamps run on a seeded clock from 2026-01-01.
 * `ids` names mainTip, and with branches forkTip, summaryTip, root2Tip.
 */
export async function writeLongSession(
  sessionsDir: string,
  name: string,
  cwd: string,
  opts: {
    targetBytes: number;
    seed?: number;
    branches?: boolean;
    compactionEveryBytes?: number;
  },
): Promise<{ path: string; bytes: number; entries: number; ids: Record<string, string> }> {
  const rand = mulberry32(opts.seed ?? 1);
  let now = Date.UTC(2026, 0, 1);
  const clock = (): number => {
    now += 1000 + Math.floor(rand() * 30_000);
    return now;
  };
  const ids: Record<string, string> = {};
  let entries = 0;
  const { path } = await writeWithPi(sessionsDir, name, cwd, (sm) => {
    const file = (): string => sm.getSessionFile() ?? "";
    const size = (): number => (existsSync(file()) ? statSync(file()).size : 0);
    const room = (): number => opts.targetBytes - size() - TURN_OVERHEAD;
    sm.appendModelChange("anthropic", "claude-sonnet-4-5");
    sm.appendThinkingLevelChange("medium");
    sm.appendSessionInfo("Long fixture");
    const userIds: string[] = [];
    const tips: string[] = [];
    let turn = 0;
    const mainTurn = (): void => {
      userIds.push(appendTurn(sm, rand, clock, turn++, room()));
      tips.push(sm.getLeafId() ?? "");
    };
    for (let i = 0; i < 3; i++) mainTurn();
    if (opts.branches) {
      const [tip0, tip1] = tips;
      const firstUser = userIds[0];
      if (tip0 === undefined || tip1 === undefined || firstUser === undefined) {
        throw new Error("three main turns come first");
      }
      const labelTip = sm.appendLabelChange(firstUser, "first-question");
      sm.branch(tip1);
      appendTurn(sm, rand, clock, turn++, room());
      ids.forkTip = sm.getLeafId() ?? "";
      sm.branchWithSummary(tip0, pseudoText(rand, 300).trim());
      appendTurn(sm, rand, clock, turn++, room());
      ids.summaryTip = sm.getLeafId() ?? "";
      sm.resetLeaf();
      appendTurn(sm, rand, clock, turn++, room());
      ids.root2Tip = sm.getLeafId() ?? "";
      sm.branch(labelTip);
    }
    const every = opts.compactionEveryBytes;
    let nextCompaction = every ?? Number.POSITIVE_INFINITY;
    while (size() < opts.targetBytes) {
      mainTurn();
      if (every !== undefined && size() >= nextCompaction) {
        const kept = userIds[userIds.length - 1] ?? "";
        sm.appendCompaction(pseudoText(rand, 1500).trim(), kept, Math.round(size() / 4), {
          readFiles: [...FILES],
          modifiedFiles: [],
        });
        while (nextCompaction <= size()) nextCompaction += every;
      }
    }
    ids.mainTip = sm.getLeafId() ?? "";
    entries = sm.getEntries().length;
  });
  return { path, bytes: statSync(path).size, entries, ids };
}

export type PiOracle = {
  defaultLeafId: string | null;
  /** Childless nodes of `getTree()`, first seen in its order, with `getBranch(id)` ids. */
  leaves: { id: string; path: string[] }[];
  entryIds: string[];
  sessionName: string | undefined;
  /** A parent cycle (after later-wins on duplicate ids): `leaves` is then left empty. */
  hasCycle: boolean;
};

/**
 * What the pinned Pi makes of `file`, asked of a copy in a fresh temp dir (removed after); the
 * original is never opened by Pi. Throws what `SessionManager.open` throws (not a Pi session).
 * On a parent cycle neither `getTree` nor `getBranch` is called: `getBranch` has no guard
 * (`session-manager.js:958-968`), and with duplicate ids `getTree` can link a node under its own
 * descendant and then loop forever while sorting children.
 */
export async function piOracle(file: string): Promise<PiOracle> {
  const { SessionManager } = await loadPi();
  const dir = await mkdtemp(join(tmpdir(), "pi-oracle-"));
  try {
    const copy = join(dir, basename(file));
    copyFileSync(file, copy);
    const sm = SessionManager.open(copy, dir);
    const entries: unknown[] = sm.getEntries();
    const entryIds = entries.flatMap((e) => {
      const id = isRecord(e) ? e.id : undefined;
      return typeof id === "string" ? [id] : [];
    });
    const hasCycle = hasParentCycle(entries);
    const leaves: PiOracle["leaves"] = [];
    if (!hasCycle) {
      const seen = new Set<string>();
      const stack = sm.getTree().reverse();
      for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
        const id: unknown = node.entry.id;
        if (node.children.length === 0 && typeof id === "string" && !seen.has(id)) {
          seen.add(id);
          leaves.push({ id, path: sm.getBranch(id).map((e) => e.id) });
        }
        for (let i = node.children.length - 1; i >= 0; i--) {
          const child = node.children[i];
          if (child !== undefined) stack.push(child);
        }
      }
    }
    return {
      defaultLeafId: sm.getLeafId(),
      leaves,
      entryIds,
      sessionName: sm.getSessionName(),
      hasCycle,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

/** Whether walking parents (later line wins per id, as Pi's byId) ever revisits an entry. */
function hasParentCycle(entries: unknown[]): boolean {
  const parentOf = new Map<string, unknown>();
  for (const e of entries) {
    if (isRecord(e) && typeof e.id === "string") parentOf.set(e.id, e.parentId);
  }
  const done = new Set<string>();
  for (const start of parentOf.keys()) {
    const walk = new Set<string>();
    let id: unknown = start;
    while (typeof id === "string" && parentOf.has(id) && !done.has(id)) {
      if (walk.has(id)) return true;
      walk.add(id);
      id = parentOf.get(id);
    }
    for (const w of walk) done.add(w);
  }
  return false;
}
