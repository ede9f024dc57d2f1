// Continuing a conversation of Pi's own store under control (issue 24 item 7): `control
// --session` on a store file is refused with the `--fork-from` line to run instead; that line,
// run as printed, forks the conversation into the seat with the real pinned Pi's own
// SessionManager.forkFrom and controls the fork, which a prompt then continues through the
// loopback model. The original stays byte-identical and no process opens it for writing
// (strace over the controller and its Pi); the catalogue links the fork to it.
import assert from "node:assert/strict";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import type { Receipt, StreamEvent } from "../../src/control/protocol.ts";
import type { RegistryEntry } from "../../src/control/registry/registry.ts";
import type { CatalogueRow } from "../../src/index.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { sessionsDirOf } from "../../src/reader/sources.ts";
import { SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { skipWithoutStrace, traceOpens } from "../helpers/open-trace.ts";
import { piMessages } from "../helpers/pi-messages.ts";
import { readLines, writeAgentFiles } from "../helpers/real-pi.ts";
import { MAIN, runCli } from "./run-cli.ts";

/** A Pi user's home: Pi's store with one titled, labelled conversation of another project. */
async function piUser(t: TestContext) {
  // Short, so the socket path under the state dir fits in sun_path.
  const root = mkdtempSync("/tmp/cf-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const model = await startFakeModel({
    replies: [{ kind: "text", text: "continued in the fork" }],
  });
  t.after(() => model.close());
  const agentSrc = join(root, "agent-src");
  writeAgentFiles(agentSrc, model.baseUrl);
  writeFileSync(join(agentSrc, "auth.json"), "{}\n", { mode: 0o600 });
  const home = join(root, "home");
  const app = join(root, "code", "app");
  mkdirSync(app, { recursive: true });
  const folder = join(home, ".pi", "agent", "sessions", encodeCwd(app));
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  const sm = SessionManager.create(app, folder);
  const { user, reply } = piMessages(Date.now() - 60_000);
  sm.appendSessionInfo("Release plan");
  const u1 = sm.appendMessage(user("Plan the release."));
  sm.appendMessage(reply("Tag, build, publish."));
  sm.appendLabelChange(u1, "the plan");
  const original = sm.getSessionFile();
  assert.ok(original);
  // Pi is writing its next line right now: forkFrom on the path would append "\n" to it.
  appendFileSync(original, '{"type":"message","id":"half');
  const project = join(root, "proj");
  mkdirSync(project);
  return { root, home, original, project, agentSrc, state: join(root, "st"), u1 };
}

