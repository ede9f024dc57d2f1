// The K8 load check's one allowance (engine/pi/pi-load.ts checkLoad): Pi's known startup append past
// the expected leaf is accepted exactly, anything else fails with a reason a person can act on.
// The engine is a stub answering get_state and get_tree as pinned Pi does; the session file is
// written by the test to play what Pi (or another writer) appended. The real pinned Pi's own
// appends are checked end to end in test/cli/control-project.test.ts.
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import type { EngineLink } from "../../src/control/engine/engine.ts";
import {
  checkLoad,
  readStartupBasis,
  type StartupBasis,
} from "../../src/control/engine/pi/pi-load.ts";
import {
  assistantEntry,
  headerLine,
  SESSION_ID,
  thinkingEntry,
  userEntry,
} from "../helpers/real-pi.ts";

type Engine = {
  leaf: string | null;
  thinkingLevel?: string;
  messageCount: number;
  model?: boolean;
};

function stubLink(file: string, e: Engine): EngineLink {
  const data: Record<string, unknown> = {
    get_state: {
      thinkingLevel: e.thinkingLevel ?? "off",
      isStreaming: false,
      isCompacting: false,
      steeringMode: "all",
      followUpMode: "all",
      sessionId: SESSION_ID,
      sessionFile: file,
      autoCompactionEnabled: true,
      messageCount: e.messageCount,
      pendingMessageCount: 0,
      ...(e.model === false ? {} : { model: { provider: "loopback", id: "fake-1" } }),
    },
    get_tree: { tree: [], leafId: e.leaf },
  };
  const link = {
    request: async (cmd: { type: string }) => ({
      type: "response",
      command: cmd.type,
      success: true,
      data: data[cmd.type],
    }),
  };
  return link as unknown as EngineLink;
}

function line(o: object): string {
  return `${JSON.stringify(o)}\n`;
}

function entry(type: string, id: string, parentId: string | null, extra: object = {}): object {
  return { type, id, parentId, timestamp: new Date().toISOString(), ...extra };
}

const thinking = (id: string, parent: string | null, level = "off") =>
  entry("thinking_level_change", id, parent, { thinkingLevel: level });
const model = (id: string, parent: string | null) =>
  entry("model_change", id, parent, { provider: "loopback", modelId: "fake-1" });

