// Snapshots and their verification (seed: Snapshots, epochs, cursors). A snapshot is the file
// up to its last newline when the descriptor was read; its digest is the SHA-256 of those bytes.
//
// Two promises, against every writer (write, pwrite, truncate and rewrite, rename over, a
// shared mapping):
// - A snapshot is a state the file held. A read counts only when the fstat before it and the
//   fstat after it agree; a racy read (change-time.ts) is also read a second time and must come
//   back equal. A write in flight copies forward and never undoes itself, so a read that mixed
//   two versions is followed by one that shows more of the newer: two equal reads inside one
//   unchanged ctime are a state. A file that never holds still for a read is refused (open) or
//   not extended (follow).
// - `next` serves a pinned snapshot only while the file still holds its bytes: they are
//   compared with the bytes in memory (no hashing, no allocation), unless a settled read proves
//   them unchanged by the change time alone (change-time.ts).
import { createHash, type Hash } from "node:crypto";
import { readSync } from "node:fs";
import { LIMITS, type Snapshot } from "../protocol/chat-01.ts";
import {
  isSettled,
  isUnchangedSince,
  type ProofPolicy,
  racyWindowNs,
  trustsChangeTime,
} from "./change-time.ts";
import { Refusal } from "./refusal.ts";
import { type FileIdentity, type OpenFile, readRange, statOpenFile } from "./safe-fs.ts";
import { work } from "./work.ts";

/** The (ctime, size) an fstat saw right before the bytes were read, and what that read proves. */
export type FileStamp = {
  ctimeNs: bigint;
  size: number;
  /** The read was settled: an equal (ctime, size) later proves the bytes it covered unchanged. */
  settled: boolean;
  /** It covered the whole file (the snapshot and any partial line), not only a pinned prefix. */
  whole: boolean;
};

export type SnapshotData = {
  /** The whole lines of the snapshot (ends with a newline, or is empty). */
  buf: Buffer;
  snapshot: Snapshot;
  /** Bytes after the last newline were left out. */
  incomplete: boolean;
  dev: bigint;
  ino: bigint;
  /** Updated each time the bytes are verified again. */
  stamp: FileStamp;
  /** SHA-256 state after `buf`: a follow extends the digest without hashing `buf` again. */
  hash: Hash;
  /** The buffer `buf` starts, with room to append; set once a follow extended a snapshot. */
  room?: Room;
  /** The digest of the snapshot this one was made from by appending whole lines (extendWith). */
  grownFrom?: string;
};

/**
 * A buffer that the snapshots of one file share as prefixes: `used` bytes are taken (the
 * longest snapshot's), the rest is free for the next follow to append to without copying. A
 * snapshot may append only when it ends at `used`; the bytes any shorter one reads never move.
 */
type Room = { buf: Buffer; used: number };

export type Pinned = { dev: bigint; ino: bigint; snapshot: Snapshot };

/** How many reads a file that keeps changing gets before the reader gives up on this call. */
const ATTEMPTS = 4;

/** Scratch for comparing the file with bytes in memory: one buffer for the process. */
const CHUNK = Buffer.allocUnsafe(1024 * 1024);

/** The epoch a new open starts: (dev, ino) and the digest at open. */
export function epochOf(dev: bigint, ino: bigint, digest: string): string {
  return `e-${createHash("sha256").update(`${dev}:${ino}:${digest}`).digest("hex").slice(0, 40)}`;
}

function replaced(why: string): Refusal {
  return new Refusal(
    "source-replaced",
    `The session file changed under this view (${why}); read it again from the start.`,
  );
}

/** Wall-clock now in ns, rounded down: taken before an fstat, it is never after it. */
function wallNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

type Proof = { trust: boolean; windowNs: bigint | null };

function proofFor(file: OpenFile, policy: ProofPolicy): Proof {
  const trust = policy.prefixCheck === "auto" && trustsChangeTime(file.fd, file.identity.dev);
  return { trust, windowNs: trust ? (policy.racyWindowNs ?? racyWindowNs()) : null };
}

function settledRead(proof: Proof, pre: FileIdentity, startedNs: bigint): boolean {
  return proof.trust && isSettled(pre.ctimeNs, startedNs, proof.windowNs);
}

/**
 * Whether the file holds `held`'s first `n` bytes at `position`, read through CHUNK
 * (allocates nothing).
 */
function isFileEqualTo(fd: number, held: Buffer, n: number, position = 0): boolean {
  for (let pos = 0; pos < n; ) {
    const got = readSync(fd, CHUNK, 0, Math.min(CHUNK.length, n - pos), position + pos);
    if (got === 0) return false;
    if (CHUNK.compare(held, pos, pos + got, 0, got) !== 0) return false;
    pos += got;
  }
  return true;
}

function tooLarge(size: number): Refusal {
  return new Refusal("too-large", `The session file is ${size} bytes; the limit is 256 MiB.`);
}

/**
 * What the file holds past `held` (a snapshot's bytes), read as one state with them: the held
 * bytes are compared in place, only the rest is read into memory. "differs" when the file no
 * longer starts with `held`; null when it changed during every attempt.
 */
