import assert, { AssertionError } from "node:assert/strict";
import { describe, it } from "node:test";
import schema from "../../schema/chat-01.schema.json" with { type: "json" };
import { parseControllerMessage } from "../../src/control/client/controller-message.ts";
import {
  OPERATIONS,
  PROTOCOL_VERSION,
  parseClientMessage,
  RECEIPT_REASONS,
} from "../../src/control/protocol.ts";
import { CONTROL_REFUSAL_CODES } from "../../src/control/refusal.ts";
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
    {
      name: "main",
      leaf: "n.a1b2c3d4",
      start: "n.0f0f0f0f",
      forksFrom: null,
      depth: 3,
      label: "Fix the parser",
    },
    {
      name: "b.c3d4e5f6",
      leaf: "n.c3d4e5f6",
      start: "n.c3d4e5f6",
      forksFrom: { branch: "main", entry: "n.0f0f0f0f" },
      label: null,
      depth: 2,
    },
  ],
  branchCount: 2,
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
  preview: "Fix the parser: a missing start reads as 0",
  messageCount: 12,
  model: "claude-sonnet-4-5",
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

describe("chat-01 wire messages", () => {
  const req = (op: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ type: "request", id: "r-1", op, ...extra });
  const draft = { id: "d-1", revision: 0 };
  // [what, line, parseClientMessage accepts it]
  const lines: [string, string, boolean][] = [
    ["a hello", '{"type":"hello","protocol":2,"grant":"g-op"}', true],
    ["a hello naming its client", '{"type":"hello","protocol":2,"grant":"g","client":"cli"}', true],
    ["a hello with an empty client", '{"type":"hello","protocol":2,"grant":"g","client":""}', true],
    [
      "a hello with a 200-unit client",
      JSON.stringify({ type: "hello", protocol: 2, grant: "g", client: "é".repeat(200) }),
      true,
    ],
    [
      "a hello with a 201-unit client",
      JSON.stringify({ type: "hello", protocol: 2, grant: "g", client: "x".repeat(201) }),
      false,
    ],
    [
      "a hello with a client over 200 UTF-16 units only",
      JSON.stringify({ type: "hello", protocol: 2, grant: "g", client: "😀".repeat(101) }),
      false,
    ],
    ["a hello for protocol 1", '{"type":"hello","protocol":1,"grant":"g"}', false],
    ['a hello with protocol "2"', '{"type":"hello","protocol":"2","grant":"g"}', false],
    ["a hello without a grant", '{"type":"hello","protocol":2}', false],
    ["a hello with a bad grant id", '{"type":"hello","protocol":2,"grant":"-g"}', false],
    ["a hello with an unknown field", '{"type":"hello","protocol":2,"grant":"g","x":1}', false],
    [
      "a hello with a non-string client",
      '{"type":"hello","protocol":2,"grant":"g","client":7}',
      false,
    ],
    ["an observe", req("observe"), true],
    ["an observe with limit and cursor", req("observe", { limit: 100, cursor: "c-1" }), true],
    ["an observe with limit 1", req("observe", { limit: 1 }), true],
    ["an observe with limit 0", req("observe", { limit: 0 }), false],
    ["an observe with limit 101", req("observe", { limit: 101 }), false],
    ["an observe with limit 1.5", req("observe", { limit: 1.5 }), false],
    ['an observe with limit "5"', req("observe", { limit: "5" }), false],
    ["an observe with an empty cursor", req("observe", { cursor: "" }), false],
    ["an observe with a 512-unit cursor", req("observe", { cursor: "c".repeat(512) }), true],
    ["an observe with a 513-unit cursor", req("observe", { cursor: "c".repeat(513) }), false],
    [
      "an observe with a cursor over 512 UTF-16 units only",
      req("observe", { cursor: "😀".repeat(257) }),
      false,
    ],
    ["a takeover", req("takeover", { generation: 1, incarnation: "i-1" }), true],
    ["a takeover at generation 0", req("takeover", { generation: 0 }), true],
    ["a takeover at generation -1", req("takeover", { generation: -1 }), false],
    ["a takeover at generation 1.5", req("takeover", { generation: 1.5 }), false],
    ["a takeover at an unsafe generation", req("takeover", { generation: 2 ** 53 }), false],
    ["a takeover with a null generation", req("takeover", { generation: null }), false],
    ["a takeover with a bad incarnation", req("takeover", { incarnation: "i 1" }), false],
    ["a takeover with a limit", req("takeover", { limit: 5 }), false],
    ["a release", req("release"), true],
    [
      "a release with a target",
      req("release", { target: { conversation: "c", execution: "e", branch: "b" } }),
      true,
    ],
    ["a release with an empty target", req("release", { target: {} }), true],
    ["a target naming a non-id string", req("release", { target: { branch: "not an id!" } }), true],
    ["a target with an unknown field", req("release", { target: { leaf: "l" } }), false],
    ["a target with an empty string", req("release", { target: { branch: "" } }), false],
    [
      "a target with a 201-unit string",
      req("release", { target: { branch: "b".repeat(201) } }),
      false,
    ],
    ["a target that is an array", req("release", { target: [] }), false],
    ["an interrupt", req("interrupt"), true],
    ["a prompt", req("prompt", { text: "hi", draft }), true],
    ["a prompt without text", req("prompt", { draft }), true],
    ["a prompt with slash text (admission refuses it)", req("prompt", { text: "/x", draft }), true],
    ["a prompt without a draft", req("prompt", { text: "hi" }), false],
    ["a prompt with a non-string text", req("prompt", { text: 1, draft }), false],
    ["a prompt with a bad draft id", req("prompt", { draft: { id: "", revision: 0 } }), false],
    [
      "a prompt with a negative revision",
      req("prompt", { draft: { id: "d", revision: -1 } }),
      false,
    ],
    ["a prompt with a draft field too many", req("prompt", { draft: { ...draft, x: 1 } }), false],
    ["a prompt with an operation", req("prompt", { draft, operation: "recover" }), false],
    ["a confirm", req("confirm", { operation: "force-stop" }), true],
    ["a confirm of recover", req("confirm", { operation: "recover" }), true],
    ["a confirm of launch", req("confirm", { operation: "launch" }), false],
    ["a confirm without an operation", req("confirm"), false],
    ["a force-stop", req("force-stop", { confirmation: "cf-1" }), true],
    ["a force-stop without a confirmation", req("force-stop"), false],
    ["a force-stop with a bad confirmation", req("force-stop", { confirmation: "" }), false],
    ["a recover", req("recover", { confirmation: "cf-1" }), true],
    [
      "a recover with an eligibility",
      req("recover", { confirmation: "cf-1", eligibility: "el-1" }),
      false,
    ],
    ["a launch", req("launch", { eligibility: "el-1" }), true],
    ["a launch without an eligibility", req("launch"), false],
    ["a request with an unknown op", req("delete"), false],
    ["a request without an op", '{"type":"request","id":"r-1"}', false],
    ["a request without an id", '{"type":"request","op":"release"}', false],
    [
      "a request with a bad id",
      JSON.stringify({ type: "request", id: "r 1", op: "release" }),
      false,
    ],
    [
      "a request with a 201-character id",
      JSON.stringify({ type: "request", id: "r".repeat(201), op: "release" }),
      false,
    ],
    ["a request with a numeric id", '{"type":"request","id":1,"op":"release"}', false],
    ["an answer", req("answer", { dialog: "dl-1", decision: "deny", message: "no" }), true],
    [
      "an answer with another decision",
      req("answer", { dialog: "dl-1", decision: "maybe" }),
      false,
    ],
    [
      "an answer raising a budget",
      req("answer", { dialog: "dl-1", decision: "allow", budget: { usd: 2.5, tokens: 9000 } }),
      true,
    ],
    [
      "an answer with a budget of another field",
      req("answer", { dialog: "dl-1", decision: "allow", budget: { usd: 2, euro: 1 } }),
      false,
    ],
    ["a budget change", req("budget", { usd: 0.29 }), true],
    ["a budget change of tokens", req("budget", { tokens: 100 }), true],
    ["a budget change naming nothing", req("budget", {}), false],
    ["a budget of no dollars", req("budget", { usd: 0 }), false],
    ["a budget of a fraction of a token", req("budget", { tokens: 1.5 }), false],
    ["a request with an unknown field", req("release", { extra: true }), false],
    ["a message of another type", '{"type":"reply","id":null,"outcome":"admitted"}', false],
    ["a message without a type", '{"id":"r-1","op":"release"}', false],
    ["an array", "[]", false],
    ["a string", '"hello"', false],
    ["null", "null", false],
  ];

  for (const [what, line, accepted] of lines) {
    it(`agrees with parseClientMessage on ${what}`, () => {
      const parsed = parseClientMessage(line);
      assert.equal(parsed.ok, accepted, JSON.stringify(parsed));
      const problems = findProblems("clientMessage", JSON.parse(line));
      assert.equal(problems.length === 0, parsed.ok, problems.join("\n"));
    });
  }

  it("covers every op with an accepted line", () => {
    const ops = new Set(
      lines.filter(([, , ok]) => ok).map(([, line]) => (JSON.parse(line) as { op?: string }).op),
    );
    for (const op of OPERATIONS) assert.ok(ops.has(op), op);
  });

  it("matches the control constants when they change", () => {
    const defs = schema.$defs;
    assert.deepEqual(defs.controlRefusalCode.enum, [...CONTROL_REFUSAL_CODES]);
    assert.deepEqual(defs.receipt.properties.reason.enum, [...RECEIPT_REASONS]);
    assert.equal(defs.hello.properties.protocol.const, PROTOCOL_VERSION);
    assert.equal(defs.welcome.properties.protocol.const, PROTOCOL_VERSION);
    const ops = defs.request.oneOf.map((b) => b.properties.op.const);
    assert.deepEqual(ops.sort(), [...OPERATIONS].sort());
    const refused = defs.reply.properties.outcome.anyOf[1]?.enum;
    assert.deepEqual(
      refused,
      CONTROL_REFUSAL_CODES.map((c) => `refused:${c}`),
    );
  });

  const state = {
    incarnation: "i-1",
    execution: "x-1",
    generation: 1,
    controllerConnection: null,
    admission: "open",
    binding: "bound",
  };
  const receipt = {
    id: "rc-1",
    request: "r-1",
    execution: "x-1",
    generation: 2,
    state: "settled",
    reason: "completed",
  };
  // Every controller message the schema accepts, parseControllerMessage accepts too.
  const controller: [string, unknown][] = [
    [
      "a welcome",
      {
        type: "welcome",
        protocol: 2,
        connection: "c-1",
        role: "observer",
        conversation: "cv",
        state,
      },
    ],
    [
      "a state",
      { type: "state", state: { ...state, controllerConnection: "c-1", admission: "fenced" } },
    ],
    ["an admitted reply", { type: "reply", id: "r-1", outcome: "admitted", result: { any: [1] } }],
    [
      "an unknown reply with a receipt",
      { type: "reply", id: "r-1", outcome: "unknown", message: "m", receipt },
    ],
    [
      "a refused reply",
      { type: "reply", id: null, outcome: "refused:grant", refusal: "grant", message: "no" },
    ],
    [
      "a cursor refusal",
      {
        type: "reply",
        id: "r-1",
        outcome: "refused:cursor",
        refusal: "cursor",
        detail: "cursor-expired",
      },
    ],
    [
      "an event",
      {
        type: "event",
        streamEpoch: "se-1",
        sequence: 3,
        id: "se-1.3",
        event: { kind: "text-delta", delta: "x" },
      },
    ],
    [
      "a receipt event",
      {
        type: "event",
        streamEpoch: "se-1",
        sequence: 1,
        id: "se-1.1",
        event: { kind: "receipt", receipt },
      },
    ],
    [
      "a dialog",
      { type: "dialog", id: "dl-1", method: "confirm", title: "t", disabled: true, reason: "r" },
    ],
  ];
  for (const [what, m] of controller) {
    it(`accepts ${what}, as parseControllerMessage does`, () => {
      assertValid("controllerMessage", m);
      const parsed = parseControllerMessage(JSON.stringify(m));
      assert.ok(parsed.ok, JSON.stringify(parsed));
    });
  }

  const refusedMessages: [string, unknown, RegExp][] = [
    [
      "a refused reply without its refusal",
      { type: "reply", id: "r-1", outcome: "refused:busy" },
      /refusal/,
    ],
    [
      "a refused reply whose refusal differs",
      { type: "reply", id: "r-1", outcome: "refused:busy", refusal: "fenced" },
      /differs from \/outcome/,
    ],
    [
      "an admitted reply with a refusal",
      { type: "reply", id: "r-1", outcome: "admitted", refusal: "busy" },
      /refusal/,
    ],
    [
      "a reply with an unknown code",
      { type: "reply", id: "r-1", outcome: "refused:nope", refusal: "nope" },
      /outcome/,
    ],
    [
      "an event whose id is not epoch.sequence",
      { type: "event", streamEpoch: "se-1", sequence: 2, id: "se-1.1", event: { kind: "x" } },
      /not <streamEpoch>.<sequence>/,
    ],
    [
      "a receipt event without its receipt",
      { type: "event", streamEpoch: "se-1", sequence: 1, id: "se-1.1", event: { kind: "receipt" } },
      /receipt/,
    ],
    [
      "an event at sequence 0",
      { type: "event", streamEpoch: "se-1", sequence: 0, id: "se-1.0", event: { kind: "x" } },
      /sequence/,
    ],
    [
      "a welcome with an extra field",
      {
        type: "welcome",
        protocol: 2,
        connection: "c-1",
        role: "observer",
        conversation: "cv",
        state,
        x: 1,
      },
      /additional/,
    ],
    [
      "a state at generation 0",
      { type: "state", state: { ...state, generation: 0 } },
      /generation/,
    ],
    [
      "a Pi dialog that is enabled",
      { type: "dialog", id: "dl-1", method: "confirm", title: "t", disabled: false, reason: "r" },
      /disabled/,
    ],
  ];
  for (const [what, m, why] of refusedMessages) {
    it(`refuses ${what}`, () => {
      const problems = findProblems("controllerMessage", m);
      assert.ok(
        problems.some((p) => why.test(p)),
        problems.join("\n"),
      );
    });
  }
});
