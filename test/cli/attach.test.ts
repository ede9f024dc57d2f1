// `conversation attach` as a child process over a controller on fake-pi: keys go in as bytes on
// stdin (the non-terminal mode), screens come out as plain text frames. Every wait has a
// deadline; children are killed and controllers stopped in t.after.
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { describe, it, type TestContext } from "node:test";
import { textWidth } from "../../src/cli/wrap.ts";
import { makeVisible } from "../../src/present/visible.ts";
import { stableSession, startController } from "../control/controller-fixture.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { MAIN } from "./run-cli.ts";

const FRAME = /^=== frame \d+ ===$/m;

type Attached = {
  proc: ChildProcessWithoutNullStreams;
  out(): string;
  err(): string;
  /** The last whole frame written so far. */
  frame(): string;
  keys(bytes: string): void;
  waitFrame(what: string, test: (frame: string) => boolean): Promise<string>;
  exited: Promise<number | null>;
};

function attach(t: TestContext, socket: string, grant: string, extra: string[] = []): Attached {
  const args = [MAIN, "attach", "--socket", socket, "--grant", grant, "--columns", "60"];
  const proc = spawn(process.execPath, [...args, "--rows", "40", ...extra], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of [...listeners]) l();
  };
  proc.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    changed();
  });
  proc.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
    changed();
  });
  const exited = new Promise<number | null>((resolve) => proc.on("close", (code) => resolve(code)));
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  });
  const frame = () => {
    const frames = out.split(FRAME);
    // The last piece may be a frame still being written: frames end with LF.
    const last = frames.at(-1) ?? "";
    return last.endsWith("\n") ? last : (frames.at(-2) ?? "");
  };
  return {
    proc,
    out: () => out,
    err: () => err,
    frame,
    keys: (bytes) => proc.stdin.write(bytes),
    exited,
    waitFrame: (what, test) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const f = frame();
          if (!test(f)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve(f);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`timed out waiting for ${what}\nlast frame:\n${frame()}\nstderr: ${err}`),
          );
        }, DEADLINE_MS);
        listeners.add(check);
        check();
      }),
  };
}

async function exitCode(a: Pick<Attached, "exited">): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no exit within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  try {
    return await Promise.race([a.exited, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const HEADER = (role: string) => (f: string) => f.split("\n")[1]?.startsWith(`${role} · `) ?? false;

describe("conversation attach", { concurrency: 3 }, () => {
  it("takes control, sends a prompt and shows the reply; Ctrl-C exits 0", async (t) => {
    const { ctl } = await startController(t);
    const a = attach(t, ctl.socketPath, "g-op");
    const first = await a.waitFrame("the history as observer", (f) => HEADER("observer")(f));
    assert.match(first, /generation \d+ · admission open/);
    await a.waitFrame("the history", (f) => /^ {2}hello$/m.test(f));
    a.keys("\x14");
    await a.waitFrame("control", (f) => HEADER("controller")(f) && f.includes("you have control"));
    a.keys("hello there\r");
    const f = await a.waitFrame("the echo", (f) => f.includes("echo: hello there"));
    assert.match(f, /^> $/m, "the composer is empty after the submit");
    for (const l of a.out().split("\n")) assert.ok([...l].length <= 60, `too wide: ${l}`);
    a.keys("\x03");
    assert.equal(await exitCode(a), 0);
    assert.equal(a.err(), "");
  });

  it("says so when another client takes control, and how to take it back", async (t) => {
    const { ctl } = await startController(t);
    const a = attach(t, ctl.socketPath, "g-op");
    const b = attach(t, ctl.socketPath, "g-op");
    await a.waitFrame("a's history", (f) => /^ {2}hello$/m.test(f));
    await b.waitFrame("b's history", (f) => /^ {2}hello$/m.test(f));
    a.keys("\x14");
    await a.waitFrame("a in control", (f) => HEADER("controller")(f));
    b.keys("\x14");
    await b.waitFrame("b in control", (f) => HEADER("controller")(f));
    const f = await a.waitFrame("a told", (f) =>
      f.includes("another client took control: Ctrl-T takes it back"),
    );
    assert.ok(HEADER("observer")(f));
    a.keys("\x03");
    b.keys("\x03");
    assert.equal(await exitCode(a), 0);
    assert.equal(await exitCode(b), 0);
  });

  it("an observer's Enter says not admitted: controller and keeps the text", async (t) => {
    const { ctl } = await startController(t);
    const a = attach(t, ctl.socketPath, "g-ro", ["--columns", "40"]);
    await a.waitFrame("the observer's screen", (f) => HEADER("observer")(f));
    await a.waitFrame("the history", (f) => /^ {2}hello$/m.test(f));
    a.keys("keep me\r");
    const f = await a.waitFrame("the refusal", (f) => f.includes("not admitted: controller"));
    assert.match(f, /^> keep me$/m);
    a.keys("\x04");
    assert.equal(await exitCode(a), 0);
    for (const l of a.out().split("\n")) assert.ok(textWidth(l) <= 40, `too wide: ${l}`);
  });

  it("shows hostile session text made visible and never writes it raw", async (t) => {
    const hostile = "clip \x1b]52;c;aGk=\x07 clear \x1b[2J title \x1b]0;pwn\x07 bidi \u202Etxt.exe";
    const session = (cwd: string) =>
      stableSession(cwd).map((l) =>
        l.id === "aaaa0003"
          ? {
              ...l,
              message: {
                role: "assistant",
                content: [{ type: "text", text: hostile }],
                timestamp: 1,
              },
            }
          : l,
      );
    const { ctl } = await startController(t, { session });
    const a = attach(t, ctl.socketPath, "g-op");
    await a.waitFrame("the hostile history", (f) => f.includes("clip ^[]52;c;aGk=^G"));
    a.keys("\x14");
    await a.waitFrame("control", HEADER("controller"));
    // A bracketed paste is inserted literally, ESC included, and does not submit by itself.
    a.keys(`\x1b[200~paste \x1b[2J\u202Efdp.exe \x9b1A\x1b[201~`);
    await a.waitFrame("the paste", (f) =>
      /^> paste \^\[\[2J<U\+202E>fdp\.exe <U\+009B>1A$/m.test(f),
    );
    a.keys("\r");
    await a.waitFrame("the hostile echo", (f) => f.includes("echo: paste ^[[2J<U+202E>fdp.exe"));
    a.keys("\x03");
    assert.equal(await exitCode(a), 0);
    const out = a.out();
    // Off a terminal the app writes no control sequence of its own: nothing raw at all.
    const raw = [...out].filter((ch) => makeVisible(ch) !== ch);
    assert.deepEqual(raw, [], "no control, bidi or invisible character is written raw");
    assert.match(out, /bidi\s+<U\+202E>txt\.exe/);
    assert.match(out, /title \^\[\]0;pwn\^G/);
  });

  it("refuses to start without a conversation or --socket, and when the socket is not there", async (t) => {
    const noGrant = attach(t, "/nonexistent/control.sock", "g-op");
    assert.equal(await exitCode(noGrant), 1);
    assert.match(noGrant.err(), /cannot attach: channel/);
    const proc = spawn(process.execPath, [MAIN, "attach", "--grant", "g-op"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    t.after(() => {
      if (proc.exitCode === null) proc.kill("SIGKILL");
    });
    let err = "";
    proc.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    const code = await exitCode({ exited: new Promise((resolve) => proc.on("close", resolve)) });
    assert.equal(code, 2);
    assert.match(err, /name the <conversation-id> \(or --socket PATH\)/);
  });
});