function readPast(
  file: OpenFile,
  proof: Proof,
  held: Buffer,
): { tail: Buffer; stamp: FileStamp } | "differs" | null {
  const n = held.length;
  for (let i = 0; i < ATTEMPTS; i++) {
    const startedNs = wallNs();
    const pre = statOpenFile(file);
    if (pre.size > LIMITS.fileBytes) throw tooLarge(pre.size);
    if (pre.size < n || !isFileEqualTo(file.fd, held, n)) return "differs";
    const tail = readRange(file.fd, n, pre.size - n);
    if (tail.length !== pre.size - n) continue;
    const settled = settledRead(proof, pre, startedNs);
    const again =
      settled || (isFileEqualTo(file.fd, held, n) && isFileEqualTo(file.fd, tail, tail.length, n));
    if (!again) continue;
    const post = statOpenFile(file);
    if (post.ctimeNs !== pre.ctimeNs || post.size !== pre.size) continue;
    return { tail, stamp: { ctimeNs: pre.ctimeNs, size: pre.size, settled, whole: true } };
  }
  return null;
}

/**
 * The whole file as one state it held (see the header), with its stamp; null when it changed
 * during every attempt.
 */
function readWhole(file: OpenFile, proof: Proof): { raw: Buffer; stamp: FileStamp } | null {
  for (let i = 0; i < ATTEMPTS; i++) {
    const startedNs = wallNs();
    const pre = statOpenFile(file);
    if (pre.size > LIMITS.fileBytes) {
      throw new Refusal(
        "too-large",
        `The session file is ${pre.size} bytes; the limit is 256 MiB.`,
      );
    }
    const raw = readRange(file.fd, 0, pre.size);
    if (raw.length !== pre.size) continue;
    const settled = settledRead(proof, pre, startedNs);
    if (!settled && !isFileEqualTo(file.fd, raw, raw.length)) continue;
    const post = statOpenFile(file);
    if (post.ctimeNs !== pre.ctimeNs || post.size !== pre.size) continue;
    return { raw, stamp: { ctimeNs: pre.ctimeNs, size: pre.size, settled, whole: true } };
  }
  return null;
}

/** A snapshot of a whole-file read. */
function fromRead(read: { raw: Buffer; stamp: FileStamp }, file: OpenFile): SnapshotData {
  const { raw, stamp } = read;
  const end = raw.lastIndexOf(0x0a) + 1;
  const buf = raw.subarray(0, end);
  const hash = createHash("sha256").update(buf);
  return {
    buf,
    snapshot: { bytes: end, digest: hash.copy().digest("hex") },
    incomplete: end < raw.length,
    dev: file.identity.dev,
    ino: file.identity.ino,
    stamp,
    hash,
  };
}

/**
 * The snapshot `open` serves: `latest` (this file's newest cached snapshot) while a settled
 * whole-file read proves the file unchanged since; else a fresh read. Refuses source-replaced
 * when the file changed during every attempt.
 */
export function openSnapshot(
  file: OpenFile,
  latest: SnapshotData | undefined,
  policy: ProofPolicy,
): SnapshotData {
  const proof = proofFor(file, policy);
  const s = latest?.stamp;
  if (latest && proof.trust && s?.settled && s.whole && isUnchangedSince(s, file.identity)) {
    return latest;
  }
  // The file usually still starts with the latest snapshot: compare it in place, read the rest.
  if (latest) {
    const past = readPast(file, proof, latest.buf);
    if (past === null) throw replaced("it kept changing while it was read");
    if (past !== "differs") return extendWith(latest, past);
  }
  const read = readWhole(file, proof);
  if (!read) throw replaced("it kept changing while it was read");
  return fromRead(read, file);
}

function statPinned(file: OpenFile, pinned: Pinned): FileIdentity {
  const now = statOpenFile(file);
  if (now.dev !== pinned.dev || now.ino !== pinned.ino)
    throw replaced("it is a different file now");
  if (now.size < pinned.snapshot.bytes) throw replaced("it is shorter than before");
  return now;
}

/**
 * The pinned snapshot, verified: `known` as it is while a settled read proves the file
 * untouched; otherwise the file's pinned bytes compared with `known`'s (or, with no `known`,
 * read and hashed). Refuses source-replaced for another inode, a shorter file, or any pinned
 * byte that differs.
 */
export function verifyPinned(
  file: OpenFile,
  pinned: Pinned,
  known: SnapshotData | undefined,
  policy: ProofPolicy,
): SnapshotData {
  const proof = proofFor(file, policy);
  const startedNs = wallNs();
  const pre = statPinned(file, pinned);
  if (known && proof.trust && known.stamp.settled && isUnchangedSince(known.stamp, pre)) {
    return known;
  }
  const n = pinned.snapshot.bytes;
  if (known) {
    if (!isFileEqualTo(file.fd, known.buf, n)) throw replaced("earlier bytes were rewritten");
    known.stamp = stampAfter(file, pre, proof, startedNs);
    return known;
  }
  const buf = readRange(file.fd, 0, n);
  if (buf.length < n) throw replaced("it was truncated while being read");
  const hash = createHash("sha256").update(buf);
  if (hash.copy().digest("hex") !== pinned.snapshot.digest)
    throw replaced("earlier bytes were rewritten");
  return {
    buf,
    snapshot: pinned.snapshot,
    incomplete: false,
    dev: pinned.dev,
    ino: pinned.ino,
    stamp: stampAfter(file, pre, proof, startedNs),
    hash,
  };
}

