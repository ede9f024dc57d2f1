// `conversation control` on a user's own project (issue 13): the real pinned Pi, sealed, with a
// loopback model, from `--new` to a completed prompt typed into `attach <conversation-id>` in
// tmux; `controllers` and the catalogue's `live`; `--agent-from` with its source fingerprinted
// before and after; SIGTERM (registry entry gone, no process left); a killed controller's stale
// entry; an existing session Pi appends to at startup. Every wait has a deadline; children,
// tmux servers and temp dirs are cleaned up in t.after.
import assert from "node:assert/strict";
import {
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
import { sessionsDirOf } from "../../src/reader/sources.ts";
import { DEADLINE_MS, SLOW_TEST_MS, until } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import { assertUnchanged, fingerprintTree } from "../helpers/fingerprint.ts";
import {
  assistantEntry,
  headerLine,
  REAL_PI_VERSIONS,
  readLines,
  userEntry,
  writeAgentFiles,
  writeLines,
} from "../helpers/real-pi.ts";
import { assertValid } from "../helpers/schema.ts";
import { type Child, runCli, startCli } from "./run-cli.ts";
import { EMPTY_COMPOSER, firstLine, quit, startPane, tmuxSkip } from "./tmux-pane.ts";

const REAL = { timeout: SLOW_TEST_MS };
// A controller over the real pinned Pi: seconds alone; over a minute seen at load 50.
const START_MS = 2 * DEADLINE_MS;

type Project = { root: string; project: string; state: string; agentSrc: string };

/** A project with no `.pi` yet, a state dir, and an agent dir to copy from (fingerprinted). */
async function project(t: TestContext, reply: string): Promise<Project> {
  // Short, so the socket path under the state dir fits in sun_path.
  const root = mkdtempSync("/tmp/cp-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const model = await startFakeModel({ replies: [{ kind: "text", text: reply }] });
  t.after(() => model.close());
  const agentSrc = join(root, "agent-src");
  writeAgentFiles(agentSrc, model.baseUrl);
  writeFileSync(join(agentSrc, "auth.json"), "{}\n", { mode: 0o600 });
  const proj = join(root, "proj");
  mkdirSync(proj);
  return { root, project: proj, state: join(root, "st"), agentSrc };
}

/** Waits for the controller's start block (through the Attach line). */
async function started(cli: Child): Promise<{ conversation: string; socket: string }> {
  await cli.waitFor("the Attach line", (c) => /\nAttach: .*\n/.test(c.stdout()), START_MS);
  const out = cli.stdout();
  const conversation = /^Controlling (pi-[0-9a-f]{40})$/m.exec(out)?.[1];
  const socket = /^Socket: (.+)$/m.exec(out)?.[1];
  assert.ok(conversation && socket, out);
  return { conversation, socket };
}

/** A ConversationClient on the controller's socket, keeping what it is pushed; closed at the end. */
async function connect(
  t: TestContext,
  socketPath: string,
  grant: string,
): Promise<{ client: ConversationClient; events: StreamEvent[] }> {
  const client = new ConversationClient({ socketPath, grant, requestTimeoutMs: 15_000 });
  t.after(() => client.close());
  const events: StreamEvent[] = [];
  client.onEvent((e) => events.push(e));
  await client.connect();
  return { client, events };
}

async function settledReceipt(events: StreamEvent[], id: string): Promise<Receipt> {
  const find = () =>
    events
      .filter((e) => e.event.kind === "receipt")
      .map((e) => e.event.receipt as Receipt)
      .find((r) => r.id === id && r.state === "settled");
  await until(() => find() !== undefined, "the receipt to settle", DEADLINE_MS);
  return find() as Receipt;
}

async function controllers(t: TestContext, state: string): Promise<RegistryEntry[]> {
  const r = await runCli(t, ["controllers", "--json", "--state-dir", state]);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { controllers: RegistryEntry[] }).controllers;
}

/** Pids of processes whose command line names `needle` (the session file: Pi's --session). */
function processesNaming(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const state = readFileSync(`/proc/${name}/stat`, "utf8").split(") ")[1]?.[0];
      if (cmdline.includes(needle) && state !== "Z") out.push(Number(name));
    } catch {
      // The process ended while we looked: it is not running, which is what we count.
    }
  }
  return out;
}

