// Block tags (src/reader/block-tags.ts): what a page's bytes read again are proved by. Equal
// bytes carry equal tags; any other bytes — one byte changed anywhere, a block cut short or
// grown — carry another; a tag taken in pieces is the tag of the whole.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import {
  BLOCK,
  blocksOf,
  emptyTags,
  extendTags,
  isBlock,
  TAG_BYTES,
  TAG_KIND,
  Tagger,
  tagOf,
} from "../../src/reader/block-tags.ts";

describe("block tags", () => {
  it("are GMAC on this Node (AES-256-GCM), 16 bytes", () => {
    assert.equal(TAG_KIND, "gmac");
    assert.equal(tagOf(randomBytes(100)).length, TAG_BYTES);
  });

  it("tell a block from the same block with any one byte changed, shortened or grown", () => {
    const block = randomBytes(BLOCK);
    const tag = tagOf(block);
    assert.deepEqual(tagOf(Buffer.from(block)), tag);
    for (const at of [0, 1, 15, 16, 4095, 4096, BLOCK / 2, BLOCK - 17, BLOCK - 1]) {
      const other = Buffer.from(block);
      other[at] = other[at]! ^ 0x01;
      assert.notDeepEqual(tagOf(other), tag, `byte ${at} changed`);
    }
    assert.notDeepEqual(tagOf(block.subarray(0, BLOCK - 1)), tag, "one byte short");
    assert.notDeepEqual(tagOf(Buffer.concat([block, Buffer.alloc(1)])), tag, "one zero more");
    // A block of zeros and its shorter prefix: the length is part of what is hashed.
    assert.notDeepEqual(tagOf(Buffer.alloc(64)), tagOf(Buffer.alloc(48)));
  });

  it("of pieces, in order, are the tag of the whole", () => {
    const bytes = randomBytes(300_001);
    const t = new Tagger();
    for (const [a, b] of [
      [0, 7],
      [7, 100_003],
      [100_003, 100_003],
      [100_003, 300_001],
    ] as const) {
      t.update(bytes.subarray(a, b));
    }
    assert.deepEqual(t.end(), tagOf(bytes));
  });

  it("prove a snapshot's blocks, its partial last block too, and nothing else", () => {
    const bytes = randomBytes(2 * BLOCK + 1000);
    const whole = [tagOf(bytes.subarray(0, BLOCK)), tagOf(bytes.subarray(BLOCK, 2 * BLOCK))];
    const tags = extendTags(emptyTags(), 0, whole, tagOf(bytes.subarray(2 * BLOCK)), bytes.length);
    assert.equal(blocksOf(tags.bytes), 3);
    for (let j = 0; j < 3; j++) {
      const block = bytes.subarray(j * BLOCK, Math.min((j + 1) * BLOCK, bytes.length));
      assert.equal(isBlock(tags, j, block), true, `block ${j}`);
      const changed = Buffer.from(block);
      changed[changed.length - 1] = changed[changed.length - 1]! ^ 0x80;
      assert.equal(isBlock(tags, j, changed), false, `block ${j} changed`);
    }
    // Block 1's bytes are not block 0's.
    assert.equal(isBlock(tags, 0, bytes.subarray(BLOCK, 2 * BLOCK)), false);
    assert.equal(isBlock(tags, 3, Buffer.alloc(0)), false);
  });
});
