import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PACKAGE_ROOT } from "../../src/control/engine/package-files.ts";
import {
  BUNDLE_CHUNK,
  checkPromptText,
  LATER_LINE_SLASH_INTERPRETED,
  LATER_LINE_SOURCES,
  MAX_PROMPT_CHARS,
  PREFIXES,
  RPC_PROMPT_PATH,
  type SourceLine,
  WHITESPACE_SOURCES,
} from "../../src/control/engine/pi/text-policy.ts";

const files = new Map<string, string>();
function pinned(file: string): string {
  let text = files.get(file);
  if (text === undefined) {
    text = readFileSync(join(PACKAGE_ROOT, "node_modules", file), "utf8");
    files.set(file, text);
  }
  return text;
}

function assertCited(s: SourceLine): void {
  const line = pinned(s.file).split("\n")[s.line - 1];
  assert.ok(
    line?.includes(s.snippet),
    `${s.file}:${s.line} no longer contains ${JSON.stringify(s.snippet)} (${s.shows}); found ${JSON.stringify(line)}`,
  );
}

function refused(text: unknown, code: "text-policy" | "draft"): void {
  const r = checkPromptText(text);
  assert.equal(r.ok, false, `${JSON.stringify(text)} should be refused`);
  assert.ok(!r.ok);
  assert.equal(r.code, code, JSON.stringify(text));
  assert.ok(r.message.length > 0);
}

function admitted(text: string): void {
  assert.deepEqual(checkPromptText(text), { ok: true, text }, JSON.stringify(text));
}

const LEADING = [
  "",
  " ",
  "   ",
  "\t",
  "\t \t",
  "\n",
  "\r\n",
  "\n\n  \t",
  "\u00a0",
  "\ufeff",
  "\u2028",
];

describe("text-policy", () => {
  it("S1: refuses text-policy when slash text starts at 0 or after spaces, tabs or newlines", () => {
    for (const lead of LEADING) {
      for (const body of ["/", "/llama", "/skill:x", "/review do it", "//comment", "/ spaced"]) {
        refused(`${lead}${body}`, "text-policy");
      }
    }
  });

  it("S2: refuses every interpreted prefix and admits every other one in PREFIXES", () => {
    assert.ok(PREFIXES.some((p) => p.interpretedOnRpcPrompt));
    assert.ok(PREFIXES.some((p) => !p.interpretedOnRpcPrompt));
    for (const entry of PREFIXES) {
      assert.ok(entry.example.startsWith(entry.prefix), entry.feature);
      for (const text of [entry.example, entry.prefix, `${entry.prefix}x`]) {
        for (const lead of LEADING) {
          if (entry.interpretedOnRpcPrompt) refused(`${lead}${text}`, "text-policy");
          else admitted(`${lead}${text}`);
        }
      }
    }
  });

  it("S3: admits a slash on a later line, which Pi does not interpret", () => {
    assert.equal(LATER_LINE_SLASH_INTERPRETED, false);
    admitted("hello\n/llama");
    admitted("explain this:\n/skill:review\n/review");
    admitted("a\r\n  /x");
    admitted("path a/b and /etc/hosts");
    admitted("!!\n/llama");
  });

  it("admits other text unchanged, including invisible non-whitespace before a slash", () => {
    admitted("hello");
    admitted("  hello  ");
    admitted("\u200b/llama");
    admitted("\\/llama");
    admitted("\uff0fllama");
  });

  it("refuses draft for missing, non-string, empty or whitespace-only text", () => {
    for (const v of [undefined, null, 0, 1, true, {}, [], ["/x"], Symbol("s")]) refused(v, "draft");
    for (const v of ["", " ", "\t\n", "\r\n", "\u00a0\u2028"]) refused(v, "draft");
  });

  it("refuses draft past 262,144 code units and admits exactly the limit", () => {
    assert.equal(MAX_PROMPT_CHARS, 262_144);
    admitted("x".repeat(MAX_PROMPT_CHARS));
    refused("x".repeat(MAX_PROMPT_CHARS + 1), "draft");
    // A code point outside the BMP is two code units: the limit counts units.
    admitted("\u{1f600}".repeat(MAX_PROMPT_CHARS / 2));
    refused(`${"\u{1f600}".repeat(MAX_PROMPT_CHARS / 2)}x`, "draft");
    // Length is checked before the slash: an oversize slash text is a draft problem.
    refused(`/${"x".repeat(MAX_PROMPT_CHARS)}`, "draft");
  });

  it("cites lines that still hold in pinned Pi, so a Pi change shows", () => {
    const cited = [
      ...RPC_PROMPT_PATH,
      ...LATER_LINE_SOURCES,
      ...WHITESPACE_SOURCES,
      ...PREFIXES.flatMap((p) => p.sources),
    ];
    assert.ok(cited.length >= 15);
    for (const s of cited) assertCited(s);
  });

  it("finds no check for an admitted prefix on the RPC prompt path", () => {
    for (const entry of PREFIXES) {
      if (entry.interpretedOnRpcPrompt) {
        assert.deepEqual(entry.absentFrom, [], entry.feature);
        continue;
      }
      assert.ok(entry.absentFrom.length > 0, entry.feature);
      for (const a of entry.absentFrom) {
        assert.ok(!pinned(a.file).includes(a.snippet), `${a.file} now contains ${a.snippet}`);
      }
    }
  });

  it("finds each interpreted prefix's check in the bundle the engine runs", () => {
    const cli = pinned("@earendil-works/pi-coding-agent/dist/bundle/cli.js");
    assert.ok(cli.includes(`./chunks/${BUNDLE_CHUNK.split("/").pop()}`), "cli.js loads the chunk");
    const chunk = pinned(BUNDLE_CHUNK);
    for (const snippet of [
      'case"prompt":{let preflightSucceeded=!1;session.prompt(command.message,',
      ...PREFIXES.flatMap((p) => p.bundle),
    ]) {
      assert.ok(chunk.includes(snippet), `bundle no longer contains ${snippet}`);
    }
    for (const entry of PREFIXES) {
      if (entry.interpretedOnRpcPrompt) assert.ok(entry.bundle.length > 0, entry.feature);
    }
  });
});
