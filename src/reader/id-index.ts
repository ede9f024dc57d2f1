// Entry ids to entry rows: an open-addressing table of entry indexes, keyed by the id's UTF-16
// units (FNV-1a). It replaces a Map<string, EntryRec>, whose insertions and lookups took about
// 2 µs each at a few million short hex ids (V8's string hashing of such keys collides), making
// a file of millions of tiny entries take tens of seconds to index; this takes a few hundred ms.
import type { EntryTable } from "./pi.ts";

function hashOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  // A final mix, so ids that differ only in their last units spread over the whole table.
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

/** The winning row of each id: a later line with the same id replaces the earlier (SM:694). */
export class IdIndex {
  readonly #ids: string[];
  readonly #table: Int32Array;
  readonly #mask: number;
  #size = 0;

  /** Indexes the rows of `entries` (every entry line in file order, duplicates included). */
  constructor(entries: EntryTable) {
    this.#ids = entries.ids;
    let slots = 16;
    while (slots < entries.count * 2) slots *= 2;
    this.#table = new Int32Array(slots).fill(-1);
    this.#mask = slots - 1;
    for (let i = 0; i < entries.count; i++) {
      const slot = this.#slotOf(entries.ids[i]!);
      if (this.#table[slot] === -1) this.#size++;
      this.#table[slot] = i;
    }
  }

  /** How many distinct ids. */
  get size(): number {
    return this.#size;
  }

  /** The row of the entry with this id, or -1. */
  get(id: string): number {
    return this.#table[this.#slotOf(id)]!;
  }

  /** The slot holding `id`, or the empty slot where it would go (linear probing). */
  #slotOf(id: string): number {
    let slot = hashOf(id) & this.#mask;
    for (;;) {
      const index = this.#table[slot]!;
      if (index === -1 || this.#ids[index] === id) return slot;
      slot = (slot + 1) & this.#mask;
    }
  }
}