describe("conversation control --fork-from", { concurrency: 1 }, () => {
  it("forks a store conversation into the seat with Pi's code, controls and prompts the fork, and never writes the original", {
    timeout: SLOW_TEST_MS,
    skip: skipWithoutStrace(),
  }, async (t) => {
    const u = await piUser(t);
    const env = { HOME: u.home, PI_CODING_AGENT_DIR: undefined };
    const before = readFileSync(u.original);
    const flags = [
      "--model",
      "loopback/fake-1",
      "--agent-from",
      u.agentSrc,
      "--state-dir",
      u.state,
    ];
    const direct = await runCli(
      t,
      ["control", "--project", u.project, "--seat", "main", "--session", u.original, ...flags],
      { env },
    );
    assert.equal(direct.code, 1, direct.stderr);
    assert.match(
      direct.stderr,
      /^refused: live-session-refused: .+ is a conversation of Pi's own session store /m,
    );
    const printed =
      /^ {2}What to do: .*: (npm run conversation -- control --fork-from .+)\.$/m.exec(
        direct.stderr,
      )?.[1];
    assert.ok(printed, direct.stderr);
    // The line as printed: plain words here (no quoting needed for these paths).
    assert.doesNotMatch(printed, /['"\\]/);
    const args = printed.slice("npm run conversation -- ".length).split(" ");
    assert.deepEqual(args.slice(0, 2), ["control", "--fork-from"]);

    const traced = traceOpens(MAIN, args, { env: { HOME: u.home }, timeoutMs: 200_000 });
    // Awaited below; a rejection before then (strace failing) must not go unhandled meanwhile.
    void traced.catch(() => undefined);
    // The registry entry the controller writes once it runs (registry.ts): its socket and pid.
    const registry = join(u.state, "controllers");
    const entryOf = (): RegistryEntry | undefined => {
      const names = existsSync(registry) ? readdirSync(registry) : [];
      const name = names.find((n) => n.endsWith(".json"));
      if (name === undefined) return undefined;
      return JSON.parse(readFileSync(join(registry, name), "utf8")) as RegistryEntry;
    };
    await until(() => entryOf() !== undefined, "the fork's controller to register", 150_000);
    const entry = entryOf();
    assert.ok(entry);
    const client = new ConversationClient({
      socketPath: entry.socket,
      grant: "operator",
      requestTimeoutMs: 30_000,
    });
    t.after(() => client.close());
    const events: StreamEvent[] = [];
    client.onEvent((e) => events.push(e));
    await client.connect();
    assert.equal((await client.takeover()).outcome, "admitted");
    const sent = await client.prompt("go on from here");
    assert.equal(sent.outcome, "admitted", JSON.stringify(sent));
    const settled = () =>
      events
        .filter((e) => e.event.kind === "receipt")
        .map((e) => e.event.receipt as Receipt)
        .find((r) => r.id === sent.receipt?.id && r.state === "settled");
    await until(() => settled() !== undefined, "the prompt to settle", 60_000);
    await client.close();
    process.kill(entry.pid, "SIGTERM");
    const run = await traced;
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^Forked pi-[0-9a-f]{40} \(Release plan\) into this seat with Pi's SessionManager\.forkFrom \(Pi's store is only read\): .+\.jsonl$/m,
    );

    // The original: byte for byte as it was, and never opened for writing by any process.
    assert.ok(readFileSync(u.original).equals(before), "the original is unchanged");
    const onOriginal = run.calls.filter(
      (c) => c.resolved === u.original || c.target === u.original,
    );
    assert.ok(onOriginal.length > 0, "the original was read (through the reader's walk)");
    assert.deepEqual(
      onOriginal.filter((c) => c.writes),
      [],
      "no open of the original for writing",
    );

    // The fork: Pi's header naming the original, its history, and the new exchange.
    const fork = entry.sessionFile;
    assert.equal(join(fork, ".."), sessionsDirOf(u.project, "main"));
    const lines = readLines(fork);
    assert.equal(lines[0]?.type, "session");
    assert.equal(lines[0]?.parentSession, u.original);
    assert.equal(lines[0]?.cwd, u.project);
    assert.ok(
      lines.some((l) => l.id === u.u1),
      "the history, with Pi's own entry ids",
    );
    assert.ok(
      lines.some((l) => JSON.stringify(l).includes("continued in the fork")),
      "the prompt's reply is in the fork",
    );
    assert.doesNotMatch(readFileSync(fork, "utf8"), /"half/, "only whole lines were forked");

    // The catalogue links the fork to the conversation it continues.
    const cat = await runCli(t, ["catalogue", "--json", "--pi", "--project", u.project], { env });
    assert.equal(cat.code, 0, cat.stderr);
    const rows: CatalogueRow[] = JSON.parse(cat.stdout).conversations;
    const parent = rows.find((r) => r.seat === "pi-agent");
    const child = rows.find((r) => r.seat === "main");
    assert.ok(parent && child);
    assert.deepEqual(child.forkedFrom, {
      conversation: parent.conversation,
      title: "Release plan",
    });
  });

  it("refuses --fork-from an id the store does not have, saying how to list them", async (t) => {
    const u = await piUser(t);
    const r = await runCli(
      t,
      [
        "control",
        "--fork-from",
        "pi-ffff",
        "--project",
        u.project,
        "--seat",
        "main",
        "--state-dir",
        u.state,
      ],
      { env: { HOME: u.home, PI_CODING_AGENT_DIR: undefined } },
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /^refused: unknown-conversation: Pi's session store .+ has no conversation pi-ffff$/m,
    );
    assert.match(
      r.stderr,
      /What to do: list the conversations it has with "npm run conversation -- catalogue --pi"/,
    );
    assert.equal(r.stdout, "");
  });
});
