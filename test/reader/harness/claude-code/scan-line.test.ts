import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isDeepStrictEqual } from "node:util";
import {
  type ClaudeLineFacts,
  type ClaudeRecordFacts,
  claudeFactsOf,
  scanClaudeLine,
  type ValueRange,
} from "../../../../src/reader/harness/claude-code/scan-line.ts";
import { withoutTape } from "../../../../src/reader/wasm/line-tokens.ts";
import { type ClaudeVersion, richClaudeSession } from "../../../helpers/claude-sessions.ts";
import {
  B,
  bytes,
  embed,
  genValue,
  int,
  mutate,
  pickOf,
  prng,
  type Rng,
  show,
} from "../json-lines.ts";

// The truth scanClaudeLine must match: the facts of what JSON.parse makes of the line.
function truth(buf: Buffer, start: number, end: number, withCwd: boolean): ClaudeLineFacts {
  let v: unknown;
  try {
    v = JSON.parse(buf.toString("utf8", start, end));
  } catch {
    return { json: false };
  }
  return claudeFactsOf(v, withCwd);
}

/** Checks one line at a random alignment, with and without its cwd; returns the truth. */
function check(line: Buffer, rng: Rng, what: string): ClaudeLineFacts {
  const { buf, start, end } = embed(rng, line);
  let want: ClaudeLineFacts = { json: false };
  // With the module's tape, and as the JavaScript loop alone (a Node without WebAssembly).
  for (const path of ["tape", "loop"] as const)
    for (const withCwd of [true, false]) {
      want = truth(buf, start, end, withCwd);
      let got: ClaudeLineFacts | string;
      const range: ValueRange = { start: -2, end: -2, agentId: false };
      const scan = () => scanClaudeLine(buf, start, end, withCwd, range);
      try {
        got = path === "tape" ? scan() : withoutTape(scan);
      } catch (e) {
        got = `threw ${String(e)}`;
      }
      if (typeof got === "string" || !isDeepStrictEqual(got, want)) {
        assert.fail(
          `${what} (${path}, cwd ${withCwd ? "wanted" : "not wanted"})\nline bytes: ${show(line)}\nscanClaudeLine: ${JSON.stringify(got)}\nJSON.parse: ${JSON.stringify(want)}`,
        );
      }
      const wrong = rangeError(line, range);
      if (wrong !== null)
        assert.fail(`${what} (${path}): toolUseResult range ${wrong}\nline bytes: ${show(line)}`);
    }
  return want;
}

/**
 * Null when `range` is where JSON.parse's `toolUseResult` came from: its bytes parse to that
 * value, and the line with them replaced by `null` parses to the record without it. A line
 * that is not a record, or a record without the key, has no range.
 */
function rangeError(line: Buffer, range: ValueRange): string | null {
  let v: unknown;
  try {
    v = JSON.parse(line.toString("utf8"));
  } catch {
    v = undefined;
  }
  const has =
    typeof v === "object" && v !== null && !Array.isArray(v) && Object.hasOwn(v, "toolUseResult");
  if (!has)
    return range.start === -1 && range.end === -1
      ? null
      : `${range.start}-${range.end} where there is none`;
  if (range.start < 0 || range.end <= range.start) return `${range.start}-${range.end}, not found`;
  const record = v as Record<string, unknown>;
  const tur = record.toolUseResult;
  const agentId =
    typeof tur === "object" &&
    tur !== null &&
    !Array.isArray(tur) &&
    typeof (tur as { agentId?: unknown }).agentId === "string";
  if (range.agentId !== agentId) return `says agentId ${range.agentId}, JSON.parse ${agentId}`;
  let value: unknown;
  let without: unknown;
  try {
    value = JSON.parse(line.toString("utf8", range.start, range.end));
    without = JSON.parse(
      line.toString("utf8", 0, range.start) + "null" + line.toString("utf8", range.end),
    );
  } catch (e) {
    return `${range.start}-${range.end} does not cut a value: ${String(e)}`;
  }
  if (!isDeepStrictEqual(value, record.toolUseResult))
    return `${range.start}-${range.end} is another value`;
  if (!isDeepStrictEqual(without, { ...record, toolUseResult: null })) {
    return `${range.start}-${range.end}: the line without it is another record`;
  }
  return null;
}

