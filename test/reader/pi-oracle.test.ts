// The reader against the pinned Pi itself: sessions written by Pi's own SessionManager, and
// Pi's own reading of them (piOracle, always on a copy). Every leaf Pi reports is exactly one
// reader branch, and that branch lists Pi's getBranch(leaf) in order, minus the entry kinds the
// reader hides. Pi's default leaf is the reader's, and the default branch is the one that holds
// it. The original file is never opened by Pi, and checkedReader fingerprints every reader call.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { basename, join } from "node:path";
import { describe, it } from "node:test";
import type { NewSessionOptions, SessionManager } from "@earendil-works/pi-coding-agent";
import {
  LIMITS,
  type Part,
  type Reader,
  type ReadResult,
  toChatId,
  type View,
} from "../../src/index.ts";
import {
  appendRawLines,
  piOracle,
  writeLongSession,
  writeRichSession,
} from "../helpers/pi-sessions.ts";
import {
  entriesOf,
  expectOk,
  expectRefusal,
  idOf,
  type Project,
  project,
  readerFor,
  tempDir,
} from "../helpers/reader.ts";

type Ok = Extract<ReadResult, { ok: true }>;
type Line = Record<string, unknown>;
type PiMessage = Parameters<SessionManager["appendMessage"]>[0];
type AssistantMessage = Extract<PiMessage, { role: "assistant" }>;
type ToolCall = Extract<AssistantMessage["content"][number], { type: "toolCall" }>;

const MIB = 1024 * 1024;

const key = (id: string): string => `n.${toChatId(id)}`;

function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** Entry lines by id (the later line wins, as in Pi's index); the header and bad lines skipped. */
function linesById(file: string): Map<string, Line> {
  const out = new Map<string, Line>();
  const lines = readFileSync(file, "utf8").split("\n");
  for (const text of lines.slice(1)) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      continue;
    }
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      const line = v as Line;
      if (typeof line.id === "string") out.set(line.id, line);
    }
  }
  return out;
}

const HIDDEN_TYPES = new Set([
  "model_change",
  "thinking_level_change",
  "label",
  "session_info",
  "custom",
]);

/**
 * The kinds the reader does not show (seed: Parser): settings, labels, names, extension state,
 * and custom messages without `display: true`. A v2 `hookMessage` (v3 role `custom`) is hidden
 * only with `display: false`, as Pi's own rendering of the migrated message.
 */
function hiddenByReader(line: Line | undefined): boolean {
  if (line === undefined) throw new Error("an entry of Pi's path is not in the file");
  const type = String(line.type);
  if (HIDDEN_TYPES.has(type)) return true;
  if (type === "custom_message") return line.display !== true;
  if (type === "message") {
    const m = line.message as Line | undefined;
    return (m?.role === "hookMessage" || m?.role === "custom") && m.display === false;
  }
  return false;
}

/**
 * Reads a branch page by page, checking each page against the CHAT-01 limits and the cursor
 * chain: one snapshot for the whole chain, a cursor on every page but the last, a follow on the
 * last.
 */
function readPages(
  reader: Reader,
  conversation: string,
  branch: string,
): { pages: Ok[]; parts: Part[] } {
  const pages: Ok[] = [];
  let r = expectOk(reader.open({ conversation, branch }));
  for (;;) {
    pages.push(r);
    const where = `${branch} page ${pages.length}`;
    assert.equal(r.page.branch, branch, where);
    assert.ok(r.page.parts.length <= LIMITS.partsPerPage, `${where}: ${r.page.parts.length} parts`);
    assert.ok(Buffer.byteLength(JSON.stringify(r.page)) <= LIMITS.pageBytes, `${where}: bytes`);
    assert.equal(r.page.snapshot.digest, pages[0]?.page.snapshot.digest, `${where}: snapshot`);
    assert.equal(r.page.sourceEpoch, pages[0]?.page.sourceEpoch, `${where}: epoch`);
    assert.equal(r.page.nextCursor, r.cursor?.id ?? null, where);
    if (r.cursor === null) {
      assert.ok(r.follow, `${where}: the last page carries a follow`);
      break;
    }
    assert.equal(r.follow, null, where);
    assert.ok(r.page.parts.length > 0, `${where}: a page with a cursor is not empty`);
    assert.ok(pages.length < 1000, "the cursor chain ends");
    r = expectOk(reader.next({ cursor: r.cursor.id, conversation, branch }));
  }
  return { pages, parts: pages.flatMap((p) => p.page.parts) };
}

