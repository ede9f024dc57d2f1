// A real Pi 1.6.0 run (the npm alias pi-coding-agent-1.6.0), sealed as the pinned Pi is run
// (test/helpers/real-pi.ts sealedArgs) against the loopback model: one prompt over RPC, then
// the reader reads the session Pi wrote. 1.6.0 saves its system prompt as a `system` message
// before the user's (session-manager.js:171, docs/session-format.md); the reader must show the
// run as the user's prompt and the reply, with no unknown-role or unknown-entry notice.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { describe, it } from "node:test";
import { toChatId } from "../../src/index.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { checkedReader, entriesOf, readAll, rootsOf } from "../helpers/reader.ts";
import {
  makeScratch,
  REPO_ROOT,
  readLines,
  sealedArgs,
  writeAgentDir,
} from "../helpers/real-pi.ts";

const PI16_CLI = join(REPO_ROOT, "node_modules/pi-coding-agent-1.6.0/dist/bundle/cli.js");
const RUN_DEADLINE_MS = 90_000;

describe("a real Pi 1.6.0 run", () => {
  it("reads as the user's prompt and the reply: the system prompt hidden, no notice", async (t) => {
    assert.ok(existsSync(PI16_CLI), "Pi 1.6.0 is installed under its alias");
    const scratch = makeScratch();
    const model = await startFakeModel({ replies: [{ kind: "text", text: "hello from 1.6" }] });
    const child = spawn(process.execPath, [PI16_CLI, ...sealedArgs(scratch.sessionFile)], {
      cwd: scratch.projectRoot,
      env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: scratch.home },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    t.after(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await exited;
      }
      await model.close();
      rmSync(scratch.root, { recursive: true, force: true });
    });
    writeAgentDir(scratch.home, model.baseUrl);
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
    });

    // Pi answers the prompt command, runs the turn, and says agent_end when the run is over.
    const ended = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no agent_end within ${RUN_DEADLINE_MS} ms; stderr: ${stderr}`)),
        RUN_DEADLINE_MS,
      );
      createInterface({ input: child.stdout }).on("line", (line) => {
        let event: unknown;
        try {
          event = JSON.parse(line);
        } catch {
          return;
        }
        if (typeof event === "object" && event !== null && "type" in event) {
          if (event.type === "agent_end") {
            clearTimeout(timer);
            resolve();
          }
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`Pi 1.6.0 exited (${code}) before agent_end; stderr: ${stderr}`));
      });
    });
    child.stdin.write(`${JSON.stringify({ id: "p1", type: "prompt", message: "hi there" })}\n`);
    await ended;
    child.stdin.end();
    // Pi ends on stdin EOF; the cleanup kills it if it has not within 10 s.
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);

    const lines = readLines(scratch.sessionFile);
    const roles = lines.flatMap((l) =>
      l.type === "message" && typeof l.message === "object" && l.message !== null
        ? [String((l.message as Record<string, unknown>).role)]
        : [],
    );
    // What makes this a 1.6.0 session: the system prompt saved before the user's message.
    assert.deepEqual(roles, ["system", "user", "assistant"], "Pi 1.6.0's own lines");

    const reader = checkedReader(scratch.root, {
      roots: rootsOf([{ kind: "repository", projectRoot: scratch.projectRoot, seat: "main" }]),
    });
    const row = reader.catalogue().conversations.find((r) => r.fileName === "s.jsonl");
    assert.ok(row, "the catalogue lists the session");
    assert.equal(row.unsupportedReason, null);
    const { parts } = readAll(reader, row.conversation);
    const byKey = new Map(lines.map((l) => [`n.${toChatId(String(l.id))}`, l]));
    const shown = entriesOf(parts).map((e) => {
      const line = byKey.get(e);
      return line?.type === "message" ? (line.message as Record<string, unknown>).role : e;
    });
    assert.deepEqual(shown, ["user", "assistant"]);
    assert.deepEqual(
      parts.filter((p) => p.kind === "notice" || p.blocks.some((b) => b.type === "notice")),
      [],
      "no notice part or block",
    );
    const texts = parts.flatMap((p) =>
      p.blocks.flatMap((b) => (b.type === "text" ? [b.text] : [])),
    );
    assert.deepEqual(texts, ["hi there", "hello from 1.6"]);
  });
});