const NONE: Omit<ClaudeRecordFacts, "json" | "object"> = {
  type: null,
  uuid: null,
  parentUuid: null,
  logicalParentUuid: null,
  cwd: null,
  compactBoundary: false,
  isSidechain: false,
  isCompactSummary: false,
  isMeta: false,
  messageId: null,
  toolResult: false,
};
const rec = (f: Partial<ClaudeRecordFacts>): ClaudeLineFacts => ({
  json: true,
  object: true,
  ...NONE,
  ...f,
});
const NOT: ClaudeLineFacts = { json: false };
const SCALAR: ClaudeLineFacts = { json: true, object: false };

/** Claude's keys (some escaped), for duplicates added by mutations and random objects' keys. */
const CLAUDE_KEYS = [
  "type",
  "uuid",
  "parentUuid",
  "logicalParentUuid",
  "cwd",
  "subtype",
  "isSidechain",
  "isCompactSummary",
  "message",
  "id",
  "content",
  "u\\u0075id",
  "\\u0070arentUuid",
  "mess\\u0061ge",
  "uuids",
  "toolUseResult",
  "toolUse\\u0052esult",
  "agentId",
  "",
];
const DUP_KEYS = [
  '"uuid"',
  '"parentUuid"',
  '"type"',
  '"message"',
  '"isSidechain"',
  '"subtype"',
  '"cwd"',
  '"u\\u0075id"',
  '"logicalParentUuid"',
  '"isCompactSummary"',
  '"toolUseResult"',
];
const DUP_VALUES = [
  '"v"',
  '"a\\"b"',
  '"\\u0061bc"',
  "null",
  "true",
  "false",
  "1",
  "{}",
  "[]",
  '{"id":"m2","content":[{"type":"tool_result"}]}',
  '{"id":1}',
  '[{"type":"tool_result"}]',
  '"compact_boundary"',
  '"tool_result"',
  '{"agentId":"a1"}',
  '{"agent\\u0049d":"x","stdout":""}',
];

/** A duplicate of one of Claude's keys, at the top level or inside `message` / its first block. */
function addDuplicate(rng: Rng, line: Buffer): Buffer {
  const key = pickOf(rng, DUP_KEYS);
  const val = pickOf(rng, DUP_VALUES);
  const text = line.toString("latin1");
  const anchors = ['"message":{', '"content":[{', '"content":[', "{"];
  const anchor = pickOf(rng, anchors);
  const at = text.indexOf(anchor);
  if (at < 0 || rng() < 0.4) {
    const cut = Math.max(0, line.length - 1);
    return Buffer.concat([line.subarray(0, cut), B(`,${key}:${val}`), line.subarray(cut)]);
  }
  const after = at + anchor.length;
  return Buffer.concat([line.subarray(0, after), B(`${key}:${val},`), line.subarray(after)]);
}

/** Lines Claude Code writes, of every version the reader knows. */
function claudeLines(): Buffer[] {
  const versions: ClaudeVersion[] = ["2.1.328", "2.0.76", "1.0.128"];
  const out: Buffer[] = [];
  for (const v of versions) {
    const w = richClaudeSession("/work/app", v);
    w.compact("What happened so far.", w.leaf ?? undefined);
    w.interrupt("half a reply");
    w.apiError("API Error: 500");
    for (const line of w.text().split("\n")) if (line !== "") out.push(B(line));
  }
  return out;
}

/** Fuzz case counts; LINE_SCAN_CASES scales them, LINE_SCAN_SEED reseeds. */
const SCALE = Number(process.env.LINE_SCAN_CASES ?? 1);
const SEED = process.env.LINE_SCAN_SEED;

