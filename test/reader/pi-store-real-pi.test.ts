// The real pinned Pi writing into its own store while the reader follows (issue 12 §2). Pi runs
// in RPC mode, sealed, with a scratch HOME and PI_CODING_AGENT_DIR and no --session, so it files
// its session where every Pi user's sessions are: `<agent>/sessions/--<encoded cwd>--/`. The
// loopback model answers (docs/real-engine-tests.md). The reader is given only the store; it
// follows the session across a slow reply Pi is streaming, an abort and a tool-call turn, and
// what it followed is exactly Pi's own getBranch of the leaf. Checked calls (fingerprint of the
// store) are made only while Pi is idle; while Pi writes, the raw reader is polled.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { EngineLink, type LinkRecord } from "../../src/control/engine/engine.ts";
import { type Cursor, encodeCwd, type Reader, STORE_SEAT, toChatId } from "../../src/index.ts";
import { RecordLog } from "../control/link-watch.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { type FakeModel, startFakeModel } from "../helpers/fake-model.ts";
import { piOracle } from "../helpers/pi-sessions.ts";
import {
  checkedReader,
  entriesOf,
  expectOk,
  readAll,
  rootsOf,
  tempDir,
} from "../helpers/reader.ts";
import { MODEL, PI_CLI, writeAgentFiles } from "../helpers/real-pi.ts";

const T = { timeout: SLOW_TEST_MS };
const FOLLOW_DEADLINE_MS = DEADLINE_MS;
const HIDDEN = new Set([
  "model_change",
  "thinking_level_change",
  "label",
  "session_info",
  "custom",
]);

type Scratch = { base: string; home: string; agentDir: string; store: string; cwd: string };

function makeScratch(t: TestContext): Scratch {
  const base = tempDir(t, "pi-store-real-");
  const home = join(base, "home");
  const agentDir = join(base, "agent");
  const cwd = join(base, "code", "app");
  mkdirSync(home);
  mkdirSync(cwd, { recursive: true });
  return { base, home, agentDir, store: join(agentDir, "sessions"), cwd };
}

/** Pi in RPC mode, sealed as the control layer runs it, but with no --session: Pi picks. */
function startPi(
  t: TestContext,
  s: Scratch,
  model: FakeModel,
): { link: EngineLink; log: RecordLog } {
  writeAgentFiles(s.agentDir, model.baseUrl);
  const link = EngineLink.start({
    command: process.execPath,
    args: [
      PI_CLI,
      "--mode",
      "rpc",
      "--no-extensions",
      "--no-prompt-templates",
      "--no-themes",
      "--offline",
      "--model",
      MODEL,
    ],
    env: {
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: s.home,
      PI_CODING_AGENT_DIR: s.agentDir,
    },
    cwd: s.cwd,
  });
  t.after(() => link.close({ eofGraceMs: 2000, termGraceMs: 2000 }));
  return { link, log: new RecordLog(link) };
}

function isDelta(r: LinkRecord, text: string): boolean {
  return (
    r.kind === "event" &&
    r.event.type === "message_update" &&
    r.event.assistantMessageEvent.type === "text_delta" &&
    String(r.event.assistantMessageEvent.delta).includes(text)
  );
}

/**
 * Follows until the entries seen reach `count` more than before, polling as `conversation
 * follow` does, with a deadline; returns the new entry keys and the next follow cursor.
 */
