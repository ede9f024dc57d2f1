// Pi's own store, written by Pi itself: for Pi 0.85.1 (the pin) and Pi 1.6.0 (the npm alias
// pi-coding-agent-1.6.0), `SessionManager.create(cwd)` with no directory files each session
// where that version's getDefaultSessionDir puts it, under PI_CODING_AGENT_DIR in a scratch
// folder. The reader, given only the store, finds each one under its cwd, and reads every leaf
// exactly as that version's getBranch(leaf), minus the kinds the reader hides. Pi's own reading
// is always of a copy (its open can write); the reader's every call is fingerprinted.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import type { SessionManager } from "@earendil-works/pi-coding-agent";
import { encodeCwd, STORE_SEAT, toChatId } from "../../src/index.ts";
import {
  checkedReader,
  entriesOf,
  expectOk,
  readAll,
  rootsOf,
  tempDir,
} from "../helpers/reader.ts";

type PiMessage = Parameters<SessionManager["appendMessage"]>[0];
type AssistantMessage = Extract<PiMessage, { role: "assistant" }>;
type Line = Record<string, unknown>;

/** What both versions' SessionManager offer that this test uses (their types differ in detail). */
type Sessions = {
  create(cwd: string): SessionManager;
  open(path: string, sessionDir?: string): SessionManager;
};

const VERSIONS: { version: string; load: () => Promise<Sessions> }[] = [
  {
    version: "0.85.1",
    load: async () => (await import("@earendil-works/pi-coding-agent")).SessionManager,
  },
  {
    version: "1.6.0",
    // The alias's classes are not the pin's, but the calls used here have the same shapes.
    load: async () => (await import("pi-coding-agent-1.6.0")).SessionManager as unknown as Sessions,
  },
];

const key = (id: string): string => `n.${toChatId(id)}`;

function assistant(text: string, timestamp: number): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "openai-completions",
    provider: "loopback",
    model: "fake-1",
    usage: {
      input: 10,
      output: 2,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 12,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp,
  };
}

/**
 * A session with a fork, a branch summary, a second root, a compaction, hidden kinds (model and
 * thinking changes, a label, a name) and a tool call and its result.
 */
