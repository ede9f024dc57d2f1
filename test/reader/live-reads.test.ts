// Issue 23: what reading a live session (written seconds ago: racy, docs/reader.md) costs and
// reads, pinned by the bytes read(2) returned and by a trace of the reads, not by wall time.
// - The open reads the file forward once and verifies it backward, in other steps.
// - Pages read about the file once in all (their windows), not the pinned prefix each.
// - A follow after a small append reads the prefix once, not twice.
// - A racy snapshot is verified in full again once its last verification is RECHECK_MS old
//   (or RECHECK_SHARE times its own duration, when longer).
// - The reader keeps no snapshot bytes: what it holds does not grow with the file.
// - A page read under the change time is checked by its tags when the file moved meanwhile.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  openSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { conversationId } from "../../src/index.ts";
import { trustsChangeTime } from "../../src/reader/change-time.ts";
import { piFormat } from "../../src/reader/harness/pi/harness.ts";
import { PageBytes, WindowCache } from "../../src/reader/page-bytes.ts";
import { FreshParse } from "../../src/reader/parse-sink.ts";
import { closeFile, openSessionFile, statOpenFile } from "../../src/reader/safe-fs.ts";
import {
  openSnapshot,
  RECHECK_MS,
  RECHECK_SHARE,
  recheckAfter,
} from "../../src/reader/snapshot.ts";
import { work } from "../../src/reader/work.ts";
import {
  expectOk,
  expectRefusal,
  header,
  type Project,
  project,
  readerFor,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";
import { readBytes } from "./racer/chains.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
setFlagsFromString("--no-expose-gc");

/** A session of about `mib` MiB (messages of 6 KiB), just written: racy for the next 50 s. */
function liveSession(t: TestContext, mib: number): { p: Project; file: string; size: number } {
  const p = project(tempDir(t, "live-"));
  const lines: object[] = [header(p.projectRoot)];
  const n = Math.round((mib * 1024) / 6);
  for (let i = 0; i < n; i++) {
    lines.push(user(`u${i}`, i ? `u${i - 1}` : null, `message ${i} ${"x".repeat(6000)}`));
  }
  const file = writeSession(p.sessionsDir, "s.jsonl", lines);
  // The size by fstat, not by reading the file: a 16 MiB buffer left for the collector would
  // still be counted in arrayBuffers when "holds none of the snapshot's bytes" takes its base.
  return { p, file, size: statSync(file).size };
}

function pageAll(reader: ReturnType<typeof readerFor>["raw"], id: string) {
  let r = expectOk(reader.open({ conversation: id }));
  let pages = 1;
  while (r.cursor) {
    r = expectOk(reader.next({ cursor: r.cursor.id, conversation: id, branch: "main" }));
    pages++;
  }
  return { last: r, pages };
}

let strace: boolean | undefined;
function hasStrace(): boolean {
  strace ??= spawnSync("strace", ["-o", "/dev/null", "true"], { timeout: 10_000 }).status === 0;
  return strace;
}

describe("reading a live session", () => {
  it("opens by reading forward once and verifying backward, in steps no forward read took", (t) => {
    if (!hasStrace()) return t.skip("no strace here");
    const { p, size } = liveSession(t, 5);
    const dir = tempDir(t, "trace-");
    const script = join(dir, "open.mjs");
    const out = join(dir, "trace");
    const src = new URL("../../src/index.ts", import.meta.url).href;
    writeFileSync(
      script,
      `import { createReader, rootsFromSpecs } from ${JSON.stringify(src)};
const roots = rootsFromSpecs([{ kind: "repository", projectRoot: ${JSON.stringify(p.projectRoot)}, seat: "main" }], []);
const r = createReader({ roots }).open({ conversation: ${JSON.stringify(conversationId(p.projectRoot, "main", "s.jsonl"))} });
if (!r.ok) { console.error(r.refusal.code); process.exit(3); }
`,
    );
    const run = spawnSync(
      "strace",
      ["-f", "-y", "-s", "0", "-e", "trace=pread64", "-o", out, process.execPath, script],
      { timeout: 60_000, encoding: "utf8", env: { ...process.env, UV_USE_IO_URING: "0" } },
    );
    assert.equal(run.status, 0, run.stderr);
    // Offsets and lengths, in the order read (strace: pread64(fd, buf, count, offset)).
    const calls = [
      ...readFileSync(out, "utf8").matchAll(
        /pread64\(\d+<([^>]*)>, [^,]*, (\d+), (\d+)\) = (\d+)/g,
      ),
    ]
      .filter((m) => m[1]?.endsWith("/s.jsonl"))
      .map((m) => ({ count: Number(m[2]), offset: Number(m[3]) }));
    assert.ok(calls.length > 4, "the open read the file");
    // The forward read: from 0, each read where the one before it ended, up to the end.
    let i = 0;
    for (let at = 0; at < size; i++) {
      assert.equal(calls[i]?.offset, at, `forward read ${i}`);
      at += calls[i]?.count ?? size;
    }
    const forward = calls.slice(0, i);
    // The verification: backward, each read ending where the one before it began, down to 0.
    let end = size;
    const backward: { count: number; offset: number }[] = [];
    for (; end > 0; i++) {
      const c = calls[i];
      assert.ok(c, "the verification read the whole file");
      assert.equal(c.offset + c.count, end, `backward read ${backward.length}`);
      backward.push(c);
      end = c.offset;
    }
    assert.ok(backward.length > 1);
    for (const b of backward) {
      assert.ok(
        !forward.some((f) => f.offset === b.offset && f.count === b.count),
        `the verification repeated the read of ${b.count} bytes at ${b.offset}`,
      );
    }
  });

  it("pages a racy snapshot reading about the file once in all, not the prefix per page", (t) => {
    const { p, size } = liveSession(t, 6);
    const reader = readerFor(p).raw;
    const id = conversationId(p.projectRoot, "main", "s.jsonl");
    const before = readBytes();
    const { pages } = pageAll(reader, id);
    const read = readBytes() - before;
    t.diagnostic(`${pages} pages of a ${size}-byte file read ${read} bytes`);
    assert.ok(pages >= 10, "the file spans many pages");
    // The open: forward and backward (2×); the pages: their windows (about 1×).
    assert.ok(read < 3.5 * size, `read ${read} bytes, ${(read / size).toFixed(1)}× the file`);
  });

  it("follows a small append reading the pinned prefix once, and the new lines", (t) => {
    const { p, file, size } = liveSession(t, 6);
    const reader = readerFor(p).raw;
    const id = conversationId(p.projectRoot, "main", "s.jsonl");
    const { last } = pageAll(reader, id);
    appendFileSync(file, `${JSON.stringify(user("more", `u${1023}`, "one more"))}\n`);
    const before = readBytes();
    const r = expectOk(
      reader.next({ cursor: last.follow?.id ?? "", conversation: id, branch: "main" }),
    );
    const read = readBytes() - before;
    assert.equal(r.page.parts.length, 1);
    assert.ok(read < 1.3 * size, `the follow read ${(read / size).toFixed(2)}× the prefix`);
  });

  it("verifies a racy snapshot in full again only once its last verification is RECHECK_MS old", (t) => {
    const { p, size } = liveSession(t, 6);
    let now = 1_000_000;
    const reader = readerFor(p, { now: () => now }).raw;
    const id = conversationId(p.projectRoot, "main", "s.jsonl");
    let r = expectOk(reader.open({ conversation: id }));
    const page = () => {
      const before = work.bytesVerified;
      r = expectOk(reader.next({ cursor: r.cursor?.id ?? "", conversation: id, branch: "main" }));
      return work.bytesVerified - before;
    };
    assert.equal(page(), 0, "a page right after the open verified the file again");
    now += RECHECK_MS - 1;
    assert.equal(page(), 0, "a page before RECHECK_MS verified the file again");
    now += 1;
    assert.equal(page(), size, "the first page at RECHECK_MS verified every byte");
    assert.equal(page(), 0, "the page after it verified the file again");
  });

  it("waits RECHECK_SHARE times a verification's own duration when that is longer than RECHECK_MS", (t) => {
    const { p } = liveSession(t, 1);
    const f = openSessionFile(p.projectRoot, p.sessionsDir, "s.jsonl");
    t.after(() => closeFile(f));
    const fresh = () => new FreshParse(piFormat(p));
    const policy = { prefixCheck: "auto", racyWindowNs: 10n ** 12n } as const;
    const { data } = openSnapshot(f, undefined, policy, { fresh, extend: fresh });
    data.checkMs = 10;
    assert.equal(recheckAfter(data), RECHECK_MS, "a quick verification waits RECHECK_MS");
    data.checkMs = 300;
    assert.equal(recheckAfter(data), 300 * RECHECK_SHARE, "a verification of 300 ms waits 6 s");
  });

  it("holds none of the snapshot's bytes: what it keeps does not grow with the file", (t) => {
    const { p, size } = liveSession(t, 16);
    const reader = readerFor(p).raw;
    const id = conversationId(p.projectRoot, "main", "s.jsonl");
    gc();
    const before = process.memoryUsage().arrayBuffers;
    pageAll(reader, id);
    gc();
    const held = process.memoryUsage().arrayBuffers - before;
    t.diagnostic(`holds ${held} bytes of buffers after paging a ${size}-byte file`);
    // The windows' arena (4 MiB) and the scratch of the passes; not the file (16 MiB).
    assert.ok(held < 8 * 1024 * 1024, `holds ${held} bytes of buffers`);
    assert.ok(reader.open({ conversation: id }).ok, "the reader is still in use");
  });

  it("checks a page read under the change time by its tags when the file moved meanwhile", (t) => {
    const { p, file } = liveSession(t, 1);
    const f = openSessionFile(p.projectRoot, p.sessionsDir, "s.jsonl");
    t.after(() => closeFile(f));
    if (!trustsChangeTime(f.fd, f.identity.dev)) return t.skip("no change-time proof here");
    // Settled (window 0): pages are read under the change time, without their tags.
    const policy = { prefixCheck: "auto", racyWindowNs: 0n } as const;
    const fresh = () => new FreshParse(piFormat(p));
    const v = openSnapshot(f, undefined, policy, { fresh, extend: fresh });
    assert.equal(v.proof, "change-time");
    const since = statOpenFile(f);
    const unmoved = new PageBytes(f, v.data, { proof: "change-time", since }, new WindowCache());
    unmoved.range(0, 100);
    unmoved.finish();
    // A same-length rewrite between the fstat the proof rests on and the page's read.
    const at = readFileSync(file, "latin1").indexOf("message 0 ") + 8;
    const w = openSync(file, "r+");
    writeSync(w, "Z", at);
    closeSync(w);
    const moved = new PageBytes(f, v.data, { proof: "change-time", since }, new WindowCache());
    moved.range(0, 100);
    assert.throws(() => moved.finish(), /changed while this page was read/);
    // And a reader then refuses the page, reading it again.
    const reader = readerFor(p, { racyWindowMs: 0 }).raw;
    const id = conversationId(p.projectRoot, "main", "s.jsonl");
    const first = expectOk(reader.open({ conversation: id }));
    const w2 = openSync(file, "r+");
    writeSync(w2, "Y", at);
    closeSync(w2);
    expectRefusal(
      reader.next({ cursor: first.cursor?.id ?? "", conversation: id, branch: "main" }),
      "source-replaced",
    );
  });
});