/**
 * Pi without credentials is told at start: what is missing, what to add, and a command that
 * runs the same conversation again with Pi's credentials copied (not a second `--new`).
 */
function assertOnlyCredentialWarning(stderr: string): void {
  const lines = stderr.trimEnd().split("\n");
  assert.match(
    lines[0] ?? "",
    /^warning: Pi has no credentials for any provider: no agent directory was given \(--agent-from or --agent-dir\), so each prompt will be refused \("No API key found"\)\.$/,
  );
  for (const l of lines.slice(1)) assert.match(l, /^ {2}/, `only the warning: ${stderr}`);
  const again = lines.at(-1) ?? "";
  assert.match(
    again,
    /^ {4}npm run conversation -- control .*--session \S+\.jsonl .*--agent-from \S+$/,
  );
  assert.doesNotMatch(again, / --new\b/);
}

async function stopWithSigterm(cli: Child): Promise<void> {
  cli.proc.kill("SIGTERM");
  // waitFor clears its deadline: a timer left behind kept this file's process up 60 s.
  await cli.waitFor(
    "the exit after SIGTERM",
    (c) => c.proc.exitCode !== null || c.proc.signalCode !== null,
  );
  assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
}

// Three tests at once: each has its own project, state dir, model, controller and tmux server,
// and mostly waits on them (22 s of CPU in 72 s one at a time).
describe("conversation control on a project", { concurrency: 3 }, () => {
  it("--new to a prompt answered in attach <conversation-id>; controllers, live, --agent-from, SIGTERM", {
    ...REAL,
    skip: tmuxSkip,
  }, async (t) => {
    const p = await project(t, "hello from the loopback model");
    const source = fingerprintTree(p.agentSrc);
    const cli = startCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--new"],
      ...["--title", "My first controlled chat", "--model", "loopback/fake-1"],
      ...["--thinking", "off", "--agent-from", p.agentSrc, "--state-dir", p.state],
    ]);
    const { conversation, socket } = await started(cli);
    const out = cli.stdout();
    assert.equal(cli.stderr(), "", "no load-check warning: Pi's startup append was accepted");
    // The default grants, each with a line that attaches as printed.
    assert.match(out, /^ {2}operator \(local-operator\): observe takeover release prompt/m);
    assert.match(out, /^ {2}observer \(local-observer\): observe$/m);
    // As run from the checkout's sources (invocation.ts); printed-commands.test.ts runs it.
    const attach = `npm run conversation -- attach ${conversation} --state-dir ${p.state}`;
    assert.ok(out.includes(`\n    ${attach} --grant observer\n`), out);
    assert.ok(out.includes(`\nAttach: ${attach} --grant operator\n`), out);

    // The new session: Pi's SessionManager wrote it where the reader looks, with the title,
    // model and thinking entries; Pi then appended its known pair at startup.
    const sessions = sessionsDirOf(p.project, "main");
    const files = readdirSync(sessions);
    assert.equal(files.length, 1, files.join(" "));
    const file = join(sessions, files[0] as string);
    assert.match(files[0] as string, /^\d{4}-\d\d-\d\dT[\d-]+Z_[0-9a-f-]{36}\.jsonl$/);
    const lines = readLines(file);
    assert.deepEqual(
      lines.map((l) => l.type),
      [
        "session",
        "session_info",
        "model_change",
        "thinking_level_change",
        "model_change",
        "thinking_level_change",
      ],
    );
    assert.equal(lines[0]?.cwd, p.project);
    assert.equal(lines[1]?.name, "My first controlled chat");
    assert.deepEqual([lines[2]?.provider, lines[2]?.modelId], ["loopback", "fake-1"]);

    // The registry: one live controller, found by conversation id.
    const [entry, ...others] = await controllers(t, p.state);
    assert.equal(others.length, 0);
    assert.ok(entry);
    assert.equal(entry.conversation, conversation);
    assert.equal(entry.socket, socket);
    assert.equal(entry.sessionFile, file);
    assert.deepEqual(entry.grants, ["operator", "observer"]);
    assert.equal(entry.pid, cli.proc.pid);
    assert.equal(entry.piVersion, "0.85.1", "the entry names the engine");
    assert.match(out, /^Engine: Pi 0\.85\.1$/m);
    const text = await runCli(t, ["controllers", "--state-dir", p.state]);
    assert.ok(text.stdout.includes(`  ${attach} --grant operator\n`), text.stdout);
    assert.match(text.stdout, /^ {2}Pi 0\.85\.1, pid \d+, since /m);

    // The catalogue marks it live, and stays CHAT-01.
    const cat = await runCli(t, [
      ...["catalogue", "--project", p.project, "--state-dir", p.state, "--json"],
    ]);
    assert.equal(cat.code, 0, cat.stderr);
    const catalogue = JSON.parse(cat.stdout) as {
      conversations: { conversation: string; live: boolean; title: string }[];
    };
    assertValid("catalogue", catalogue);
    assert.deepEqual(
      catalogue.conversations.map((r) => [r.conversation, r.title, r.live]),
      [[conversation, "My first controlled chat", true]],
    );

    // --agent-from: a private 0700 copy under the state dir; the source untouched.
    const agents = readdirSync(join(p.state, "agents"));
    assert.equal(agents.length, 1);
    const copy = join(p.state, "agents", agents[0] as string);
    // Pi may rewrite its copy (settings, models-store.json); models.json came from the source.
    assert.equal(
      readFileSync(join(copy, "models.json"), "utf8"),
      readFileSync(join(p.agentSrc, "models.json"), "utf8"),
    );
    assert.ok(existsSync(join(copy, "auth.json")));

    // attach <conversation-id> in a real pty: take control, prompt, see the model's reply.
    const pane = await startPane(t, p.root, "", "", {
      columns: 70,
      rows: 20,
      attachArgs: [conversation, "--state-dir", p.state],
    });
    await pane.waitScreen("the observer", (s) => firstLine(s).startsWith("observer · "), {
      deadlineMs: DEADLINE_MS,
    });
    await pane.tmux(["send-keys", "C-t"]);
    await pane.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));
    await pane.tmux(["send-keys", "-l", "are you there?"]);
    await pane.tmux(["send-keys", "Enter"]);
    const answered = await pane.waitScreen(
      "the model's reply",
      (s) => s.includes("hello from the loopback model") && EMPTY_COMPOSER.test(s),
      { deadlineMs: DEADLINE_MS },
    );
    assert.match(answered, /are you there\?/);
    await quit(pane);
    assert.match(readFileSync(file, "utf8"), /hello from the loopback model/);

    // SIGTERM: a proven or recorded stop, the registry entry gone, nothing left running.
    await stopWithSigterm(cli);
    assert.deepEqual(await controllers(t, p.state), []);
    assert.deepEqual(readdirSync(join(p.state, "controllers")), []);
    assert.equal(existsSync(socket), false);
    assert.deepEqual(readdirSync(join(p.state, "agents")), [], "the credentials copy is gone");
    await until(() => processesNaming(file).length === 0, "Pi to be gone", DEADLINE_MS);
    assertUnchanged(source, fingerprintTree(p.agentSrc));
    const after = await runCli(t, [
      ...["catalogue", "--project", p.project, "--state-dir", p.state, "--json"],
    ]);
    assert.match(after.stdout, /"live":false/);
  });

  it("says in attach why Pi answered a prompt without running it (no credentials), in Pi's words", {
    ...REAL,
    skip: tmuxSkip,
  }, async (t) => {
    const p = await project(t, "unused");
    // No --agent-from: Pi has no model and no credentials.
    const cli = startCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--new"],
      ...["--state-dir", p.state],
    ]);
    const { conversation } = await started(cli);
    // Said at start, before any prompt (issue 24 item 13); no load-check warning beside it.
    await cli.waitFor("the credentials warning", (c) => /What to do: .*\n.*\n/.test(c.stderr()));
    assertOnlyCredentialWarning(cli.stderr());
    const pane = await startPane(t, p.root, "", "", {
      columns: 80,
      rows: 24,
      attachArgs: [conversation, "--state-dir", p.state, "--grant", "operator"],
    });
    await pane.waitScreen("the observer", (s) => firstLine(s).startsWith("observer · "), {
      deadlineMs: DEADLINE_MS,
    });
    await pane.tmux(["send-keys", "C-t"]);
    await pane.waitScreen("control", (s) => firstLine(s).startsWith("controller · "));
    await pane.tmux(["send-keys", "-l", "hello?"]);
    await pane.tmux(["send-keys", "Enter"]);
    const said = await pane.waitScreen(
      "the reason",
      (s) => s.replace(/\s+/g, " ").includes("the agent directory has its credentials"),
      { joined: true, deadlineMs: DEADLINE_MS },
    );
    const flat = said.replace(/\s+/g, " ");
    assert.match(flat, /\[prompt settled: handled-without-run\]/);
    assert.match(flat, /Pi did not run this prompt \(it said: No API key found/);
    // The notice line says it too, not only "prompt admitted" (the controller's word).
    await pane.waitScreen("the notice", (s) =>
      s.includes("Pi did not run the prompt: see why above"),
    );
    await quit(pane);
    await stopWithSigterm(cli);
  });

  it(
    "refuses --new on a seat another controller runs before writing anything, and says so (issue 24 item 8)",
    REAL,
    async (t) => {
      const p = await project(t, "unused");
      const args = [
        ...["control", "--project", p.project, "--seat", "main", "--new"],
        ...["--model", "loopback/fake-1", "--agent-from", p.agentSrc, "--state-dir", p.state],
      ];
      const first = startCli(t, args);
      await started(first);
      const sessions = sessionsDirOf(p.project, "main");
      const before = readdirSync(sessions).sort();
      assert.equal(before.length, 1);
      const second = await runCli(t, args);
      assert.equal(second.code, 1, second.stderr);
      assert.doesNotMatch(second.stdout, /New conversation written/);
      assert.match(second.stderr, /^refused: already-active: /m);
      assert.match(
        second.stderr,
        /What to do: nothing was written; another controller runs on this seat/,
      );
      assert.doesNotMatch(second.stderr, /copy of it/);
      assert.deepEqual(readdirSync(sessions).sort(), before, "no empty conversation left behind");
      first.proc.kill("SIGTERM");
      assert.equal((await first.exited).code, 0);
    },
  );

  it(
    "forgets a killed controller's entry: controllers ignores and removes it, attach says so",
    REAL,
    async (t) => {
      const p = await project(t, "unused");
      const cli = startCli(t, [
        ...["control", "--project", p.project, "--seat", "main", "--new"],
        ...["--model", "loopback/fake-1", "--agent-from", p.agentSrc, "--state-dir", p.state],
      ]);
      const { conversation } = await started(cli);
      const registry = join(p.state, "controllers");
      const [name] = readdirSync(registry);
      assert.ok(name?.startsWith(`${conversation}.${cli.proc.pid}.`), name);
      const session = (await controllers(t, p.state))[0]?.sessionFile ?? "";
      assert.ok(session.endsWith(".jsonl"));

      cli.proc.kill("SIGKILL");
      assert.deepEqual(await cli.exited, { code: null, signal: "SIGKILL" });
      // Nothing removed it: the process had no chance to.
      assert.deepEqual(readdirSync(registry), [name]);
      // The controller's shim kills Pi when its controller's channel closes (cohort/shim.ts).
      await until(() => processesNaming(session).length === 0, "Pi to be gone", DEADLINE_MS);

      const gone = await runCli(t, ["attach", conversation, "--state-dir", p.state]);
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, new RegExp(`cannot attach: no controller runs ${conversation}`));
      assert.match(gone.stderr, /controllers --state-dir/);
      assert.deepEqual(readdirSync(registry), [], "the dead entry was removed");
      assert.deepEqual(await controllers(t, p.state), []);
      const text = await runCli(t, ["controllers", "--state-dir", p.state]);
      assert.match(text.stdout, /^No controller is running/);
    },
  );

  it(
    "removes --agent-from's copy of the credentials when the controller is killed: at once, else at the next listing",
    REAL,
    async (t) => {
      const p = await project(t, "unused");
      const secret = '{"loopback":{"type":"api_key","key":"sk-agent-from-secret"}}\n';
      writeFileSync(join(p.agentSrc, "auth.json"), secret, { mode: 0o600 });
      const run = async (seat: string) => {
        const cli = startCli(t, [
          ...["control", "--project", p.project, "--seat", seat, "--new"],
          ...["--agent-from", p.agentSrc, "--state-dir", p.state],
        ]);
        const { conversation } = await started(cli);
        const entry = (await controllers(t, p.state)).find((e) => e.conversation === conversation);
        const copy = entry?.agentCopy ?? "";
        assert.equal(readFileSync(join(copy, "auth.json"), "utf8"), secret);
        return { cli, copy };
      };
      const registry = join(p.state, "controllers");

      // Killed outright: its watcher removes the copy; nobody read the registry meanwhile.
      const first = await run("main");
      first.cli.proc.kill("SIGKILL");
      assert.deepEqual(await first.cli.exited, { code: null, signal: "SIGKILL" });
      await until(() => !existsSync(first.copy), "the watcher to remove the copy", DEADLINE_MS);
      assert.equal(readdirSync(registry).length, 1, "the dead entry is still there");

      // Its watcher killed too (kill -9 of everything it could find): the next listing does it.
      const second = await run("other");
      const watchers = processesNaming(second.copy);
      assert.equal(watchers.length, 1, "one watcher names the copy");
      for (const pid of watchers) process.kill(pid, "SIGKILL");
      second.cli.proc.kill("SIGKILL");
      assert.deepEqual(await second.cli.exited, { code: null, signal: "SIGKILL" });
      assert.ok(existsSync(join(second.copy, "auth.json")), "nothing removed it yet");
      assert.deepEqual(await controllers(t, p.state), []);
      assert.equal(existsSync(second.copy), false, "the listing removed the copy");
      assert.deepEqual(readdirSync(registry), [], "and both dead entries");
      assert.deepEqual(readdirSync(join(p.state, "agents")), []);
    },
  );

  it(
    "accepts Pi's startup append on an existing session with no thinking entry and records it",
    REAL,
    async (t) => {
      const p = await project(t, "second answer");
      const sessions = sessionsDirOf(p.project, "main");
      mkdirSync(sessions, { recursive: true });
      const file = join(sessions, "old.jsonl");
      // Messages but no thinking_level_change on the branch: Pi appends one at startup (A1).
      writeLines(file, [
        headerLine(p.project),
        userEntry("aaaa0001", null, "hi", 1),
        assistantEntry("aaaa0002", "aaaa0001", "hello", 2),
      ]);
      const before = readFileSync(file);
      const cli = startCli(t, [
        ...["control", "--project", p.project, "--seat", "main", "--session", file],
        ...["--model", "loopback/fake-1", "--agent-from", p.agentSrc, "--state-dir", p.state],
      ]);
      await started(cli);
      assert.equal(cli.stderr(), "");
      const now = readFileSync(file);
      assert.deepEqual(now.subarray(0, before.length), before, "the prefix is untouched");
      const added = readLines(file).slice(3);
      assert.deepEqual(
        added.map((l) => [l.type, l.parentId]),
        [["thinking_level_change", "aaaa0002"]],
      );
      await stopWithSigterm(cli);
    },
  );

  it("--new with --pi-version 1.6.0: its startup append is accepted, a prompt runs, the registry names it", {
    ...REAL,
    skip: !REAL_PI_VERSIONS.includes("1.6.0") && "PI_TEST_VERSIONS leaves out 1.6.0",
  }, async (t) => {
    const p = await project(t, "hello from 1.6.0's loopback model");
    const cli = startCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--new", "--pi-version", "1.6.0"],
      ...["--model", "loopback/fake-1", "--thinking", "off", "--agent-from", p.agentSrc],
      ...["--state-dir", p.state],
    ]);
    const { conversation, socket } = await started(cli);
    assert.equal(cli.stderr(), "", "no load-check warning: 1.6.0's startup append was accepted");
    assert.match(cli.stdout(), /^Engine: Pi 1\.6\.0$/m);
    const [entry] = await controllers(t, p.state);
    assert.equal(entry?.conversation, conversation);
    assert.equal(entry?.piVersion, "1.6.0");
    // 1.6.0 appends the same pair as 0.85.1 to a session with no messages (sdk.js 296-303).
    const file = entry?.sessionFile ?? "";
    const lines = readLines(file);
    assert.deepEqual(
      lines.map((l) => l.type),
      ["session", "model_change", "thinking_level_change", "model_change", "thinking_level_change"],
    );
    assert.deepEqual(
      lines.slice(3).map((l) => l.parentId),
      [lines[2]?.id, lines[3]?.id],
    );

    const { client, events } = await connect(t, socket, "operator");
    assert.equal(client.state?.binding, "bound");
    assert.equal((await client.takeover()).outcome, "admitted");
    const r = await client.prompt("are you there?");
    assert.ok(r.outcome === "admitted", JSON.stringify(r));
    const receipt = await settledReceipt(events, r.receipt.id);
    assert.equal(receipt.reason, "completed");
    assert.match(readFileSync(file, "utf8"), /hello from 1\.6\.0's loopback model/);
    await client.close();
    await stopWithSigterm(cli);
    assert.deepEqual(await controllers(t, p.state), []);
  });

  it("--new with --pi-version 1.6.0 and no model: the startup append is accepted; a prompt settles handled-without-run with Pi's reason", {
    ...REAL,
    skip: !REAL_PI_VERSIONS.includes("1.6.0") && "PI_TEST_VERSIONS leaves out 1.6.0",
  }, async (t) => {
    const p = await project(t, "unused");
    const cli = startCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--new", "--pi-version", "1.6.0"],
      ...["--state-dir", p.state],
    ]);
    const { socket } = await started(cli);
    await cli.waitFor("the credentials warning", (c) => /What to do: .*\n.*\n/.test(c.stderr()));
    assertOnlyCredentialWarning(cli.stderr());
    const file = (await controllers(t, p.state))[0]?.sessionFile ?? "";
    assert.deepEqual(
      readLines(file).map((l) => l.type),
      ["session", "thinking_level_change"],
      "no model: Pi appends only its thinking entry",
    );
    const { client, events } = await connect(t, socket, "operator");
    assert.equal((await client.takeover()).outcome, "admitted");
    const r = await client.prompt("hello?");
    assert.ok(r.outcome === "admitted", JSON.stringify(r));
    const receipt = await settledReceipt(events, r.receipt.id);
    assert.equal(receipt.reason, "handled-without-run");
    // Pi's own words: 1.6.0 answers the prompt with success false and its reason.
    t.diagnostic(`detail: ${receipt.detail}`);
    assert.match(receipt.detail ?? "", /No API key found|No model/, JSON.stringify(receipt));
    await client.close();
    await stopWithSigterm(cli);
  });

  it("refuses a session outside the seat's sessions directory, saying where it must be", async (t) => {
    const p = await project(t, "unused");
    const stray = join(p.root, "elsewhere.jsonl");
    writeLines(stray, [headerLine(p.project)]);
    const r = await runCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--session", stray],
      ...["--state-dir", p.state],
    ]);
    assert.equal(r.code, 1);
    const where = sessionsDirOf(p.project, "main");
    assert.match(r.stderr, /^refused: configuration: /);
    assert.ok(r.stderr.includes(`${stray} is not in ${where}`), r.stderr);
    assert.match(r.stderr, /\n {2}What to do: /);
    assert.equal(existsSync(join(p.state, "claims")), false, "nothing was claimed");
  });

  it("refuses a --state-dir or project it cannot make folders in, in words, with no stack", async (t) => {
    const p = await project(t, "unused");
    const file = join(p.root, "a-file");
    writeFileSync(file, "");
    const underFile = await runCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--new"],
      ...["--state-dir", join(file, "st")],
    ]);
    assert.equal(underFile.code, 1);
    assert.equal(
      underFile.stderr,
      `refused: configuration: the state dir ${join(file, "st")} cannot be made: a part of the path is a file, not a folder (ENOTDIR); choose another with --state-dir\n  What to do: check the path or option named above, then start again.\n`,
    );
    // The project's .pi/state is a file: the seat's sessions folder cannot be made.
    mkdirSync(join(p.project, ".pi"));
    writeFileSync(join(p.project, ".pi", "state"), "");
    const noSeat = await runCli(t, [
      ...["control", "--project", p.project, "--seat", "main", "--new"],
      ...["--state-dir", p.state],
    ]);
    assert.equal(noSeat.code, 1);
    assert.match(
      noSeat.stderr,
      /^refused: configuration: cannot start the controller: mkdir \S+\/\.pi\/state\/main\/sessions: a part of the path is a file, not a folder \(ENOTDIR\)\n {2}What to do: /,
    );
  });
});
