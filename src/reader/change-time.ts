// When the change time proves that a file is unchanged, and when it proves nothing.
//
// Since Linux 6.13, ext4, xfs and btrfs have multigrain timestamps: the first change after a
// stat that read the ctime gets a fine-grained ctime strictly greater than the one read. So
// every write(2)/pwrite(2)/truncate that *begins* after our fstat moves the ctime we see next.
// Two writers escape that, and both are silent only for a while after the ctime last moved:
//
// - A write already in flight at our fstat: the kernel moves the ctime *before* it copies the
//   bytes, so a read racing the copy sees a mix of two versions under an unchanged ctime.
// - A shared mapping: only the first store to a clean page faults and moves the ctime; later
//   stores to the now dirty page are silent until writeback cleans the page, which
//   write-protects it again (the next store faults and moves the ctime). Periodic writeback
//   cleans a page dirtied at time t by t + dirty_expire + dirty_writeback (30 s + 5 s by
//   default). tmpfs never writes back (and maps pages writable at once), so a mapping writes
//   to it silently forever: tmpfs is never trusted.
//
// So a read is *settled* — the ctime proves, from then on, that its bytes are unchanged —
// only when it began at least the racy window after the ctime it saw (as git treats an index
// entry as racily clean when the file's mtime is not older than the index). Until then the
// snapshot is *racy* and is verified by its bytes. The window is read from /proc/sys/vm.
// docs/reader.md and docs/performance.md state the assumptions; test/reader/writers-race.test.ts
// runs every kind of writer against it.
import { readFileSync, statfsSync } from "node:fs";
import { release } from "node:os";
import { pathIn } from "./safe-fs.ts";

/** statfs(2) f_type magic numbers of the filesystems with multigrain timestamps and writeback. */
const MULTIGRAIN_FS = new Map<number, string>([
  [0xef53, "ext4"],
  [0x58465342, "xfs"],
  [0x9123683e, "btrfs"],
]);

export type PrefixCheck = "auto" | "bytes";

/**
 * How the reader may use change times: `racyWindowNs` overrides the kernel's (tests only);
 * `clock` (ms, monotonic) times the re-verification of racy snapshots (snapshot.ts).
 */
export type ProofPolicy = { prefixCheck: PrefixCheck; racyWindowNs?: bigint; clock?: () => number };

/** Whether the running kernel is at least 6.13. */
export function hasMultigrainKernel(kernelRelease = release()): boolean {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 6 || (major === 6 && minor >= 13);
}

const byDev = new Map<bigint, boolean>();

/**
 * Whether change times on the filesystem holding the open file `fd` (device `dev`) can prove
 * "unchanged" at all. statfs goes through the descriptor, so it is the file's own filesystem.
 * Cached per device.
 */
export function trustsChangeTime(fd: number, dev: bigint): boolean {
  const known = byDev.get(dev);
  if (known !== undefined) return known;
  let trusted = false;
  if (process.platform === "linux" && hasMultigrainKernel()) {
    try {
      trusted = MULTIGRAIN_FS.has(Number(statfsSync(pathIn(fd), { bigint: true }).type));
    } catch {
      // No statfs answer: no proof, so the reader compares the bytes.
      trusted = false;
    }
  }
  byDev.set(dev, trusted);
  return trusted;
}

const MARGIN_NS = 10_000_000_000n;
const WINDOW_TTL_MS = 5_000;
let window: { ns: bigint | null; readAtMs: number } | undefined;

function centisecs(name: string): number | null {
  try {
    const v = Number(readFileSync(`/proc/sys/vm/${name}`, "utf8").trim());
    return Number.isInteger(v) && v >= 0 ? v : null;
  } catch {
    // No /proc/sys: no known writeback period, so no snapshot ever settles.
    return null;
  }
}

/**
 * How long after the ctime last moved a writer may still change bytes without moving it:
 * dirty_expire + 2 × dirty_writeback + 10 s (the flusher wakes every dirty_writeback and
 * writes inodes dirty for longer than dirty_expire; one extra period and a margin for its
 * lag). Null — never settled — when periodic writeback is off (dirty_writeback 0) or unknown.
 * Re-read every 5 s, so a changed sysctl counts.
 */
export function racyWindowNs(nowMs = Date.now()): bigint | null {
  if (window && nowMs - window.readAtMs < WINDOW_TTL_MS) return window.ns;
  const expire = centisecs("dirty_expire_centisecs");
  const every = centisecs("dirty_writeback_centisecs");
  const ns =
    expire === null || every === null || every === 0
      ? null
      : BigInt(expire + 2 * every) * 10_000_000n + MARGIN_NS;
  window = { ns, readAtMs: nowMs };
  return ns;
}

/**
 * Whether a read that began at wall-clock `startedNs` (taken before the fstat that saw
 * `ctimeNs`) is settled. A ctime with no nanoseconds suggests a second-granularity inode: it
 * never settles. A clock set back makes reads racy (safe); set forward, it could settle early.
 */
export function isSettled(ctimeNs: bigint, startedNs: bigint, windowNs: bigint | null): boolean {
  return windowNs !== null && ctimeNs % 1_000_000_000n !== 0n && startedNs - ctimeNs >= windowNs;
}

/**
 * Whether a later fstat's (ctime, size) equal to the one a settled read saw proves the bytes
 * unchanged. A ctime with no nanoseconds proves nothing.
 */
export function isUnchangedSince(
  before: { ctimeNs: bigint; size: number },
  now: { ctimeNs: bigint; size: number },
): boolean {
  return (
    now.ctimeNs === before.ctimeNs &&
    now.size === before.size &&
    before.ctimeNs % 1_000_000_000n !== 0n
  );
}
