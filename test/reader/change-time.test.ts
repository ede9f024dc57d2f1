import assert from "node:assert/strict";
import { closeSync, constants, lstatSync, openSync, readFileSync, writeSync } from "node:fs";
import { describe, it } from "node:test";
import {
  hasMultigrainKernel,
  isUnchangedSince,
  trustsChangeTime,
} from "../../src/reader/change-time.ts";
import {
  expectOk,
  expectRefusal,
  header,
  idOf,
  project,
  readerFor,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";

/** Rewrites one byte in place: same length, same inode, no rename. */
function poke(file: string, at: number, byte: string): void {
  const fd = openSync(file, "r+");
  try {
    writeSync(fd, byte, at);
  } finally {
    closeSync(fd);
  }
}

describe("change time as proof of an untouched file", () => {
  it("knows which kernels have multigrain timestamps", () => {
    assert.equal(hasMultigrainKernel("6.12.9"), false);
    assert.equal(hasMultigrainKernel("6.13.0-rc1"), true);
    assert.equal(hasMultigrainKernel("6.18.44-fc-v669"), true);
    assert.equal(hasMultigrainKernel("7.0.1"), true);
    assert.equal(hasMultigrainKernel("5.15.0"), false);
    assert.equal(hasMultigrainKernel("weird"), false);
  });

  it("never trusts a change time without nanoseconds", () => {
    const s = { ctimeNs: 1_700_000_000_000_000_000n, size: 10 };
    assert.equal(isUnchangedSince(s, { ...s }), false);
    const t = { ctimeNs: 1_700_000_000_000_000_001n, size: 10 };
    assert.equal(isUnchangedSince(t, { ...t }), true);
    assert.equal(isUnchangedSince(t, { ...t, size: 11 }), false);
  });

  for (const racyWindowMs of [undefined, 0]) {
    const how =
      racyWindowMs === undefined
        ? "while racy (compared by bytes)"
        : "once settled (window 0: the change time alone)";
    it(`catches a same-length in-place rewrite made immediately after each page and each follow, ${how}`, (t) => {
      const p = project(tempDir(t));
      const lines: object[] = [header(p.projectRoot)];
      for (let i = 0; i < 250; i++) lines.push(user(`u${i}`, i ? `u${i - 1}` : null, `m${i % 10}`));
      const file = writeSession(p.sessionsDir, "s.jsonl", lines);
      const dirFd = openSync(p.sessionsDir, constants.O_RDONLY | constants.O_DIRECTORY);
      const trusted = trustsChangeTime(dirFd, lstatSync(p.sessionsDir, { bigint: true }).dev);
      closeSync(dirFd);
      t.diagnostic(`change time trusted on this host: ${trusted}`);
      const reader = readerFor(p, racyWindowMs === undefined ? {} : { racyWindowMs }).raw;
      const id = idOf(reader, "s.jsonl");
      const text = readFileSync(file, "utf8");
      const target = text.indexOf('"m0"') + 2;
      // Many rounds, so rewrites land within the same clock tick as the read before them.
      for (let round = 0; round < 300; round++) {
        const first = expectOk(reader.open({ conversation: id }));
        poke(file, target, round % 2 ? "0" : "Z");
        const cursor = first.cursor?.id ?? "";
        expectRefusal(reader.next({ cursor, conversation: id, branch: "main" }), "source-replaced");
      }
      for (let round = 0; round < 300; round++) {
        let r = expectOk(reader.open({ conversation: id }));
        while (r.cursor)
          r = expectOk(reader.next({ cursor: r.cursor.id, conversation: id, branch: "main" }));
        const follow = r.follow?.id ?? "";
        const quiet = expectOk(reader.next({ cursor: follow, conversation: id, branch: "main" }));
        poke(file, target, round % 2 ? "0" : "Z");
        const again = quiet.follow?.id ?? "";
        expectRefusal(
          reader.next({ cursor: again, conversation: id, branch: "main" }),
          "source-replaced",
        );
      }
    });
  }
});
