// Snapshots and their verification (seed: Snapshots, epochs, cursors). A snapshot is the file
// up to its last newline when the descriptor was read; its digest is the SHA-256 of those bytes.
// Every later read checks the pinned prefix byte for byte (by digest), the (dev, ino) and the
// length, and refuses source-replaced on any difference.
import { createHash } from "node:crypto";
import type { Snapshot } from "../protocol/chat-01.ts";
import { Refusal } from "./refusal.ts";
import { type OpenFile, readRange, statOpenFile } from "./safe-fs.ts";

export type SnapshotData = {
  /** The whole lines of the snapshot (ends with a newline, or is empty). */
  buf: Buffer;
  snapshot: Snapshot;
  /** Bytes after the last newline were left out. */
  incomplete: boolean;
  dev: bigint;
  ino: bigint;
};

function sha256(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex");
}

/** The epoch a new open starts: (dev, ino) and the digest at open. */
export function epochOf(dev: bigint, ino: bigint, digest: string): string {
  return `e-${createHash("sha256").update(`${dev}:${ino}:${digest}`).digest("hex").slice(0, 40)}`;
}

function cut(raw: Buffer, file: OpenFile): SnapshotData {
  const end = raw.lastIndexOf(0x0a) + 1;
  const buf = raw.subarray(0, end);
  return {
    buf,
    snapshot: { bytes: end, digest: sha256(buf) },
    incomplete: end < raw.length,
    dev: file.identity.dev,
    ino: file.identity.ino,
  };
}

/** Reads a fresh snapshot through an open descriptor. */
export function takeSnapshot(file: OpenFile): SnapshotData {
  const { size } = statOpenFile(file);
  return cut(readRange(file.fd, 0, size), file);
}

function replaced(why: string): Refusal {
  return new Refusal(
    "source-replaced",
    `The session file changed under this view (${why}); read it again from the start.`,
  );
}

function checkIdentity(
  file: OpenFile,
  pinned: { dev: bigint; ino: bigint; snapshot: Snapshot },
): number {
  if (file.identity.dev !== pinned.dev || file.identity.ino !== pinned.ino) {
    throw replaced("it is a different file now");
  }
  const { size } = statOpenFile(file);
  if (size < pinned.snapshot.bytes) throw replaced("it is shorter than before");
  return size;
}

/**
 * Re-reads and hashes the pinned prefix: refuses source-replaced when the file is another
 * inode, is shorter, or any byte of the prefix differs. Returns the prefix bytes.
 */
export function verifyPrefix(
  file: OpenFile,
  pinned: { dev: bigint; ino: bigint; snapshot: Snapshot },
): Buffer {
  checkIdentity(file, pinned);
  const prefix = readRange(file.fd, 0, pinned.snapshot.bytes);
  if (prefix.length < pinned.snapshot.bytes) throw replaced("it was truncated while being read");
  if (sha256(prefix) !== pinned.snapshot.digest) throw replaced("earlier bytes were rewritten");
  return prefix;
}

/** Verifies the pinned prefix and takes a fresh snapshot of the whole file, in one read. */
export function verifyAndExtend(
  file: OpenFile,
  pinned: { dev: bigint; ino: bigint; snapshot: Snapshot },
): SnapshotData {
  const size = checkIdentity(file, pinned);
  const raw = readRange(file.fd, 0, size);
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
    dev: file.identity.dev,
    ino: file.identity.ino,
  };
}