async function followUntil(
  reader: Reader,
  conversation: string,
  branch: string,
  start: Cursor,
  count: number,
): Promise<{ entries: string[]; follow: Cursor }> {
  const deadline = Date.now() + FOLLOW_DEADLINE_MS;
  const entries: string[] = [];
  let cursor = start;
  for (;;) {
    let r = expectOk(reader.next({ cursor: cursor.id, conversation, branch }));
    const parts = [...r.page.parts];
    while (r.cursor) {
      r = expectOk(reader.next({ cursor: r.cursor.id, conversation, branch }));
      parts.push(...r.page.parts);
    }
    for (const e of entriesOf(parts)) if (entries[entries.length - 1] !== e) entries.push(e);
    assert.ok(r.follow, "the last page carries a follow cursor");
    cursor = r.follow;
    if (entries.length >= count) return { entries, follow: cursor };
    if (Date.now() > deadline) {
      throw new Error(`followed ${entries.length} of ${count} entries: ${entries.join(", ")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("pi-store with the real pinned Pi", () => {
  it("follows a session Pi is writing in its own store, as Pi's getBranch", T, async (t) => {
    const s = makeScratch(t);
    const model = await startFakeModel({
      replies: [
        { kind: "text", text: "Hello from the loopback model." },
        { kind: "slow", tickMs: 20 },
        {
          kind: "tool-calls",
          calls: [{ id: "call_read_1", name: "read", arguments: { path: "hello.txt" } }],
        },
        { kind: "text", text: "The file says hello." },
      ],
    });
    t.after(() => model.close());
    writeFileSync(join(s.cwd, "hello.txt"), "hello from the project\n");
    const pi = startPi(t, s, model);
    await pi.link.ready();
    const reader = checkedReader(s.store, {
      roots: rootsOf([{ kind: "pi-agent", sessionsDir: s.store }]),
    });

    // Before any prompt Pi has written nothing: the store may not even exist yet.
    assert.equal(reader.raw.catalogue().conversations.length, 0);

    let from = pi.log.records.length;
    await pi.link.request({ type: "prompt", message: "say hello" });
    await pi.log.waitForEvent("agent_settled", { from });
    const catalogue = reader.catalogue();
    assert.deepEqual(catalogue.refusedRoots, []);
    assert.equal(catalogue.conversations.length, 1);
    const row = catalogue.conversations[0];
    assert.ok(row);
    assert.equal(row.project, s.cwd, "the project is the cwd Pi ran in");
    assert.equal(row.seat, STORE_SEAT);
    assert.equal(row.title, "say hello");
    const dir = join(s.store, encodeCwd(s.cwd));
    const { parts, last } = readAll(reader, row.conversation);
    const branch = last.page.branch;
    const seen = entriesOf(parts);
    assert.equal(seen.length, 2, `user and assistant: ${seen.join(", ")}`);
    assert.ok(last.follow);

    // A slow reply: Pi has saved the prompt and is streaming; the follow sees the prompt now.
    from = pi.log.records.length;
    await pi.link.request({ type: "prompt", message: "count slowly" });
    await pi.log.waitFor((r) => isDelta(r, "tick 2"), { from });
    const during = await followUntil(reader.raw, row.conversation, branch, last.follow, 1);
    assert.equal(during.entries.length, 1, "only the prompt is on disk while Pi streams");
    await pi.link.request({ type: "abort" });
    await pi.log.waitForEvent("agent_settled", { from });
    const aborted = await followUntil(reader.raw, row.conversation, branch, during.follow, 1);

    // A tool-call turn: four appends (prompt, tool call, result, answer), followed as they come.
    from = pi.log.records.length;
    await pi.link.request({ type: "prompt", message: "read hello.txt" });
    const turn = await followUntil(reader.raw, row.conversation, branch, aborted.follow, 4);
    await pi.log.waitForEvent("agent_settled", { from });

    const followed = [...seen, ...during.entries, ...aborted.entries, ...turn.entries];
    const oracle = await piOracle(join(dir, row.fileName ?? ""));
    const leaf = oracle.leaves.find((l) => l.id === oracle.defaultLeafId);
    assert.ok(leaf, "Pi's default leaf is a leaf");
    const hidden = hiddenIds(join(dir, row.fileName ?? ""));
    const shown = leaf.path.filter((id) => !hidden.has(id));
    assert.deepEqual(
      followed,
      shown.map((id) => `n.${toChatId(id)}`),
    );
    assert.equal(followed.length, 8, "2 + prompt + aborted reply + 4");
    // Pi idle again: one more checked round proves the reader still writes nothing there.
    expectOk(reader.next({ cursor: turn.follow.id, conversation: row.conversation, branch }));
  });
});

/** Ids of the entries the reader hides (settings and names), from the file itself. */
function hiddenIds(file: string): Set<string> {
  const out = new Set<string>();
  for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
    if (line === "") continue;
    const v = JSON.parse(line) as { id?: unknown; type?: unknown };
    if (typeof v.id === "string" && HIDDEN.has(String(v.type))) out.add(v.id);
  }
  return out;
}
