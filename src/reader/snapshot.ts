// Snapshots and their verification (seed: Snapshots, epochs, cursors). A snapshot is the file
// up to its last newline when the descriptor was read; its digest is the SHA-256 of those bytes.
// The reader does not keep a snapshot's bytes: it keeps their block tags (block-tags.ts) and
// reads the bytes a page renders from the file again, proved to be the snapshot's by their tags
// or by a settled change time (page-bytes.ts).
//
// Three promises, against every writer (write, pwrite, truncate and rewrite, rename over, a
// shared mapping):
// - A snapshot is a state the file held. A read counts only when the fstat before it and the
//   fstat after it agree; a racy read (change-time.ts) is also verified by a second read,
//   backward in other steps (file-pass.ts), and must come back equal. A file that never holds
//   still for a read is refused (open) or not extended (follow).
// - A page serves only the snapshot's own bytes: each one is read from the file and checked
//   against the snapshot's tags, or read under a settled change time that did not move.
// - Every call refuses source-replaced for another inode or a shorter file, and verifies every
//   pinned byte again whenever the change time or the size moved since the last verification:
//   every write(2), pwrite, truncate and first store to a clean mapped page moves it (Linux
//   6.13+). What moves nothing — the rest of a write already in flight, a store to a page a
//   mapping has already dirtied — is possible only while the snapshot is racy, and is caught by
//   the next call once the last full verification is RECHECK_MS old (a snapshot is verified in
//   full at least every second it is read, and never more than 1/RECHECK_SHARE of the time).
import { createHash } from "node:crypto";
import { LIMITS, type Snapshot } from "../protocol/chat-01.ts";
import { BLOCK, emptyTags } from "./block-tags.ts";
import {
  isSettled,
  isUnchangedSince,
  type ProofPolicy,
  racyWindowNs,
  trustsChangeTime,
} from "./change-time.ts";
import { type LineSink, readForward, type SnapshotEnd, verifyBackward } from "./file-pass.ts";
import { Refusal } from "./refusal.ts";
import { type FileIdentity, type OpenFile, statOpenFile } from "./safe-fs.ts";

/** The (ctime, size) an fstat saw right before the bytes were read, and what that read proves. */
export type FileStamp = {
  ctimeNs: bigint;
  size: number;
  /** The read was settled: an equal (ctime, size) later proves the bytes it covered unchanged. */
  settled: boolean;
  /** It covered the whole file (the snapshot and any partial line), not only a pinned prefix. */
  whole: boolean;
};

export type SnapshotData = SnapshotEnd & {
  snapshot: Snapshot;
  /** Bytes after the last newline were left out. */
  incomplete: boolean;
  dev: bigint;
  ino: bigint;
  /** The fstat before the last full verification of the bytes (or the read that made them). */
  stamp: FileStamp;
  /** When that verification ended (the policy's clock, ms) and how long it took. */
  checkedAt: number;
  checkMs: number;
  /** The digest of the snapshot this one was made from by appending whole lines. */
  grownFrom?: string;
};

export type Pinned = { dev: bigint; ino: bigint; snapshot: Snapshot };

/**
 * How a call may read the snapshot's bytes again: "change-time", a settled stamp the fstat
 * still shows (the call's last fstat must show it too); "tags", every block checked.
 */
export type ByteProof = "change-time" | "tags";

/** A verified snapshot, the fstat its proof rests on, and the sink that parsed what was read. */
export type Verified<S extends LineSink> = {
  data: SnapshotData;
  proof: ByteProof;
  since: FileIdentity;
  /** Null when nothing was read (the snapshot was proved unchanged). */
  sink: S | null;
};

/** A sink per attempt: `fresh` parses a file from its start, `extend` continues the known parse. */
export type Sinks<S extends LineSink> = { fresh: () => S; extend: () => S };

/** How many reads a file that keeps changing gets before the reader gives up on this call. */
const ATTEMPTS = 4;

/** A racy snapshot is verified in full again once its last full verification is this old. */
export const RECHECK_MS = 1_000;
/** …or older than this many times that verification's own duration, whichever is longer. */
export const RECHECK_SHARE = 20;

/** How long after its last full verification a racy snapshot is served without another. */
export function recheckAfter(data: SnapshotData): number {
  return Math.max(RECHECK_MS, RECHECK_SHARE * data.checkMs);
}

/** The epoch a new open starts: (dev, ino) and the digest at open. */
export function epochOf(dev: bigint, ino: bigint, digest: string): string {
  return `e-${createHash("sha256").update(`${dev}:${ino}:${digest}`).digest("hex").slice(0, 40)}`;
}

export function replaced(why: string): Refusal {
  return new Refusal(
    "source-replaced",
    `The session file changed under this view (${why}); read it again from the start.`,
  );
}

/** Wall-clock now in ns, rounded down: taken before an fstat, it is never after it. */
function wallNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

type Proof = { trust: boolean; windowNs: bigint | null; clock: () => number };

