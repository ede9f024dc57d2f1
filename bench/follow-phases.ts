// Where the time of one follow after a one-line append goes, phase by phase, on the reader's
// own modules (the steps `next` takes with a follow cursor, reader.ts `resume`):
//   ./node_modules/.bin/node --expose-gc bench/follow-phases.ts tiny-chain|pi-100 [samples]
// tiny-chain: 2.78 M tiny entries on one branch (255 MiB, bench/hostile-files.ts); pi-100: the
// cached 100 MiB Pi-written session (bench/fixtures.ts, generated on first use). Each sample
// appends one entry to the default leaf, then times: the bare check (read the pinned prefix and
// SHA-256 it), verify + read + scan (snapshot.ts: the prefix's blocks checked against their tags,
// the tail read and its lines scanned), the extended parse indexed (tree.ts), the branch's items, the follow's digest check and the new follow
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
import { piFormat } from "../src/reader/harness/pi/harness.ts";
import { branchItems, extendBranchItems } from "../src/reader/items.ts";
import { PageBytes, WindowCache } from "../src/reader/page-bytes.ts";
import { ExtendedParse, FreshParse } from "../src/reader/parse-sink.ts";
import { closeFile, openSessionFile } from "../src/reader/safe-fs.ts";
import { followPinned, openSnapshot, type SnapshotData } from "../src/reader/snapshot.ts";
import { sessionsDirOf } from "../src/reader/sources.ts";
import { defaultBranch } from "../src/reader/tree.ts";
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
  const opened = openSnapshot(f, undefined, policy, {
    fresh: () => new FreshParse(piFormat(root)),
    extend: () => {
      throw new Error("no parse to extend");
    },
  });
  closeFile(f);
  let data: SnapshotData = opened.data;
  if (!(opened.sink instanceof FreshParse)) throw new Error("the open parsed nothing");
  let session = opened.sink.finish(data.incomplete);
  const b = defaultBranch(session);
  let items = branchItems(session, b);
  let digest = items.digestOf(items.length);
  const windows = new WindowCache();
  const ms = (t: number) => (performance.now() - t).toFixed(0).padStart(6);
  console.log(
    `${which}: ${data.snapshot.bytes} bytes, ${session.scan.entries.count} entries, branch of ${items.length} items`,
  );
  console.log("  bare  verify+read+scan  index  items  digest-check  digest-new  view  total");
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
    const prevSession = session;
    const next = followPinned(f, data, policy, () => new ExtendedParse(prevSession));
    const tVerify = ms(t);
    t = performance.now();
    if (!(next.sink instanceof ExtendedParse)) throw new Error("the follow read nothing new");
    const nextSession = next.sink.finish();
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
    const bytes = new PageBytes(f, next.data, next, windows);
    viewFor(nextSession, b, next.data.incomplete, (rec) => bytes.entry(rec));
    bytes.finish();
    closeFile(f);
    const tView = ms(t);
    console.log(
      `${tBare} ${tVerify.padStart(17)} ${tParse} ${tItems} ${tCheck.padStart(13)} ${tNew.padStart(11)} ${tView} ${ms(t0)}`,
    );
    data = next.data;
    session = nextSession;
    items = nextItems;
  }
  console.log(`  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
