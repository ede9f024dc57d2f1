// A small fixture tree for the board suites: two projects, one rich session written by Pi's
// own SessionManager, hand-written long, growing, swappable, broken, fragmented and hostile
// sessions, and a seat on another harness (an unsupported row).
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestContext } from "node:test";
import {
  type BoardSpec,
  createReader,
  type Reader,
  rootsFromSpecs,
  type SeatRegistration,
  sessionsDirOf,
} from "../../src/index.ts";
import { TINY_PNG_BASE64, writeRichSession } from "../helpers/pi-sessions.ts";
import { assistant, header, project, tempDir, ts, user, writeSession } from "../helpers/reader.ts";

export const LONG_MESSAGES = 130;
/** Over the 262,144-character string limit, so it arrives as two fragments. */
export const FRAGMENTED_LENGTH = 300_000;

export const HOSTILE = {
  script: "<script>window.__pwned=1</script>",
  img: '<img src=x onerror="window.__pwned=1">',
  link: "javascript:window.__pwned=1",
  css: '<style>body{display:none}</style><div style="position:fixed;inset:0;background:red">',
  bidi: "abc\u202Etxt.exe",
} as const;

export type BoardFixture = {
  base: string;
  alpha: ReturnType<typeof project>;
  beta: ReturnType<typeof project>;
  specs: BoardSpec[];
  registrations: SeatRegistration[];
  richIds: Record<string, string>;
  files: Record<"rich" | "long" | "grow" | "swap" | "hostile" | "broken" | "frag", string>;
  reader: () => Reader;
};

export async function writeBoardFixture(t: TestContext): Promise<BoardFixture> {
  const base = tempDir(t, "board-");
  const alpha = project(base, "alpha", "main");
  const beta = project(base, "beta", "ops");
  const { path: rich, ids: richIds } = await writeRichSession(
    alpha.sessionsDir,
    "rich",
    alpha.projectRoot,
  );
  const cwd = alpha.projectRoot;

  const longLines: object[] = [
    header(cwd),
    {
      type: "session_info",
      id: "info",
      parentId: null,
      timestamp: ts(1),
      name: "Long hand-written",
    },
  ];
  let parent = "info";
  for (let i = 0; i < LONG_MESSAGES; i++) {
    const id = `m${i}`;
    const text = `long message ${i}`;
    longLines.push(
      i % 2 === 0 ? user(id, parent, text, i + 2) : assistant(id, parent, text, i + 2),
    );
    parent = id;
  }
  const long = writeSession(alpha.sessionsDir, "long.jsonl", longLines);

  const grow = writeSession(alpha.sessionsDir, "grow.jsonl", [
    header(cwd, { id: "01a00000-0000-7000-8000-000000000002" }),
    user("g1", null, "Growing conversation: first question", 1),
    assistant("g2", "g1", "first answer", 2),
  ]);
  const swap = writeSession(alpha.sessionsDir, "swap.jsonl", [
    header(cwd, { id: "01a00000-0000-7000-8000-000000000003" }),
    user("s1", null, "Swappable conversation before the swap", 1),
    assistant("s2", "s1", "original answer", 2),
  ]);
  const broken = writeSession(alpha.sessionsDir, "broken.jsonl", [
    header(cwd, {
      id: "01a00000-0000-7000-8000-000000000004",
      parentSession: "/elsewhere/x.jsonl",
    }),
    user("b1", null, "Broken conversation", 1),
    "{this is not json",
    assistant("b3", "gone", "an orphan whose parent is missing", 3),
  ]);
  const big = "0123456789".repeat(FRAGMENTED_LENGTH / 10);
  const frag = writeSession(alpha.sessionsDir, "frag.jsonl", [
    header(cwd, { id: "01a00000-0000-7000-8000-000000000005" }),
    user("f1", null, "Fragmented conversation", 1),
    assistant("f2", "f1", big, 2),
  ]);
  const hostile = writeSession(alpha.sessionsDir, "hostile.jsonl", [
    header(cwd, { id: "01a00000-0000-7000-8000-000000000006" }),
    user("h1", null, `${HOSTILE.script} ${HOSTILE.bidi}`, 1),
    {
      type: "message",
      id: "h2",
      parentId: "h1",
      timestamp: ts(2),
      message: {
        role: "assistant",
        content: [
          { type: "text", text: `${HOSTILE.img} [click me](${HOSTILE.link}) ${HOSTILE.css}` },
          { type: "thinking", thinking: HOSTILE.script },
          {
            type: "toolCall",
            id: "call_h",
            name: HOSTILE.img,
            arguments: { html: HOSTILE.script },
          },
        ],
        stopReason: "toolUse",
        timestamp: 2,
      },
    },
    {
      type: "message",
      id: "h3",
      parentId: "h2",
      timestamp: ts(3),
      message: {
        role: "toolResult",
        toolCallId: "call_h",
        toolName: HOSTILE.img,
        isError: true,
        content: [
          { type: "text", text: HOSTILE.css },
          { type: "image", mimeType: "image/svg+xml", data: "PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+" },
          { type: "image", mimeType: "image/png", data: `x" onerror="window.__pwned=1` },
          { type: "image", mimeType: "image/png", data: TINY_PNG_BASE64 },
        ],
        timestamp: 3,
      },
    },
    {
      type: "message",
      id: "h4",
      parentId: "h3",
      timestamp: ts(4),
      message: {
        role: "bashExecution",
        command: HOSTILE.script,
        output: `${HOSTILE.img}\u001b[31mred\u001b[0m`,
        exitCode: 1,
        cancelled: false,
        truncated: false,
        timestamp: 4,
      },
    },
  ]);
  writeSession(beta.sessionsDir, "ops.jsonl", [
    header(beta.projectRoot, { id: "01a00000-0000-7000-8000-000000000007" }),
    user("o1", null, "Ops seat question", 1),
    assistant("o2", "o1", "ops answer", 2),
  ]);

  const specs: BoardSpec[] = [
    { kind: "repository", projectRoot: alpha.projectRoot, seat: alpha.seat },
    { kind: "repository", projectRoot: beta.projectRoot, seat: beta.seat },
  ];
  const registrations: SeatRegistration[] = [
    {
      seat: "rocko",
      layout: "repo",
      project: beta.projectRoot,
      sessionsDir: sessionsDirOf(beta.projectRoot, "rocko"),
      // A harness the reader has no adapter for: one unsupported row (a seat on claude-code is
      // read as a Claude seat now, test/reader/claude-code.test.ts).
      harness: "codex",
      startedAt: ts(0),
    },
  ];
  return {
    base,
    alpha,
    beta,
    specs,
    registrations,
    richIds,
    files: { rich, long, grow, swap, hostile, broken, frag },
    reader: () => createReader({ roots: () => rootsFromSpecs(specs, registrations) }),
  };
}

/** Replaces `file` by a new inode with other content (write beside it, then rename over). */
export function swapFile(file: string, lines: object[]): void {
  const beside = join(file, "..", ".swap.tmp");
  writeFileSync(beside, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
  renameSync(beside, file);
}
