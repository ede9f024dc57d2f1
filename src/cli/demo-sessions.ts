// The demo project `npm start` shows: conversations written by the pinned Pi's own
// SessionManager (a dev dependency: `npm start` is a dev command), under
// `<projectRoot>/.pi/state/<seat>/sessions/<name>.jsonl` with header cwd = projectRoot. Pi
// flushes nothing before the first assistant message (session-manager.js:739-768), so every
// conversation has one. Only the malformed line and the live tail are appended by hand.
import { appendFileSync, existsSync, mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { SessionManager } from "@earendil-works/pi-coding-agent";
import { type BoardSpec, type SeatRegistration, sessionsDirOf } from "../index.ts";
import { writeDemoClaudeSeat } from "./demo-claude.ts";
import { messageEntry } from "./demo-grow.ts";

type PiMessage = Parameters<SessionManager["appendMessage"]>[0];
type Assistant = Extract<PiMessage, { role: "assistant" }>;
type ToolCall = Extract<Assistant["content"][number], { type: "toolCall" }>;
type UserContent = Extract<PiMessage, { role: "user" }>["content"];

/** A 1×1 PNG. */
const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

export const DEMO_SEATS = { main: "main", review: "review", other: "claude" } as const;
/** The conversations, by file name (without `.jsonl`), and the seat each is under. */
export const DEMO_FILES = {
  tour: "main",
  branches: "main",
  compaction: "main",
  long: "main",
  malformed: "main",
  hostile: "main",
  live: "main",
  review: "review",
} as const;
export const LONG_TURNS = 110;

export type DemoProject = {
  projectRoot: string;
  specs: BoardSpec[];
  registrations: SeatRegistration[];
  /** The conversation the live writer grows. */
  liveFile: string;
};

/** Where a demo project at `projectRoot` keeps its files, and the sources that read it. */
export function demoProject(projectRoot: string): DemoProject {
  const seat = (s: string): BoardSpec => ({ kind: "repository", projectRoot, seat: s });
  return {
    projectRoot,
    specs: [seat(DEMO_SEATS.main), seat(DEMO_SEATS.review)],
    // A seat on Claude Code: its sessions are read where a controlled Claude Code writes them.
    registrations: [
      {
        seat: DEMO_SEATS.other,
        layout: "repo",
        project: projectRoot,
        sessionsDir: sessionsDirOf(projectRoot, DEMO_SEATS.other),
        harness: "claude-code",
        startedAt: "2026-01-01T00:00:00.000Z",
      },
    ],
    liveFile: join(sessionsDirOf(projectRoot, DEMO_SEATS.main), "live.jsonl"),
  };
}

/** Writes every demo conversation under `projectRoot` (which must not hold them yet). */
export async function writeDemoProject(projectRoot: string): Promise<DemoProject> {
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  let clock = Date.now() - 6 * 3600_000;
  const at = () => (clock += 7_000);
  const write = (name: keyof typeof DEMO_FILES, fill: (w: Writer) => void): string => {
    const dir = sessionsDirOf(projectRoot, DEMO_FILES[name]);
    mkdirSync(dir, { recursive: true });
    const target = join(dir, `${name}.jsonl`);
    if (existsSync(target)) throw new Error(`demo session exists: ${target}`);
    const sm = SessionManager.create(projectRoot, dir);
    fill(writerFor(sm, at));
    const written = sm.getSessionFile();
    if (written === undefined || !existsSync(written)) throw new Error("Pi flushed nothing");
    // Last, because the manager keeps writing to the name it chose.
    renameSync(written, target);
    return target;
  };

  write("tour", writeTour);
  write("branches", writeBranches);
  write("compaction", writeCompaction);
  write("long", writeLong);
  const malformed = write("malformed", (w) => {
    w.title("A session with a broken line");
    w.user("Append a line to notes.txt.");
    w.reply("Done: notes.txt has one more line.");
  });
  // A line cut short, as a crash mid-write leaves it; the conversation goes on after it.
  appendFileSync(malformed, '{"type":"message","id":"c0ffee00","parentId":"\n');
  appendFileSync(malformed, `${JSON.stringify(messageEntry(malformed, "user", "Is it there?"))}\n`);
  appendFileSync(
    malformed,
    `${JSON.stringify(messageEntry(malformed, "assistant", "Yes, the reader skipped the broken line and kept going."))}\n`,
  );
  write("hostile", writeHostile);
  write("live", (w) => {
    w.title("Live: a session that keeps growing");
    w.user("Watch the build and tell me as things change.");
    w.reply("Watching. New messages will appear here every few seconds.");
  });
  write("review", writeReview);
  writeDemoClaudeSeat(projectRoot, DEMO_SEATS.other);
  return demoProject(projectRoot);
}

type Writer = {
  sm: SessionManager;
  at: () => number;
  title(name: string): void;
  user(content: UserContent): string;
  reply(text: string, extra?: Partial<Assistant>): string;
  assistant(content: Assistant["content"], stopReason?: Assistant["stopReason"]): string;
  tool(call: ToolCall, text: string, isError?: boolean): string;
};

function writerFor(sm: SessionManager, at: () => number): Writer {
  const assistant = (
    content: Assistant["content"],
    stopReason: Assistant["stopReason"] = "stop",
    extra: Partial<Assistant> = {},
  ): string =>
    sm.appendMessage({
      role: "assistant",
      content,
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: {
        input: 1200,
        output: 300,
        cacheRead: 0,
        cacheWrite: 0,
        reasoning: 0,
        totalTokens: 1500,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason,
      timestamp: at(),
      ...extra,
    });
  return {
    sm,
    at,
    title: (name) => {
      sm.appendSessionInfo(name);
    },
    user: (content) => sm.appendMessage({ role: "user", content, timestamp: at() }),
    reply: (text, extra = {}) =>
      assistant([{ type: "text", text }], extra.stopReason ?? "stop", extra),
    assistant: (content, stopReason = "toolUse") => assistant(content, stopReason),
    tool: (call, text, isError = false) =>
      sm.appendMessage({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text }],
        isError,
        timestamp: at(),
      }),
  };
}

