import assert, { AssertionError } from "node:assert/strict";
import { describe, it } from "node:test";
import schema from "../../schema/chat-01.schema.json" with { type: "json" };
import {
  type Block,
  type Catalogue,
  type CatalogueRow,
  type Cursor,
  ID_PATTERN,
  LIMITS,
  type Page,
  type Part,
  READER_REFUSAL_CODES,
  type RefusedRoot,
  toChatId,
  type View,
} from "../../src/protocol/chat-01.ts";
import {
  assertReadResult,
  assertValid,
  compileAll,
  findProblems,
  isValid,
  type ReadResult,
} from "../helpers/schema.ts";

const digest = "0123456789abcdef".repeat(4);
const snapshot = { bytes: 4096, digest };

const blocks: Block[] = [
  { type: "text", text: "hello" },
  { type: "thinking", text: "let me see" },
  { type: "unavailable", of: "thinking", text: "" },
  { type: "tool-call", id: "toolu_01", name: "read", text: '{"path":"a.ts"}' },
  { type: "tool-result", toolCallId: "toolu_01", toolName: "read", isError: false },
  { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
  { type: "bash-command", text: "ls -la" },
  { type: "bash-output", text: "total 0\n" },
  { type: "notice", code: "malformed-line", text: "line 7 is not JSON" },
];

function part(
  entry: string,
  n: number,
  partBlocks: Block[] = [{ type: "text", text: "hi" }],
): Part {
  return {
    id: `${entry}.${n}`,
    entry,
    kind: "message",
    role: "user",
    timestamp: "2025-01-02T03:04:05.678Z",
    ...(n > 0 ? { continues: true } : {}),
    blocks: partBlocks,
  };
}

function page(parts: Part[], nextCursor: string | null = null): Page {
  return {
    conversation: "pi-3f2a9c",
    branch: "main",
    parts,
    nextCursor,
    snapshot,
    sourceEpoch: "e-5b1c",
  };
}

function cursor(kind: "page" | "follow", id = "c-1"): Cursor {
  return {
    id,
    kind,
    actor: "local-operator",
    purpose: "history",
    conversation: "pi-3f2a9c",
    branch: "main",
    snapshot,
    sourceEpoch: "e-5b1c",
    expiresAt: "2025-01-02T03:14:05.678Z",
  };
}

const view: View = {
  defaultBranch: "main",
  defaultLeaf: "n.a1b2c3d4",
  branches: [
    { name: "main", leaf: "n.a1b2c3d4", start: "n.0f0f0f0f", forksFrom: null, depth: 3 },
    {
      name: "b.c3d4e5f6",
      leaf: "n.c3d4e5f6",
      start: "n.c3d4e5f6",
      forksFrom: { branch: "main", entry: "n.0f0f0f0f" },
      depth: 2,
    },
  ],
  incomplete: false,
  forkedFromEarlierSession: false,
  unreadableLines: 0,
};

const row: CatalogueRow = {
  conversation: "pi-3f2a9c",
  project: "mosaic",
  seat: "dewey",
  fileName: "2025-01-02T03-04-05-678Z_0a1b.jsonl",
  sessionId: "0a1b2c3d-0000-4000-8000-000000000000",
  createdAt: "2025-01-02T03:04:05.678Z",
  size: 4096,
  modifiedAt: "2025-01-02T03:05:00.000Z",
  engineStartedAt: null,
  title: "Fix the parser",
  unsupportedReason: null,
  harness: "pi",
};
const unsupportedRow: CatalogueRow = {
  ...row,
  conversation: "pi-77aa",
  seat: "rocko",
  fileName: null,
  sessionId: null,
  createdAt: null,
  size: null,
  modifiedAt: null,
  title: null,
  unsupportedReason: "unsupported-harness",
  harness: "claude-code",
};
const refusedRoot: RefusedRoot = {
  project: "mosaic",
  seat: "ghost",
  code: "unreadable",
  message: "permission denied",
};
const catalogue: Catalogue = {
  ok: true,
  conversations: [row, unsupportedRow],
  refusedRoots: [refusedRoot],
  generatedAt: "2025-01-02T03:05:01+01:00",
};

const firstPage = page(
  blocks.map((block, i) => part(`n.e${i}`, 0, [block])),
  "c-1",
);
const okWithCursor: ReadResult = {
  ok: true,
  page: firstPage,
  cursor: cursor("page"),
  follow: null,
  view,
};
const okWithFollow: ReadResult = {
  ok: true,
  page: page([part("n.a1b2c3d4", 0)]),
  cursor: null,
  follow: cursor("follow", "f-1"),
  view,
};
const refused: ReadResult = {
  ok: false,
  refusal: { code: "cursor-expired", reconcile: true, message: "the cursor expired" },
};

/** Asserts value is not a valid def, and that one of the problems matches why. */
function refuses(def: Parameters<typeof findProblems>[0], value: unknown, why: RegExp): void {
  const problems = findProblems(def, value);
  assert.ok(
    problems.some((p) => why.test(p)),
    `expected a problem matching ${why}, got:\n  ${problems.join("\n  ") || "(none)"}`,
  );
  assert.equal(isValid(def, value), false);
}

describe("chat-01 schema", () => {
  it("compiles every $def when Ajv runs in strict mode", () => {
    assert.ok(compileAll().length > 20);
  });

  it("accepts every block type when it is well formed", () => {
    for (const block of blocks) assertValid("block", block);
    assertValid("block", { type: "text", text: "ab", fragment: { index: 1, count: 2 } });
  });

  it("accepts every record when it is built by hand to the contract", () => {
    assertValid("snapshot", snapshot);
    assertValid("part", firstPage.parts[0]);
    assertValid("part", {
      ...part("x.notice-7", 0, [{ type: "notice", code: "missing-parent", text: "gap" }]),
      kind: "notice",
      meta: { line: 7 },
    });
    assertValid("part", {
      ...part("n.b2c3d4e5", 1),
      kind: "bash-execution",
      meta: { exitCode: null, cancelled: true, truncated: false },
    });
    assertValid("part", {
      ...part("n.c3d4e5f6", 0),
      kind: "compaction",
      meta: { tokensBefore: 50_000, firstKeptEntry: "n.a1b2c3d4" },
    });
    assertValid("part", {
      ...part("n.d4e5f6a7", 0),
      kind: "branch-summary",
      meta: { fromEntry: "root" },
    });
    assertValid("part", {
      ...part("n.e5f6a7b8", 0),
      kind: "custom-message",
      meta: { customType: "my-extension" },
    });
    assertValid("part", {
      ...part("n.f6a7b8c9", 0),
      role: "assistant",
      meta: { stopReason: "stop" },
    });
    assertValid("page", firstPage);
    assertValid("page", page([]));
    assertValid("cursor", cursor("page"));
    assertValid("cursor", cursor("follow"));
    assertValid("refusal", { code: "unsealed-engine", reconcile: false, message: "no" });
    assertValid("view", view);
    assertValid("catalogueRow", row);
    assertValid("catalogueRow", unsupportedRow);
    assertValid("refusedRoot", refusedRoot);
    assertValid("catalogue", catalogue);
    assertReadResult(okWithCursor);
    assertReadResult(okWithFollow);
    assertReadResult(refused);
  });

  it("accepts the limits when a record sits exactly on them", () => {
    assertValid("page", page(Array.from({ length: 100 }, (_, i) => part(`n.e${i}`, 0))));
    assertValid(
      "part",
      part(
        "n.e",
        0,
        Array.from({ length: 64 }, () => blocks[0]!),
      ),
    );
    assertValid("block", { type: "text", text: "a".repeat(LIMITS.stringChars) });
  });

  it("refuses a page when it has 101 parts", () => {
    const parts = Array.from({ length: 101 }, (_, i) => part(`n.e${i}`, 0));
    refuses("page", page(parts), /^\/parts must NOT have more than 100 items/);
  });

  it("refuses a part when it has 65 blocks, and accepts one with none (a message without content)", () => {
    refuses("part", part("n.e", 0, Array(65).fill(blocks[0])), /^\/blocks .*more than 64/);
    assert.ok(isValid("part", part("n.e", 0, [])));
  });

  it("refuses a string when it is 262145 characters long", () => {
    const long = "a".repeat(262_145);
    refuses("block", { type: "text", text: long }, /^\/text .*more than 262144/);
    refuses("block", { type: "image", mimeType: "x", data: long }, /^\/data .*more than 262144/);
    refuses("block", { type: "tool-call", id: "t", name: "n", text: long }, /^\/text /);
  });

  it("refuses a string when it is over the limit in UTF-16 units only", () => {
    const text = "😀".repeat(131_073);
    assert.ok(text.length > LIMITS.stringChars && [...text].length <= LIMITS.stringChars);
    refuses("block", { type: "text", text }, /262146 UTF-16 units/);
  });

  it("refuses a block when its type is unknown or its fields are wrong", () => {
    refuses("block", { type: "video", text: "x" }, /^\/type .*allowed values/);
    refuses("block", { type: "unavailable", of: "thinking", text: "leak" }, /^\/text .*constant/);
    refuses("block", { type: "notice", code: "other", text: "x" }, /^\/code .*allowed values/);
    refuses("block", { type: "tool-result", toolCallId: "t", toolName: "n" }, /isError/);
  });

  it("refuses a record when it has an extra property", () => {
    const extra = /additional properties .*"extra"/;
    refuses("block", { type: "text", text: "x", extra: 1 }, extra);
    refuses("part", { ...part("n.a", 0), extra: 1 }, extra);
    refuses("page", { ...firstPage, extra: true }, extra);
    refuses("cursor", { ...cursor("page"), extra: true }, extra);
    refuses("refusal", { code: "x", reconcile: false, message: "", extra: 1 }, extra);
    refuses("view", { ...view, extra: true }, extra);
    refuses("catalogueRow", { ...row, extra: true }, extra);
    refuses("catalogue", { ...catalogue, extra: true }, extra);
    refuses("readResult", { ...refused, extra: true }, extra);
    refuses("readResult", { ...okWithFollow, extra: true }, extra);
  });

  it("refuses an id when it does not fit the pattern", () => {
    for (const id of ["call_x|fc_y", "", "-lead", "a b", "x".repeat(201), "é"]) {
      refuses("id", id, /must match pattern/);
    }
    const call = { type: "tool-call", id: "call_x|fc_y", name: "read", text: "{}" };
    refuses("block", call, /^\/id must match pattern/);
    refuses("part", part("n.a|b", 0), /^\/entry must match pattern/);
    refuses("page", { ...firstPage, conversation: "call_x|fc_y" }, /^\/conversation /);
  });

  it("refuses a snapshot when its digest is not 64 lowercase hex", () => {
    for (const bad of [digest.toUpperCase(), digest.slice(1), `${digest}0`, "z".repeat(64)]) {
      refuses("snapshot", { bytes: 1, digest: bad }, /^\/digest must match pattern/);
    }
  });

  it("refuses a cursor when its kind is other or its expiry is not a date-time", () => {
    refuses("cursor", { ...cursor("page"), kind: "other" }, /^\/kind .*allowed values/);
    refuses("cursor", { ...cursor("page"), expiresAt: "tomorrow" }, /^\/expiresAt must match/);
  });

  it("refuses a read result when cursor and follow are both null or both set", () => {
    const oneOf = /must match exactly one schema in oneOf/;
    refuses("readResult", { ...okWithFollow, follow: null }, oneOf);
    refuses("readResult", { ...okWithCursor, follow: cursor("follow") }, oneOf);
    refuses("readResult", { ...okWithCursor, cursor: cursor("follow") }, /^\/cursor\/kind/);
  });

  it("refuses a read result when the page and its cursor disagree", () => {
    const wrongNext = { ...okWithCursor, page: { ...firstPage, nextCursor: "c-2" } };
    refuses("readResult", wrongNext, /nextCursor must be cursor.id/);
    const followOnMore = { ...okWithFollow, page: { ...okWithFollow.page, nextCursor: "c-9" } };
    refuses("readResult", followOnMore, /nextCursor must be null/);
    const otherBranch = { ...cursor("follow", "f-1"), branch: "b.c3d4e5f6" };
    refuses("readResult", { ...okWithFollow, follow: otherBranch }, /^\/follow\/branch differs/);
    const unknownBranch = { ...okWithFollow, view: { ...view, defaultBranch: "b.gone" } };
    refuses("readResult", unknownBranch, /defaultBranch b.gone is not in branches/);
  });

  it("refuses a refusal when reconcile contradicts the reader's table", () => {
    const cases = [
      ["cursor-expired", false],
      ["unknown-branch", false],
      ["unsafe-path", true],
      ["incomplete-header", false],
      ["not-a-pi-session", true],
    ] as const;
    for (const [code, reconcile] of cases) {
      const result = { ok: false, refusal: { code, reconcile, message: "" } };
      refuses("readResult", result, /^\/refusal\/reconcile must be equal to constant/);
    }
    const invented = { ok: false, refusal: { code: "nope", reconcile: true, message: "" } };
    refuses("readResult", invented, /^\/refusal\/code .*allowed values/);
    refuses("refusal", { code: "Not_Kebab", reconcile: true, message: "" }, /^\/code must match/);
  });

  it("refuses a part when its id, continues or fragments are inconsistent", () => {
    refuses("part", { ...part("n.a", 0), id: "n.b.0" }, /is not <entry>.<n>/);
    refuses("part", { ...part("n.a", 1), continues: false }, /continues must be true/);
    refuses("part", { ...part("n.a", 0), continues: true }, /continues must be true/);
    const overIndex = { type: "text", text: "x", fragment: { index: 2, count: 2 } };
    refuses("block", overIndex, /index 2 >= count 2/);
    refuses("fragment", { index: 0, count: 1 }, /^\/count /);
    const gap: Block[] = [
      { type: "text", text: "a", fragment: { index: 0, count: 3 } },
      { type: "text", text: "c", fragment: { index: 2, count: 3 } },
    ];
    refuses("page", page([part("n.a", 0, gap)]), /must be fragment 1 of 3/);
    const mixed: Block[] = [
      { type: "text", text: "a", fragment: { index: 0, count: 2 } },
      { type: "thinking", text: "b", fragment: { index: 1, count: 2 } },
    ];
    refuses("page", page([part("n.a", 0, mixed)]), /does not follow fragment 0/);
    const cutPair: Block[] = [
      { type: "text", text: "a\ud83d", fragment: { index: 0, count: 2 } },
      { type: "text", text: "\ude00b", fragment: { index: 1, count: 2 } },
    ];
    refuses("page", page([part("n.a", 0, cutPair)]), /cuts a surrogate pair/);
    refuses("page", page([part("n.a", 0), part("n.a", 0)]), /repeats part id n.a.0/);
  });

  it("accepts fragments when a run spans parts of one entry or the page's edges", () => {
    const whole: Block[] = [
      { type: "text", text: "a😀", fragment: { index: 0, count: 2 } },
      { type: "text", text: "b", fragment: { index: 1, count: 2 } },
    ];
    assertValid("page", page([part("n.a", 0, whole)]));
    const head = part("n.a", 0, [{ type: "text", text: "a", fragment: { index: 0, count: 3 } }]);
    const tail = part("n.a", 1, [{ type: "text", text: "b", fragment: { index: 1, count: 3 } }]);
    assertValid("page", page([head, tail]));
    const rest = part("n.a", 2, [{ type: "text", text: "c", fragment: { index: 2, count: 3 } }]);
    assertValid("page", page([rest, part("n.b", 0)]));
  });

  it("throws a readable AssertionError when a value is invalid", () => {
    assert.throws(
      () => assertValid("cursor", { ...cursor("page"), kind: "other" }),
      (error: unknown) =>
        error instanceof AssertionError &&
        error.message.includes("not a valid chat-01 cursor") &&
        error.message.includes("/kind"),
    );
  });

  it("matches chat-01.ts when its constants change", () => {
    const defs = schema.$defs;
    assert.equal(defs.id.pattern, ID_PATTERN.source);
    assert.deepEqual(defs.readerRefusalCode.enum, [...READER_REFUSAL_CODES]);
    assert.equal(defs.page.properties.parts.maxItems, LIMITS.partsPerPage);
    assert.equal(defs.part.properties.blocks.maxItems, LIMITS.blocksPerPart);
    assert.equal(defs.body.maxLength, LIMITS.stringChars);
    assert.equal(defs.string.maxLength, LIMITS.stringChars);
    assert.equal(defs.snapshot.properties.bytes.maximum, LIMITS.fileBytes);
  });
});

describe("toChatId", () => {
  const natives = {
    "a Pi 8-hex id": "a1b2c3d4",
    "a UUID": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    "an OpenAI call id": "call_abc|fc_def",
    "a 300-character id": "a".repeat(300),
    "an empty string": "",
    "a unicode id": "ツール-😀",
  };

  for (const [what, native] of Object.entries(natives)) {
    it(`returns an id the schema accepts when given ${what}`, () => {
      const id = toChatId(native);
      assertValid("id", id);
      assert.equal(toChatId(native), id);
      if (ID_PATTERN.test(native) && native.length <= 128) assert.equal(id, native);
      else assert.match(id, /^h-[0-9a-f]{40}$/);
      assertValid("entry", `n.${id}`);
    });
  }
});
