// The shared slab large bodies cross on (body-slab.ts): bytes read back as written, chunks held
// until released and reused after, a full slab refused (the caller transfers instead), and a
// range the worker cannot have written refused rather than read.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import {
  createSlab,
  SLAB_CHUNK,
  SLAB_CHUNKS,
  SLAB_MIN_BODY,
  SlabReader,
  SlabWriter,
} from "../../src/board/body-slab.ts";

describe("body slab", () => {
  it("reads back what was written, without a copy, until it is released", () => {
    const memory = createSlab();
    const writer = new SlabWriter(memory);
    const reader = new SlabReader(memory);
    const body = randomBytes(SLAB_CHUNK + 123);
    const range = writer.write(body);
    assert.ok(range);
    assert.equal(range.count, 2);
    const opened = reader.open(range);
    assert.ok(opened);
    assert.ok(opened.body.equals(body));
    assert.ok(opened.body.buffer instanceof SharedArrayBuffer, "a view, not a copy");
    assert.equal(reader.used, 2);
    opened.release();
    opened.release(); // twice is harmless
    assert.equal(reader.used, 0);
  });

  it("leaves small bodies to a transfer", () => {
    const writer = new SlabWriter(createSlab());
    assert.equal(writer.write(new Uint8Array(SLAB_MIN_BODY - 1)), null);
    assert.ok(writer.write(new Uint8Array(SLAB_MIN_BODY)));
  });

  it("refuses a body when no run of chunks is free, and reuses chunks once released", () => {
    const memory = createSlab();
    const writer = new SlabWriter(memory);
    const reader = new SlabReader(memory);
    const body = new Uint8Array(SLAB_CHUNK); // one chunk each
    const held = [];
    for (let i = 0; i < SLAB_CHUNKS; i++) {
      const range = writer.write(body.fill(i % 251));
      assert.ok(range, `chunk ${i}`);
      held.push(reader.open(range));
    }
    assert.equal(writer.write(body), null, "full: the caller transfers instead");
    assert.equal(writer.write(new Uint8Array(SLAB_CHUNK * (SLAB_CHUNKS + 1))), null, "too big");
    // Free two chunks that are not adjacent: a two-chunk body still finds no run.
    held[10]?.release();
    held[20]?.release();
    assert.equal(writer.write(new Uint8Array(SLAB_CHUNK * 2)), null);
    const one = writer.write(new Uint8Array(SLAB_CHUNK).fill(7));
    assert.ok(one && (one.first === 10 || one.first === 20));
    assert.ok(reader.open(one)?.body.every((b) => b === 7));
    // What was not released is untouched.
    assert.ok(held[11]?.body.every((b) => b === 11));
  });

  it("refuses a range outside the slab or not on a chunk", () => {
    const reader = new SlabReader(createSlab());
    const bad = [
      { offset: 0, length: 10, first: -1, count: 1 },
      { offset: SLAB_CHUNK * SLAB_CHUNKS, length: 10, first: SLAB_CHUNKS, count: 1 },
      { offset: 5, length: 10, first: 0, count: 1 },
      { offset: 0, length: SLAB_CHUNK + 1, first: 0, count: 1 },
      { offset: SLAB_CHUNK * (SLAB_CHUNKS - 1), length: 10, first: SLAB_CHUNKS - 1, count: 2 },
    ];
    for (const range of bad) assert.equal(reader.open(range), null, JSON.stringify(range));
  });
});
