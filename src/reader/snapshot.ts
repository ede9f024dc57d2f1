// Snapshots and their verification (seed: Snapshots, epochs, cursors). A snapshot is the file
// up to its last newline when the descriptor was read; its digest is the SHA-256 of those bytes.
// Every later read checks the (dev, ino), the length and the pinned bytes, and refuses
// source-replaced on any difference. The bytes are re-read and hashed unless the change time
// proves the file untouched since they were last verified (change-time.ts says when it can).
import { createHash } from "node:crypto";
import { readSync } from "node:fs";
import type { Snapshot } from "../protocol/chat-01.ts";
import { isUnchangedSince } from "./change-time.ts";
import { Refusal } from "./refusal.ts";
import { type OpenFile, readRange, statOpenFile } from "./safe-fs.ts";

/**
 * The (ctime, size) an fstat saw right before the whole file was read: the file was then the
 * snapshot plus, past it, at most a partial line. Equal values later prove it still is.
 */
export type FileStamp = { ctimeNs: bigint; size: number };

/** A stamp that proves nothing (a ctime with no nanoseconds is never trusted). */
const UNPROVEN: FileStamp = { ctimeNs: 0n, size: -1 };

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
};

export type Pinned = { dev: bigint; ino: bigint; snapshot: Snapshot };

function sha256(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex");
}

/** The epoch a new open starts: (dev, ino) and the digest at open. */
export function epochOf(dev: bigint, ino: bigint, digest: string): string {
  return `e-${createHash("sha256").update(`${dev}:${ino}:${digest}`).digest("hex").slice(0, 40)}`;
}

/** Reads a fresh snapshot through an open descriptor (the fstat first: see change-time.ts). */
export function takeSnapshot(file: OpenFile): SnapshotData {
  const now = statOpenFile(file);
  const raw = readRange(file.fd, 0, now.size);
  const end = raw.lastIndexOf(0x0a) + 1;
  const buf = raw.subarray(0, end);
  return {
    buf,
    snapshot: { bytes: end, digest: sha256(buf) },
    incomplete: end < raw.length,
    dev: now.dev,
    ino: now.ino,
    stamp: { ctimeNs: now.ctimeNs, size: now.size },
  };
}

function replaced(why: string): Refusal {
  return new Refusal(
    "source-replaced",
    `The session file changed under this view (${why}); read it again from the start.`,
  );
}

function statPinned(file: OpenFile, pinned: Pinned): FileStamp {
  const now = statOpenFile(file);
  if (now.dev !== pinned.dev || now.ino !== pinned.ino)
    throw replaced("it is a different file now");
  if (now.size < pinned.snapshot.bytes) throw replaced("it is shorter than before");
  return { ctimeNs: now.ctimeNs, size: now.size };
}

/**
 * The pinned snapshot, verified: `known` as it is when `trustCtime` and the file is untouched
 * since `known` was verified; otherwise the pinned bytes re-read and hashed. Refuses
 * source-replaced for another inode, a shorter file, or any pinned byte that differs.
 */
export function verifyPinned(
  file: OpenFile,
  pinned: Pinned,
  known: SnapshotData | undefined,
  trustCtime: boolean,
): SnapshotData {
  const now = statPinned(file, pinned);
  if (known && trustCtime && isUnchangedSince(known.stamp, now)) return known;
  if (known) {
    // The bytes are in memory already: hash the file through one small buffer, allocate nothing.
    if (hashPrefix(file.fd, pinned.snapshot.bytes) !== pinned.snapshot.digest) {
      throw replaced("earlier bytes were rewritten");
    }
    return known;
  }
  const buf = readRange(file.fd, 0, pinned.snapshot.bytes);
  if (buf.length < pinned.snapshot.bytes) throw replaced("it was truncated while being read");
  if (sha256(buf) !== pinned.snapshot.digest) throw replaced("earlier bytes were rewritten");
  // Only the pinned bytes were read, not the whole file: this read proves nothing about the rest.
  return {
    buf,
    snapshot: pinned.snapshot,
    incomplete: false,
    dev: pinned.dev,
    ino: pinned.ino,
    stamp: UNPROVEN,
  };
}

const CHUNK = Buffer.allocUnsafe(1024 * 1024);

/** SHA-256 of the first `n` bytes, read in 1 MiB chunks; a short file hashes short (no match). */
function hashPrefix(fd: number, n: number): string {
  const hash = createHash("sha256");
  for (let pos = 0; pos < n; ) {
    const got = readSync(fd, CHUNK, 0, Math.min(CHUNK.length, n - pos), pos);
    if (got === 0) break;
    hash.update(CHUNK.subarray(0, got));
    pos += got;
  }
  return hash.digest("hex");
}

/**
 * Verifies the pinned prefix and takes a fresh snapshot of the whole file, in one read; or
 * returns `known` (the pinned snapshot) when the change time proves nothing was written since.
 */
export function verifyAndExtend(
  file: OpenFile,
  pinned: Pinned,
  known: SnapshotData | undefined,
  trustCtime: boolean,
): SnapshotData {
  const now = statPinned(file, pinned);
  if (known && trustCtime && isUnchangedSince(known.stamp, now)) return known;
  const raw = readRange(file.fd, 0, now.size);
  const n = pinned.snapshot.bytes;
  if (raw.length < n) throw replaced("it was truncated while being read");
  const hash = createHash("sha256").update(raw.subarray(0, n));
  if (hash.copy().digest("hex") !== pinned.snapshot.digest)
    throw replaced("earlier bytes were rewritten");
  const end = raw.lastIndexOf(0x0a) + 1;
  hash.update(raw.subarray(n, end));
  return {
    buf: raw.subarray(0, end),
    snapshot: { bytes: end, digest: hash.digest("hex") },
    incomplete: end < raw.length,
    dev: pinned.dev,
    ino: pinned.ino,
    stamp: now,
  };
}