function call(id: string, name: string, args: Record<string, unknown>): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

function writeTour(w: Writer): void {
  w.sm.appendModelChange("anthropic", "claude-sonnet-4-5");
  w.sm.appendThinkingLevelChange("medium");
  w.title("Tour: tools, thinking and an image");
  w.user("Why does the cursor test fail on CI but not on my machine?");
  const read = call("toolu_01DemoRead000000000001", "read", { path: "test/reader/follow.test.ts" });
  w.assistant([
    {
      type: "thinking",
      thinking:
        "A timing difference between machines usually means a sleep or a clock. " +
        "I should read the test before guessing.",
      thinkingSignature: "demo-signature",
    },
    { type: "text", text: "Let me read the test first." },
    read,
  ]);
  w.tool(read, 'it("expires a cursor", async () => {\n  await sleep(10);\n  ...\n});\n');
  const bash = call("call_demo42|fc_demo42", "bash", { command: "grep -n sleep test -r" });
  w.assistant([{ type: "text", text: "There is a sleep. Is it the only one?" }, bash]);
  w.tool(bash, "test/reader/follow.test.ts:12:  await sleep(10);\n");
  w.reply(
    "The test sleeps 10 ms and expects the cursor to expire. On a slow CI machine the " +
      "sleep can end before the clock moves. Inject the clock (`now`) instead of sleeping.",
  );
  w.user([
    { type: "text", text: "This is the CI graph from last night. Does it agree?" },
    { type: "image", data: TINY_PNG, mimeType: "image/png" },
  ]);
  w.reply("The graph is a single pixel, so it neither agrees nor disagrees.");
  w.sm.appendMessage({
    role: "bashExecution",
    command: "npm test -- --test-name-pattern=cursor",
    output: "ok 1 - expires a cursor\n# pass 1\n",
    exitCode: 0,
    cancelled: false,
    truncated: false,
    timestamp: w.at(),
  });
  w.sm.appendCustomMessageEntry("mosaic-note", "Tests pass with the injected clock.", true);
  w.reply("Fixed: the test now passes the reader a clock and never sleeps.");
}