const monotonic = (): number => performance.now();

function proofFor(file: OpenFile, policy: ProofPolicy): Proof {
  const trust = policy.prefixCheck === "auto" && trustsChangeTime(file.fd, file.identity.dev);
  return {
    trust,
    windowNs: trust ? (policy.racyWindowNs ?? racyWindowNs()) : null,
    clock: policy.clock ?? monotonic,
  };
}

function settledRead(proof: Proof, pre: FileIdentity, startedNs: bigint): boolean {
  return proof.trust && isSettled(pre.ctimeNs, startedNs, proof.windowNs);
}

function tooLarge(size: number): Refusal {
  return new Refusal("too-large", `The session file is ${size} bytes; the limit is 256 MiB.`);
}

function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.ctimeNs === b.ctimeNs && a.size === b.size;
}

/**
 * How a call may serve `data` without verifying it again, given the fstat `now`: "change-time"
 * while a settled stamp stands; "tags" while a racy one stands (no write began since: the change
 * time moved for none) and its last full verification is recent; null when it must be verified.
 */
function quietProof(data: SnapshotData, now: FileIdentity, proof: Proof): ByteProof | null {
  const s = data.stamp;
  if (!proof.trust || !isUnchangedSince(s, now)) return null;
  if (s.settled) return "change-time";
  // A clock set back (age below 0) proves nothing: verify.
  const age = proof.clock() - data.checkedAt;
  return age >= 0 && age < recheckAfter(data) ? "tags" : null;
}

/**
 * The snapshot `open` serves: `latest` (this file's newest snapshot) while it is proved
 * unchanged; else `latest` verified and continued with what was appended; else a fresh read.
 * Refuses source-replaced when the file changed during every attempt.
 */
export function openSnapshot<S extends LineSink>(
  file: OpenFile,
  latest: SnapshotData | undefined,
  policy: ProofPolicy,
  sinks: Sinks<S>,
): Verified<S> {
  const proof = proofFor(file, policy);
  if (latest && latest.dev === file.identity.dev && latest.ino === file.identity.ino) {
    const quiet = latest.stamp.whole ? quietProof(latest, file.identity, proof) : null;
    if (quiet) return { data: latest, proof: quiet, since: file.identity, sink: null };
    const grown = extend(file, proof, latest, sinks.extend);
    if (grown === null) throw replaced("it kept changing while it was read");
    if (grown !== "differs") return grown;
  }
  const read = readFresh(file, proof, null, sinks.fresh);
  if (!read) throw replaced("it kept changing while it was read");
  return read;
}

/**
 * Exactly the pinned snapshot, read afresh (its parse is no longer cached): its bytes must hash
 * to the pinned digest. Refuses source-replaced otherwise.
 */
export function readPinned<S extends LineSink>(
  file: OpenFile,
  pinned: Pinned,
  policy: ProofPolicy,
  sink: () => S,
): Verified<S> {
  statPinned(file, pinned);
  const read = readFresh(file, proofFor(file, policy), pinned.snapshot.bytes, sink);
  if (!read) throw replaced("it kept changing while it was read");
  const { snapshot } = read.data;
  if (snapshot.bytes !== pinned.snapshot.bytes || snapshot.digest !== pinned.snapshot.digest) {
    throw replaced("earlier bytes were rewritten");
  }
  return read;
}

function statPinned(file: OpenFile, pinned: Pinned): FileIdentity {
  const now = statOpenFile(file);
  if (now.dev !== pinned.dev || now.ino !== pinned.ino)
    throw replaced("it is a different file now");
  if (now.size < pinned.snapshot.bytes) throw replaced("it is shorter than before");
  return now;
}

/**
 * The page path: the pinned snapshot `known` still stands (see the header). Refuses
 * source-replaced for another inode, a shorter file, or any pinned byte that differs; returns
 * how this call may read the snapshot's bytes.
 */
export function checkPinned(
  file: OpenFile,
  known: SnapshotData,
  policy: ProofPolicy,
): { proof: ByteProof; since: FileIdentity } {
  const proof = proofFor(file, policy);
  const startedNs = wallNs();
  const t0 = proof.clock();
  const pre = statPinned(file, known);
  const quiet = quietProof(known, pre, proof);
  if (quiet) return { proof: quiet, since: pre };
  if (!verifyBackward(file.fd, known.tags)) throw replaced("earlier bytes were rewritten");
  const post = statOpenFile(file);
  const settled = sameFile(pre, post) && settledRead(proof, pre, startedNs);
  known.stamp = {
    ctimeNs: pre.ctimeNs,
    size: pre.size,
    settled,
    whole: pre.size === known.snapshot.bytes,
  };
  known.checkedAt = proof.clock();
  known.checkMs = known.checkedAt - t0;
  return { proof: settled ? "change-time" : "tags", since: post };
}

