// The baselines the reader is measured against in the same run: the one-pass floor, and the bare
// prefix check a follow must do at least.
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import type { Snapshot } from "../../src/index.ts";

export type FloorResult = { lines: number; objects: number; digest: string };

/** The one-pass floor: read the file once, SHA-256 it, JSON.parse every line. */
export function floorPass(path: string): FloorResult {
  const buf = readFileSync(path);
  const digest = createHash("sha256").update(buf).digest("hex");
  let lines = 0;
  let objects = 0;
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    if (end > start) {
      const v: unknown = JSON.parse(buf.toString("utf8", start, end));
      lines++;
      if (typeof v === "object" && v !== null) objects++;
    }
    start = end + 1;
  }
  return { lines, objects, digest };
}

/** What a follow must do at least: read the pinned prefix and SHA-256 it. */
export function barePrefixCheck(path: string, snapshot: Snapshot): boolean {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.allocUnsafe(snapshot.bytes);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return createHash("sha256").update(buf.subarray(0, got)).digest("hex") === snapshot.digest;
  } finally {
    closeSync(fd);
  }
}
