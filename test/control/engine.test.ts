import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  EngineExited,
  EngineLink,
  type EngineLinkOptions,
  type EngineSpec,
  EngineTimeout,
} from "../../src/control/engine/engine.ts";
import type { RpcResponse } from "../../src/control/engine/pi/rpc.ts";
import { RecordLog } from "./link-watch.ts";

const TINY = join(import.meta.dirname, "tiny-engine.ts");

function tinySpec(cwd: string, extraEnv: Record<string, string> = {}): EngineSpec {
  return {
    command: process.execPath,
    args: [TINY],
    env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: cwd, ...extraEnv },
    cwd,
  };
}

function startTiny(t: TestContext, options: EngineLinkOptions = {}, extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), "engine-"));
  const link = EngineLink.start(tinySpec(dir, extraEnv), options);
  const log = new RecordLog(link);
  t.after(async () => {
    await link.close({ eofGraceMs: 1000, termGraceMs: 1000 });
    rmSync(dir, { recursive: true, force: true });
  });
  return { link, log, dir };
}

/** The tiny engine's verbs ride on `prompt` (see tiny-engine.ts). */
function tell(link: EngineLink, message: string, timeoutMs?: number): Promise<RpcResponse> {
  return link.request({ type: "prompt", message }, timeoutMs === undefined ? {} : { timeoutMs });
}

function dataOf(r: RpcResponse): Record<string, unknown> {
  assert.equal(r.success, true, JSON.stringify(r));
  assert.ok(r.success && typeof r.data === "object" && r.data !== null);
  return r.data as Record<string, unknown>;
}