/**
 * The stamp of a prefix that was a state when pinned and equals the file now. It proves more
 * later only when nothing moved during the comparison and the read was settled.
 */
function stampAfter(file: OpenFile, pre: FileIdentity, proof: Proof, startedNs: bigint): FileStamp {
  const post = statOpenFile(file);
  const still = post.ctimeNs === pre.ctimeNs && post.size === pre.size;
  return {
    ctimeNs: pre.ctimeNs,
    size: pre.size,
    settled: still && settledRead(proof, pre, startedNs),
    whole: false,
  };
}

/**
 * Verifies the pinned prefix and takes a fresh snapshot of the whole file (the prefix compared
 * in place with `known`'s bytes, or read and hashed without them); or returns `known` when a
 * settled whole-file read proves nothing was written since. When the file keeps changing during
 * every read, the pinned snapshot is verified alone and returned: the follow finds nothing new
 * this time rather than continue from a mix of versions.
 */
export function verifyAndExtend(
  file: OpenFile,
  pinned: Pinned,
  known: SnapshotData | undefined,
  policy: ProofPolicy,
): SnapshotData {
  const proof = proofFor(file, policy);
  const now = statPinned(file, pinned);
  const s = known?.stamp;
  if (known && proof.trust && s?.settled && s.whole && isUnchangedSince(s, now)) return known;
  if (known) return extendKnown(file, proof, known, policy, pinned);
  const read = readWhole(file, proof);
  if (!read) return verifyPinned(file, pinned, known, policy);
  const { raw } = read;
  const n = pinned.snapshot.bytes;
  if (raw.length < n) throw replaced("it is shorter than before");
  const hash = createHash("sha256").update(raw.subarray(0, n));
  if (hash.copy().digest("hex") !== pinned.snapshot.digest)
    throw replaced("earlier bytes were rewritten");
  const end = raw.lastIndexOf(0x0a) + 1;
  hash.update(raw.subarray(n, end));
  return {
    buf: raw.subarray(0, end),
    snapshot: end === n ? pinned.snapshot : { bytes: end, digest: hash.copy().digest("hex") },
    incomplete: end < raw.length,
    dev: pinned.dev,
    ino: pinned.ino,
    stamp: read.stamp,
    hash,
  };
}

/**
 * A follow from a snapshot in memory: the file is compared with its bytes in place and only
 * what follows them is read; a new buffer is made only when whole new lines arrived.
 */
function extendKnown(
  file: OpenFile,
  proof: Proof,
  known: SnapshotData,
  policy: ProofPolicy,
  pinned: Pinned,
): SnapshotData {
  const read = readPast(file, proof, known.buf);
  if (read === "differs") {
    const size = statOpenFile(file).size;
    throw replaced(
      size < known.buf.length ? "it is shorter than before" : "earlier bytes were rewritten",
    );
  }
  if (!read) return verifyPinned(file, pinned, known, policy);
  return extendWith(known, read);
}

/**
 * `known` followed by the whole lines of `tail`: appended in the room after `known`'s bytes
 * when it has some and no longer snapshot took it, else copied into a new buffer with room.
 */
function extendWith(known: SnapshotData, read: { tail: Buffer; stamp: FileStamp }): SnapshotData {
  const { tail, stamp } = read;
  const nl = tail.lastIndexOf(0x0a) + 1;
  const incomplete = nl < tail.length;
  if (nl === 0) return { ...known, incomplete, stamp };
  const n = known.buf.length;
  let room = known.room;
  const inPlace =
    room !== undefined &&
    room.used === n &&
    room.buf.length >= n + nl &&
    known.buf.buffer === room.buf.buffer &&
    known.buf.byteOffset === room.buf.byteOffset;
  if (!room || !inPlace) {
    // Room for about an eighth more (at most 16 MiB): later follows append in place.
    const cap = n + nl + Math.min(n >>> 3, 16 * 1024 * 1024) + 64 * 1024;
    room = { buf: Buffer.allocUnsafeSlow(cap), used: n };
    known.buf.copy(room.buf, 0);
    work.bytesCopied += n;
  }
  tail.copy(room.buf, n, 0, nl);
  room.used = n + nl;
  const buf = room.buf.subarray(0, n + nl);
  const hash = known.hash.copy().update(tail.subarray(0, nl));
  return {
    room,
    grownFrom: known.snapshot.digest,
    buf,
    snapshot: { bytes: n + nl, digest: hash.copy().digest("hex") },
    incomplete,
    dev: known.dev,
    ino: known.ino,
    stamp,
    hash,
  };
}