type Compared = { view: View; partsByBranch: Map<string, Part[]>; lines: Map<string, Line> };

/**
 * The oracle check. `file` is what the reader reads; Pi reads a copy of `piFile` (default the
 * same file), whose bytes must not change.
 */
async function assertMatchesPi(
  reader: Reader,
  conversation: string,
  file: string,
  piFile = file,
): Promise<Compared> {
  const before = sha256(piFile);
  const oracle = await piOracle(piFile);
  assert.equal(sha256(piFile), before, "Pi read a copy only");
  assert.equal(oracle.hasCycle, false);
  assert.ok(oracle.leaves.length > 0, "Pi sees at least one leaf");
  const lines = linesById(file);
  const { view } = expectOk(reader.open({ conversation }));

  assert.equal(
    view.defaultLeaf,
    oracle.defaultLeafId === null ? null : key(oracle.defaultLeafId),
    "default leaf",
  );
  assert.deepEqual(
    view.branches.map((b) => b.leaf).sort(),
    oracle.leaves.map((l) => key(l.id)).sort(),
    "one reader branch per Pi leaf, and no other",
  );

  const partsByBranch = new Map<string, Part[]>();
  const owners: string[] = [];
  for (const leaf of oracle.leaves) {
    const matches = view.branches.filter((b) => b.leaf === key(leaf.id));
    assert.equal(matches.length, 1, `leaf ${leaf.id} ends exactly one branch`);
    const branch = matches[0]!;
    const where = `branch ${branch.name} (Pi leaf ${leaf.id})`;
    const { parts } = readPages(reader, conversation, branch.name);
    partsByBranch.set(branch.name, parts);
    const got = entriesOf(parts).filter((k) => k.startsWith("n."));
    const want = leaf.path.filter((id) => !hiddenByReader(lines.get(id))).map(key);
    assert.deepEqual(got, want, where);

    // The branch record agrees with Pi's path: depth, where it starts and where it forks.
    const path = leaf.path.map(key);
    assert.equal(branch.depth, path.length, `${where}: depth`);
    assert.ok(branch.start !== null, where);
    const at = path.indexOf(branch.start);
    assert.ok(at >= 0, `${where}: start ${branch.start} is on Pi's path`);
    assert.equal(branch.forksFrom?.entry ?? null, at === 0 ? null : path[at - 1], `${where}: fork`);
    // The branch that owns Pi's default leaf: on its path, at or after the branch's start.
    if (oracle.defaultLeafId !== null) {
      const d = path.indexOf(key(oracle.defaultLeafId));
      if (d >= at && at >= 0) owners.push(branch.name);
    }
  }
  assert.deepEqual(owners, [view.defaultBranch], "the default branch holds Pi's default leaf");
  return { view, partsByBranch, lines };
}

/** Parts grouped by entry, in order. */
function byEntry(parts: Part[]): Map<string, Part[]> {
  const out = new Map<string, Part[]>();
  for (const p of parts) {
    const list = out.get(p.entry);
    if (list) list.push(p);
    else out.set(p.entry, [p]);
  }
  return out;
}

/** The bodies of an entry's parts, fragments joined: `<block type>:<text>`. */
function bodiesOfParts(parts: Part[]): string[] {
  const out: string[] = [];
  for (const part of parts) {
    for (const b of part.blocks) {
      if (b.type === "tool-result") {
        out.push(`tool-result:${b.toolName}`);
        continue;
      }
      if (b.type === "unavailable") {
        out.push("unavailable");
        continue;
      }
      const body = b.type === "image" ? b.data : b.text;
      if (b.fragment !== undefined && b.fragment.index > 0) out[out.length - 1] += body;
      else out.push(`${b.type}:${body}`);
    }
  }
  return out;
}

/** The same bodies, read straight from the entry's line in the file. */
function bodiesOfLine(e: Line): string[] {
  if (e.type === "compaction" || e.type === "branch_summary") return [`text:${String(e.summary)}`];
  if (e.type !== "message") return [`?${String(e.type)}`];
  const m = e.message as Line;
  const items: Line[] =
    typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Line[]);
  const out = m.role === "toolResult" ? [`tool-result:${String(m.toolName)}`] : [];
  for (const c of items) {
    if (c.type === "text") out.push(`text:${String(c.text)}`);
    else if (c.type === "thinking") out.push(`thinking:${String(c.thinking)}`);
    else if (c.type === "toolCall") out.push(`tool-call:${JSON.stringify(c.arguments)}`);
    else if (c.type === "image") out.push(`image:${String(c.data)}`);
    else out.push(`?${String(c.type)}`);
  }
  return out;
}

