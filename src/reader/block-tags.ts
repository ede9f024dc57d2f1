// Fingerprints of a snapshot's bytes, block by block, so that bytes read again from the file
// later can be proved to be the snapshot's without the reader holding the snapshot: a page
// reads the lines it renders from the file and checks their blocks' tags; a verification
// re-reads blocks in another order and checks them all. The snapshot's own digest stays the
// SHA-256 of its bytes (the seed); the tags only answer "are these the bytes we read then?".
//
// A tag is GHASH over the block (the tag of AES-256-GCM with the block as additional data and
// nothing encrypted: GMAC), under a key and nonce drawn at random when the process starts and
// never shown to anyone. GHASH is a universal hash: two different blocks of at most BLOCK bytes
// (16,384 GHASH blocks, plus the length block) get the same tag only when the secret hash key H
// is a root of a nonzero polynomial of degree at most 16,385 — probability below 2^-113 for a
// key the writer does not know, whatever the writer chose to write. The fixed nonce only adds
// the same secret mask to every tag, which tells equal blocks from unequal ones as well. It runs
// at about 0.04 ns a byte here (Poly1305, the tag before, 0.10–0.13; SHA-256 0.65): the
// verification passes are what a live file's pages cost (docs/performance.md). Where the
// runtime has no AES-256-GCM (an OpenSSL built without it), tags are SHA-256: slower, as sound.
import { createCipheriv, createHash, createSecretKey, type Hash, randomBytes } from "node:crypto";

/** Bytes per tagged block. A multiple of 4 KiB; the forward pass reads whole blocks. */
export const BLOCK = 256 * 1024;
export const TAG_BYTES = 16;

const KEY = randomBytes(32);
/** As a key object: a cipher made from raw key bytes imports them again each time (3× slower). */
const KEY_OBJECT = createSecretKey(KEY);
const NONCE = randomBytes(12);

function hasGmac(): boolean {
  try {
    createCipheriv("aes-256-gcm", KEY, NONCE, { authTagLength: TAG_BYTES });
    return true;
  } catch {
    // No AES-256-GCM in this OpenSSL: SHA-256 tags instead.
    return false;
  }
}

const GMAC = hasGmac();
/** Which tag this process computes (a test pins GMAC where the runtime has it). */
export const TAG_KIND: "gmac" | "sha-256" = GMAC ? "gmac" : "sha-256";

/** A tag over bytes given in pieces, in order. */
export class Tagger {
  readonly #mac = GMAC
    ? createCipheriv("aes-256-gcm", KEY_OBJECT, NONCE, { authTagLength: TAG_BYTES })
    : null;
  readonly #hash: Hash | null = GMAC ? null : createHash("sha256").update(KEY);

  update(piece: Buffer): void {
    if (piece.length === 0) return;
    // Nothing is encrypted: the pieces are GCM's additional data, hashed in order.
    if (this.#mac) this.#mac.setAAD(piece);
    else this.#hash?.update(piece);
  }

  end(): Buffer {
    if (!this.#mac) return (this.#hash ?? createHash("sha256")).digest().subarray(0, TAG_BYTES);
    this.#mac.final();
    return this.#mac.getAuthTag();
  }
}

export function tagOf(bytes: Buffer): Buffer {
  const t = new Tagger();
  t.update(bytes);
  return t.end();
}

/**
 * The tags of a snapshot of `bytes` bytes: one per whole block (`whole`, TAG_BYTES each, the
 * first `count` used), and one for the partial block at its end, if any.
 */
export type BlockTags = { bytes: number; whole: Buffer; count: number; last: Buffer | null };

export function emptyTags(): BlockTags {
  return { bytes: 0, whole: Buffer.alloc(0), count: 0, last: null };
}

/** How many blocks a snapshot of `bytes` has (the partial last one counted). */
export function blocksOf(bytes: number): number {
  return Math.ceil(bytes / BLOCK);
}

/** The expected tag of block `j` of the snapshot `tags` describes. */
export function tagAt(tags: BlockTags, j: number): Buffer | null {
  if (j < tags.count) return tags.whole.subarray(j * TAG_BYTES, (j + 1) * TAG_BYTES);
  return j === tags.count ? tags.last : null;
}

/** Whether `bytes` (all of block `j`, or its part inside the snapshot) carries block j's tag. */
export function isBlock(tags: BlockTags, j: number, bytes: Buffer): boolean {
  const want = tagAt(tags, j);
  return want?.equals(tagOf(bytes)) === true;
}

/**
 * The tags of a longer snapshot of the same bytes: `prev`'s whole blocks below `keep`, then
 * `added` (whole blocks from `keep` on), and `last` for the partial block at `bytes`.
 */
export function extendTags(
  prev: BlockTags,
  keep: number,
  added: readonly Buffer[],
  last: Buffer | null,
  bytes: number,
): BlockTags {
  const count = keep + added.length;
  const whole = Buffer.allocUnsafe(count * TAG_BYTES);
  prev.whole.copy(whole, 0, 0, keep * TAG_BYTES);
  for (const [i, t] of added.entries()) t.copy(whole, (keep + i) * TAG_BYTES);
  return { bytes, whole, count, last };
}