/**
 * The follow path: the pinned snapshot `known` verified, and continued with the whole lines
 * appended since; or `known` itself when it is proved unchanged, or when the file kept changing
 * during every read (the follow then finds nothing new this time rather than continue from a
 * mix of versions). Refuses source-replaced for another inode, a shorter file or any pinned
 * byte that differs.
 */
export function followPinned<S extends LineSink>(
  file: OpenFile,
  known: SnapshotData,
  policy: ProofPolicy,
  sink: () => S,
): Verified<S> {
  const proof = proofFor(file, policy);
  const now = statPinned(file, known);
  const quiet = known.stamp.whole ? quietProof(known, now, proof) : null;
  if (quiet) return { data: known, proof: quiet, since: now, sink: null };
  const grown = extend(file, proof, known, sink);
  if (grown === "differs") {
    const size = statOpenFile(file).size;
    throw replaced(
      size < known.snapshot.bytes ? "it is shorter than before" : "earlier bytes were rewritten",
    );
  }
  if (grown) return grown;
  return { data: known, sink: null, ...checkPinned(file, known, policy) };
}

/**
 * `known` verified in full (its blocks read backward) and continued forward with what follows
 * it, as one state: bracketed by two equal fstats, and, while racy, the new blocks verified
 * backward too. "differs" when the file no longer starts with `known`; null when it changed
 * during every attempt.
 */
function extend<S extends LineSink>(
  file: OpenFile,
  proof: Proof,
  known: SnapshotData,
  sink: () => S,
): Verified<S> | "differs" | null {
  for (let i = 0; i < ATTEMPTS; i++) {
    const startedNs = wallNs();
    const t0 = proof.clock();
    const pre = statOpenFile(file);
    if (pre.size > LIMITS.fileBytes) throw tooLarge(pre.size);
    if (pre.size < known.snapshot.bytes || !verifyBackward(file.fd, known.tags)) return "differs";
    const s = sink();
    const read = readForward(file.fd, known, pre.size, s);
    if (read === "differs") return "differs";
    if (read === "short") continue;
    const settled = settledRead(proof, pre, startedNs);
    const newBlocks = Math.floor(known.snapshot.bytes / BLOCK);
    if (!settled && !verifyBackward(file.fd, read.tags, newBlocks)) continue;
    const post = statOpenFile(file);
    if (!sameFile(pre, post)) continue;
    const stamp = { ctimeNs: pre.ctimeNs, size: pre.size, settled, whole: true };
    const checkedAt = proof.clock();
    const byteProof: ByteProof = settled ? "change-time" : "tags";
    if (read.bytes === known.snapshot.bytes) {
      // Nothing new: `known` is verified again (a partial line may have grown).
      Object.assign(known, { stamp, checkedAt, checkMs: checkedAt - t0 });
      known.incomplete = read.bytes < pre.size;
      return { data: known, proof: byteProof, since: post, sink: null };
    }
    const data: SnapshotData = {
      ...read,
      snapshot: { bytes: read.bytes, digest: read.hash.copy().digest("hex") },
      incomplete: read.bytes < pre.size,
      dev: known.dev,
      ino: known.ino,
      stamp,
      checkedAt,
      checkMs: checkedAt - t0,
      grownFrom: known.snapshot.digest,
    };
    return { data, proof: byteProof, since: post, sink: s };
  }
  return null;
}

/**
 * The whole file (or its first `limit` bytes) read as one state it held (see the header), with
 * its stamp; null when it changed during every attempt.
 */
function readFresh<S extends LineSink>(
  file: OpenFile,
  proof: Proof,
  limit: number | null,
  sink: () => S,
): Verified<S> | null {
  for (let i = 0; i < ATTEMPTS; i++) {
    const startedNs = wallNs();
    const t0 = proof.clock();
    const pre = statOpenFile(file);
    if (pre.size > LIMITS.fileBytes) throw tooLarge(pre.size);
    const upTo = limit ?? pre.size;
    if (upTo > pre.size) return null;
    const s = sink();
    const start: SnapshotEnd = { bytes: 0, hash: createHash("sha256"), tags: emptyTags() };
    const read = readForward(file.fd, start, upTo, s);
    if (read === "short" || read === "differs") continue;
    const settled = settledRead(proof, pre, startedNs);
    if (!settled && !verifyBackward(file.fd, read.tags)) continue;
    const post = statOpenFile(file);
    if (!sameFile(pre, post)) continue;
    const checkedAt = proof.clock();
    const data: SnapshotData = {
      ...read,
      snapshot: { bytes: read.bytes, digest: read.hash.copy().digest("hex") },
      incomplete: read.bytes < pre.size,
      dev: file.identity.dev,
      ino: file.identity.ino,
      stamp: { ctimeNs: pre.ctimeNs, size: pre.size, settled, whole: limit === null },
      checkedAt,
      checkMs: checkedAt - t0,
    };
    return { data, proof: settled ? "change-time" : "tags", since: post, sink: s };
  }
  return null;
}