describe("engine link", () => {
  it("gives the engine exactly the environment passed, in its own process group", async (t) => {
    const { link, dir } = startTiny(t, {}, { MARKER: "m" });
    const who = dataOf(await tell(link, "whoami"));
    assert.deepEqual(who.env, {
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: dir,
      MARKER: "m",
    });
    assert.equal(who.cwd, dir);
    assert.equal(who.pid, link.pid);
    assert.equal(who.pgrp, link.pid, "detached: the engine leads its own process group");
  });

  it("correlates responses by id when they arrive out of order", async (t) => {
    const { link } = startTiny(t);
    const slow = tell(link, "delay 300");
    const fast = tell(link, "delay 0");
    const order: string[] = [];
    await Promise.all([
      slow.then((r) => order.push(`slow:${JSON.stringify(dataOf(r))}`)),
      fast.then((r) => order.push(`fast:${JSON.stringify(dataOf(r))}`)),
    ]);
    assert.deepEqual(order, ['fast:{"delayed":0}', 'slow:{"delayed":300}']);
    const echoed = dataOf(await link.request({ type: "get_tree" }));
    assert.deepEqual(echoed.echo, { type: "get_tree", id: "req-3" }, "ids are req-<n>");
  });

  it("resolves a success:false response instead of rejecting", async (t) => {
    const { link } = startTiny(t);
    const r = await tell(link, "fail");
    assert.deepEqual(r, {
      type: "response",
      id: "req-1",
      command: "prompt",
      success: false,
      error: "no",
    });
  });

  it("delivers events and responses in stdout order, and detaches subscribers", async (t) => {
    const { link, log } = startTiny(t);
    const seen: string[] = [];
    const detach = link.onEvent((e) => seen.push(e.type));
    const lines = [
      { type: "agent_start" },
      { type: "queue_update", steering: ["s"], followUp: [] },
      { type: "brand_new_event", x: 1 },
    ]
      .map((l) => `${JSON.stringify(l)}\n`)
      .join("");
    await tell(link, `raw ${JSON.stringify(lines)}`);
    assert.deepEqual(seen, ["agent_start", "queue_update", "other"]);
    assert.deepEqual(log.labels(), ["agent_start", "queue_update", "other", "response:prompt"]);
    assert.deepEqual(
      log.records.map((r) => r.seq),
      [1, 2, 3, 4],
    );
    const other = log.records[2];
    assert.ok(other?.kind === "event" && other.event.type === "other");
    assert.deepEqual(other.event, {
      type: "other",
      eventType: "brand_new_event",
      raw: { type: "brand_new_event", x: 1 },
    });
    detach();
    await tell(link, `raw ${JSON.stringify('{"type":"agent_settled"}\n')}`);
    assert.deepEqual(seen, ["agent_start", "queue_update", "other"], "nothing after detach");
  });

  it("surfaces malformed lines and responses nobody waits for as protocol issues, and keeps going", async (t) => {
    const { link, log } = startTiny(t);
    const issues: string[] = [];
    link.onProtocol((i) => issues.push(i.reason));
    const raw = [
      "this is not json",
      '"a JSON string"',
      '{"type":"message_end"}',
      '{"type":"response","command":"parse","success":false,"error":"Failed to parse command"}',
      '{"id":"req-99","type":"response","command":"get_state","success":true}',
      "",
    ].join("\n");
    const r = await tell(link, `raw ${JSON.stringify(`${raw}\n`)}`);
    assert.equal(r.success, true);
    assert.deepEqual(issues, [
      "malformed-line",
      "malformed-line",
      "malformed-line",
      "response-without-id",
      "unknown-response-id",
      "malformed-line",
    ]);
    const third = log.records[2];
    assert.ok(third?.kind === "protocol" && third.issue.reason === "malformed-line");
    assert.match(third.issue.detail, /message is not an object/);
    assert.equal((await link.request({ type: "get_state" })).success, true, "still usable");
  });

  it("rejects every pending request with EngineExited, exit code and stderr tail, when the engine exits", async (t) => {
    const { link } = startTiny(t);
    const silent = tell(link, "silent");
    const exiting = tell(link, "exit 7");
    for (const p of [silent, exiting]) {
      await assert.rejects(p, (e) => {
        assert.ok(e instanceof EngineExited);
        assert.deepEqual(e.exit, { exitCode: 7, signal: null });
        assert.match(e.stderr.text, /exiting 7/);
        assert.match(e.message, /code 7.*exiting 7/s);
        return true;
      });
    }
    assert.deepEqual(await link.exited, { exitCode: 7, signal: null });
    await assert.rejects(link.request({ type: "get_state" }), EngineExited);
    assert.equal(link.send({ type: "extension_ui_response", id: "x", cancelled: true }), false);
  });

  it("rejects pending requests when stdout closes while the engine runs on", async (t) => {
    const { link } = startTiny(t);
    const pending = tell(link, "silent", 5000);
    await tell(link, "close-stdout");
    await assert.rejects(pending, (e) => {
      assert.ok(e instanceof EngineExited);
      assert.match(e.message, /closed its stdout/);
      assert.equal(e.exit, null);
      return true;
    });
    await assert.rejects(link.request({ type: "get_state" }), EngineExited);
    assert.equal(link.exit, null, "the process is still running");
    assert.deepEqual(await link.close(), { exitCode: 0, signal: null });
  });

  it("times a request out with EngineTimeout and reports its late response", async (t) => {
    const { link, log } = startTiny(t);
    await assert.rejects(tell(link, "delay 150", 20), (e) => {
      assert.ok(e instanceof EngineTimeout);
      assert.equal(e.code, "engine-timeout");
      assert.equal(e.command, "prompt");
      return true;
    });
    const late = await log.waitFor((r) => r.kind === "protocol");
    assert.ok(late.kind === "protocol" && late.issue.reason === "late-response");
  });

  it("keeps only the last stderrLimitBytes of stderr and says it truncated", async (t) => {
    const { link } = startTiny(t, { stderrLimitBytes: 1024 });
    await tell(link, "stderr 200000");
    await link.close();
    const tail = link.stderr();
    assert.equal(tail.totalBytes, 200000);
    assert.equal(tail.truncated, true);
    assert.ok(tail.text.length >= 1024 && tail.text.length < 1024 + 65536, `${tail.text.length}`);
    assert.ok(tail.text.endsWith("TAIL"));
  });

  it("fails the link on an oversize record: protocol issue, pending rejected, no more requests", async (t) => {
    const { link, log } = startTiny(t, { maxRecordBytes: 4096 });
    const small = dataOf(await link.request({ type: "get_state" }));
    assert.ok(small.echo);
    await assert.rejects(tell(link, "big 100000"), (e) => {
      assert.ok(e instanceof EngineExited);
      assert.match(e.message, /framing failed.*4096 bytes/);
      return true;
    });
    assert.deepEqual(log.labels().slice(-1), ["protocol:record-too-large"]);
    await assert.rejects(link.request({ type: "get_state" }), EngineExited);
    assert.deepEqual(
      await link.close(),
      { exitCode: 0, signal: null },
      "the owner still closes it",
    );
  });

  it("carries a multi-megabyte response whole", async (t) => {
    const { link } = startTiny(t);
    const r = await tell(link, "big 5000000");
    assert.ok(r.success && typeof r.data === "string");
    assert.equal(r.data.length, 5000000);
  });

  it("closes by stdin EOF when the engine honours it", async (t) => {
    const { link } = startTiny(t);
    await link.ready();
    // Exit 0 and no signal: the EOF did it, not the SIGTERM that follows 3 s later (no clock:
    // a busy machine stretches a child's exit past any wall-time bound).
    assert.deepEqual(await link.close(), { exitCode: 0, signal: null });
    assert.deepEqual(
      await link.close(),
      { exitCode: 0, signal: null },
      "closing twice is harmless",
    );
  });

  it("escalates to SIGTERM when EOF is ignored, then SIGKILL when SIGTERM is", async (t) => {
    const a = startTiny(t);
    await tell(a.link, "ignore-eof");
    assert.deepEqual(await a.link.close({ eofGraceMs: 100, termGraceMs: 5000 }), {
      exitCode: 143,
      signal: null,
    });
    const b = startTiny(t);
    await tell(b.link, "ignore-eof");
    await tell(b.link, "ignore-term");
    assert.deepEqual(await b.link.close({ eofGraceMs: 100, termGraceMs: 100 }), {
      exitCode: null,
      signal: "SIGKILL",
    });
  });

  it("reports a command that cannot be spawned as an exit with spawnError", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "engine-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const link = EngineLink.start({ command: join(dir, "missing"), args: [], env: {}, cwd: dir });
    await assert.rejects(link.ready({ timeoutMs: 5000 }), (e) => {
      assert.ok(e instanceof EngineExited);
      assert.match(e.message, /spawn|ENOENT|exited/);
      return true;
    });
    const exit = await link.exited;
    assert.match(exit.spawnError ?? "", /ENOENT/);
    assert.equal(await link.close().then((x) => x.spawnError !== undefined), true);
  });
});
