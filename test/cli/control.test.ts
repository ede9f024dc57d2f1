// `conversation control` (issue 6 §13) as a person runs it: usage errors, refusals, and a real
// run of the pinned Pi, sealed, against the loopback fake model, reached by a raw socket client.
// Also the demo controller `npm start` runs. Every wait has a deadline; children are killed and
// temp dirs removed in t.after.
import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { startDemoControl } from "../../src/cli/demo-control.ts";
import { DEMO_FILE } from "../../src/cli/demo-model.ts";
import { listControllers } from "../../src/control/registry/registry.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "../helpers/deadline.ts";
import { startFakeModel } from "../helpers/fake-model.ts";
import {
  MODEL,
  REAL_PI_VERSIONS,
  settledSession,
  writeAgentDir,
  writeLines,
} from "../helpers/real-pi.ts";
import { runCli, startCli } from "./run-cli.ts";

const REAL = { timeout: SLOW_TEST_MS };
const GRANTS = [
  { id: "g-op", actor: "local-operator", capabilities: ["observe", "takeover", "prompt"] },
  { id: "g-ro", actor: "watcher", capabilities: ["observe"] },
];

type Fixture = {
  root: string;
  fixtureRoot: string;
  projectRoot: string;
  session: string;
  grants: string;
  args: string[];
};