function writeBranchy(sm: SessionManager): void {
  let clock = Date.UTC(2026, 0, 1);
  const at = () => (clock += 1000);
  const user = (text: string) => sm.appendMessage({ role: "user", content: text, timestamp: at() });
  const reply = (text: string) => sm.appendMessage(assistant(text, at()));
  sm.appendModelChange("loopback", "fake-1");
  sm.appendThinkingLevelChange("off");
  const u1 = user("read a.txt");
  sm.appendMessage({
    ...assistant("", at()),
    content: [{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt" } }],
    stopReason: "toolUse",
  });
  sm.appendMessage({
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: [{ type: "text", text: "hello" }],
    isError: false,
    timestamp: at(),
  });
  const fork = reply("a.txt says hello");
  sm.appendLabelChange(u1, "start");
  sm.appendSessionInfo(`Branchy ${basename(sm.getCwd())}`);
  user("and b.txt?");
  const before = reply("b.txt is empty");
  sm.appendCompaction("Read a.txt and b.txt.", u1, 1234);
  user("where were we?");
  reply("reading files");
  sm.branch(fork);
  user("in French please");
  reply("a.txt dit bonjour");
  sm.branchWithSummary(before, "Asked in French; dropped.");
  user("back to English");
  reply("fine");
  sm.resetLeaf();
  user("a fresh start");
  reply("hello again");
}

type Oracle = { defaultLeaf: string | null; leaves: { id: string; path: string[] }[] };

/** What this Pi version makes of `file`: every childless node's getBranch, asked of a copy. */
function askPi(Sessions: Sessions, file: string): Oracle {
  const dir = mkdtempSync(join(tmpdir(), "pi-store-oracle-"));
  try {
    const copy = join(dir, basename(file));
    copyFileSync(file, copy);
    const sm = Sessions.open(copy, dir);
    const leaves: Oracle["leaves"] = [];
    const stack = sm.getTree().reverse();
    for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
      if (node.children.length === 0) {
        leaves.push({ id: node.entry.id, path: sm.getBranch(node.entry.id).map((e) => e.id) });
      }
      for (let i = node.children.length - 1; i >= 0; i--) {
        const child = node.children[i];
        if (child) stack.push(child);
      }
    }
    return { defaultLeaf: sm.getLeafId(), leaves };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const HIDDEN = new Set([
  "model_change",
  "thinking_level_change",
  "label",
  "session_info",
  "custom",
  // Pi 1.6.0's: a model-context edit and usage bookkeeping (docs/reader.md, "Pi 1.6.0 entries").
  "context_edit",
  "usage",
]);

/** What the reader leaves out: the hidden types, and Pi 1.6.0's system-prompt messages. */
function hiddenLine(line: Line): boolean {
  if (HIDDEN.has(String(line.type))) return true;
  const m = line.message;
  return line.type === "message" && typeof m === "object" && m !== null && "role" in m
    ? m.role === "system"
    : false;
}

/** The calls of Pi 1.6.0's SessionManager this test makes that 0.85.1's has not. */
type Pi16Calls = {
  appendMessage(message: {
    role: "system";
    content: string;
    sections?: Record<string, string | null>;
    toolsAdded?: { name: string; description: string; parameters: Record<string, unknown> }[];
    toolsRemoved?: { name: string }[];
    timestamp: number;
  }): string;
  appendContextEdit(targetId: string, replacement: { content: string } | null): string;
  appendUsage(
    kind: string,
    provider: string,
    model: string,
    usage: AssistantMessage["usage"],
  ): unknown;
};

/**
 * A Pi 1.6.0 session as its runs write one: a system prompt before the first user message
 * (session-manager.js:171, agent-session.js:1399), a later system update, context edits of a
 * user message and of a reply (appendContextEdit, session-manager.js:983-1014: one replaces,
 * one omits), a usage entry, a compaction (which carries the prompt checkpoint), and a fork
 * after an edit, so one branch holds the edits and another does not.
 */
function writeWithPrompt(sm: SessionManager): void {
  const pi16 = sm as unknown as Pi16Calls;
  let clock = Date.UTC(2026, 0, 1);
  const at = () => (clock += 1000);
  const user = (text: string) => sm.appendMessage({ role: "user", content: text, timestamp: at() });
  const reply = (text: string) => sm.appendMessage(assistant(text, at()));
  sm.appendModelChange("loopback", "fake-1");
  pi16.appendMessage({
    role: "system",
    content: "",
    sections: { preamble: "You are a test assistant.", cwd: sm.getCwd() },
    toolsAdded: [{ name: "read", description: "Read a file", parameters: {} }],
    timestamp: at(),
  });
  const u1 = user("read a.txt");
  const r1 = reply("a.txt says hello");
  pi16.appendContextEdit(u1, { content: "read a.txt (edited)" });
  const fork = user("and b.txt?");
  pi16.appendContextEdit(r1, null);
  pi16.appendUsage("cache_warm", "loopback", "fake-1", assistant("", 0).usage);
  reply("b.txt is empty");
  pi16.appendMessage({
    role: "system",
    content: "",
    sections: { skills: "<skills></skills>" },
    toolsRemoved: [{ name: "read" }],
    timestamp: at(),
  });
  user("summarise");
  sm.appendCompaction("Read a.txt and b.txt.", u1, 1234);
  reply("done");
  sm.appendSessionInfo(`Prompted ${basename(sm.getCwd())}`);
  sm.branch(fork);
  reply("b.txt? no such file");
}

function linesById(file: string): Map<string, Line> {
  const out = new Map<string, Line>();
  for (const text of readFileSync(file, "utf8").split("\n").slice(1)) {
    if (text === "") continue;
    const line = JSON.parse(text) as Line;
    if (typeof line.id === "string") out.set(line.id, line);
  }
  return out;
}

/** The store, three projects' sessions written by this Pi version into it. */
async function writeStore(
  t: TestContext,
  Sessions: Sessions,
  write: (sm: SessionManager) => void = writeBranchy,
): Promise<{ base: string; store: string; files: Map<string, string> }> {
  const base = tempDir(t, "pi-store-oracle-");
  const agentDir = join(base, "agent");
  const saved = process.env.PI_CODING_AGENT_DIR;
  // Pi reads it on every call (config.js getAgentDir); restored before the test goes on.
  process.env.PI_CODING_AGENT_DIR = agentDir;
  const files = new Map<string, string>();
  try {
    // my-lib and my/lib share one directory (the encoding loses the difference); their
    // headers still tell them apart.
    for (const name of ["app", "my-lib", "my/lib"]) {
      const cwd = join(base, "code", name);
      mkdirSync(cwd, { recursive: true });
      const sm = Sessions.create(cwd);
      write(sm);
      const file = sm.getSessionFile();
      assert.ok(file, "Pi named a session file");
      files.set(cwd, file);
    }
  } finally {
    if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = saved;
  }
  return { base, store: join(agentDir, "sessions"), files };
}

describe("pi-store oracle", () => {
  for (const { version, load } of VERSIONS) {
    it(`reads sessions Pi ${version} filed in its store exactly as its getBranch, per leaf`, async (t) => {
      const Sessions = await load();
      const { base, store, files } = await writeStore(t, Sessions);
      for (const [cwd, file] of files) {
        // Pi put each session in the directory our encoding names: the encoding is Pi's.
        assert.equal(dirname(file), join(store, encodeCwd(cwd)), `${version}: ${cwd}`);
      }
      const [, myDash, mySlash] = [...files.values()];
      assert.equal(dirname(myDash ?? ""), dirname(mySlash ?? ""), "my-lib and my/lib share one");
      const reader = checkedReader(base, {
        roots: rootsOf([{ kind: "pi-agent", sessionsDir: store }]),
      });
      const catalogue = reader.catalogue();
      assert.deepEqual(catalogue.refusedRoots, []);
      assert.deepEqual(
        catalogue.conversations
          .map((r) => [r.project, r.seat, r.title, r.unsupportedReason])
          .sort(),
        [...files.keys()].sort().map((cwd) => [cwd, STORE_SEAT, `Branchy ${basename(cwd)}`, null]),
      );
      for (const row of catalogue.conversations) {
        const file = files.get(row.project);
        assert.ok(file && row.fileName === basename(file));
        const oracle = askPi(Sessions, file);
        const lines = linesById(file);
        const first = expectOk(reader.open({ conversation: row.conversation }));
        assert.equal(first.view.defaultLeaf, oracle.defaultLeaf && key(oracle.defaultLeaf));
        assert.equal(oracle.leaves.length, 4, `${version}: four leaves`);
        assert.equal(first.view.branches.length, oracle.leaves.length);
        for (const leaf of oracle.leaves) {
          const branch = first.view.branches.find((b) => b.leaf === key(leaf.id));
          assert.ok(branch, `${version}: a reader branch ends at Pi's leaf ${leaf.id}`);
          const expected = leaf.path
            .filter((id) => {
              const line = lines.get(id);
              assert.ok(line, `Pi's path holds ${id}, which is in the file`);
              return !hiddenLine(line);
            })
            .map(key);
          const { parts } = readAll(reader, row.conversation, branch.name);
          const got = entriesOf(parts).filter((e) => e.startsWith("n."));
          assert.deepEqual(got, expected, `${version}: branch ${branch.name}`);
        }
      }
    });
  }

  it("reads Pi 1.6.0's system prompts and context edits as its getBranch, without a notice", async (t) => {
    const Sessions = (await import("pi-coding-agent-1.6.0")).SessionManager as unknown as Sessions;
    const { base, store, files } = await writeStore(t, Sessions, writeWithPrompt);
    const reader = checkedReader(base, {
      roots: rootsOf([{ kind: "pi-agent", sessionsDir: store }]),
    });
    const catalogue = reader.catalogue();
    assert.equal(catalogue.conversations.length, files.size);
    for (const row of catalogue.conversations) {
      const file = files.get(row.project);
      assert.ok(file && row.fileName === basename(file));
      assert.equal(row.title, `Prompted ${basename(row.project)}`);
      const lines = linesById(file);
      const kinds = [...lines.values()].map((l) =>
        l.type === "message" ? `message:${String((l.message as Line).role)}` : String(l.type),
      );
      // Pi itself wrote what this test is about.
      for (const k of ["message:system", "context_edit", "usage"]) assert.ok(kinds.includes(k), k);
      const oracle = askPi(Sessions, file);
      const first = expectOk(reader.open({ conversation: row.conversation }));
      assert.equal(first.view.defaultLeaf, oracle.defaultLeaf && key(oracle.defaultLeaf));
      assert.equal(oracle.leaves.length, 2, "two leaves");
      assert.equal(first.view.branches.length, 2);
      for (const leaf of oracle.leaves) {
        const branch = first.view.branches.find((b) => b.leaf === key(leaf.id));
        assert.ok(branch, `a reader branch ends at Pi's leaf ${leaf.id}`);
        const expected = leaf.path
          .filter((id) => {
            const line = lines.get(id);
            assert.ok(line, `Pi's path holds ${id}, which is in the file`);
            return !hiddenLine(line);
          })
          .map(key);
        const { parts } = readAll(reader, row.conversation, branch.name);
        assert.deepEqual(
          entriesOf(parts).filter((e) => e.startsWith("n.")),
          expected,
          `branch ${branch.name}`,
        );
        // No part and no block is a notice: nothing reads as an unknown role or entry type.
        assert.deepEqual(
          parts.filter((p) => p.kind === "notice" || p.blocks.some((b) => b.type === "notice")),
          [],
          `branch ${branch.name}`,
        );
        // A context edit changes the model's context only: the messages read as written.
        const texts = parts.flatMap((p) =>
          p.blocks.flatMap((b) => (b.type === "text" ? [b.text] : [])),
        );
        assert.ok(texts.includes("read a.txt"), "the edited user message reads as written");
        assert.ok(!texts.includes("read a.txt (edited)"));
        assert.ok(texts.includes("a.txt says hello"), "the omitted reply still reads");
        assert.ok(!texts.some((x) => x.includes("You are a test assistant.")), "no prompt text");
      }
    }
  });
});
