// The seal the reader's oracle (and the control layer's tests) rely on: the real pinned Claude
// Code, run by real-claude.ts against the loopback stand-in, answers a prompt with a tool call,
// writes its session where CLAUDE_CONFIG_DIR says, connects to nothing but the stand-in, and
// re-sends the history when resumed.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { firstPromptOf } from "./fake-anthropic.ts";
import { skipWithoutStrace } from "./open-trace.ts";
import {
  CLAUDE_BIN,
  CLAUDE_VERSION,
  claudeProjectDirName,
  connectsIn,
  filesUnder,
  REPO_ROOT,
  readJsonl,
  realClaude,
} from "./real-claude.ts";

const SESSION = "5e1f7e57-0000-4000-8000-0000000000c1";

describe("real-claude", () => {
  it("runs the pinned version from this checkout's lock", () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string; dev?: boolean }>;
    };
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      devDependencies: Record<string, string>;
    };
    assert.equal(pkg.devDependencies["@anthropic-ai/claude-code"], CLAUDE_VERSION);
    assert.equal(lock.packages["node_modules/@anthropic-ai/claude-code"]?.version, CLAUDE_VERSION);
    assert.ok(existsSync(CLAUDE_BIN), "npm installs the native binary for this platform");
  });

  it("answers a prompt with a tool call, sealed, and writes its session under CLAUDE_CONFIG_DIR", {
    skip: skipWithoutStrace(),
  }, async (t) => {
    const rc = await realClaude(t, {
      replies: [
        {
          kind: "message",
          content: [
            { type: "text", text: "Listing." },
            {
              type: "tool_use",
              id: "toolu_self1",
              name: "Bash",
              input: { command: "echo sealed" },
            },
          ],
        },
        { kind: "message", content: [{ type: "text", text: "It said sealed." }] },
      ],
    });
    const trace = join(rc.scratch.root, "connects.txt");
    const p = rc.start({ sessionId: SESSION, traceConnects: trace });
    p.send("Say it");
    const result = await p.waitForResult(1, 120_000);
    assert.equal(result.subtype, "success");
    assert.equal(result.result, "It said sealed.");
    await p.close();

    // Nothing but the stand-in on the network; Unix sockets are Claude Code's own.
    const inet = connectsIn(trace).filter((a) => !a.startsWith("unix "));
    assert.deepEqual(inet, [`inet 127.0.0.1:${rc.fake.port}`]);

    const file = rc.sessionFile(SESSION);
    assert.deepEqual(
      filesUnder(rc.scratch.projectsDir),
      [join(claudeProjectDirName(rc.scratch.cwd), `${SESSION}.jsonl`)],
      "one session file, in <config>/projects/<cwd with every non-alphanumeric as '-'>/",
    );
    const records = readJsonl(file);
    const result1 = records.find(
      (r) => r.type === "user" && JSON.stringify(r.message).includes("toolu_self1"),
    );
    assert.equal((result1?.toolUseResult as { stdout?: string } | undefined)?.stdout, "sealed");
    assert.ok(records.every((r) => r.cwd === undefined || r.cwd === rc.scratch.cwd));
    assert.equal(rc.fake.messages().length, 2);
    assert.equal(firstPromptOf(rc.fake.messages()[0]!), "Say it");

    // Resumed, it sends the history it read from the file before the new prompt.
    rc.fake.enqueue({ kind: "message", content: [{ type: "text", text: "Again." }] });
    const resumed = rc.start({ resume: SESSION });
    resumed.send("Once more");
    await resumed.waitForResult(1, 120_000);
    await resumed.close();
    const sent = rc.fake.messages()[2]!.body as { messages: { role: string }[] };
    assert.deepEqual(
      sent.messages.map((m) => m.role),
      ["user", "assistant", "user", "assistant", "user"],
    );
  });
});
