// When the change time alone proves that a file is unchanged. Since Linux 6.13, filesystems
// with multigrain timestamps (ext4, xfs, btrfs, tmpfs) give the first change after a stat that
// read the ctime a fine-grained ctime strictly greater than the one read: any write after our
// fstat, even a same-length rewrite in the same clock tick, changes the ctime we see next.
// Elsewhere (older kernels, other filesystems, second-granularity inodes) a change within one
// tick can keep the ctime, so the reader hashes the pinned bytes instead. docs/performance.md
// states the conditions; test/reader/change-time.test.ts proves it on the running kernel.
import { statfsSync } from "node:fs";
import { release } from "node:os";

/** statfs(2) f_type magic numbers of the filesystems with multigrain timestamps in 6.13. */
const MULTIGRAIN_FS = new Map<number, string>([
  [0xef53, "ext4"],
  [0x58465342, "xfs"],
  [0x9123683e, "btrfs"],
  [0x01021994, "tmpfs"],
]);

export type PrefixCheck = "auto" | "bytes";

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
 * Whether change times on the filesystem holding `dir` (device `dev`) prove "unchanged".
 * Calls statfs, which opens nothing. Cached per device.
 */
export function trustsChangeTime(dir: string, dev: bigint): boolean {
  const known = byDev.get(dev);
  if (known !== undefined) return known;
  let trusted = false;
  if (process.platform === "linux" && hasMultigrainKernel()) {
    try {
      trusted = MULTIGRAIN_FS.has(Number(statfsSync(dir, { bigint: true }).type));
    } catch {
      // No statfs answer: no proof, so the reader hashes the bytes.
      trusted = false;
    }
  }
  byDev.set(dev, trusted);
  return trusted;
}

/**
 * Whether a later fstat's (ctime, size) equal to the one taken before a verified read proves
 * the bytes unchanged. A ctime with no nanoseconds suggests a second-granularity inode; it
 * proves nothing.
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
