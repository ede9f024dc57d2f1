// The one-pass floor of the benches that read whole session files (search, usage): read each
// file, hash it (SHA-256) and JSON.parse every line, the least any reader of every byte does.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/** Reads, hashes and parses `path`; returns how many lines it parsed. */
export function floorPass(path: string): number {
  const buf = readFileSync(path);
  createHash("sha256").update(buf).digest("hex");
  let lines = 0;
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    if (end > start) {
      JSON.parse(buf.toString("utf8", start, end));
      lines++;
    }
    start = end + 1;
  }
  return lines;
}
