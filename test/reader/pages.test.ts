import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Block, Part } from "../../src/index.ts";
import { LIMITS } from "../../src/index.ts";
import { splitString } from "../../src/reader/parts.ts";
import {
  expectOk,
  header,
  idOf,
  project,
  readAll,
  readerFor,
  tempDir,
  ts,
  writeSession,
} from "../helpers/reader.ts";

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** Rejoins consecutive fragments of the same block, as a client does. */
function rejoin(parts: Part[]): Block[] {
  const out: Block[] = [];
  for (const b of parts.flatMap((p) => p.blocks)) {
    const prev = out[out.length - 1];
    if ("fragment" in b && b.fragment && b.fragment.index > 0 && prev && prev.type === b.type) {
      if (prev.type === "image" && b.type === "image") prev.data += b.data;
      else if ("text" in prev && "text" in b) (prev as { text: string }).text += b.text;
      if (b.fragment.index === b.fragment.count - 1)
        delete (prev as { fragment?: unknown }).fragment;
      continue;
    }
    out.push({ ...b });
  }
  return out;
}

function oneMessage(t: import("node:test").TestContext, content: unknown[], role = "assistant") {
  const p = project(tempDir(t));
  writeSession(p.sessionsDir, "s.jsonl", [
    header(p.projectRoot),
    { type: "message", id: "m", parentId: null, timestamp: ts(1), message: { role, content } },
  ]);
  const reader = readerFor(p);
  return { reader, id: idOf(reader, "s.jsonl") };
}

describe("parts and pages", () => {
  it("cuts a 1M-character string into fragments that rejoin exactly, never inside a surrogate pair", () => {
    for (const offset of [0, 1, 2, 3]) {
      const s = "a".repeat(offset) + "😀".repeat(500_000);
      const pieces = splitString(s);
      assert.equal(pieces.join(""), s);
      assert.ok(pieces.length >= 4);
      for (const piece of pieces) {
        assert.ok(piece.length <= LIMITS.stringChars);
        assert.ok(!isLow(piece.charCodeAt(0)), "a fragment never starts with a low surrogate");
        assert.ok(
          !isHigh(piece.charCodeAt(piece.length - 1)),
          "a fragment never ends with a high surrogate",
        );
      }
    }
  });

  it("cuts a string at 1 MiB of JSON when its characters escape to several bytes", () => {
    const s = "\u0001".repeat(262_144);
    const pieces = splitString(s);
    assert.ok(pieces.length >= 2, "262,144 control characters are 1.5 MiB of JSON");
    for (const piece of pieces)
      assert.ok(Buffer.byteLength(JSON.stringify(piece)) <= LIMITS.fragmentJsonBytes);
    assert.equal(pieces.join(""), s);
  });

  it("serves a 1M-character text with emoji at every cut point as fragments a client rejoins exactly", (t) => {
    const text = `x${"😀".repeat(300_000)}${"é".repeat(400_000)}`;
    const { reader, id } = oneMessage(t, [{ type: "text", text }]);
    const { parts } = readAll(reader, id);
    const frags = parts.flatMap((p) => p.blocks);
    assert.ok(frags.length > 3);
    assert.deepEqual(
      frags.map((b) => ("fragment" in b ? b.fragment?.index : -1)),
      frags.map((_, i) => i),
    );
    assert.deepEqual(rejoin(parts), [{ type: "text", text }]);
  });

  it("fragments huge tool arguments and image data the same way", (t) => {
    const big = "z".repeat(600_000);
    const data = "A".repeat(700_000);
    const { reader, id } = oneMessage(t, [
      { type: "toolCall", id: "t1", name: "write", arguments: { content: big } },
      { type: "image", mimeType: "image/png", data },
    ]);
    const blocks = rejoin(readAll(reader, id).parts);
    assert.deepEqual(blocks, [
      { type: "tool-call", id: "t1", name: "write", text: JSON.stringify({ content: big }) },
      { type: "image", mimeType: "image/png", data },
    ]);
  });

  it("groups at most 64 blocks per part and marks continuing parts", (t) => {
    const content = Array.from({ length: 200 }, (_, i) => ({ type: "text", text: `block ${i}` }));
    const { reader, id } = oneMessage(t, content);
    const { parts } = readAll(reader, id);
    assert.deepEqual(
      parts.map((p) => [p.id, p.blocks.length, p.continues ?? false]),
      [
        ["n.m.0", 64, false],
        ["n.m.1", 64, true],
        ["n.m.2", 64, true],
        ["n.m.3", 8, true],
      ],
    );
    assert.ok(parts.every((p) => p.role === "assistant" && p.entry === "n.m"));
  });

  it("keeps each part within 4 MiB and each page within 8 MiB, losing nothing", (t) => {
    const content = Array.from({ length: 12 }, (_, i) => ({
      type: "text",
      text: String(i % 10).repeat(1_000_000),
    }));
    const { reader, id } = oneMessage(t, content);
    const { parts, pages } = readAll(reader, id);
    for (const p of parts) assert.ok(Buffer.byteLength(JSON.stringify(p)) <= LIMITS.partBytes);
    assert.ok(pages >= 2, "12 MB of text cannot fit one page");
    assert.deepEqual(
      rejoin(parts),
      content.map((c) => ({ type: "text", text: c.text })),
    );
  });

  it("moves a tool name longer than 1024 characters into a text block after a notice", (t) => {
    const name = "n".repeat(5000);
    const { reader, id } = oneMessage(t, [{ type: "toolCall", id: "t1", name, arguments: {} }]);
    const blocks = expectOk(reader.open({ conversation: id })).page.parts[0]?.blocks ?? [];
    assert.deepEqual(
      blocks.map((b) => b.type),
      ["notice", "text", "tool-call"],
    );
    assert.equal(blocks[1]?.type === "text" && blocks[1].text, name);
  });

  it("keeps a message without content visible as an empty part", (t) => {
    const { reader, id } = oneMessage(t, []);
    const r = expectOk(reader.open({ conversation: id }));
    assert.deepEqual(
      r.page.parts.map((p) => [p.id, p.blocks.length]),
      [["n.m.0", 0]],
    );
  });
});