function session(t: TestContext, lines: object[]): { file: string; basis: StartupBasis } {
  const dir = mkdtempSync(join(tmpdir(), "append-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "s.jsonl");
  writeFileSync(file, lines.map(line).join(""));
  const basis = readStartupBasis(file);
  assert.ok(basis);
  return { file, basis };
}

const withMessages = (cwd: string) => [
  headerLine(cwd),
  userEntry("aaaa0001", null, "hi", 1),
  assistantEntry("aaaa0002", "aaaa0001", "hello", 2),
];

describe("checkLoad and Pi's startup append", () => {
  it("accepts the thinking entry Pi adds to a session with messages but none on its branch", async (t) => {
    const { file, basis } = session(t, withMessages("/p"));
    appendFileSync(file, line(thinking("t1", "aaaa0002")));
    const expected = { sessionFile: file, sessionId: SESSION_ID, leafId: "aaaa0002" };
    const r = await checkLoad(
      stubLink(file, { leaf: "t1", messageCount: 2 }),
      expected,
      1000,
      basis,
    );
    assert.equal(r.ok, true, r.reason);
    assert.equal(r.reason, "loaded-after-startup-append");
    assert.deepEqual(r.startupAppend, {
      entries: [{ id: "t1", type: "thinking_level_change" }],
      bytes: line(thinking("t1", "aaaa0002")).length,
    });
  });

  it("accepts the model and thinking pair Pi adds to a session with no messages", async (t) => {
    const { file, basis } = session(t, [headerLine("/p"), model("m0", null), thinking("t0", "m0")]);
    appendFileSync(file, line(model("m1", "t0")) + line(thinking("t1", "m1")));
    const expected = { sessionFile: file, sessionId: SESSION_ID, leafId: "t0" };
    const r = await checkLoad(
      stubLink(file, { leaf: "t1", messageCount: 0 }),
      expected,
      1000,
      basis,
    );
    assert.equal(r.ok, true, r.reason);
    assert.deepEqual(
      r.startupAppend?.entries.map((e) => e.type),
      ["model_change", "thinking_level_change"],
    );
  });

  it("passes with no append when the leaf is the expected one", async (t) => {
    const lines = [...withMessages("/p"), thinkingEntry("aaaa0003", "aaaa0002", 3)];
    const { file, basis } = session(t, lines);
    const expected = { sessionFile: file, sessionId: SESSION_ID, leafId: "aaaa0003" };
    const r = await checkLoad(
      stubLink(file, { leaf: "aaaa0003", messageCount: 2 }),
      expected,
      1000,
      basis,
    );
    assert.deepEqual([r.ok, r.reason, r.startupAppend], [true, "loaded", undefined]);
  });

  const refusals: [string, (file: string) => void, Engine, RegExp][] = [
    [
      "a message appended by another writer",
      (f) => appendFileSync(f, line(userEntry("u9", "aaaa0002", "sneaky", 9))),
      { leaf: "u9", messageCount: 3 },
      /added: message/,
    ],
    [
      "a thinking entry on a branch that already had one",
      (f) => {
        appendFileSync(f, line(thinking("t1", "aaaa0002")));
        appendFileSync(f, line(thinking("t2", "t1")));
      },
      { leaf: "t2", messageCount: 2 },
      /added: thinking_level_change,thinking_level_change/,
    ],
    [
      "a thinking entry that does not continue the expected leaf",
      (f) => appendFileSync(f, line(thinking("t1", "aaaa0001"))),
      { leaf: "t1", messageCount: 2 },
      /do not continue the expected leaf/,
    ],
    [
      "a level other than the one Pi reports",
      (f) => appendFileSync(f, line(thinking("t1", "aaaa0002", "high"))),
      { leaf: "t1", messageCount: 2, thinkingLevel: "off" },
      /thinking level differs/,
    ],
    [
      "an entry dated before the launch",
      (f) =>
        appendFileSync(
          f,
          line({ ...thinking("t1", "aaaa0002"), timestamp: "2020-01-01T00:00:00.000Z" }),
        ),
      { leaf: "t1", messageCount: 2 },
      /dated before the launch/,
    ],
    [
      "earlier lines rewritten",
      (f) => {
        writeFileSync(f, withMessages("/q").map(line).join(""));
        appendFileSync(f, line(thinking("t1", "aaaa0002")));
      },
      { leaf: "t1", messageCount: 2 },
      /earlier lines changed/,
    ],
    [
      "a partial line after the append",
      (f) => appendFileSync(f, `${line(thinking("t1", "aaaa0002"))}{"type":`),
      { leaf: "t1", messageCount: 2 },
      /a partial line follows/,
    ],
  ];
  for (const [what, write, engine, why] of refusals) {
    it(`fails, saying what to do, on ${what}`, async (t) => {
      const { file, basis } = session(t, withMessages("/p"));
      write(file);
      const expected = { sessionFile: file, sessionId: SESSION_ID, leafId: "aaaa0002" };
      const r = await checkLoad(stubLink(file, engine), expected, 1000, basis);
      assert.equal(r.ok, false);
      assert.match(r.reason, why);
      assert.match(
        r.reason,
        /make sure nothing else .* has it open, then start the controller again/,
      );
    });
  }

  it("fails without a basis (the file could not be read before the launch)", async (t) => {
    const { file } = session(t, withMessages("/p"));
    appendFileSync(file, line(thinking("t1", "aaaa0002")));
    const expected = { sessionFile: file, sessionId: SESSION_ID, leafId: "aaaa0002" };
    const r = await checkLoad(
      stubLink(file, { leaf: "t1", messageCount: 2 }),
      expected,
      1000,
      null,
    );
    assert.equal(r.ok, false);
    assert.match(r.reason, /could not be read before the launch/);
  });

  it("names the file Pi opened when it is another one", async (t) => {
    const { file, basis } = session(t, withMessages("/p"));
    const expected = { sessionFile: `${file}.other`, sessionId: SESSION_ID, leafId: "aaaa0002" };
    const r = await checkLoad(
      stubLink(file, { leaf: "aaaa0002", messageCount: 2 }),
      expected,
      1000,
      basis,
    );
    assert.equal(r.ok, false);
    assert.match(
      r.reason,
      /^Pi opened .*s\.jsonl, not .*s\.jsonl\.other; was the session file moved/,
    );
  });
});