// --- Sessions written inline with Pi's SessionManager ---------------------------------------

let piModule: Promise<typeof import("@earendil-works/pi-coding-agent")> | undefined;
function loadPi(): Promise<typeof import("@earendil-works/pi-coding-agent")> {
  piModule ??= import("@earendil-works/pi-coding-agent");
  return piModule;
}

let clock = Date.UTC(2026, 0, 1);
const at = (): number => {
  clock += 1000;
  return clock;
};

function usage(): AssistantMessage["usage"] {
  return {
    input: 10,
    output: 5,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    totalTokens: 15,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function assistantMessage(
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"] = "stop",
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: usage(),
    stopReason,
    timestamp: at(),
  };
}

const ask = (sm: SessionManager, text: string): string =>
  sm.appendMessage({ role: "user", content: text, timestamp: at() });
const say = (sm: SessionManager, text: string): string =>
  sm.appendMessage(assistantMessage([{ type: "text", text }]));

/**
 * Writes a session with SessionManager.create into `dir` and renames it to `name` once `write`
 * is done (the manager keeps writing to the name it chose). Pi flushes nothing before the first
 * assistant message, so `write` must append one.
 */
async function writeWithPi(
  dir: string,
  name: string,
  cwd: string,
  write: (sm: SessionManager) => void,
  options?: NewSessionOptions,
): Promise<string> {
  const { SessionManager } = await loadPi();
  const sm = SessionManager.create(cwd, dir, options);
  write(sm);
  const written = sm.getSessionFile();
  assert.ok(written !== undefined && existsSync(written), "Pi flushed the session");
  const target = join(dir, name);
  assert.ok(!existsSync(target));
  renameSync(written, target);
  return target;
}

/** Continues a session as Pi would after a restart: SessionManager.open on the file itself. */
async function continueWithPi(file: string, write: (sm: SessionManager) => void): Promise<void> {
  const { SessionManager } = await loadPi();
  write(SessionManager.open(file));
}

const RETAINED = "RETAINED-TAIL-MARKER";

/**
 * Every tree operation Pi has. Leaves: the main tip, a fork from a1 (`branch()`), a summary
 * branch from u2 (`branchWithSummary`), a summary root left from the summary branch's leaf
 * (`branchWithSummary(null)`: fromId a5), a summary root from nothing (`resetLeaf` then
 * `branchWithSummary(null)`: fromId "root") and a plain second root (`resetLeaf`). The fork ends
 * in a label and the main tip in a custom message without a display flag: both leaves are
 * entries the reader hides.
 */
async function writeTreeSession(
  p: Project,
): Promise<{ file: string; ids: Record<string, string> }> {
  const ids: Record<string, string> = {};
  const call: ToolCall = {
    type: "toolCall",
    id: "call_tree|fc_1",
    name: "bash",
    arguments: { command: "ls" },
  };
  const file = await writeWithPi(
    p.sessionsDir,
    "tree.jsonl",
    p.projectRoot,
    (sm) => {
      ids.model = sm.appendModelChange("anthropic", "claude-sonnet-4-5");
      ids.thinking = sm.appendThinkingLevelChange("low");
      ids.u1 = ask(sm, "First question.");
      ids.a1 = say(sm, "First answer.");
      ids.label = sm.appendLabelChange(ids.u1, "start");
      ids.info = sm.appendSessionInfo("Tree fixture");
      ids.u2 = ask(sm, "Run ls.");
      ids.a2 = sm.appendMessage(
        assistantMessage([{ type: "text", text: "Listing." }, call], "toolUse"),
      );
      ids.r2 = sm.appendMessage({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: "a\nb\n" }],
        isError: false,
        timestamp: at(),
      });
      ids.a3 = say(sm, "Two files.");

      sm.branch(ids.a1);
      ids.u3 = ask(sm, "Fork question.");
      ids.a4 = say(sm, "Fork answer.");

      ids.bs1 = sm.branchWithSummary(ids.u2, "Left the fork.");
      ids.u4 = ask(sm, "Summary branch question.");
      ids.a5 = say(sm, "Summary branch answer.");

      ids.bs2 = sm.branchWithSummary(null, "Started over from a5.");
      ids.u5 = ask(sm, "Root-summary question.");
      ids.a6 = say(sm, "Root-summary answer.");

      sm.resetLeaf();
      ids.bs3 = sm.branchWithSummary(null, "Started over from nothing.");
      ids.u6 = ask(sm, "Another root question.");
      ids.a7 = say(sm, "Another root answer.");

      sm.resetLeaf();
      ids.u7 = ask(sm, "Plain second root.");
      ids.a8 = say(sm, "Plain answer.");

      sm.branch(ids.a4);
      ids.forkLabel = sm.appendLabelChange(ids.u3, "fork");

      sm.branch(ids.a3);
      ids.shown = sm.appendCustomMessageEntry("note", "A note shown to the user.", true, { x: 1 });
      ids.hidden = sm.appendCustomMessageEntry(
        "context",
        [{ type: "text", text: "Hidden context." }],
        false,
      );
      ids.custom = sm.appendCustomEntry("state", { step: 1 });
      ids.model2 = sm.appendModelChange("openai", "gpt-5");
      ids.thinking2 = sm.appendThinkingLevelChange("high");
      ids.u8 = ask(sm, "After the model change.");
      ids.a9 = say(sm, "Answered by the new model.");
      ids.compaction = sm.appendCompaction("Summary of everything so far.", ids.u8, 4242);
      ids.u9 = ask(sm, "After the compaction.");
      ids.a10 = say(sm, "Still here.");
    },
    { parentSession: join(p.base, "nowhere", "parent.jsonl") },
  );
  // A compaction with a retained tail and a custom message without a display flag, as raw lines.
  ids.tailCompaction = "c0ffee01";
  ids.noDisplay = "c0ffee02";
  const stamp = new Date(at()).toISOString();
  appendRawLines(file, [
    {
      type: "compaction",
      id: ids.tailCompaction,
      parentId: ids.a10,
      timestamp: stamp,
      summary: "Compacted, keeping a tail.",
      firstKeptEntryId: ids.u9,
      tokensBefore: 9000,
      retainedTail: [{ role: "user", content: RETAINED, timestamp: at() }],
    },
    {
      type: "custom_message",
      id: ids.noDisplay,
      parentId: ids.tailCompaction,
      timestamp: stamp,
      customType: "no-display",
      content: "A custom message with no display flag.",
    },
  ]);
  return { file, ids };
}

