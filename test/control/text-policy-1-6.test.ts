// The text policy's prefix table checked against Pi 1.6.0's sources (issue 16): every cited
// snippet of 0.85.1 (text-policy.ts, read back line by line by text-policy.test.ts) is still in
// the same 1.6.0 file, every "absent from the prompt path" check still holds, every bundle
// snippet is in 1.6.0's bundle, and 1.6.0's prompt path tests no prefix the table lacks. Line
// numbers moved between versions, so snippets are matched in the whole file.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PACKAGE_ROOT } from "../../src/control/engine/package-files.ts";
import { PI_PINS } from "../../src/control/engine/pi/pi-pin.ts";
import {
  LATER_LINE_SOURCES,
  PREFIXES,
  RPC_PROMPT_PATH,
  type SourceLine,
  WHITESPACE_SOURCES,
} from "../../src/control/engine/pi/text-policy.ts";

const PI = "@earendil-works/pi-coding-agent/";
const DIR = join(PACKAGE_ROOT, "node_modules", PI_PINS["1.6.0"].dir);

/** The 1.6.0 file a 0.85.1 citation names: Pi's own files under the alias, a dependency as
 * 1.6.0 resolves it (its nested copy first). */
function in160(file: string): string {
  if (file.startsWith(PI)) return readFileSync(join(DIR, file.slice(PI.length)), "utf8");
  const nested = join(DIR, "node_modules", file);
  return readFileSync(
    existsSync(nested) ? nested : join(PACKAGE_ROOT, "node_modules", file),
    "utf8",
  );
}

function bundle(): string {
  const dir = join(DIR, "dist", "bundle", "chunks");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".js"))
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .join("\n");
}

const cited: SourceLine[] = [
  ...RPC_PROMPT_PATH,
  ...PREFIXES.flatMap((p) => p.sources),
  ...LATER_LINE_SOURCES,
  ...WHITESPACE_SOURCES,
];

describe("the text policy against Pi 1.6.0's sources", () => {
  it("finds every cited snippet in the same 1.6.0 file", () => {
    const missing = cited.filter((s) => !in160(s.file).includes(s.snippet));
    assert.deepEqual(
      missing.map((s) => `${s.file}: ${s.snippet} (${s.shows})`),
      [],
    );
  });

  it("keeps every admitted prefix absent from 1.6.0's prompt path", () => {
    for (const p of PREFIXES) {
      for (const a of p.absentFrom) {
        assert.ok(!in160(a.file).includes(a.snippet), `${p.prefix}: ${a.file} has ${a.snippet}`);
      }
    }
  });

  it("finds every bundle snippet in 1.6.0's bundle", () => {
    const text = bundle();
    for (const p of PREFIXES) {
      for (const b of p.bundle) assert.ok(text.includes(b), `${p.prefix}: ${b}`);
    }
  });

  it("1.6.0's prompt path tests no prefix the table lacks", () => {
    const known = new Set(PREFIXES.map((p) => p.prefix));
    const files = ["core/agent-session.js", "core/prompt-templates.js", "modes/rpc/rpc-mode.js"];
    const found = new Set<string>();
    for (const f of files) {
      const src = in160(`${PI}dist/${f}`);
      for (const m of src.matchAll(/\btext\.startsWith\("([^"]+)"\)/g)) found.add(m[1] as string);
    }
    assert.ok(found.has("/"), "the scan sees the slash prefix");
    assert.deepEqual(
      [...found].filter((p) => !known.has(p)),
      [],
    );
  });
});
