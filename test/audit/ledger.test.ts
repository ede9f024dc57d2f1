// The audit ledger: lines chained by digest, the head beside them, and a reading that finds a
// changed, removed, added or cut line wherever it is.
import assert from "node:assert/strict";
import {
  appendFileSync,
  chmodSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { AuditLedger, ledgerFiles } from "../../src/audit/ledger.ts";
import { GENESIS, type LedgerAction, lineDigest } from "../../src/audit/ledger-line.ts";
import { readLedger } from "../../src/audit/verify.ts";

const ID = "pi-0123456789abcdef0123456789abcdef01234567";

function tempDir(t: TestContext): string {
  const dir = mkdtempSync("/tmp/mc-audit-");
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "audit");
}

function action(op: string, actor = "alice", text?: string): LedgerAction {
  return {
    at: new Date().toISOString(),
    conversation: ID,
    actor,
    grant: "operator",
    delegatedBy: "local-operator",
    connection: "c-1",
    op,
    request: `r-${op}`,
    outcome: "admitted",
    input: text === undefined ? {} : { text },
    answer: {},
  };
}

function opened(dir: string): AuditLedger {
  const o = AuditLedger.open(dir, ID);
  if (!o.ok) assert.fail(o.message);
  return o.ledger;
}

/** A ledger of four acts; returns its files. */
function fourLines(dir: string) {
  const ledger = opened(dir);
  ledger.append(action("takeover"));
  ledger.append(action("prompt", "alice", "hello"));
  ledger.append(action("interrupt"));
  ledger.append(action("release"));
  return ledger.files;
}

function lines(file: string): string[] {
  return readFileSync(file, "utf8").split("\n").slice(0, -1);
}

describe("audit ledger", () => {
  it("chains each line to the one before it and verifies when nothing changed", (t) => {
    const dir = tempDir(t);
    const files = fourLines(dir);
    const text = lines(files.lines);
    assert.equal(text.length, 4);
    const parsed = text.map((l) => JSON.parse(l) as { seq: number; prev: string });
    assert.deepEqual(
      parsed.map((l) => l.seq),
      [1, 2, 3, 4],
    );
    assert.equal(parsed[0]?.prev, GENESIS);
    for (let i = 1; i < 4; i++) assert.equal(parsed[i]?.prev, lineDigest(text[i - 1] ?? ""));
    const reading = readLedger(files, ID);
    assert.ok(reading.found);
    assert.deepEqual(reading.problems, []);
    assert.equal(reading.lines[1]?.input.text, "hello");
    assert.equal(reading.end.digest, lineDigest(text[3] ?? ""));
    assert.equal(readFileSync(files.lines).length > 0, true);
  });

  it("goes on from the last line when opened again (a controller restarted)", (t) => {
    const dir = tempDir(t);
    const files = fourLines(dir);
    const again = opened(dir);
    assert.equal(again.head.seq, 4);
    again.append(action("takeover", "bob"));
    const reading = readLedger(files, ID);
    assert.ok(reading.found);
    assert.deepEqual(reading.problems, []);
    assert.equal(reading.lines[4]?.actor, "bob");
  });

  it("finds a changed line in the middle", (t) => {
    const files = fourLines(tempDir(t));
    const text = lines(files.lines);
    text[1] = (text[1] ?? "").replace('"hello"', '"rm -rf"');
    writeFileSync(files.lines, `${text.join("\n")}\n`);
    const reading = readLedger(files, ID);
    assert.ok(reading.found);
    assert.equal(reading.problems[0]?.line, 3);
    assert.match(reading.problems[0]?.message ?? "", /line 2 was changed/);
  });

  it("finds a removed line by its number and its chain", (t) => {
    const files = fourLines(tempDir(t));
    const text = lines(files.lines);
    text.splice(1, 1);
    writeFileSync(files.lines, `${text.join("\n")}\n`);
    const reading = readLedger(files, ID);
    assert.ok(reading.found);
    assert.match(reading.problems[0]?.message ?? "", /numbered 3: lines before it were removed/);
  });

  it("finds a changed last line and lines cut from the end through the head", (t) => {
    const dir = tempDir(t);
    const files = fourLines(dir);
    const text = lines(files.lines);
    const changed = [...text.slice(0, 3), (text[3] ?? "").replace("alice", "mallory")];
    writeFileSync(files.lines, `${changed.join("\n")}\n`);
    const a = readLedger(files, ID);
    assert.ok(a.found);
    assert.match(
      a.problems.map((p) => p.message).join("\n"),
      /last line \(4\) is not the one the head names/,
    );
    writeFileSync(files.lines, `${text.slice(0, 2).join("\n")}\n`);
    const b = readLedger(files, ID);
    assert.ok(b.found);
    assert.match(
      b.problems.map((p) => p.message).join("\n"),
      /head names line 4, but the ledger ends at line 2/,
    );
  });

  it("finds a line added by something other than the controller", (t) => {
    const files = fourLines(tempDir(t));
    const text = lines(files.lines);
    const forged = { ...JSON.parse(text[3] ?? "{}"), seq: 5, prev: lineDigest(text[3] ?? "") };
    appendFileSync(files.lines, `${JSON.stringify(forged)}\n`);
    const reading = readLedger(files, ID);
    assert.ok(reading.found);
    assert.match(reading.problems.map((p) => p.message).join("\n"), /goes on past line 4/);
  });

  it("refuses to append after an incomplete last line, saying what to run", (t) => {
    const dir = tempDir(t);
    const files = fourLines(dir);
    appendFileSync(files.lines, '{"v":1,"seq":5');
    const o = AuditLedger.open(dir, ID);
    assert.equal(o.ok, false);
    assert.match(o.ok ? "" : o.message, /incomplete line: run `conversation audit .* --verify`/);
  });

  it("refuses a ledger file that is a link or open to others", (t) => {
    const dir = tempDir(t);
    const files = fourLines(dir);
    chmodSync(files.lines, 0o644);
    const open = AuditLedger.open(dir, ID);
    assert.match(open.ok ? "" : open.message, /open to others/);
    chmodSync(files.lines, 0o600);
    rmSync(files.lines);
    symlinkSync("/etc/hostname", files.lines);
    const link = AuditLedger.open(dir, ID);
    assert.match(link.ok ? "" : link.message, /cannot be opened \(ELOOP\)/);
  });

  it("names no file for an id that is not a conversation id", () => {
    assert.throws(() => ledgerFiles("/tmp/x", "../etc"));
    const o = AuditLedger.open("/tmp/never-made", "../../etc/passwd");
    assert.equal(o.ok, false);
  });
});