describe("claude-code/scan-line", () => {
  it("reads a record's fields when Claude Code wrote the line", () => {
    const line = B(
      JSON.stringify({
        parentUuid: "p-1",
        isSidechain: false,
        userType: "external",
        cwd: "/work/app",
        sessionId: "s",
        type: "assistant",
        message: {
          id: "msg_1",
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } }],
        },
        uuid: "u-1",
      }),
    );
    assert.deepEqual(
      scanClaudeLine(line, 0, line.length),
      rec({
        type: "assistant",
        uuid: "u-1",
        parentUuid: "p-1",
        cwd: "/work/app",
        messageId: "msg_1",
      }),
    );
    assert.deepEqual(
      scanClaudeLine(line, 0, line.length, false),
      rec({ type: "assistant", uuid: "u-1", parentUuid: "p-1", messageId: "msg_1" }),
    );
  });

  it("agrees with JSON.parse when given hand-written tricky lines", () => {
    const big = "x".repeat(3 * 1024 * 1024);
    const cases: [Buffer, ClaudeLineFacts][] = [
      // Not records.
      [B(""), NOT],
      [B("[]"), SCALAR],
      [B('"uuid"'), SCALAR],
      [B('[{"uuid":"u"}]'), SCALAR],
      [B('{"uuid":"u"'), NOT],
      [B('{"uuid":"u",}'), NOT],
      [bytes([0xef, 0xbb, 0xbf], '{"uuid":"u"}'), NOT],
      [B("{}"), rec({})],
      // toolUseResult: its range and whether it names an agentId (checked in \`check\`).
      [B('{"uuid":"u","toolUseResult":{"agentId":"a1"}}'), rec({ uuid: "u" })],
      [
        B('{"uuid":"u","toolUseResult":{"agent\\u0049d":"a1","x":[1,{"agentId":2}]}}'),
        rec({ uuid: "u" }),
      ],
      [
        B('{"toolUseResult":{"agentId":"a1"},"uuid":"u","toolUseResult":{"stdout":"é"}}'),
        rec({ uuid: "u" }),
      ],
      [
        B('{"toolUseResult":{"stdout":"x"},"uuid":"u","toolUseResult":{"agentId":"a"}}'),
        rec({ uuid: "u" }),
      ],
      [B('{"uuid":"u","toolUseResult":{"agentId":7}}'), rec({ uuid: "u" })],
      [B('{"uuid":"u","toolUseResult":{"r":{"agentId":"a"}}}'), rec({ uuid: "u" })],
      [B('{"uuid":"u","toolUseResult":"agentId","t":1}'), rec({ uuid: "u" })],
      [B('{"uuid":"u","toolUseResult":[{"agentId":"a"}]}'), rec({ uuid: "u" })],
      [B('{"uuid":"u","toolUseResult":{}}'), rec({ uuid: "u" })],
      [
        B('{"uuid":"u","toolUseResult":null,"x":{"toolUseResult":{"agentId":"a"}}}'),
        rec({ uuid: "u" }),
      ],
      // Escaped quotes and backslashes in values.
      [B('{"uuid":"a\\"b","parentUuid":"c\\\\"}'), rec({ uuid: 'a"b', parentUuid: "c\\" })],
      [B('{"uuid":"a\\"","type":"user"}'), rec({ uuid: 'a"', type: "user" })],
      [B('{"uuid":"a\\\\\\"\\\\"}'), rec({ uuid: 'a\\"\\' })],
      [B('{"uuid":"a\\"}'), NOT],
      // Keys inside strings, and inside other objects, are not fields.
      [B('{"text":"\\"uuid\\":\\"x\\"","type":"user"}'), rec({ type: "user" })],
      [B('{"text":"{\\"uuid\\":\\"x\\"}"}'), rec({})],
      [B('{"data":{"uuid":"x","type":"y","message":{"id":"m"}}}'), rec({})],
      [B('{"toolUseResult":{"parentUuid":"x"},"uuid":"u"}'), rec({ uuid: "u" })],
      [B('{"message":{"usage":{"id":"no"},"x":{"content":[{"type":"tool_result"}]}}}'), rec({})],
      [B('{"message":{"content":"[{\\"type\\":\\"tool_result\\"}]"}}'), rec({})],
      // Duplicate keys: the last wins, with what is inside it.
      [B('{"uuid":"a","uuid":"b"}'), rec({ uuid: "b" })],
      [B('{"uuid":"a","uuid":1}'), rec({})],
      [B('{"uuid":"a","uuid":""}'), rec({})],
      [B('{"uuid":1,"uuid":"a"}'), rec({ uuid: "a" })],
      [B('{"type":"user","type":null}'), rec({})],
      [B('{"isSidechain":true,"isSidechain":"true"}'), rec({})],
      [B('{"isSidechain":false,"isSidechain":true}'), rec({ isSidechain: true })],
      [B('{"message":{"id":"m1"},"message":{"role":"x"}}'), rec({})],
      [B('{"message":{"id":"m1"},"message":"text"}'), rec({})],
      [B('{"message":{"id":"m1"},"message":{"id":"m2"}}'), rec({ messageId: "m2" })],
      [B('{"message":{"id":"m1","id":{}}}'), rec({})],
      [B('{"message":{"content":[{"type":"tool_result"}],"content":[]}}'), rec({})],
      [B('{"message":{"content":[{"type":"tool_result"}],"content":"x"}}'), rec({})],
      [
        B('{"message":{"content":[{"type":"text"}],"content":[{"type":"tool_result"}]}}'),
        rec({ toolResult: true }),
      ],
      [B('{"message":{"content":[{"type":"tool_result","type":"text"}]}}'), rec({})],
      [
        B('{"message":{"content":[{"type":"text","type":"tool_result"}]}}'),
        rec({ toolResult: true }),
      ],
      [B('{"message":{"content":[{"type":"text"},{"type":"tool_result"}]}}'), rec({})],
      [B('{"message":{"content":[[{"type":"tool_result"}]]}}'), rec({})],
      [B('{"message":{"content":[{"type":"tool_resul"}]}}'), rec({})],
      [B('{"message":{"content":[{"type":"tool_result "}]}}'), rec({})],
      [B('{"message":{"content":[ {"type":"tool_result"} ]}}'), rec({ toolResult: true })],
      [B('{"message":[{"id":"m"}]}'), rec({})],
      [B('{"subtype":"compact_boundary","subtype":"x"}'), rec({})],
      [B('{"subtype":"x","subtype":"compact_boundary"}'), rec({ compactBoundary: true })],
      [B('{"subtype":true}'), rec({})],
      // Unicode escapes: in keys, in uuids, in the words compared.
      [B('{"u\\u0075id":"x"}'), rec({ uuid: "x" })],
      [B('{"\\u0075\\u0075\\u0069\\u0064":"x","uuid":"y"}'), rec({ uuid: "y" })],
      [B('{"uuid":"y","\\u0075uid":"x"}'), rec({ uuid: "x" })],
      [B('{"uuid":"\\u0061\\u0062"}'), rec({ uuid: "ab" })],
      [
        B('{"uuid":"\\uD83D\\uDE00","parentUuid":"\\ud800"}'),
        rec({ uuid: "😀", parentUuid: "\ud800" }),
      ],
      [B('{"uuid":"\\u0000"}'), rec({ uuid: "\u0000" })],
      [B('{"uuid":"\\u00zz"}'), NOT],
      [B('{"type":"\\u0075ser"}'), rec({ type: "user" })],
      [B('{"subtype":"compact\\u005fboundary"}'), rec({ compactBoundary: true })],
      [B('{"message":{"content":[{"type":"tool\\u005fresult"}]}}'), rec({ toolResult: true })],
      [B('{"mess\\u0061ge":{"\\u0069d":"m"}}'), rec({ messageId: "m" })],
      [B('{"isSide\\u0063hain":true}'), rec({ isSidechain: true })],
      [B('{"uuid ":"x","UUID":"y","uuid\\n":"z"}'), rec({})],
      // Same bytes after an escape: an id seen unescaped, then escaped, is still decoded.
      [B('{"uuid":"ab","parentUuid":"\\u0061b"}'), rec({ uuid: "ab", parentUuid: "ab" })],
      [bytes('{"uuid":"a', [0xff], '"}'), rec({ uuid: "a\ufffd" })],
      [bytes('{"uuid":"a', [0x01], '"}'), NOT],
      // Non-strings where a string is wanted.
      [B('{"uuid":["u"],"parentUuid":{"x":1},"type":7}'), rec({})],
      [B('{"cwd":1,"uuid":"u"}'), rec({ uuid: "u" })],
      [B('{"cwd":"","uuid":"u"}'), rec({ uuid: "u" })],
      [B('{"isCompactSummary":1}'), rec({})],
      [B('{"type":""}'), rec({ type: "" })],
      // Very long lines: a 3 MiB string before and after the fields.
      [B(`{"text":"${big}","uuid":"u","type":"user"}`), rec({ uuid: "u", type: "user" })],
      [
        B(`{"uuid":"u","message":{"content":[{"type":"tool_result","content":"${big}"}]}}`),
        rec({ uuid: "u", toolResult: true }),
      ],
      [B(`{"uuid":"${big}"}`), rec({ uuid: big })],
      [B(`{"text":"${big}`), NOT],
    ];
    const rng = prng(1);
    for (const [line, want] of cases) {
      assert.deepEqual(truth(line, 0, line.length, true), want, `truth of ${show(line)}`);
      for (let k = 0; k < 2; k++) check(line, rng, "hand-written case");
    }
  });

  it("matches JSON.parse when lines nest very deeply", () => {
    const rng = prng(2);
    const depth = 100_000;
    const lines = [
      B(`{"uuid":"u","x":${"[".repeat(depth)}${"]".repeat(depth)},"type":"t"}`),
      B(`{"message":${'{"message":'.repeat(depth)}1${"}".repeat(depth)},"uuid":"u"}`),
      B(`{"message":{"content":[${'{"content":['.repeat(depth)}${"]}".repeat(depth)}]}}`),
      B(`${'{"a":['.repeat(depth)}${"}]".repeat(depth)}`),
    ];
    for (const line of lines) check(line, rng, "deep nesting");
    // A shallow line after the deep ones still reads right.
    check(B('{"uuid":"after","type":"user"}'), rng, "after deep nesting");
  });

  it("matches JSON.parse when lines Claude Code writes are mutated at random", () => {
    const seed = Number(SEED ?? 20261202);
    const rng = prng(seed);
    const lines = claudeLines();
    let records = 0;
    let total = 0;
    const tally = (f: ClaudeLineFacts) => {
      total++;
      if (f.json && f.object && f.uuid !== null) records++;
    };
    try {
      for (const line of lines) tally(check(line, rng, `unmutated line (seed ${seed})`));
      for (let c = 0; c < 12_000 * SCALE; c++) {
        let m = pickOf(rng, lines);
        const n = 1 + int(rng, 3);
        for (let i = 0; i < n; i++) {
          m = rng() < 0.3 ? addDuplicate(rng, m) : mutate(rng, m, DUP_KEYS);
        }
        tally(check(m, rng, `mutated Claude line, case ${c} (seed ${seed})`));
      }
    } finally {
      process.stdout.write(
        `# claude scan-line: ${lines.length} lines, ${total} checked, ${records} records (seed ${seed})\n`,
      );
    }
    assert.ok(records > total / 10, "many mutated lines were still records");
  });

  it("matches JSON.parse when random JSON texts with Claude's keys are generated", () => {
    const seed = Number(SEED ?? 20261203);
    const rng = prng(seed);
    for (let c = 0; c < 8_000 * SCALE; c++) {
      let line: Buffer = Buffer.concat(genValue(rng, 0, true, CLAUDE_KEYS));
      if (rng() < 0.3) line = mutate(rng, line, DUP_KEYS);
      check(line, rng, `random JSON, case ${c} (seed ${seed})`);
    }
  });
});
