import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { BOARD_REFUSAL_STATUS, REFUSAL_STATUS, statusOf } from "../../src/board/index.ts";
import { READER_REFUSAL_CODES } from "../../src/protocol/chat-01.ts";

const SRC = join(import.meta.dirname, "..", "..", "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const path = join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(d.name) ? [path] : [];
  });
}

/** Every `new Refusal(` in src/, with its first argument as written. */
function refusalSites(): { where: string; code: string | null; arg: string }[] {
  const sites: { where: string; code: string | null; arg: string }[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/\bnew\s+Refusal\s*\(\s*([^,)]*)/g)) {
      const arg = (m[1] ?? "").trim();
      const literal = /^["'`]([^"'`]*)["'`]$/.exec(arg);
      const line = text.slice(0, m.index).split("\n").length;
      sites.push({ where: `${relative(SRC, file)}:${line}`, code: literal?.[1] ?? null, arg });
    }
  }
  return sites;
}

describe("board REFUSAL_STATUS", () => {
  it("maps every reader refusal code to a 4xx status", () => {
    for (const code of READER_REFUSAL_CODES) {
      const status = REFUSAL_STATUS[code];
      assert.ok(Number.isInteger(status), `${code} has no status`);
      assert.ok(status >= 400 && status < 500, `${code} → ${status} is not a client refusal`);
    }
    assert.deepEqual(Object.keys(REFUSAL_STATUS).sort(), [...READER_REFUSAL_CODES].sort());
  });

  it("has a status for every code a `new Refusal(` in src/ can produce when scanned", () => {
    const sites = refusalSites();
    assert.ok(sites.length >= 20, `only ${sites.length} refusal sites found: the scan is broken`);
    const missing: string[] = [];
    for (const site of sites) {
      if (site.code === null) {
        // A variable code: the constructor takes a ReaderRefusalCode, so tsc proves it is one
        // of READER_REFUSAL_CODES, each checked above. Only the reader's own helpers do this.
        assert.match(site.where, /^reader\//, `${site.where} passes ${site.arg} to Refusal`);
        continue;
      }
      if (!Object.hasOwn(REFUSAL_STATUS, site.code)) missing.push(`${site.where} ${site.code}`);
    }
    assert.deepEqual(missing, [], "refusal codes without an HTTP status");
  });

  it("keeps the board's own codes apart from the reader's when both tables are read", () => {
    for (const code of Object.keys(BOARD_REFUSAL_STATUS)) {
      assert.ok(!Object.hasOwn(REFUSAL_STATUS, code), `${code} is in both tables`);
    }
    assert.equal(statusOf("source-replaced"), 409);
    assert.equal(statusOf("misdirected-request"), 421);
    assert.throws(() => statusOf("no-such-code"), /No HTTP status/);
  });
});
