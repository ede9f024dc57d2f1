// `conversation inbox` (issue 27 item 4) as a person runs it: the real command in a child
// process over a registry naming a real Pi's controller; the list, --json, --watch's change
// lines, and the attach line each row prints, parsed back as the attach command it must be.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { parseCommand } from "../../src/cli/args.ts";
import { register } from "../../src/control/registry/registry.ts";
import { conversationId } from "../../src/reader/sources.ts";
import { startReal } from "../control/real-controller.ts";
import { SLOW_TEST_MS } from "../helpers/deadline.ts";
import { startCli } from "./run-cli.ts";

const T = { timeout: SLOW_TEST_MS };

async function registered(t: TestContext) {
  const run = await startReal(t, { replies: [{ kind: "text", text: "All done." }] });
  const stateDir = join(run.f.root, "state");
  const conversation = conversationId(run.f.projectRoot, "main", "s.jsonl");
  const reg = await register(join(stateDir, "controllers"), {
    conversation,
    project: run.f.projectRoot,
    seat: "main",
    sessionFile: run.f.sessionFile,
    socket: run.ctrl.socketPath,
    execution: "ex-test",
    grants: ["g-op", "g-ro"],
    startedAt: new Date().toISOString(),
  });
  t.after(() => reg.remove());
  return { run, stateDir, conversation };
}

/** The words of a printed command after its prefix (`conversation` or `npm run conversation --`). */
function argsOf(line: string): string[] {
  const words = line.trim().split(/\s+/);
  const at = words.indexOf("attach");
  assert.ok(at >= 0, line);
  return words.slice(at);
}

describe("conversation inbox", () => {
  it(
    "lists a conversation waiting for input with its attach line, and --json says the same",
    T,
    async (t) => {
      const { stateDir, conversation } = await registered(t);
      const text = startCli(t, ["inbox", "--state-dir", stateDir, "--grant", "g-ro"]);
      assert.deepEqual(await text.exited, { code: 0, signal: null }, text.stderr());
      const out = text.stdout();
      assert.match(out, /^Needs you \(1\), oldest wait first:/);
      assert.match(
        out,
        new RegExp(`waiting-input  \\d+ (s|min|h|days)[^\\n]*${conversation}  [^\\n]*/main`),
      );
      const line = out.split("\n").find((l) => l.includes(" attach ")) ?? "";
      const parsed = parseCommand(argsOf(line));
      assert.ok(parsed.ok && parsed.command.name === "attach", line);
      assert.deepEqual(
        [parsed.command.target, parsed.command.grant],
        [{ conversation, stateDir }, "g-op"],
      );
      const json = startCli(t, ["inbox", "--state-dir", stateDir, "--grant", "g-ro", "--json"]);
      assert.deepEqual(await json.exited, { code: 0, signal: null }, json.stderr());
      const doc = JSON.parse(json.stdout()) as {
        inbox: { conversation: string; state: string; attach: string }[];
      };
      assert.deepEqual(
        doc.inbox.map((r) => [r.conversation, r.state]),
        [[conversation, "waiting-input"]],
      );
      assert.equal(doc.inbox[0]?.attach, line.trim());
    },
  );

  it("says nothing needs you when no controller runs", T, async (t) => {
    const { run } = await registered(t);
    const empty = startCli(t, ["inbox", "--state-dir", join(run.f.root, "elsewhere")]);
    assert.deepEqual(await empty.exited, { code: 0, signal: null }, empty.stderr());
    assert.match(
      empty.stdout(),
      /^Nothing needs you: no controller is running \(registry: .*elsewhere\/controllers\)\.\n$/,
    );
  });

  it(
    "--watch prints each change: the run, then waiting for input with the attach line",
    T,
    async (t) => {
      const { run, stateDir, conversation } = await registered(t);
      const watch = startCli(t, ["inbox", "--state-dir", stateDir, "--grant", "g-ro", "--watch"]);
      await watch.waitFor("the first listing", (c) => c.stdout().includes("Needs you (1)"));
      const { client } = await run.client();
      assert.equal((await client.takeover()).outcome, "admitted");
      assert.equal((await client.prompt("finish")).outcome, "admitted");
      await watch.waitFor("running", (c) =>
        new RegExp(`\\d\\d:\\d\\d:\\d\\d running  ${conversation}`).test(c.stdout()),
      );
      await watch.waitFor("waiting again", (c) =>
        new RegExp(
          `running[^]*\\d\\d:\\d\\d:\\d\\d waiting-input  ${conversation}[^\\n]*\\n  .* attach ${conversation}`,
        ).test(c.stdout()),
      );
      watch.proc.kill("SIGINT");
      assert.deepEqual(await watch.exited, { code: 0, signal: null }, watch.stderr());
    },
  );

  it("refuses a stall time that is not a number of minutes", () => {
    const parsed = parseCommand(["inbox", "--stall-minutes", "soon"]);
    assert.ok(!parsed.ok);
    assert.match(parsed.error, /--stall-minutes "soon" is not a number of minutes/);
  });
});