/** A fixture project with a session pinned Pi appends nothing to, and a grants file. */
function fixture(t: TestContext): Fixture {
  // Short, so the socket path fits in sun_path.
  const root = mkdtempSync("/tmp/cc-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const fixtureRoot = join(root, "fx");
  const projectRoot = join(fixtureRoot, "proj");
  const sessions = join(projectRoot, ".pi", "state", "main", "sessions");
  mkdirSync(sessions, { recursive: true });
  const session = join(sessions, "s.jsonl");
  writeLines(session, settledSession(projectRoot));
  const grants = join(root, "grants.json");
  writeFileSync(grants, JSON.stringify(GRANTS));
  const args = [
    "control",
    ...["--fixture-root", fixtureRoot, "--claim-root", join(root, "claims")],
    ...["--socket-dir", join(root, "s"), "--session", session, "--seat", "main"],
    ...["--grants", grants, "--state-dir", join(root, "st")],
  ];
  return { root, fixtureRoot, projectRoot, session, grants, args };
}

/** `args` with the value of `flag` replaced. */
function withFlag(args: string[], flag: string, value: string): string[] {
  const i = args.indexOf(flag);
  assert.ok(i >= 0, flag);
  return [...args.slice(0, i + 1), value, ...args.slice(i + 2)];
}

type Msg = Record<string, unknown> & { type: string };

/** A raw line client: one JSON message per LF-terminated line, waits with deadlines. */
async function rawClient(t: TestContext, path: string) {
  const { createConnection } = await import("node:net");
  const socket = createConnection(path);
  t.after(() => socket.destroy());
  const seen: Msg[] = [];
  const listeners = new Set<() => void>();
  let buffer = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      seen.push(JSON.parse(buffer.slice(0, i)) as Msg);
      buffer = buffer.slice(i + 1);
    }
    for (const l of [...listeners]) l();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return {
    seen,
    send: (m: object) => socket.write(`${JSON.stringify(m)}\n`),
    waitFor: (what: string, test: (m: Msg) => boolean, ms = 15_000) =>
      new Promise<Msg>((resolve, reject) => {
        const check = () => {
          const found = seen.find(test);
          if (!found) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${what}; seen ${JSON.stringify(seen)}`));
        }, ms);
        listeners.add(check);
        check();
      }),
  };
}

describe("conversation control", { concurrency: 4 }, () => {
  it("prints its help within 80 columns when --help is given", async (t) => {
    for (const args of [
      ["control", "--help"],
      ["control", "-h"],
      ["help", "control"],
    ]) {
      const r = await runCli(t, args);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /^Usage: npm run conversation -- control --project DIR --seat NAME/);
      assert.match(r.stdout, /--grants FILE/);
      assert.equal(r.stderr, "");
      for (const l of r.stdout.split("\n")) assert.ok([...l].length <= 80, `too wide: ${l}`);
    }
    const top = await runCli(t, ["--help"]);
    assert.match(top.stdout, /\n {2}control {12}/);
  });

  it("exits 2 with a usage error when options are missing or wrong", async (t) => {
    const f = fixture(t);
    const cases: [string[], RegExp][] = [
      [["control"], /missing --project DIR, --seat NAME, --session FILE, --new or --fork-from ID/],
      [["control", "--session", f.session], /missing --project DIR, --seat NAME$/m],
      [[...f.args, "--new"], /--session and --new exclude each other/],
      [[...f.args, "--title", "t"], /--title goes with --new/],
      [
        [...f.args, "--agent-dir", "a", "--agent-from", "b"],
        /--agent-dir and --agent-from exclude/,
      ],
      [["control", "--seat", "main", "--new"], /missing --project DIR/],
      [
        ["control", "--project", f.root, "--seat", "../up", "--new"],
        /"\.\.\/up" is not a seat name/,
      ],
      [[...f.args, "--bogus"], /Unknown option '--bogus'/],
      [[...f.args, "extra"], /unexpected argument "extra"/],
      [[...f.args, "--seat"], /argument missing/],
      [[...f.args, "--model", ""], /--model needs a value/],
      [withFlag(f.args, "--fixture-root", ""), /--fixture-root needs a value/],
      [
        [...f.args, "--pi-version", "1.5.0"],
        /--pi-version is one of 0\.85\.1, 1\.6\.0, not "1\.5\.0"/,
      ],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(t, args)));
    for (const [i, r] of results.entries()) {
      const [args, pattern] = cases[i] as [string[], RegExp];
      assert.equal(r.code, 2, args.join(" "));
      assert.equal(r.stdout, "");
      assert.match(r.stderr, pattern);
      assert.match(r.stderr, /Run "npm run conversation -- control --help" for usage\./);
    }
  });

  it("exits 2 naming the problem when the grants file is not a good grant list", async (t) => {
    const f = fixture(t);
    const bad: [string, string, RegExp][] = [
      ["json", '[{"id": "g-op",', /grants .*json: not JSON \(/],
      ["object", '{"id": "g-op"}', /expected a JSON array of grants/],
      ["empty", "[]", /no grants/],
      ["id", '[{"id": "a b", "actor": "x", "capabilities": []}]', /\[0\]\.id: expected an id/],
      [
        "actor",
        '[{"id": "g", "capabilities": []}]',
        /\[0\]\.actor: an actor is 1 to 200 characters/,
      ],
      [
        "cap",
        '[{"id": "g", "actor": "x", "capabilities": ["observe", "sudo"]}]',
        /\[0\]\.capabilities\[1\]: expected one of observe, takeover/,
      ],
      [
        "twice",
        '[{"id": "g", "actor": "x", "capabilities": []}, {"id": "g", "actor": "y", "capabilities": []}]',
        /\[1\]\.id: "g" is repeated/,
      ],
      ["field", '[{"id": "g", "actor": "x", "capabilities": [], "admin": true}]', /"admin"/],
    ];
    const runs = bad.map(([name, text]) => {
      const file = join(f.root, `${name}.json`);
      writeFileSync(file, text);
      return runCli(t, withFlag(f.args, "--grants", file));
    });
    runs.push(runCli(t, withFlag(f.args, "--grants", join(f.root, "absent.json"))));
    const results = await Promise.all(runs);
    const patterns = [...bad.map(([, , p]) => p), /absent\.json: cannot read it \(ENOENT\)/];
    for (const [i, r] of results.entries()) {
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, patterns[i] as RegExp);
      assert.equal(r.stdout, "");
    }
    // Nothing was started: no claim, no socket directory.
    assert.equal(existsSync(join(f.root, "claims")), false);
    assert.equal(existsSync(join(f.root, "s")), false);
  });

  it("exits 1 with the refusal when the controller refuses to start", async (t) => {
    const f = fixture(t);
    const outside = join(f.root, "elsewhere", ".pi", "state", "main", "sessions");
    mkdirSync(outside, { recursive: true });
    const stray = join(outside, "s.jsonl");
    writeLines(stray, settledSession(join(f.root, "elsewhere")));
    const loose = join(f.root, "loose");
    mkdirSync(loose, { mode: 0o755 });
    chmodSync(loose, 0o755);
    const cases: [string[], RegExp][] = [
      [withFlag(f.args, "--session", stray), /^refused: configuration: .*not at /],
      [withFlag(f.args, "--seat", "review"), /^refused: configuration: /],
      [[...f.args, "--thinking", "loud"], /^refused: unsealed-engine: "--thinking" must be/],
      [
        [...f.args, "--agent-dir", join(homedir(), ".pi", "agent")],
        /^refused: live-session-refused: --agent-dir is inside the live root.*\n {2}What to do: .*--agent-from ~\/\.pi\/agent/,
      ],
      // Checked before the claim: after a launch this refusal would leave the claim uncertain.
      [
        withFlag(f.args, "--socket-dir", loose),
        /^refused: configuration: the socket folder .* \(mode 755\)/,
      ],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(t, args)));
    for (const [i, r] of results.entries()) {
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, (cases[i] as [string[], RegExp])[1]);
      assert.equal(r.stdout, "");
    }
    assert.equal(existsSync(join(f.root, "s", "control.sock")), false);
    assert.equal(existsSync(join(f.root, "claims")), false, "no claim was taken");
  });

  for (const piVersion of REAL_PI_VERSIONS)
    it(
      `serves the real pinned Pi ${piVersion} on a socket and stops it cleanly when sent SIGTERM`,
      REAL,
      async (t) => {
        const f = fixture(t);
        const model = await startFakeModel({
          replies: [{ kind: "text", text: "hello from the loopback model" }],
        });
        t.after(() => model.close());
        const home = join(f.root, "h");
        writeAgentDir(home, model.baseUrl);
        const before = readFileSync(f.session, "utf8");
        const agentDir = join(home, ".pi", "agent");
        const version = piVersion === "0.85.1" ? [] : ["--pi-version", piVersion];
        const cli = startCli(t, [...f.args, "--model", MODEL, "--agent-dir", agentDir, ...version]);
        await cli.waitFor("the socket path", (c) => /\nAttach: .*\n/.test(c.stdout()), DEADLINE_MS);
        const out = cli.stdout();
        const socketPath = /^Socket: (.+)$/m.exec(out)?.[1] ?? "";
        assert.equal(socketPath, join(f.root, "s", "control.sock"));
        assert.match(out, /^Controlling pi-[0-9a-f]+$/m);
        assert.ok(out.includes(`\nEngine: Pi ${piVersion}\n`), out);
        // The launcher chooseLauncher() picked, and why: what the stop's outcome depends on.
        const launcher =
          /^Launcher: (cgroup|pgroup): .+\n {2}how it was chosen: (scope: .+)$/m.exec(out);
        assert.ok(launcher, out);
        const kind = launcher[1];
        t.diagnostic(`launcher: ${kind}`);
        assert.match(launcher[2] ?? "", kind === "cgroup" ? /cgroup: cgroup2 at / : /pgroup: /);
        assert.match(out, /^ {2}g-op \(local-operator\): observe takeover prompt$/m);
        assert.match(out, /^ {2}g-ro \(watcher\): observe$/m);
        const conversation = /^Controlling (pi-[0-9a-f]+)$/m.exec(out)?.[1] ?? "";
        // A line that runs as printed: from the checkout's sources, through npm, with the
        // registry's state dir.
        const attach = `attach ${conversation} --state-dir ${join(f.root, "st")} --grant g-op`;
        assert.ok(out.includes(`\nAttach: npm run conversation -- ${attach}\n`), out);
        assert.ok(out.includes("--grant g-ro\n"), "each grant has its attach line");
        assert.equal(cli.stderr(), "", "no load-check warning");

        const client = await rawClient(t, socketPath);
        client.send({ type: "hello", protocol: 2, grant: "g-op", client: "control-test" });
        const welcome = await client.waitFor("the welcome", (m) => m.type === "welcome");
        assert.equal(welcome.role, "observer");
        const state = welcome.state as { admission: string; binding: string; generation: number };
        assert.deepEqual([state.admission, state.binding], ["open", "bound"]);
        client.send({ type: "request", id: "q-1", op: "observe" });
        const observed = await client.waitFor("observe's reply", (m) => m.id === "q-1");
        assert.equal(observed.outcome, "admitted", JSON.stringify(observed));
        const page = (observed.result as { page: { parts: unknown[] } }).page;
        assert.equal(page.parts.length, 2, "the fixture's two messages");
        // Starting the controller wrote nothing to the session.
        assert.equal(readFileSync(f.session, "utf8"), before);

        // --model and --agent-dir reached Pi: a prompt goes to the loopback model.
        client.send({ type: "request", id: "q-2", op: "takeover", generation: state.generation });
        await client.waitFor("takeover's reply", (m) => m.id === "q-2" && m.outcome === "admitted");
        client.send({
          type: "request",
          id: "q-3",
          op: "prompt",
          generation: state.generation + 1,
          text: "hi",
          draft: { id: "d-1", revision: 1 },
        });
        const settled = await client.waitFor(
          "the prompt's receipt to settle",
          (m) => m.type === "event" && (m.event as { kind: string }).kind === "receipt",
        );
        const receipt = (settled.event as { receipt: { request: string; reason?: string } })
          .receipt;
        assert.equal(receipt.request, "q-3");
        assert.equal(model.requests.length, 1);
        assert.match(readFileSync(f.session, "utf8"), /hello from the loopback model/);

        cli.proc.kill("SIGTERM");
        // waitFor clears its deadline: a timer left behind kept this file's process up 12 s.
        await cli.waitFor(
          "the exit after SIGTERM",
          (c) => c.proc.exitCode !== null || c.proc.signalCode !== null,
        );
        assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
        assert.equal(existsSync(socketPath), false, "the socket is gone");
        assert.match(cli.stderr(), /^Stopping the engine\.\.\.\n$/);
        if (kind === "cgroup") {
          // Pinned Pi exits on EOF; the cgroup launcher proves the stop and the claim ends.
          assert.match(
            cli.stdout(),
            /\nStopped: the engine's stop is proven; the session and its seat are free for another controller \(claim stopped-proven\)\.\n$/,
          );
        } else {
          // Pinned Pi exits on EOF; the process-group launcher can't prove the stop (K2).
          assert.match(
            cli.stdout(),
            /\nStopped: Pi exited \(code 0\), stop uncertain: the process-group launcher cannot prove a stop; the session and its seat stay claimed until a stop is proven, as docs\/claim\.md explains \(claim uncertain\)\.\n$/,
          );
        }
      },
    );
});

describe("npm start's demo controller", () => {
  it("steers the real Pi with the demo model, a read tool call included", REAL, async (t) => {
    const root = mkdtempSync("/tmp/cd-");
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const projectRoot = join(root, "demo-project");
    mkdirSync(projectRoot);
    const registryDir = join(root, "state", "controllers");
    const demo = await startDemoControl({
      fixtureRoot: root,
      projectRoot,
      seat: "main",
      registryDir,
    });
    t.after(() => demo.stop().then(() => undefined));
    // Registered as `conversation control` registers: `controllers` names its Pi too.
    const entries = listControllers(registryDir).live;
    assert.deepEqual(
      entries.map((e) => [e.socket, e.piVersion, e.grants]),
      [[demo.socketPath, "0.85.1", ["demo-op", "demo-watch"]]],
    );
    assert.match(demo.text, /^Socket: .+control\.sock$/m);
    assert.match(demo.text, /--grant demo-op\n/);
    assert.match(demo.text, /^Launcher: (cgroup|pgroup): .+\n {2}how it was chosen: scope: .+$/m);
    assert.doesNotMatch(demo.text, /warning/);
    assert.ok(existsSync(join(projectRoot, DEMO_FILE)));

    const client = await rawClient(t, demo.socketPath);
    client.send({ type: "hello", protocol: 2, grant: "demo-op" });
    const welcome = await client.waitFor("the welcome", (m) => m.type === "welcome");
    const { generation } = welcome.state as { generation: number };
    client.send({ type: "request", id: "q-1", op: "takeover", generation });
    await client.waitFor("takeover's reply", (m) => m.id === "q-1" && m.outcome === "admitted");
    const text = "Please read a file.";
    const draft = { id: "d-1", revision: 1 };
    client.send({
      type: "request",
      id: "q-2",
      op: "prompt",
      generation: generation + 1,
      text,
      draft,
    });
    await client.waitFor(
      "the receipt to settle",
      (m) => m.type === "event" && (m.event as { kind: string }).kind === "receipt",
    );
    const kinds = client.seen
      .filter((m) => m.type === "event")
      .map((m) => m.event as { kind: string; toolName?: string });
    assert.ok(kinds.some((e) => e.kind === "tool-ended" && e.toolName === "read"));
    const written = readFileSync(demo.sessionFile, "utf8");
    assert.match(written, /I read hello\.txt\. Its first line says: \\"Hello from the demo/);

    const summary = await demo.stop();
    assert.equal(summary, "Pi exited (code 0).");
    assert.equal(existsSync(demo.socketPath), false);
  });
});
