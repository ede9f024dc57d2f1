// The catalogue's `live` as people and scripts see it: `catalogue --json --state-dir` and the
// board's `GET /api/conversations` under `serve --state-dir` mark the conversation a registered
// controller serves. The "controller" here is this test process registered in a temp registry
// (alive by pid and start time); a real controller's registration is in control-project.test.ts.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { register } from "../../src/control/registry/registry.ts";
import { conversationId, sessionsDirOf } from "../../src/reader/sources.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { listenOn } from "../helpers/listener.ts";
import { settledSession, writeLines } from "../helpers/real-pi.ts";
import { assertValid } from "../helpers/schema.ts";
import { runCli, startCli } from "./run-cli.ts";

type Rows = { conversations: { conversation: string; live: boolean }[] };

async function registered(t: TestContext) {
  const root = mkdtempSync("/tmp/lv-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const project = join(root, "proj");
  const sessions = sessionsDirOf(project, "main");
  mkdirSync(sessions, { recursive: true });
  writeLines(join(sessions, "a.jsonl"), settledSession(project));
  writeLines(join(sessions, "b.jsonl"), settledSession(project));
  const a = conversationId(project, "main", "a.jsonl");
  const b = conversationId(project, "main", "b.jsonl");
  const state = join(root, "st");
  // A socket this process listens on: register() records the controller's socket.
  const socket = join(root, "c.sock");
  await listenOn(t, socket);
  const reg = await register(join(state, "controllers"), {
    conversation: a,
    project,
    seat: "main",
    sessionFile: join(sessions, "a.jsonl"),
    socket,
    execution: "ex-1",
    grants: ["operator"],
    startedAt: new Date().toISOString(),
  });
  t.after(() => reg.remove());
  return { project, state, a, b };
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { timeout: 10_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 10 s")));
    req.on("error", reject);
    req.end();
  });
}

describe("live rows", () => {
  it("catalogue --json marks the conversation a registered controller serves", async (t) => {
    const { project, state, a, b } = await registered(t);
    const r = await runCli(t, ["catalogue", "--project", project, "--state-dir", state, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const catalogue = JSON.parse(r.stdout) as Rows;
    assertValid("catalogue", catalogue);
    const live = Object.fromEntries(catalogue.conversations.map((c) => [c.conversation, c.live]));
    assert.deepEqual(live, { [a]: true, [b]: false });
    // Another state dir knows of no controller.
    const other = await runCli(t, [
      ...["catalogue", "--project", project, "--state-dir", join(state, "x"), "--json"],
    ]);
    assert.ok((JSON.parse(other.stdout) as Rows).conversations.every((c) => !c.live));
  });

  it("the text catalogue says which conversation a controller runs now", async (t) => {
    const { project, state, a, b } = await registered(t);
    const r = await runCli(t, ["catalogue", "--project", project, "--state-dir", state]);
    assert.equal(r.code, 0, r.stderr);
    const block = (id: string) => r.stdout.split("\n\n").find((x) => x.includes(id)) ?? "";
    assert.match(block(a), /live: a controller runs it now/);
    assert.doesNotMatch(block(b), /live/);
  });

  it("the board's catalogue route marks it too (serve --state-dir)", async (t) => {
    const { project, state, a } = await registered(t);
    const serve = startCli(t, [
      ...["serve", "--project", project, "--state-dir", state, "--port", "0"],
    ]);
    await serve.waitFor("the URL", (c) => /serving on (http:\S+)/.test(c.stdout()), DEADLINE_MS);
    const url = /serving on (http:\S+)/.exec(serve.stdout())?.[1] ?? "";
    // A controller runs: the operator line says what logging in is for.
    await serve.waitFor("the login line", (c) => /login\?token=/.test(c.stdout()), DEADLINE_MS);
    assert.match(
      serve.stdout(),
      /\nTo act \(steer a run\) from the Console, log in with: http:\S+\/login\?token=\S+\n$/,
    );
    const r = await get(`${url.replace(/\/$/, "")}/api/conversations`);
    assert.equal(r.status, 200);
    const catalogue = JSON.parse(r.body) as Rows;
    assertValid("catalogue", catalogue);
    assert.deepEqual(
      catalogue.conversations.filter((c) => c.live).map((c) => c.conversation),
      [a],
    );
    serve.proc.kill("SIGTERM");
    assert.equal((await serve.exited).code, 0);
    assert.doesNotMatch(serve.stdout(), /Not on this board/, "its project is a source");
  });

  it("serve names a running controller its sources do not read, and what to add", async (t) => {
    const { project, state, a } = await registered(t);
    const elsewhere = join(state, "..", "other");
    mkdirSync(sessionsDirOf(elsewhere, "main"), { recursive: true });
    const serve = startCli(t, [
      ...["serve", "--project", elsewhere, "--state-dir", state, "--port", "0"],
    ]);
    await serve.waitFor("the note", (c) => /Not on this board/.test(c.stdout()), DEADLINE_MS);
    const line = /^Not on this board: .*$/m.exec(serve.stdout())?.[0] ?? "";
    assert.ok(line.includes(a), line);
    // Another --project: one board reads one, so a second board is the command to run.
    assert.ok(
      line.endsWith(
        `second board: ${prefix} serve --project ${project} --seat main --port 0 --state-dir ${state}`,
      ),
      line,
    );
    serve.proc.kill("SIGTERM");
    assert.equal((await serve.exited).code, 0);
    await runsAsPrinted(t, line, a);
  });

  it("serve's hint keeps what the board shows: Pi's default store read because none was named", async (t) => {
    const { project, state, a } = await registered(t);
    const agent = join(state, "..", "agent");
    mkdirSync(join(agent, "sessions"), { recursive: true });
    const env = { PI_CODING_AGENT_DIR: agent };
    const serve = startCli(t, ["serve", "--state-dir", state, "--port", "0"], { env });
    await serve.waitFor("the note", (c) => /Not on this board/.test(c.stdout()), DEADLINE_MS);
    const line = /^Not on this board: .*$/m.exec(serve.stdout())?.[0] ?? "";
    // Issue 24 item 6: "add --project" alone would drop Pi's store; --pi keeps it.
    assert.ok(
      line.endsWith(
        `run: ${prefix} serve --project ${project} --seat main --pi --port 0 --state-dir ${state}`,
      ),
      line,
    );
    serve.proc.kill("SIGTERM");
    assert.equal((await serve.exited).code, 0);
    await runsAsPrinted(t, line, a, env);
  });
});

const prefix = "npm run conversation --";

/**
 * The command at the end of a hint, run as printed (from the repository: `npm run
 * conversation --`): its board names no controller it does not read, and lists `id`.
 */
async function runsAsPrinted(
  t: TestContext,
  line: string,
  id: string,
  env: Record<string, string> = {},
): Promise<void> {
  const printed = line.slice(line.lastIndexOf(`${prefix} serve `) + prefix.length + 1);
  const args = printed.split(" ");
  const again = startCli(t, args, { env });
  await again.waitFor("the login line", (c) => /login\?token=/.test(c.stdout()), DEADLINE_MS);
  const url = /serving on (http:\S+)/.exec(again.stdout())?.[1] ?? "";
  const r = await get(`${url.replace(/\/$/, "")}/api/conversations`);
  assert.equal(r.status, 200);
  assert.doesNotMatch(again.stdout(), /Not on this board/, again.stdout());
  const rows = JSON.parse(r.body) as Rows;
  assert.ok(
    rows.conversations.some((r) => r.conversation === id),
    "the controller's conversation is on the board",
  );
  again.proc.kill("SIGTERM");
  assert.equal((await again.exited).code, 0);
}
