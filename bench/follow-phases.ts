// Where the time of one follow after a one-line append goes, phase by phase, on the reader's
// own modules (the steps `next` takes with a follow cursor, reader.ts `resume`):
//   ./node_modules/.bin/node --expose-gc bench/follow-phases.ts tiny-chain|pi-100 [samples]
// tiny-chain: 2.78 M tiny entries on one branch (255 MiB, bench/hostile-files.ts); pi-100: the
// cached 100 MiB Pi-written session (bench/fixtures.ts, generated on first use). Each sample
// appends one entry to the default leaf, then times: the bare check (read the pinned prefix and
// SHA-256 it), verify + extend (snapshot.ts: the prefix compared in place, the tail read), the
// parse extended (tree.ts), the branch's items, the follow's digest check and the new follow
// cursor's digest, and the view.
import { createHash } from "node:crypto";
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseHeader } from "../src/reader/harness/pi/pi.ts";
import { parsePiSession } from "../src/reader/harness/pi/rows.ts";
import { branchItems, extendBranchItems } from "../src/reader/items.ts";
import { closeFile, openSessionFile } from "../src/reader/safe-fs.ts";
import { openSnapshot, type SnapshotData, verifyAndExtend } from "../src/reader/snapshot.ts";
import { sessionsDirOf } from "../src/reader/sources.ts";
import { defaultBranch, extendSession } from "../src/reader/tree.ts";
import { viewFor } from "../src/reader/view.ts";
import { ensureCached, materialize } from "./fixtures.ts";
import { writeTinyEntries } from "./hostile-files.ts";

const which = process.argv[2] ?? "tiny-chain";
const samples = Number(process.argv[3] ?? 3);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

function bare(path: string, bytes: number, digest: string): void {
  const fd = openSync(path, "r");
  const buf = Buffer.allocUnsafe(bytes);
  for (let got = 0; got < bytes; ) got += readSync(fd, buf, got, bytes - got, got);
  closeSync(fd);
  if (createHash("sha256").update(buf).digest("hex") !== digest) throw new Error("prefix differs");
}

const base = mkdtempSync(join(tmpdir(), "follow-phases-"));
try {
  const projectRoot = join(base, "p");
  const sessionsDir = sessionsDirOf(projectRoot, "main");
  mkdirSync(sessionsDir, { recursive: true });
  let name = "s.jsonl";
  if (which === "tiny-chain")
    writeTinyEntries(join(sessionsDir, name), projectRoot, 2_780_000, "chain");
  else {
    const c = ensureCached(100, 1, base);
    name = "long.jsonl";
    materialize(c, projectRoot, name);
  }
  const path = join(sessionsDir, name);
  const root = { projectRoot };
  const policy = { prefixCheck: "auto" } as const;
  let f = openSessionFile(projectRoot, sessionsDir, name);
  let data: SnapshotData = openSnapshot(f, undefined, policy);
  closeFile(f);
  let session = parsePiSession(data.buf, parseHeader(data.buf, data.incomplete, root));
  const b = defaultBranch(session);
  let items = branchItems(session, b);
  let digest = items.digestOf(items.length);
  const ms = (t: number) => (performance.now() - t).toFixed(0).padStart(6);
  console.log(
    `${which}: ${data.buf.length} bytes, ${session.scan.entries.count} entries, branch of ${items.length} items`,
  );
  console.log("  bare  verify+extend  parse  items  digest-check  digest-new  view  total");
  for (let k = 0; k < samples; k++) {
    const leaf = session.defaultLeaf!;
    const id = `f${k}x${Date.now().toString(16)}`;
    appendFileSync(
      path,
      `${JSON.stringify({ type: "message", id, parentId: leaf.id, timestamp: new Date().toISOString(), message: { role: "user", content: `follow ${k}`, timestamp: Date.now() } })}\n`,
    );
    gc();
    let t = performance.now();
    bare(path, data.snapshot.bytes, data.snapshot.digest);
    const tBare = ms(t);
    gc();
    const t0 = performance.now();
    t = t0;
    f = openSessionFile(projectRoot, sessionsDir, name);
    const next = verifyAndExtend(
      f,
      { dev: data.dev, ino: data.ino, snapshot: data.snapshot },
      data,
      policy,
    );
    closeFile(f);
    const tVerify = ms(t);
    t = performance.now();
    data.buf = next.buf.subarray(0, data.buf.length);
    const nextSession = extendSession(session, next.buf);
    const tParse = ms(t);
    t = performance.now();
    const nextItems =
      extendBranchItems(session, items, nextSession, b) ?? branchItems(nextSession, b);
    const tItems = ms(t);
    t = performance.now();
    if (nextItems.digestOf(items.length) !== digest) throw new Error("items changed");
    const tCheck = ms(t);
    t = performance.now();
    digest = nextItems.digestOf(nextItems.length);
    const tNew = ms(t);
    t = performance.now();
    viewFor(nextSession, b, next.incomplete, next.buf);
    const tView = ms(t);
    console.log(
      `${tBare} ${tVerify.padStart(14)} ${tParse} ${tItems} ${tCheck.padStart(13)} ${tNew.padStart(11)} ${tView} ${ms(t0)}`,
    );
    data = next;
    session = nextSession;
    items = nextItems;
  }
  console.log(`  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