function writeBranches(w: Writer): void {
  w.title("Branches: a fork, a summary and a fresh start");
  w.user("Name the new cache module.");
  const first = w.reply("How about `parse-cache.ts`?");
  w.user("Shorter, please.");
  const short = w.reply("`cache.ts`.");
  w.user("And where does it go?");
  const mainTip = w.reply("In `src/reader/`, next to the parser.");
  // A fork: back to the first answer, asked differently (Pi's branch()).
  w.sm.branch(first);
  w.user("Actually, describe what it caches instead.");
  w.reply("Parsed snapshots of a session file, two per file.");
  // An abandoned path, summarised (Pi's branchWithSummary()).
  w.sm.branchWithSummary(short, "The user asked for a short name; `cache.ts` was proposed.");
  w.user("Try a name that says what it holds.");
  w.reply("`snapshot-cache.ts`.");
  // A fresh root (Pi's resetLeaf(): re-editing the first message).
  w.sm.resetLeaf();
  w.user("Start over: do we need a cache at all?");
  w.reply("Only for long sessions; a short one parses in a millisecond.");
  // Back to the main line, so it holds Pi's default leaf.
  w.sm.branch(mainTip);
  w.user("Good. Write it.");
  w.reply("Written: `src/reader/parse-cache.ts`.");
}

function writeCompaction(w: Writer): void {
  w.title("A compacted session");
  w.user("Profile the catalogue on 18 roots.");
  w.reply("It takes 40 ms; most of it is reading the first 64 KiB of each file.");
  const kept = w.user("Can we skip files that did not change?");
  w.reply("Yes: key each row by (dev, ino, size, mtime) and reuse it.");
  w.sm.appendCompaction(
    "Profiled the catalogue (40 ms on 18 roots, mostly head reads); agreed to cache rows " +
      "by (dev, ino, size, mtime).",
    kept,
    48_213,
    { readFiles: ["src/reader/catalogue.ts"], modifiedFiles: [] },
  );
  w.user("After the cache, how long does it take?");
  w.reply("4 ms when nothing changed.");
}

function writeLong(w: Writer): void {
  w.title("A long session (several pages)");
  const files = ["src/reader/pi.ts", "src/reader/parts.ts", "src/reader/cursors.ts", "README.md"];
  for (let turn = 1; turn <= LONG_TURNS; turn++) {
    const file = files[turn % files.length] ?? "README.md";
    w.user(`Step ${turn}: check ${file} for anything that still clips content.`);
    const read = call(`toolu_long${turn.toString().padStart(4, "0")}`, "read", { path: file });
    w.assistant([{ type: "text", text: `Reading ${file}.` }, read]);
    w.tool(read, `// ${file}, line ${turn * 7}\nexport const LIMIT = ${turn * 1024};\n`);
    w.reply(`Step ${turn}: ${file} clips nothing; the limit at line ${turn * 7} only splits.`);
  }
}

/** Text that would drive a terminal or a page if shown raw; every viewer must show it inert. */
export const HOSTILE_TEXT =
  "Clipboard: \u001b]52;c;ZWNobyBwd25lZA==\u0007 title: \u001b]0;pwned\u0007 " +
  "cursor: \u001b[2J\u001b[H\u001b[31mred\u001b[0m C1: \u009b31m " +
  "file: invoice\u202Etxt.exe (a bidi override) " +
  "html: <script>alert(1)</script> <img src=x onerror=alert(1)> " +
  '<a href="javascript:alert(1)">link</a> <style>body{display:none}</style>';

function writeHostile(w: Writer): void {
  w.title("Hostile text, shown inert \u001b]0;pwned\u0007");
  w.user(`Show this exactly: ${HOSTILE_TEXT}`);
  const bash = call("toolu_01DemoHostile00000001", "bash", { command: "cat \u202Egnp.sh" });
  w.assistant([{ type: "text", text: "Reading the file with the odd name." }, bash]);
  w.tool(bash, `\u001b[1A\u001b[2K${HOSTILE_TEXT}\n`);
  w.reply(`Here it is, made harmless by every viewer: ${HOSTILE_TEXT}`);
}

function writeReview(w: Writer): void {
  w.title("Review the cursor store");
  w.user("Review src/reader/cursors.ts for leaks.");
  const read = call("toolu_01DemoReview0000000001", "read", { path: "src/reader/cursor.ts" });
  w.assistant([{ type: "text", text: "Opening it." }, read]);
  w.tool(read, "ENOENT: no such file or directory, open 'src/reader/cursor.ts'", true);
  w.reply("Wrong name; retrying with cursors.ts and reading the whole fi", {
    stopReason: "aborted",
    errorMessage: "Request was aborted",
  });
  w.user("Stop there; I will look myself.");
  w.reply("Understood.");
}