describe("reader against Pi's SessionManager", () => {
  it("reads Pi's rich session as Pi does: leaves, paths, default leaf and branch", async (t) => {
    const p = project(tempDir(t));
    const { path, ids } = await writeRichSession(p.sessionsDir, "rich", p.projectRoot);
    const reader = readerFor(p);
    const id = idOf(reader, "rich.jsonl");
    const { view, partsByBranch } = await assertMatchesPi(reader, id, path);
    assert.equal(view.defaultBranch, "main");
    assert.equal(view.defaultLeaf, key(ids.mainTip!));
    assert.equal(view.branches.length, 4);
    const main = entriesOf(partsByBranch.get("main") ?? []);
    assert.ok(main.includes(key(ids.customMessageShown!)));
    for (const hidden of ["customMessageHidden", "custom", "label", "sessionInfo", "modelChange"]) {
      assert.ok(!main.includes(key(ids[hidden]!)), hidden);
    }
    const row = reader.catalogue().conversations.find((r) => r.fileName === "rich.jsonl");
    assert.equal(row?.title, (await piOracle(path)).sessionName);
  });

  it("follows every tree operation: branch, branchWithSummary (also from null), resetLeaf, labels, compactions", async (t) => {
    const p = project(tempDir(t));
    const { file, ids } = await writeTreeSession(p);
    const reader = readerFor(p);
    const id = idOf(reader, "tree.jsonl");

    const first = await assertMatchesPi(reader, id, file);
    assert.equal(first.view.forkedFromEarlierSession, true);
    assert.equal(first.view.branches.length, 6);
    assert.equal(first.view.defaultLeaf, key(ids.noDisplay!), "a hidden entry can be the leaf");
    const main = first.partsByBranch.get(first.view.defaultBranch) ?? [];
    const part = (entry: string): Part | undefined => main.find((x) => x.entry === key(entry));
    assert.deepEqual(part(ids.compaction!)?.meta, {
      tokensBefore: 4242,
      firstKeptEntry: key(ids.u8!),
    });
    assert.deepEqual(part(ids.tailCompaction!)?.meta, {
      tokensBefore: 9000,
      firstKeptEntry: key(ids.u9!),
    });
    assert.ok(!JSON.stringify(main).includes(RETAINED), "the retained tail is not rendered");
    assert.equal(part(ids.shown!)?.kind, "custom-message");
    // The summaries from null: one remembers the leaf it left, one left from the root.
    const all = [...first.partsByBranch.values()].flat();
    const summary = (entry: string) => all.find((x) => x.entry === key(entry));
    assert.deepEqual(summary(ids.bs1!)?.meta, { fromEntry: key(ids.a4!) });
    assert.deepEqual(summary(ids.bs2!)?.meta, { fromEntry: key(ids.a5!) });
    assert.deepEqual(summary(ids.bs3!)?.meta, { fromEntry: "root" });

    // Pi resumes the file and writes on: the follow sees only the new visible entries.
    const branch = first.view.defaultBranch;
    const follow = readPages(reader, id, branch).pages.at(-1)?.follow;
    assert.ok(follow);
    await continueWithPi(file, (sm) => {
      ids.u10 = ask(sm, "Back after a restart.");
      ids.a11 = say(sm, "Welcome back.");
      ids.rename = sm.appendSessionInfo("Tree fixture, renamed");
    });
    const grown = expectOk(reader.next({ cursor: follow.id, conversation: id, branch }));
    assert.deepEqual(entriesOf(grown.page.parts), [key(ids.u10!), key(ids.a11!)]);
    const again = await assertMatchesPi(reader, id, file);
    assert.equal(again.view.defaultLeaf, key(ids.rename!));
    assert.equal(again.view.defaultBranch, branch);
    const row = reader.catalogue().conversations.find((r) => r.fileName === "tree.jsonl");
    assert.equal(row?.title, "Tree fixture, renamed");
    assert.equal(row?.title, (await piOracle(file)).sessionName);

    // Pi's /fork: the fork branch written to a new file, labels re-chained, parentSession set.
    let forkFile = "";
    await continueWithPi(file, (sm) => {
      forkFile = sm.createBranchedSession(ids.forkLabel!) ?? "";
    });
    const forkId = idOf(reader, basename(forkFile));
    const fork = await assertMatchesPi(reader, forkId, forkFile);
    assert.equal(fork.view.forkedFromEarlierSession, true);
    assert.deepEqual(entriesOf(fork.partsByBranch.get("main") ?? []), [
      "x.forked",
      key(ids.u1!),
      key(ids.a1!),
      key(ids.u3!),
      key(ids.a4!),
    ]);
  });

  it("pages a 3 MB Pi session with branches and compactions: ≤ 100 parts a page, nothing lost or repeated", async (t) => {
    const p = project(tempDir(t));
    const long = await writeLongSession(p.sessionsDir, "long", p.projectRoot, {
      targetBytes: 3 * MIB,
      seed: 7,
      branches: true,
      compactionEveryBytes: MIB,
    });
    assert.ok(long.bytes >= 3 * MIB);
    const reader = readerFor(p);
    const id = idOf(reader, "long.jsonl");
    const { view, partsByBranch, lines } = await assertMatchesPi(reader, id, long.path);
    assert.equal(view.branches.length, 4);
    assert.equal(view.defaultLeaf, key(long.ids.mainTip!));

    const seen = new Set<string>();
    for (const [branch, parts] of partsByBranch) {
      // The pages together are one sequential read: every part once, in entry order.
      const partIds = parts.map((x) => x.id);
      assert.equal(new Set(partIds).size, partIds.length, `${branch}: a part repeats`);
      const groups = byEntry(parts);
      assert.equal(groups.size, entriesOf(parts).length, `${branch}: an entry is split apart`);
      for (const [entry, list] of groups) {
        list.forEach((x, i) => {
          assert.equal(x.id, `${entry}.${i}`, `${branch}: part ids run on`);
          assert.equal(x.continues, i === 0 ? undefined : true, `${branch}: continues`);
        });
        if (!entry.startsWith("n.")) continue;
        seen.add(entry);
        const line = lines.get(entry.slice(2));
        assert.ok(line, `${entry} is a line of the file`);
        assert.deepEqual(bodiesOfParts(list), bodiesOfLine(line), `${branch}: ${entry} content`);
      }
    }
    const mainPages = readPages(reader, id, "main").pages.length;
    assert.ok(mainPages >= 5, `the main branch spans ${mainPages} pages`);
    const compactions = (partsByBranch.get("main") ?? []).filter((x) => x.kind === "compaction");
    assert.equal(compactions.length, 3, "one compaction per MiB crossed after the first");
    for (const c of compactions) assert.match(c.meta?.firstKeptEntry ?? "", /^n\./);
    // Every visible entry of the file is on some branch.
    const visible = [...lines.entries()].filter(([, l]) => !hiddenByReader(l)).map(([i]) => key(i));
    assert.deepEqual([...seen].sort(), visible.sort());
  });

  it("reads a v2 session with hookMessage entries without migrating it, as Pi reads it migrated", async (t) => {
    const p = project(tempDir(t));
    const scratch = tempDir(t, "pi-v2-");
    const v3 = await writeWithPi(p.sessionsDir, "v2.jsonl", p.projectRoot, (sm) => {
      ask(sm, "Old session.");
      say(sm, "Old answer.");
    });
    // Downgrade to v2 and add hookMessage messages (display true, false, absent), then a turn.
    const lines = readFileSync(v3, "utf8").trimEnd().split("\n");
    const headerLine = JSON.parse(lines[0]!) as Line;
    const entries = lines.slice(1).map((l) => JSON.parse(l) as Line);
    let parent = String(entries[entries.length - 1]?.id);
    const stamp = new Date(at()).toISOString();
    const add = (id: string, message: Line): Line => {
      const e = { type: "message", id, parentId: parent, timestamp: stamp, message };
      parent = id;
      return e;
    };
    const hooks = [
      add("b00c0001", {
        role: "hookMessage",
        customType: "h",
        content: "shown hook",
        display: true,
      }),
      add("b00c0002", {
        role: "hookMessage",
        customType: "h",
        content: "hidden hook",
        display: false,
      }),
      add("b00c0003", { role: "hookMessage", customType: "h", content: "hook, no display" }),
      add("b00c0004", { role: "user", content: "After the hooks.", timestamp: at() }),
      add("b00c0005", {
        role: "assistant",
        content: [{ type: "text", text: "Fine." }],
        stopReason: "stop",
        timestamp: at(),
      }),
    ];
    writeFileSync(
      v3,
      [{ ...headerLine, version: 2 }, ...entries, ...hooks]
        .map((e) => `${JSON.stringify(e)}\n`)
        .join(""),
    );

    // Pi's open would rewrite this file (v2 → v3): shown on a copy.
    const copy = join(scratch, "copy.jsonl");
    copyFileSync(v3, copy);
    await continueWithPi(copy, () => {});
    assert.notEqual(sha256(copy), sha256(v3), "Pi's open migrates the file it opens");
    assert.match(readFileSync(copy, "utf8"), /"version":3/);

    const reader = readerFor(p);
    const id = idOf(reader, "v2.jsonl");
    const { partsByBranch } = await assertMatchesPi(reader, id, v3);
    const main = entriesOf(partsByBranch.get("main") ?? []);
    assert.ok(main.includes("n.b00c0001") && main.includes("n.b00c0003"));
    assert.ok(!main.includes("n.b00c0002"));
    assert.match(readFileSync(v3, "utf8").split("\n")[0] ?? "", /"version":2/, "still v2");

    // When Pi resumes it, the migration rewrites the file in place: a follow refuses, and a
    // fresh read agrees with Pi on the migrated file.
    const follow = readPages(reader, id, "main").pages.at(-1)?.follow;
    assert.ok(follow);
    await continueWithPi(v3, () => {});
    assert.match(readFileSync(v3, "utf8"), /"version":3/);
    expectRefusal(
      reader.next({ cursor: follow.id, conversation: id, branch: "main" }),
      "source-replaced",
    );
    const migrated = await assertMatchesPi(reader, id, v3);
    assert.deepEqual(entriesOf(migrated.partsByBranch.get("main") ?? []), main);
  });

  it("leaves out a complete but unterminated last line, which Pi's open would terminate", async (t) => {
    const p = project(tempDir(t));
    const scratch = tempDir(t, "pi-unterminated-");
    const ids: Record<string, string> = {};
    const file = await writeWithPi(p.sessionsDir, "open-end.jsonl", p.projectRoot, (sm) => {
      ids.u1 = ask(sm, "Question.");
      ids.a1 = say(sm, "Answer.");
    });
    const terminated = join(scratch, "terminated.jsonl");
    copyFileSync(file, terminated);
    const last = {
      type: "message",
      id: "e0d00001",
      parentId: ids.a1,
      timestamp: new Date(at()).toISOString(),
      message: { role: "user", content: "Unterminated.", timestamp: at() },
    };
    appendFileSync(file, JSON.stringify(last));

    // Pi's open would append the missing newline: shown on a copy.
    const copy = join(scratch, "copy.jsonl");
    copyFileSync(file, copy);
    await continueWithPi(copy, () => {});
    assert.equal(readFileSync(copy, "utf8"), `${readFileSync(file, "utf8")}\n`);
    // Pi counts the unterminated entry; the reader's snapshot stops at the last newline.
    const full = await piOracle(file);
    assert.equal(full.defaultLeafId, last.id);

    const reader = readerFor(p);
    const id = idOf(reader, "open-end.jsonl");
    const partial = await assertMatchesPi(reader, id, file, terminated);
    const opened = expectOk(reader.open({ conversation: id }));
    assert.equal(opened.view.incomplete, true);
    assert.equal(partial.view.defaultLeaf, key(ids.a1!));
    assert.ok(opened.follow);

    // Pi resumes the file and terminates the line: a follow returns the entry, and Pi and the
    // reader agree.
    await continueWithPi(file, () => {});
    assert.equal(readFileSync(file, "utf8"), readFileSync(copy, "utf8"));
    const grown = expectOk(
      reader.next({ cursor: opened.follow.id, conversation: id, branch: opened.page.branch }),
    );
    assert.deepEqual(entriesOf(grown.page.parts), [key(last.id)]);
    assert.equal(grown.view.incomplete, false);
    await assertMatchesPi(reader, id, file);
  });

  it("titles the catalogue row with Pi's session name when the rename line crosses offset 64 KiB", async (t) => {
    const p = project(tempDir(t));
    const ids: Record<string, string> = {};
    const file = await writeWithPi(p.sessionsDir, "title.jsonl", p.projectRoot, (sm) => {
      ask(sm, "First question.");
      ids.a1 = say(sm, "First answer.");
    });
    // A hidden entry padded so that the next line starts 40 bytes before 65536.
    const pad = {
      type: "custom",
      id: "9ad00001",
      parentId: ids.a1,
      timestamp: new Date(at()).toISOString(),
      customType: "pad",
      data: "",
    };
    const used = Buffer.byteLength(readFileSync(file)) + JSON.stringify(pad).length + 1;
    pad.data = "p".repeat(64 * 1024 - 40 - used);
    appendRawLines(file, [pad]);
    assert.equal(readFileSync(file).length, 64 * 1024 - 40);
    await continueWithPi(file, (sm) => {
      sm.appendSessionInfo("Renamed across the boundary");
    });
    assert.ok(readFileSync(file).length < 128 * 1024, "the reader reads every byte of it");
    const reader = readerFor(p);
    const id = idOf(reader, "title.jsonl");
    await assertMatchesPi(reader, id, file);
    const row = reader.catalogue().conversations.find((r) => r.fileName === "title.jsonl");
    const pi = await piOracle(file);
    assert.equal(pi.sessionName, "Renamed across the boundary");
    assert.equal(row?.title, pi.sessionName);
  });

  it("agrees with Pi on a torn last line: both skip it, and the reader says incomplete", async (t) => {
    const p = project(tempDir(t));
    const file = await writeWithPi(p.sessionsDir, "torn.jsonl", p.projectRoot, (sm) => {
      ask(sm, "Question.");
      say(sm, "Answer.");
    });
    appendFileSync(file, '{"type":"message","id":"dead0001","parentId":');
    const reader = readerFor(p);
    const id = idOf(reader, "torn.jsonl");
    const { view } = await assertMatchesPi(reader, id, file);
    assert.equal(view.incomplete, true);
    assert.equal(view.unreadableLines, 0);
  });
});
